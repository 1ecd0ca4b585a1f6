"""Checkpoints beside every record log, reads from a log's end, and the deep verification that reads the rest.

The first append of a process verifies only what follows its log's
checkpoint, and "today's record" or "the newest time" is read from the end:
neither reads a byte written long ago.  So an old byte changed in place (its
length kept, the checkpoint's seam left alone) passes them, by design — and
the daily rotation of the deep verification, which reads every byte of every
chained log within a week, finds it and pages the owner once.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmarchive.archive import ArchivePaths, jsonio, log_checkpoints, record_logs as records
from llmarchive.archive.jsonio import RecordFileError
from llmarchive.schedule import deep_rotation, outbox, webhook
from measure import jsonl
from tests.webhook_receiver import Receiver

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def paths(tmp_path) -> ArchivePaths:
    return ArchivePaths.from_env(tmp_path / "home").ensure()


def fresh_process(monkeypatch) -> None:
    """What a new process knows of the logs it appends to: nothing but what is on disk."""
    monkeypatch.setattr(jsonio, "_verified", {})


def skip(i: int, day: str = "2026-11-02") -> dict:
    return {"date": day, "job": "sweep", "protocol_id": "p", "reason": f"record {i:05d}", "cause": "budget_halted"}


def lines_parsed(monkeypatch) -> list[int]:
    """Count the lines the real JSONL reader parses (work, not time)."""
    count = [0]
    real = jsonl.JsonlReader._parse

    def counting(self, raw, number, start):
        count[0] += 1
        return real(self, raw, number, start)
    monkeypatch.setattr(jsonl.JsonlReader, "_parse", counting)
    return count


def old_month(paths: ArchivePaths, monkeypatch, n: int = 300) -> Path:
    """A skip log of ``n`` records of a closed month, checkpointed by a first append in a later process."""
    records.append_many(paths, "skip", [skip(i, "2026-10-01") for i in range(n)])
    fresh_process(monkeypatch)
    records.append(paths, "skip", skip(n, "2026-11-01"))
    assert jsonio.read_checkpoint(paths.record_log("skip"))[0] > 0
    return paths.record_log("skip")


def edit_in_place(log: Path, index: int) -> None:
    """Change one digit of an old record's reason: same length, its chain left broken."""
    lines = log.read_bytes().splitlines(keepends=True)
    lines[index] = lines[index].replace(b"record 00", b"record 90", 1)
    log.write_bytes(b"".join(lines))


def test_the_first_append_of_a_process_verifies_only_what_follows_the_checkpoint(paths, monkeypatch):
    old_month(paths, monkeypatch, 2000)
    records.append_many(paths, "skip", [skip(i, "2026-11-02") for i in range(5)])
    fresh_process(monkeypatch)
    parsed = lines_parsed(monkeypatch)
    records.append(paths, "skip", skip(9, "2026-11-03"))
    assert parsed[0] <= 10, f"a first append parsed {parsed[0]} lines of a 2006-record log"


def test_an_old_byte_changed_in_place_passes_the_hot_path_and_is_caught_and_paged_by_the_rotation(paths, monkeypatch):
    log = old_month(paths, monkeypatch)
    edit_in_place(log, 17)
    fresh_process(monkeypatch)
    records.append(paths, "skip", skip(1, "2026-11-02"))          # the hot path does not read the edited bytes
    assert records.latest(paths, "skip")["reason"] == "record 00001"
    monkeypatch.setattr(webhook, "CONNECT_TIMEOUT_S", 0.5)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    days = [f"2026-11-{d:02d}" for d in range(3, 10)]
    with Receiver() as hook:
        found = [deep_rotation.run(paths, day, hook.url) for day in days]     # a week of daily slices
    caught = [day for day, (outcome, _) in zip(days, found) if outcome.broken]
    assert caught, "the rotation never verified the edited log within a week"
    problem = found[days.index(caught[0])][0].broken[0]
    assert problem[0] == "private/records/skip.jsonl" and "hash chain broken" in problem[1]
    assert hook.taken_keys() == [deep_rotation.page_of(*problem).key], "the owner paged exactly once"


