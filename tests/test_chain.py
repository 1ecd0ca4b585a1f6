"""The append-only hash chain and the durable log built on it."""
import pytest

from llmarchive.jsonio import ChainedLog, read_jsonl
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
