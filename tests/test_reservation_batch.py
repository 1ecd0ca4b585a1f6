"""Reservations made together (llmarchive.run.reservations): one write, the same entries, the same hard cap."""
import asyncio
from unittest import mock

from llmarchive import budget as B
from llmarchive.archive import ArchivePaths, dates
from llmarchive.budget import SpendMeter
from llmarchive.run.reservations import Reserver

TIGHT = B.Budget(10.001, 5.0, 5.0, {"scenario": 0.0001, "fingerprint": 0.0001},
                 prices_eur_per_mtok={"input": 2.0, "output": 10.0})        # general pool: €0.001
AUTH = B.Authorization("sweep", "scenario", "general", 0.0001)
VOLATILE = ("recorded_at", "prev_sha256", "record_sha256")


def test_a_batch_past_the_cap_refuses_exactly_the_attempts_a_one_by_one_meter_refuses(paths, tmp_path):
    B.write_budget(paths, TIGHT)
    requests = [("s01/A/0", "s1", 1, 10, 50), ("s01/B/0", "s1", 1, 10, 50), ("s01/C/0", "s1", 1, 0, 1)]
    results = SpendMeter(paths, AUTH, "run-g", "anthropic", "m", TIGHT).reserve_many(requests)
    # €0.000584 fits, a second €0.000584 would pass €0.001 (the first one counts), a smaller one still fits
    assert [isinstance(r, B.BudgetHalted) for r in results] == [False, True, False]
    batched = [{k: v for k, v in e.items() if k not in VOLATILE} for e in B.ledger_entries(paths)]

    other = ArchivePaths.from_env(tmp_path / "one-by-one").ensure()
    B.write_budget(other, TIGHT)
    meter = B.SpendMeter(other, AUTH, "run-g", "anthropic", "m", TIGHT)
    refused = []
    for request in requests:
        try:
            meter.reserve(*request)
            refused.append(False)
        except B.BudgetHalted:
            refused.append(True)
    single = [{k: v for k, v in e.items() if k not in VOLATILE} for e in B.ledger_entries(other)]
    assert refused == [False, True, False]
    assert batched == single and len(batched) == 2


def test_attempts_asking_together_are_reserved_with_one_write_and_each_gets_its_own_entry(paths):
    B.write_budget(paths, TIGHT)
    meter = SpendMeter(paths, B.Authorization("manual", "scenario", "general", None, budgeted=False), "run-u",
                       "openai", "m", TIGHT)
    reserver = Reserver(meter)
    writes = []
    real_extend = meter.log.extend

    def counting_extend(entries):
        entries = list(entries)
        writes.append(len(entries))
        return real_extend(entries)

    async def ask_together() -> list[dict]:
        return await asyncio.gather(*(reserver.reserve((f"s01/A/{i}", "s1", 1, 10, 50)) for i in range(20)))

    with mock.patch.object(meter.log, "extend", side_effect=counting_extend):
        got = asyncio.run(ask_together())
    assert sum(writes) == 20 and len(writes) < 20          # grouped: fewer writes (and fsyncs) than attempts
    assert [e["call_key"] for e in got] == [f"s01/A/{i}" for i in range(20)]
    assert all(e["record_sha256"] for e in got) and len(B.ledger_entries(paths)) == 20
    assert set(meter.reserved) == {e["reservation_id"] for e in got}


def test_a_failed_batch_write_reserves_nothing_and_every_waiting_attempt_sees_the_failure(paths):
    B.write_budget(paths, TIGHT)
    meter = SpendMeter(paths, AUTH, "run-f", "anthropic", "m", TIGHT)
    reserver = Reserver(meter)

    async def ask() -> list:
        return await asyncio.gather(*(reserver.reserve((f"s01/A/{i}", "s1", 1, 0, 1)) for i in range(3)),
                                    return_exceptions=True)

    with mock.patch.object(meter.log, "extend", side_effect=OSError(28, "No space left on device")):
        got = asyncio.run(ask())
    assert all(isinstance(e, OSError) for e in got)
    assert B.ledger_entries(paths) == [] and meter.reserved == {} and meter.committed(dates.utc_month(), "general") == 0