def test_a_log_rewritten_and_rechained_after_its_deep_verification_is_reported(paths, monkeypatch):
    records.append_many(paths, "skip", [skip(i) for i in range(20)])
    assert not log_checkpoints.verify_all(paths, "2026-11-02").broken
    log = paths.record_log("skip")
    log.unlink()
    jsonio.checkpoint_file(log).unlink(missing_ok=True)
    fresh_process(monkeypatch)
    records.append_many(paths, "skip", [skip(i) for i in range(3)] + [skip(99)] + [skip(i) for i in range(4, 20)])
    found = log_checkpoints.verify_all(paths, "2026-11-03")
    assert found.broken and "changed since they were verified on 2026-11-02" in found.broken[0][1]


def test_an_edit_at_the_seam_or_after_it_is_refused_by_the_first_append(paths, monkeypatch):
    log = old_month(paths, monkeypatch, 50)
    offset, _ = jsonio.read_checkpoint(log)
    lines = log.read_bytes().splitlines(keepends=True)
    seam = next(n for n in range(len(lines)) if sum(map(len, lines[:n + 1])) == offset)
    edit_in_place(log, seam)             # the record ending at the checkpoint's offset
    fresh_process(monkeypatch)
    with pytest.raises(RecordFileError, match="hash chain broken"):
        records.append(paths, "skip", skip(51))


def test_every_log_is_verified_within_a_week_a_slice_a_day(paths):
    for n in range(30):
        (paths.records / f"log{n:02d}.jsonl").write_bytes(b"")
    for n in range(30):
        jsonio.append_records(paths.records / f"log{n:02d}.jsonl", [{"n": n}])
    seen: dict[str, list[str]] = {}
    for d in range(1, 22):
        day = f"2026-11-{d:02d}"
        out = log_checkpoints.rotate(paths, day)
        assert not out.broken
        assert len(out.verified) <= 30 // 7 + 1 or d == 1
        for name in out.verified:
            seen.setdefault(name, []).append(day)
    assert set(seen) == {f"private/records/log{n:02d}.jsonl" for n in range(30)}
    for name, days in seen.items():
        gaps = [int(b[-2:]) - int(a[-2:]) for a, b in zip(days, days[1:])]
        assert max(gaps, default=0) <= 7 and int(days[-1][-2:]) >= 21 - 7, f"{name} verified on {days}"


def test_reads_from_the_end_agree_with_the_whole_log_and_stop_early(paths, monkeypatch):
    for d in range(1, 29):
        records.append_many(paths, "skip", [skip(i, f"2026-10-{d:02d}") for i in range(d % 3 + 1)])
    whole = records.read(paths, "skip")
    assert list(records.read_back(paths, "skip")) == whole[::-1]
    assert records.latest(paths, "skip", lambda r: r["date"] == "2026-10-05") == \
        [r for r in whole if r["date"] == "2026-10-05"][-1]
    assert records.dated(paths, "skip", "2026-10-27") == [r for r in whole if r["date"] == "2026-10-27"]
    assert records.since(paths, "skip", "2000-01-01") == whole
    assert records.newest_time(paths, "skip") is not None
    assert records.distinct(paths, "skip", ("date",)) == {(r["date"],) for r in whole}
    edit_in_place(paths.record_log("skip"), 2)       # far from the end: a read from the end never gets there
    assert records.latest(paths, "skip")["record_sha256"] == whole[-1]["record_sha256"]
    with pytest.raises(RecordFileError, match="does not match its record_sha256"):
        list(records.read_back(paths, "skip"))       # …and one that does get there refuses it


def test_the_set_of_values_ever_seen_is_folded_from_its_summary_onward_and_again_when_it_is_damaged(paths):
    records.append_many(paths, "skip", [skip(i, f"2026-10-{1 + i % 28:02d}") for i in range(3000)])
    assert len(records.distinct(paths, "skip", ("date",))) == 28
    records.append(paths, "skip", skip(1, "2026-11-30"))
    assert ("2026-11-30",) in records.distinct(paths, "skip", ("date",))
    summary = paths.record_log("skip").with_name("skip.jsonl.distinct-date")
    summary.write_bytes(summary.read_bytes().replace(b"2026-10-01", b"2026-10-99"))
    assert ("2026-10-99",) not in records.distinct(paths, "skip", ("date",))


