"""The append-only hash chain and the durable log built on it."""
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmarchive.archive import ChainedLog, read_jsonl
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
    from llmarchive.archive import ArchivePaths

    paths = ArchivePaths(Path(home))
    for i in range(count):
        records.append(paths, "skip", {"date": "2026-11-02", "job": "sweep", "protocol_id": f"p{writer}",
                                       "reason": f"writer {writer} record {i}", "cause": "budget_halted"})


def test_records_appended_by_several_processes_at_once_keep_one_valid_chain(tmp_path):
    import multiprocessing

    from llmarchive.archive import record_logs as records
    from llmarchive.archive import ArchivePaths

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


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8)
# keys on both sides of "record_sha256" and "prev_sha256", equal to their prefixes, and any text
_KEYS = st.sampled_from(["a", "prev", "prev_sha", "r", "record", "record_sha", "record_sha2", "record_sha25",
                         "record_sha256x", "record_sha257", "record_t",
                         "response_text", "z", "é", ""]) | st.text(max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS.filter(lambda k: k not in ("record_sha256", "prev_sha256")), _JSON_VALUES,
                       max_size=8), st.sampled_from([chain.GENESIS, "f" * 64]))
def test_a_record_serialised_once_is_the_linked_record_and_its_canonical_line(record, prev):
    entry, line = chain.linked_line(record, prev)
    assert entry == chain.link(record, prev)
    assert line == chain.to_line(chain.link(record, prev))
    if prev == chain.GENESIS:
        assert chain.verify([json.loads(line)]) == 1


def test_a_record_with_a_key_that_is_not_text_is_refused_as_the_two_step_link_refuses_it():
    with pytest.raises(TypeError):
        chain.link({1: "one"}, chain.GENESIS)
    with pytest.raises(TypeError):
        chain.linked_line({1: "one"}, chain.GENESIS)


def test_a_record_already_chained_is_refused_by_the_one_pass_link():
    with pytest.raises(ValueError, match="must not carry"):
        chain.linked_line({"record_sha256": "x"}, chain.GENESIS)
