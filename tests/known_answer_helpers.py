"""Known-answer comparison points for the publication tests, filed the way the intake files any outside run.

:func:`published_panel` is the open panel file as publication writes it, for the tests that run the
outsider's route on it (the reader server, lm-eval).

:func:`file_known_answer_points` takes each of :mod:`panels.readers`'
known-answer readers (an invariant reader, a framing-sensitive reader, a
reader that ignores the question), writes its complete run of an open
protocol as a submission file — trials shaped as ``llmarchive comparison
run`` writes them, each with the ``prompt_sha256`` of the published prompt
and the reader's model id ``simulated-reader-<name>`` — and submits it
through :func:`llmarchive.comparison.intake.submit`, so the point is checked and
recomputed by the real intake and estimator, nothing hand-made.
"""
import hashlib
import json
from pathlib import Path

import pytest

from llmarchive.comparison import intake as comparison
from llmarchive.protocols import registry
from llmarchive.archive import ArchivePaths
from measure.schema import VERSIONS
from panels import readers
from publish.data.panels import file_name, files
from tests.instrument_helpers import admitted_archive

PROTOCOL_ID = "risky_choice_framing__wording__v0"
SUBMITTER = "the archive's known-answer check"


def published_panel(root: Path, protocol_id: str = PROTOCOL_ID) -> tuple[Path, Path]:
    """An admitted archive under ``root/archive`` and its open panel file exactly as publication writes it,
    under ``root/public``: (the archive's home, the panel file)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLMARCHIVE_HOME", str(root / "archive"))
        paths = admitted_archive(mp)
        panel = root / "public" / file_name(protocol_id)
        panel.parent.mkdir(parents=True, exist_ok=True)
        panel.write_bytes(files(paths, registry.list_protocols(paths))[file_name(protocol_id)])
    return root / "archive", panel


def submission_lines(paths: ArchivePaths, name: str, protocol_id: str, run_date: str) -> list[str]:
    """The submission file of reader ``name``'s run of ``protocol_id``: a header line, then every trial."""
    protocol = registry.load_protocol(paths, protocol_id)
    texts = {(item["item_id"], v): item["versions"][v] for item in protocol["panel"] for v in VERSIONS}
    model_id = readers.simulated_model_id(name)
    header = {"record_type": comparison.HEADER_TYPE, "protocol_id": protocol_id, "model_id": model_id,
              "run_date": run_date, "submitted_by": SUBMITTER, "panel_sha256": protocol["panel_sha256"],
              "grammar_version": protocol["grammar_version"], "n": protocol["n"]}
    lines = [json.dumps(header)]
    for index, trial in enumerate(readers.trials(readers.KNOWN_ANSWER_READERS[name], protocol)):
        prompt = texts[(trial["item_id"], trial["version"])]
        lines.append(json.dumps({**trial, "run_id": f"known-{name}-{run_date}", "trial_index": index,
                                 "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
                                 "returned_model_id": model_id}))
    return lines


def file_known_answer_points(paths: ArchivePaths, folder: Path, run_date: str = "2026-11-25",
                             today: str = "2026-11-26", protocol_id: str = PROTOCOL_ID) -> dict[str, dict]:
    """File one known-answer point per reader; returns each reader's accepted ``comparison_point`` record."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in readers.KNOWN_ANSWER_READERS:
        file = folder / f"{name}.jsonl"
        file.write_text("\n".join(submission_lines(paths, name, protocol_id, run_date)) + "\n", encoding="utf-8")
        out[name] = comparison.submit(paths, file, today=today, source="known_answer").record
    return out