def test_verify_deep_lists_a_broken_log_and_exits_1(paths, monkeypatch):
    old_month(paths, monkeypatch, 40)
    env = {**os.environ, "LLMARCHIVE_HOME": str(paths.home), "PYTHONPATH": str(REPO)}
    env.pop("LLMARCHIVE_WEBHOOK_URL", None)
    ok = subprocess.run([sys.executable, "-m", "llmarchive", "verify", "--deep"], env=env, capture_output=True,
                        text=True)
    assert ok.returncode == 0 and "OK: 1 of 1 chained logs verified whole" in ok.stdout, ok.stdout + ok.stderr
    edit_in_place(paths.record_log("skip"), 3)
    bad = subprocess.run([sys.executable, "-m", "llmarchive", "verify", "--deep", "--json"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 1, bad.stderr
    assert [b["log"] for b in json.loads(bad.stdout)["broken"]] == ["private/records/skip.jsonl"]


def test_a_verified_log_that_disappears_is_reported_unless_it_is_a_run_folders_trial_log(paths):
    records.append_many(paths, "skip", [skip(i) for i in range(5)])
    trials = paths.run_dir("run-a") / "trials.jsonl"
    jsonio.append_records(trials, [{"trial": 1}])
    assert len(log_checkpoints.verify_all(paths, "2026-11-02").verified) == 2
    trials.rename(trials.with_name("moved.jsonl"))
    paths.record_log("skip").unlink()
    found = log_checkpoints.verify_all(paths, "2026-11-03")
    assert found.broken == [("private/records/skip.jsonl",
                             "private/records/skip.jsonl: verified whole on 2026-11-02, and now missing")]


def test_a_log_cut_short_by_whole_records_after_its_deep_verification_is_reported(paths):
    records.append_many(paths, "skip", [skip(i) for i in range(10)])
    assert not log_checkpoints.verify_all(paths, "2026-11-02").broken
    log = paths.record_log("skip")
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:7]))   # a chain that still verifies
    for found in (log_checkpoints.rotate(paths, "2026-11-09"), log_checkpoints.verify_all(paths, "2026-11-09")):
        assert found.broken and "shorter than when it was verified on 2026-11-02" in found.broken[0][1]


def test_the_daily_log_integrity_asset_pages_a_broken_log_once_and_does_not_fail_its_run(paths, monkeypatch):
    from dagster import materialize

    from assets.integrity import log_integrity
    from assets.resources import ArchiveResource, WebhookResource

    log = old_month(paths, monkeypatch, 30)
    edit_in_place(log, 4)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with Receiver() as hook:
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook.url)
        resources = {"archive": ArchiveResource(home=str(paths.home)), "webhook": WebhookResource()}
        runs = [materialize([log_integrity], resources=resources) for _ in range(2)]
    assert all(run.success for run in runs)
    shown = runs[0].asset_materializations_for_node("log_integrity")[0].metadata
    assert [b["log"] for b in shown["broken"].data] == ["private/records/skip.jsonl"]
    assert len(hook.taken_keys()) == 1 and hook.taken_keys()[0].startswith("deep_verify|private/records/skip.jsonl|")


def test_the_bytes_a_caller_read_are_the_bytes_verified_whatever_was_appended_since(paths, monkeypatch):
    """Publication verifies a log and publishes its records from one reading: a record appended (or broken) on
    disk after that reading is neither verified into the entry nor published unverified."""
    log = old_month(paths, monkeypatch, n=20)
    raw = log.read_bytes()
    with open(log, "ab") as fh:
        fh.write(b'{"record_type":"skip","prev_sha256":"0","record_sha256":"0"}\n')     # breaks the chain on disk
    entry = log_checkpoints.verify_log_deep(log, None, "2026-11-03", raw)
    assert entry["offset"] == len(raw) and entry["records"] == 21      # the old month and one more
    with pytest.raises(log_checkpoints.LogChanged):
        log_checkpoints.verify_log_deep(log, entry, "2026-11-03")
