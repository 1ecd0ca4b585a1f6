"""Appends that cost the same on any log: tail-only reads, batches, and failed writes."""
import json

import pytest

from llmarchive.archive import ArchivePaths, jsonio, record_logs as records
from llmarchive.archive.jsonio import ChainedLog, RecordFileError, append_records, read_jsonl, tail_hash, verify_log
from measure import chain


def _skip(i: int) -> dict:
    return {"date": "2026-11-02", "job": "sweep", "protocol_id": "p", "reason": f"record {i}",
            "cause": "budget_halted"}


def _coverage(i: int, status: str = "gap", cause="budget_halted") -> dict:
    return {"period": "2026-11", "job": "sweep", "series": "commercial", "protocol_id": f"p{i}",
            "status": status, "cause": cause, "run_id": None, "detail": None}


def test_an_append_reads_only_the_tail_not_the_whole_log(tmp_path, monkeypatch):
    paths = ArchivePaths(tmp_path)
    for i in range(5):
        records.append(paths, "skip", _skip(i))

    def whole_log_read(*args, **kwargs):
        raise AssertionError("an append must not read the whole log")

    monkeypatch.setattr(jsonio, "read_jsonl", whole_log_read)
    written = records.append(paths, "skip", _skip(5))
    monkeypatch.undo()
    log = read_jsonl(paths.record_log("skip"))
    assert written == log[-1] and written["prev_sha256"] == log[-2]["record_sha256"]
    assert chain.verify(log) == 6


def _edit_middle(path, reason):
    lines = path.read_text().splitlines(keepends=True)
    edited = json.loads(lines[1])
    edited["reason"] = reason
    lines[1] = json.dumps(edited, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    path.write_text("".join(lines))


def test_a_break_in_the_middle_is_refused_by_appends_on_open_and_on_demand(tmp_path):
    paths = ArchivePaths(tmp_path)
    for i in range(4):
        records.append(paths, "skip", _skip(i))
    path = paths.record_log("skip")
    _edit_middle(path, "quietly rewritten")
    edited = path.read_bytes()
    with pytest.raises(RecordFileError, match="hash chain broken .* refusing to append"):
        records.append(paths, "skip", _skip(4))
    assert path.read_bytes() == edited, "nothing chained onto an edited log"
    with pytest.raises(chain.ChainError, match="record #1"):
        records.verify(paths, "skip")
    with pytest.raises(chain.ChainError, match="record #1"):
        ChainedLog(path)


def test_a_new_process_refuses_a_log_edited_without_changing_its_length(tmp_path, monkeypatch):
    paths = ArchivePaths(tmp_path)
    for i in range(4):
        records.append(paths, "skip", _skip(i))
    path = paths.record_log("skip")
    _edit_middle(path, "record 9")              # same length as "record 1"
    monkeypatch.setattr(jsonio, "_verified", {})   # what a fresh process knows: nothing
    with pytest.raises(RecordFileError, match="record #1"):
        records.append(paths, "skip", _skip(4))


def test_records_appended_by_another_writer_are_verified_and_only_they_are_read(tmp_path, monkeypatch):
    paths = ArchivePaths(tmp_path)
    path = paths.record_log("skip")
    for i in range(3):
        records.append(paths, "skip", _skip(i))
    # Another process appends one good record (this process's memory of the log does not change).
    good = chain.link({"record_type": "skip", **_skip(3)}, read_jsonl(path)[-1]["record_sha256"])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(chain.to_line(good))
    starts = []
    real = jsonio._chain_from

    def spy(p, fh, start, prev, size):
        starts.append(start)
        return real(p, fh, start, prev, size)

    monkeypatch.setattr(jsonio, "_chain_from", spy)
    written = records.append(paths, "skip", _skip(4))
    assert written["prev_sha256"] == good["record_sha256"] and starts and 0 not in starts
    records.append(paths, "skip", _skip(5))
    assert 0 not in starts and verify_log(path) == 6
    # … and one whose link is wrong: refused.
    bad = chain.link({"record_type": "skip", **_skip(6)}, chain.GENESIS)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(chain.to_line(bad))
    with pytest.raises(RecordFileError, match="hash chain broken"):
        records.append(paths, "skip", _skip(7))


def test_a_log_that_lost_complete_records_is_refused(tmp_path):
    paths = ArchivePaths(tmp_path)
    for i in range(3):
        records.append(paths, "skip", _skip(i))
    path = paths.record_log("skip")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]))
    with pytest.raises(RecordFileError, match="complete records were removed"):
        records.append(paths, "skip", _skip(3))


