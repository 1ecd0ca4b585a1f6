"""Coverage of the open window: a sealed month is read back from the log, the open months are judged (method §10.4).

The home: two protocols admitted on 2026-09-20, the daily cycle from
2026-08-01 to 2026-12-10 with a three-day silence across September's end, the sweep of
one protocol in September and November, a skip of the other, a subject
fingerprint day that recorded and one that spent but recorded nothing (unexplained: its month stays open).  Each month is judged on the 1st of
the next by :func:`record_month`, as the schedule does, and so sealed; then
coverage through 2026-12-10 is computed the old way (every period judged
afresh from the whole history) and the new way (the open window judged, the
sealed months read back), on the same real files.
"""
import shutil
from datetime import date, datetime, timezone

import pytest

from llmarchive.archive import RecordFileError, record_logs as records, record_skip
from llmarchive.schedule import coverage_summary, record_month
from llmarchive.schedule.coverage import compute, gather, write_rows
from tests.test_coverage import (P_GUARD, P_OPEN, PROTOCOLS, beat_days, complete_run, fingerprint_record,
                                 fingerprint_spend)

NOW = datetime(2026, 12, 10, 12, tzinfo=timezone.utc)
CLOSES = [("2026-08", date(2026, 9, 1)), ("2026-09", date(2026, 10, 1)), ("2026-10", date(2026, 11, 1)),
          ("2026-11", date(2026, 12, 1))]


@pytest.fixture
def home(paths):
    beat_days(paths, "2026-08-01", "2026-12-10", skip=("2026-09-30", "2026-10-01", "2026-10-02"))
    complete_run(paths, "sweep_2026-09_a", "2026-09-25")
    complete_run(paths, "sweep_2026-11_a", "2026-11-03")
    record_skip(paths, "2026-11-04", "sweep", P_GUARD, "not_preregistered", "not_preregistered: no manifest")
    fingerprint_record(paths, "2026-10-07")
    fingerprint_spend(paths, "2026-10-08")
    return paths


def facts(paths, sealed=()):
    return gather(paths, protocols=PROTOCOLS, sealed=sealed)


def close_each_month(paths) -> None:
    """Judge each month on the 1st of the next; October keeps its unexplained day (spend, no record), so stays open."""
    for month, first_of_next in CLOSES:
        result, unexplained = record_month(paths, month, first_of_next, facts=facts(paths), now=NOW)
        assert result.pending == [], month
        # The open window reaches back to October until its day is explained: each later month judges it again.
        assert result.unexplained == ([("subject_fingerprint", "2026-10-08", None)] if month >= "2026-10" else [])


def test_the_open_window_and_the_sealed_months_read_back_are_the_rows_a_whole_recomputation_finds(home):
    old = compute(home, "2026-12-10", facts=facts(home), now=NOW, read_back=False)
    assert old.read_back == [] and {r["period"][:7] for r in old.rows} >= {"2026-08", "2026-12"}
    close_each_month(home)
    sealed = coverage_summary.current(home).sealed
    assert sealed == {"2026-08", "2026-09", "2026-11"}, "a month with an unexplained period is not sealed"
    new = compute(home, "2026-12-10", facts=facts(home, sealed), now=NOW)
    assert new.read_back == sorted(sealed), "the closed months were read back, not judged"
    assert new.rows == old.rows and new.pending == old.pending and new.unexplained == old.unexplained
    fingerprint = {r["period"]: r["status"] for r in new.rows if r["job"] == "subject_fingerprint"}
    assert fingerprint["2026-10-07"] == "ran" and "2026-10-08" not in fingerprint
    assert ("subject_fingerprint", "2026-10-08", None) in new.unexplained, "the spend, seen through the tally"
    # The running month alone, as status asks for it: the same rows as the whole computation's for it.
    december = [r for r in old.rows if r["period"].startswith("2026-12")]
    days = [f"2026-12-{d:02d}" for d in range(1, 11)]
    alone = compute(home, "2026-12-10", facts=gather(home, protocols=PROTOCOLS, since="2026-12-01"),
                    periods=["2026-12", *days], now=NOW)
    assert alone.rows == december


