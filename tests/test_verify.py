"""measure.verify and `llmarchive verify`: a measurement recomputes exactly."""
import json
import subprocess
import sys

from llmarchive.cli import main
from llmarchive.archive import ChainedLog, write_json
from measure.measurement import build
from measure.verify import recompute
from tests.measure_helpers import RUN, healthy_plan, protocol, trials_from


def _run_folder(tmp_path, trials=None):
    proto = protocol()
    trials = trials if trials is not None else trials_from(healthy_plan())
    for t in trials:
        t["response_text"] = f"Some reasoning.\nDECISION: {t['token']}" if t["token"] else "I will not answer."
    folder = tmp_path / "run"
    log = ChainedLog(folder / "trials.jsonl")
    for t in trials:
        log.append(dict(t, run_id=RUN["run_id"]))
    record = build(proto, log.records, RUN)
    write_json(folder / "run.json", dict(RUN, record_type="experiment_run", protocol_header=proto))
    write_json(folder / "measurement.json", record)
    return folder, proto, log.records, record


def test_a_fresh_measurement_recomputes_with_no_difference(tmp_path):
    _, proto, trials, record = _run_folder(tmp_path)
    assert recompute(record, trials, proto) == []


def test_a_changed_token_is_reported_as_trial_and_field_differences(tmp_path):
    _, proto, trials, record = _run_folder(tmp_path)
    tampered = [dict(t) for t in trials]
    tampered[0] = {k: v for k, v in tampered[0].items() if k not in ("prev_sha256", "record_sha256")}
    first_b = next(i for i, t in enumerate(tampered) if t["version"] == "B")
    tampered[first_b]["token"] = "B" if tampered[first_b]["token"] == "A" else "A"
    fields = {d["field"] for d in recompute(record, tampered, proto)}
    assert "chain" in fields
    assert any(f.startswith("trial s01/B/") for f in fields)
    assert "gap_pct" in fields and "decisions" in fields


def test_a_later_promotion_is_not_a_difference(tmp_path):
    _, proto, trials, record = _run_folder(tmp_path)
    assert recompute(record, trials, dict(proto, status="admitted", lane="guard")) == []


def test_cli_verify_on_a_run_folder(tmp_path, capsys):
    folder, *_ = _run_folder(tmp_path)
    assert main(["verify", str(folder)]) == 0
    assert "every field recomputes exactly" in capsys.readouterr().out


def test_cli_verify_fails_loudly_on_an_edited_measurement(tmp_path, capsys):
    folder, *_ = _run_folder(tmp_path)
    record = json.loads((folder / "measurement.json").read_text())
    record["stability_pct"] = 99.0
    write_json(folder / "measurement.json", record)
    assert main(["verify", str(folder)]) == 1
    assert "DIFFERS stability_pct" in capsys.readouterr().out


def test_cli_verify_from_the_three_public_files(tmp_path, capsys):
    folder, proto, trials, record = _run_folder(tmp_path)
    (tmp_path / "proto.json").write_text(json.dumps(proto))
    assert main(["verify", "--trials", str(folder / "trials.jsonl"), "--measurement",
                 str(folder / "measurement.json"), "--protocol", str(tmp_path / "proto.json")]) == 0


def test_cli_verify_names_a_missing_file(tmp_path, capsys):
    assert main(["verify", str(tmp_path)]) == 2
    assert "run.json" in capsys.readouterr().err


def test_cli_measure_sample_prints_a_measurement():
    out = subprocess.run([sys.executable, "-m", "llmarchive", "measure", "--sample"],
                         capture_output=True, text=True, check=True).stdout
    record = json.loads(out)
    assert record["record_type"] == "measurement" and record["run_id"] == "sample-run"


def test_cli_verify_names_a_run_folder_file_that_is_not_utf8(tmp_path, capsys):
    folder, *_ = _run_folder(tmp_path)
    (folder / "trials.jsonl").write_bytes((folder / "trials.jsonl").read_bytes().replace(b"Some", b"S\xffme", 1))
    assert main(["verify", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "trials.jsonl: not UTF-8" in err


def test_cli_verify_reports_a_broken_chain_in_a_run_folder_as_a_failed_check(tmp_path, capsys):
    folder, *_ = _run_folder(tmp_path)
    lines = (folder / "trials.jsonl").read_text().splitlines(keepends=True)
    record = json.loads(lines[2])
    record["response_text"] = "edited later"
    lines[2] = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
    (folder / "trials.jsonl").write_text("".join(lines))
    assert main(["verify", str(folder)]) == 1
    assert "trial log chain broken" in capsys.readouterr().err