def test_an_edited_last_record_is_refused_by_the_next_append(tmp_path):
    path = tmp_path / "log.jsonl"
    append_records(path, [{"i": 0}, {"i": 1}])
    text = path.read_text().replace('"i":1', '"i":7')
    path.write_text(text)
    with pytest.raises(RecordFileError, match="hash chain broken at record #1"):
        append_records(path, [{"i": 2}])
    assert path.read_text() == text


def test_a_batch_is_one_chained_write_and_a_bad_row_writes_nothing(tmp_path):
    paths = ArchivePaths(tmp_path)
    records.append(paths, "coverage", _coverage(0))
    batch = records.append_many(paths, "coverage", [_coverage(i) for i in range(1, 115)])
    assert len(batch) == 114
    log = read_jsonl(paths.record_log("coverage"))
    assert log[1:] == batch and records.verify(paths, "coverage") == 115
    assert all(r["record_type"] == "coverage_gap" and r["recorded_at"] for r in batch), "a gap row's type"
    size = paths.record_log("coverage").stat().st_size
    with pytest.raises(records.RecordError, match="exactly one cause"):
        records.append_many(paths, "coverage", [_coverage(200), _coverage(201, cause="weather")])
    assert paths.record_log("coverage").stat().st_size == size
    assert records.append_many(paths, "coverage", []) == []


def test_a_torn_tail_is_cut_before_the_next_append(tmp_path):
    paths = ArchivePaths(tmp_path)
    for i in range(3):
        records.append(paths, "skip", _skip(i))
    path = paths.record_log("skip")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"record_type": "skip", "reason": "killed mid-li')
    assert tail_hash(path) == read_jsonl(path)[-1]["record_sha256"]
    records.append_many(paths, "skip", [_skip(3), _skip(4)])
    assert path.read_text().count("killed mid-li") == 0
    assert verify_log(path) == 5


def test_an_open_log_cuts_a_torn_tail_written_after_it_was_opened(tmp_path):
    path = tmp_path / "trials.jsonl"
    log = ChainedLog(path)
    log.extend([{"i": 0}, {"i": 1}])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"i": 2, "prev')
    log.append({"i": 2})
    assert verify_log(path) == 3
    assert [r["i"] for r in ChainedLog(path).records] == [0, 1, 2]


@pytest.mark.parametrize("writer", ["append_records", "chained_log"])
def test_a_write_that_fails_mid_append_leaves_a_log_that_reopens_cleanly(tmp_path, monkeypatch, writer):
    path = tmp_path / "log.jsonl"
    append_records(path, [{"i": 0}, {"i": 1}])
    before = path.read_bytes()
    log = ChainedLog(path)
    real_fsync = jsonio.os.fsync
    calls = {"n": 0}

    def failing_fsync(fd):
        calls["n"] += 1
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jsonio.os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="No space left"):
        if writer == "append_records":
            append_records(path, [{"i": 2}, {"i": 3}])
        else:
            log.extend([{"i": 2}, {"i": 3}])
    monkeypatch.setattr(jsonio.os, "fsync", real_fsync)
    assert calls["n"] >= 1
    assert path.read_bytes() == before
    append_records(path, [{"i": 4}])
    assert [r["i"] for r in ChainedLog(path).records] == [0, 1, 4]


def test_records_append_keeps_working_and_append_record_returns_the_written_record(tmp_path):
    paths = ArchivePaths(tmp_path)
    first = records.append(paths, "skip", _skip(0))
    assert first["prev_sha256"] == chain.GENESIS
    assert tail_hash(paths.record_log("skip")) == first["record_sha256"]
    assert tail_hash(tmp_path / "absent.jsonl") == chain.GENESIS


def test_a_disk_that_fills_half_way_through_a_batch_leaves_no_half_record(tmp_path, monkeypatch):
    path = tmp_path / "log.jsonl"
    append_records(path, [{"i": 0}])
    before = path.read_bytes()
    real_write = jsonio.os.write
    calls = {"n": 0}

    def half_then_full(fd, data):
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jsonio.os, "write", half_then_full)
    with pytest.raises(OSError, match="No space left"):
        append_records(path, [{"i": 1, "text": "x" * 200}, {"i": 2}])
    monkeypatch.setattr(jsonio.os, "write", real_write)
    assert path.read_bytes() == before
    append_records(path, [{"i": 3}])
    assert [r["i"] for r in ChainedLog(path).records] == [0, 3]


def test_a_coverage_row_that_ran_keeps_its_kind_and_a_gap_row_is_a_coverage_gap(tmp_path):
    paths = ArchivePaths(tmp_path)
    ran = records.append(paths, "coverage", {**_coverage(0, status="ran", cause=None), "run_id": "r0"})
    gap = records.append(paths, "coverage", _coverage(1))
    assert ran["record_type"] == "coverage" and gap["record_type"] == "coverage_gap"
    assert [r["record_type"] for r in records.read(paths, "coverage")] == ["coverage", "coverage_gap"]