def test_a_sealed_month_is_not_judged_again_its_rows_come_from_the_log(home):
    close_each_month(home)
    shutil.rmtree(home.run_dir("sweep_2026-09_a"))      # the sealed month's facts are gone from the disk
    afresh = compute(home, "2026-12-10", facts=facts(home), now=NOW, read_back=False)
    read_back = compute(home, "2026-12-10", facts=facts(home, coverage_summary.current(home).sealed), now=NOW)

    def sweep(result):
        return {r["period"]: r["status"] for r in result.rows if r["job"] == "full_sweep" and r["protocol_id"] == P_OPEN}
    assert sweep(afresh)["2026-09"] == "gap", "judged again, the missing run would be a gap"
    assert sweep(read_back)["2026-09"] == "ran", "read back, the sealed month keeps the row written at its close"


def test_a_byte_edited_in_a_sealed_months_rows_is_refused_when_they_are_read_back(home):
    close_each_month(home)
    log = home.record_log("coverage")
    data = log.read_bytes()
    at = data.index(b'"period":"2026-09-14"')
    log.write_bytes(data[:at] + data[at:].replace(b"2026-09-14", b"2026-09-15", 1))
    with pytest.raises(RecordFileError, match="do not match their hashes or links"):
        compute(home, "2026-12-10", facts=facts(home, coverage_summary.current(home).sealed), now=NOW)


def test_writing_the_open_months_rows_reads_only_their_span_of_the_coverage_log(home):
    close_each_month(home)
    summary = coverage_summary.current(home)
    december = compute(home, "2026-12-10", facts=facts(home, summary.sealed), now=NOW,
                       periods=["2026-12-01", "2026-12-02"]).rows
    # Every byte before the open months' span is made unreadable: a writer that read the whole log would fail.
    log = home.record_log("coverage")
    data = log.read_bytes()
    cut = max(span[1] for span in summary.spans.values())
    assert write_rows(home, december) and records.read(home, "coverage")[-1]["period"] == "2026-12-02"
    with open(log, "r+b") as fh:
        fh.write(b"\xff" * (cut - 1))      # keeps each line's newline at the end of the sealed rows
    assert write_rows(home, december) == [], "unchanged rows are found from the open month's span alone"



def test_a_lost_summary_forgets_every_seal_and_the_months_are_judged_again(home):
    close_each_month(home)
    coverage_summary.summary_file(home).write_text("not a summary\n")
    assert coverage_summary.current(home).sealed == set()
    result = compute(home, "2026-12-10", facts=facts(home), now=NOW)
    assert result.read_back == [] and result.rows == compute(home, "2026-12-10", facts=facts(home), now=NOW,
                                                             read_back=False).rows


def test_the_ledgers_checkpoint_carries_the_days_of_fingerprint_spend_and_an_older_one_is_not_trusted(home):
    from llmarchive.budget import LedgerTally, read_ledger

    tally = read_ledger(home).tally
    assert tally.fingerprint_days == {"2026-10-08": 1}
    assert LedgerTally.from_json(tally.to_json()).fingerprint_days == {"2026-10-08": 1}
    older = {k: v for k, v in tally.to_json().items() if k != "fingerprint_days"}
    with pytest.raises(KeyError):
        LedgerTally.from_json(older)      # a checkpoint folded before the days were counted: the ledger is read again


def test_a_sealed_month_that_lacks_a_row_of_todays_table_is_judged_again(home):
    close_each_month(home)
    later = {**PROTOCOLS[0], "protocol_id": "risky_choice_framing__order__v0", "twin_id": None}
    whole = gather(home, protocols=[*PROTOCOLS, later])       # a protocol admitted since, dated before the seals
    result = compute(home, "2026-12-10", facts=whole, now=NOW)
    assert "2026-09" not in result.read_back and "2026-08" in result.read_back
    assert result.rows == compute(home, "2026-12-10", facts=whole, now=NOW, read_back=False).rows
    assert ("2026-11", "full_sweep", later["protocol_id"]) in {(r["period"], r["job"], r["protocol_id"])
                                                               for r in result.rows}
