"""The append-only hash chain and the durable log built on it."""
from pathlib import Path

import pytest

from llmarchive.archive.jsonio import ChainedLog, read_jsonl
from measure import chain


def _records(n=4):
    out, prev = [], chain.GENESIS
    for i in range(n):
        rec = chain.link({"record_type": "trial", "i": i}, prev)
        prev = rec["record_sha256"]
        out.append(rec)
    return out


def test_a_fresh_chain_verifies():
    assert chain.verify(_records()) == 4


def test_editing_a_record_names_it_as_the_first_break():
    records = _records()
    records[2]["i"] = 99
    with pytest.raises(chain.ChainError, match="record #2"):
        chain.verify(records)


def test_deleting_a_record_breaks_the_next_link():
    records = _records()
    del records[1]
    assert chain.first_break(records) == 1


def test_reordering_breaks_the_chain():
    records = _records()
    records[1], records[2] = records[2], records[1]
    assert chain.first_break(records) == 1


def test_chained_log_appends_durably_and_survives_a_torn_tail(tmp_path):
    path = tmp_path / "log.jsonl"
    log = ChainedLog(path)
    for i in range(3):
        log.append({"record_type": "trial", "i": i})
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"record_type": "trial", "i": 3, "prev')  # a writer killed mid-line
    reopened = ChainedLog(path)
    assert len(reopened.records) == 3
    reopened.append({"record_type": "trial", "i": 3})
    assert chain.verify(read_jsonl(path)) == 4


def test_a_corrupt_line_in_the_middle_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "log.jsonl"
    log = ChainedLog(path)
    log.append({"i": 0})
    text = path.read_text()
    path.write_text("not json\n" + text)
    with pytest.raises(ValueError, match="line 1"):
        ChainedLog(path)


def _append_skips(home: str, writer: int, count: int) -> None:
    from llmarchive.archive import record_logs as records
    from llmarchive.archive.paths import ArchivePaths

    paths = ArchivePaths(Path(home))
    for i in range(count):
        records.append(paths, "skip", {"date": "2026-11-02", "job": "sweep", "protocol_id": f"p{writer}",
                                       "reason": f"writer {writer} record {i}", "cause": "budget_halted"})


def test_records_appended_by_several_processes_at_once_keep_one_valid_chain(tmp_path):
    import multiprocessing

    from llmarchive.archive import record_logs as records
    from llmarchive.archive.paths import ArchivePaths

    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_skips, args=(str(tmp_path), w, 30)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    written = records.read(ArchivePaths(tmp_path), "skip")
    assert len(written) == 120
    chain.verify(written)
