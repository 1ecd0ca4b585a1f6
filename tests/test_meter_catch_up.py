"""Meters of overlapping runs take in each other's entries without reading the whole ledger again.

Before each reservation or charge a meter takes in what other runs appended
under the ledger's lock.  Reading and verifying the whole ledger each time
made every call of a sweep cost in proportion to every entry the archive
had ever made (the two-year drill's months grew from 2.5 to 12 minutes);
only the appended entries are read now, checked onto the chain — and a
ledger that did not simply grow is read whole again, so a broken one is
still refused.
"""
import pytest

from llmarchive import budget as B
from llmarchive.archive import jsonio
from llmarchive.budget import SpendMeter

BUDGET = B.Budget(100.0, 5.0, 5.0, {"scenario": 0.01, "fingerprint": 0.001})
AUTH = B.Authorization("sweep", "scenario", "general", 0.01)


def reads_of_the_whole_ledger(monkeypatch) -> list:
    """Every full read of the spend ledger from now on (the real reader, counted)."""
    reads, real = [], jsonio.read_jsonl

    def counted(path, *args, **kwargs):
        if path.name.startswith("spend"):
            reads.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(jsonio, "read_jsonl", counted)
    return reads


def test_two_runs_reserving_in_turn_read_only_what_the_other_appended_and_agree_with_a_fresh_read(paths, monkeypatch):
    B.write_budget(paths, BUDGET)
    one = SpendMeter(paths, AUTH, "run-one", "anthropic", "m", BUDGET)
    two = SpendMeter(paths, AUTH, "run-two", "anthropic", "m", BUDGET)
    reads = reads_of_the_whole_ledger(monkeypatch)
    for i in range(30):
        one.reserve(f"s01/A/{i}", "s1", 1, 10, 50)
        two.reserve(f"s01/B/{i}", "s1", 1, 10, 50)
    assert reads == []                                   # each took in the other's entries, never the whole log
    month = B.ledger_entries(paths)[0]["month"]
    fresh = SpendMeter(paths, AUTH, "run-three", "anthropic", "m", BUDGET)
    one.reserve("s01/A/last", "s1", 1, 10, 50)
    fresh._fresh()
    assert one.committed(month, "general") == pytest.approx(fresh.committed(month, "general"))
    assert one.tally.count == fresh.tally.count == 61      # both have taken in every entry
    assert sorted(two.reserved) == sorted(e["reservation_id"] for e in B.ledger_entries(paths)
                                          if e.get("run_id") == "run-two")


def test_a_ledger_rewritten_under_a_meter_is_read_whole_again_and_its_broken_chain_refused(paths):
    B.write_budget(paths, BUDGET)
    one = SpendMeter(paths, AUTH, "run-one", "anthropic", "m", BUDGET)
    one.reserve("s01/A/0", "s1", 1, 10, 50)
    SpendMeter(paths, AUTH, "run-two", "anthropic", "m", BUDGET).reserve("s01/B/0", "s1", 1, 10, 50)
    ledger = paths.spend_ledger
    lines = ledger.read_bytes().splitlines(keepends=True)
    ledger.write_bytes(lines[0] + lines[1].replace(b'"s01/B/0"', b'"s01/B/9"'))   # the appended entry edited
    with pytest.raises(Exception, match="record_sha256"):
        one.reserve("s01/A/1", "s1", 1, 10, 50)
