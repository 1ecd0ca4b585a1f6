"""An unreadable run folder is never silently passed over: not by ``review list``, not by an alarm's marking.

method §10.4 (a folder the store cannot read is named, never skipped) and
§7.4 (an alarm marks every run of its day): a torn run record leaves the
alarm a pending mark, applied once the record reads again; publication
refuses the folder until then.
"""
import json

import pytest

from llmarchive.archive import bridge_run_id, record_logs as records, store
from llmarchive.cli import main
from llmarchive.instrument import mark_day_suspect, pending_folders, runtime_fingerprint
from llmarchive.succession import held_paths
from measure.verify import recompute
from publish.errors import PublishError
from publish.data import gather as publish_gather
from tests.test_instrument import PromptEngine, _run
from tests.fake_provider import FakeProvider, decide_by_hash

OLD, NEW = "claude-sonnet-5", "claude-sonnet-5-5"
PROTOCOL = "p_control_v0"


def _tear(folder) -> bytes:
    """Cut the folder's run record in half (a torn write); return its original bytes for the repair."""
    original = store.run_file(folder).read_bytes()
    store.run_file(folder).write_bytes(original[: len(original) // 2])
    return original


def _held_torn(paths, run_id: str) -> None:
    folder = held_paths(paths).run_dir(run_id)
    folder.mkdir(parents=True)
    store.run_file(folder).write_text('{"run_id": "' + run_id + '", "subject_model_id": "claude-son', encoding="utf-8")
    store.trial_log(folder).write_text("", encoding="utf-8")


def test_review_list_names_every_unreadable_held_folder_in_text_and_json(paths, capsys):
    assert main(["review", "list"]) == 0
    assert "unreadable" not in capsys.readouterr().out
    stray = "bridge_unknown_run"
    _held_torn(paths, stray)
    # No review yet: the folder is listed all the same.
    assert main(["review", "list"]) == 0
    out = capsys.readouterr().out
    assert "no needs_review has been recorded" in out
    assert f"unreadable held run folder {stray}: " in out and "publication refuses until it is repaired" in out

    review = records.append(paths, "needs_review", {"date": "2026-11-02", "model_family": "claude-sonnet",
                                                    "model_id": NEW, "reason": "nobody declared it"})
    mine = bridge_run_id(OLD, NEW, PROTOCOL, "new")
    records.append(paths, "generation_bridge", {
        "date": "2026-11-03", "model_family": "claude-sonnet", "old_model_id": OLD, "new_model_id": NEW,
        "protocol_ids": [PROTOCOL], "status": "complete",
        "run_ids": sorted(bridge_run_id(OLD, NEW, PROTOCOL, role) for role in ("old", "new"))})
    _held_torn(paths, mine)
    assert main(["review", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith(review["record_sha256"][:12]))
    assert lines[head + 2].startswith(f"    unreadable held run folder {mine}: ")   # under the review that holds it
    assert any(line.startswith(f"    unreadable held run folder {stray}: ") for line in lines[head + 3:])

    assert main(["review", "list", "--json"]) == 0
    captured = capsys.readouterr()
    (listed,) = json.loads(captured.out)
    assert [u["run_id"] for u in listed["unreadable_held"]] == [mine]
    assert "not valid JSON" in listed["unreadable_held"][0]["problem"]
    assert f"unreadable held run folder {stray}: " in captured.err


@pytest.fixture
def day_of_runs(paths, built, monkeypatch):
    """Two passing fingerprints and two complete runs: one made on 2026-11-02, one on 2026-11-01."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine())
    with FakeProvider(decide_by_hash()) as fake:
        _run(paths, fake, "made-on-the-2nd", "2026-11-02", False)
        _run(paths, fake, "made-on-the-1st", "2026-11-01", False)
    publish_gather(paths)   # the archive publishes before anything is torn
    return paths


def test_an_alarm_meeting_a_torn_run_record_marks_the_run_once_it_is_repaired(day_of_runs, capsys):
    paths = day_of_runs
    folder = paths.run_dir("made-on-the-2nd")
    original = _tear(folder)
    outcome = runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine(tamper=("fp01", 0)))
    assert outcome.alarm is not None
    assert pending_folders(paths) == [folder]
    assert [m["date"] for m in store.pending_marks(folder)] == ["2026-11-02"]
    assert main(["instrument", "status", "--date", "2026-11-02"]) == 1
    assert "PENDING SUSPECT MARK: run folder made-on-the-2nd (alarm of 2026-11-02)" in capsys.readouterr().err
    assert main(["instrument", "apply-marks"]) == 1, "a record that still cannot be read keeps its marks"
    assert "not valid JSON" in capsys.readouterr().err and pending_folders(paths) == [folder]

    store.run_file(folder).write_bytes(original)        # repaired by hand
    assert "instrument_suspect" not in store.read_measurement(folder)["flags"]
    with pytest.raises(PublishError, match="made-on-the-2nd.*instrument apply-marks"):
        publish_gather(paths)

    assert main(["instrument", "apply-marks"]) == 0
    assert "made-on-the-2nd: instrument_suspect" in capsys.readouterr().out
    loaded = store.load_run(folder)
    assert "instrument_suspect" in loaded.measurement["flags"] and loaded.measurement["on_curve"] is False
    assert "instrument_alarm from runtime_fingerprint" in loaded.run["instrument_suspect"]
    assert recompute(loaded.measurement, loaded.trials, loaded.protocol_header) == []
    assert not store.has_pending_marks(folder) and pending_folders(paths) == []
    assert "made-on-the-2nd" in {m["run_id"] for m in publish_gather(paths).measurements}


def test_a_pending_mark_of_another_day_is_dropped_and_the_run_is_left_as_it_was(day_of_runs):
    paths = day_of_runs
    folder = paths.run_dir("made-on-the-1st")
    before = {path.name: path.read_bytes() for path in (store.run_file(folder), store.measurement_file(folder))}
    _tear(folder)
    assert mark_day_suspect(paths, "2026-11-02", "instrument: an alarm of the 2nd") == ["made-on-the-2nd"]
    assert store.pending_marks(folder) == [{"date": "2026-11-02", "reason": "instrument: an alarm of the 2nd"}]
    store.run_file(folder).write_bytes(before[store.run_file(folder).name])
    # The next alarm's walk (another day, marking nothing of its own) meets the folder readable again.
    assert mark_day_suspect(paths, "2026-11-04", "instrument: an alarm of the 4th") == []
    assert not store.has_pending_marks(folder)
    assert {path.name: path.read_bytes() for path in (store.run_file(folder), store.measurement_file(folder))} \
        == before


def test_the_instrument_assets_name_every_folder_still_waiting_on_a_pending_mark(day_of_runs):
    """What Dagster shows after the daily checks: the folders publication will refuse, and why."""
    from dagster import build_asset_context

    from assets.instrument import _pending_marks

    paths = day_of_runs
    assert _pending_marks(build_asset_context(), paths).value == []
    _tear(paths.run_dir("made-on-the-2nd"))
    mark_day_suspect(paths, "2026-11-02", "instrument: an alarm of the 2nd")
    assert _pending_marks(build_asset_context(), paths).value == ["made-on-the-2nd"]
