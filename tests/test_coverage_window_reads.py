"""Coverage's gather reads the daily logs back to the open window's start only, and the runs from the run index."""
import pytest

from llmarchive.archive import RecordFileError
from llmarchive.schedule.coverage import gather
from tests.test_coverage import PROTOCOLS, beat_days, complete_run

SEALED = {"2026-08", "2026-09", "2026-10"}


@pytest.fixture
def home(paths):
    beat_days(paths, "2026-08-01", "2026-12-10")
    complete_run(paths, "sweep_2026-09_a", "2026-09-25")
    complete_run(paths, "sweep_2026-11_a", "2026-11-03")
    return paths


def test_the_window_holds_its_days_the_heartbeat_before_it_every_runs_day_and_the_archives_start(home):
    whole = gather(home, protocols=PROTOCOLS)
    cut = gather(home, protocols=PROTOCOLS, sealed=SEALED)
    assert cut.window_from == "2026-11-01" and cut.start == whole.start == "2026-08-01"
    beats = [r for r in whole.logs["runtime_fingerprint"] if r["date"] >= "2026-11-01"]
    assert cut.logs["runtime_fingerprint"] == beats
    assert cut.heartbeats[0].isoformat().startswith("2026-10-31") and cut.heartbeats[1:] == whole.heartbeats[-40:]
    assert [r["run_id"] for r in cut.runs] == ["sweep_2026-11_a"]
    assert [d.isoformat() for d in cut.run_days] == ["2026-09-25", "2026-11-03"]


def test_a_broken_line_before_the_window_is_not_read_by_its_gather_but_a_whole_gather_is_refused(home):
    log = home.record_log("runtime_fingerprint")
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:14] + [b"not a record\n"] + lines[15:]))
    cut = gather(home, protocols=PROTOCOLS, sealed=SEALED)     # August is not read: the deep verification's
    assert cut.window_from == "2026-11-01" and cut.start == "2026-08-01"
    with pytest.raises(RecordFileError, match="runtime_fingerprint"):
        gather(home, protocols=PROTOCOLS)
