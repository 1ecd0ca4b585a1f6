"""The blocking checks publication runs first find a broken log among many (the two-process path too)."""
import json

import pytest

from llmarchive.jsonio import ChainedLog
from llmarchive.paths import ArchivePaths
from publish import checks


@pytest.mark.parametrize("runs", [3, 70], ids=["few-logs", "many-logs-in-two-processes"])
def test_a_single_edited_trial_log_is_named_among_many(tmp_path, runs):
    paths = ArchivePaths(tmp_path / "home").ensure()
    for i in range(runs):
        log = ChainedLog(paths.run_dir(f"run-{i:03d}") / "trials.jsonl")
        for j in range(3):
            log.append({"record_type": "trial", "run_id": f"run-{i:03d}", "trial_index": j, "token": "A"})
    assert checks.chain_problems(paths) == []
    broken = paths.run_dir(f"run-{runs - 2:03d}") / "trials.jsonl"
    lines = broken.read_text().splitlines(keepends=True)
    record = json.loads(lines[1])
    record["token"] = "B"
    lines[1] = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
    broken.write_text("".join(lines))
    problems = checks.chain_problems(paths)
    assert len(problems) == 1 and problems[0].startswith(str(broken))
    assert "trial_log_chains" in checks.blocking_problems(paths)
