"""One month for money: a run's calls are charged to the month its permission was judged against (method §9.4).

The story of issue 44: a run dated November is interrupted part-way and
resumed on 5 December, while three December runs are authorised against a
December general pool of €4.20 (three runs and a half).  The resumed run is
judged, and earmarked, on November's pools; if its calls were charged to the
month of the clock, December would carry money its pools never let go —
€4.80 asked of €4.20 — and one run would be left part-paid.  Real runs
(:func:`llmarchive.schedule.paid_run.start_paid_run`) against the fake
provider over HTTP; the resumed run calls side by side with the December
runs (it is held at the provider until they are authorised and done).
"""
import threading
import time

import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import load_run
from llmarchive.protocols import registry
from llmarchive.run import RunInterrupted
from llmarchive.schedule.paid_run import PaidRun, start_paid_run
from llmarchive.subjects import make_subject
from tests.fake_provider import Fault, FakeProvider, decide_by_hash

pytestmark = pytest.mark.time_machine("2026-11-20T09:00:00Z")

RUN_EUR = 120 * 0.01
# general pool = ceiling - bridge reserve - heartbeat reserve = €4.20, three runs and a half; no rung in reach
BUDGET = budget_mod.Budget(3.5 * RUN_EUR + 6.5 + 1.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001},
                           ladder=(budget_mod.Rung(99.9, 0, ()),))
NOVEMBER, DECEMBER = "risky_choice_framing__wording__v0", ["risky_choice_framing__anchoring__v0",
                                                           "risky_choice_framing__order__v0",
                                                           "risky_choice_framing__default__v0"]
ANSWERED_IN_NOVEMBER = 20


def start(paths, fake, pid: str, run_id: str, day: str, **kw) -> object:
    protocol = registry.load_protocol(paths, pid)
    subj = make_subject("anthropic", max_tokens=protocol["generation"]["max_tokens"], model="claude-sonnet-5",
                        base_url=fake.base_url, max_attempts=1, sleep=lambda s: None)
    return start_paid_run(paths, protocol, subj, PaidRun(job="manual", run_id=run_id, day=day, concurrency=4, **kw),
                          budget=BUDGET)


def never_past_the_cap(paths, month: str) -> float:
    """The most ``month``'s general pool ever held (charged + open worst case), folding the ledger entry by entry."""
    tally, most = budget_mod.LedgerTally(), 0.0
    for entry in budget_mod.ledger_entries(paths):
        tally.add(entry, 0)
        totals = tally.month_totals(month)
        most = max(most, totals.charged_eur["general"] + totals.worst_case_eur["general"])
    return most


def test_a_november_run_resumed_in_december_is_charged_to_november_and_leaves_december_whole(paid_paths,
                                                                                          time_machine):
    paths = paid_paths
    budget_mod.write_budget(paths, BUDGET)
    prompts = {v for item in registry.load_protocol(paths, NOVEMBER)["panel"] for v in item["versions"].values()}
    answer = decide_by_hash()
    seen = {"november": 0, "resumed": False}
    held = threading.Event()

    def respond(request):
        if request.prompt not in prompts:
            return answer(request)
        seen["november"] += 1
        if not seen["resumed"]:                # 20 November: the provider goes away part-way through the run
            return answer(request) if seen["november"] <= ANSWERED_IN_NOVEMBER else Fault.status(503)
        held.wait(120)                         # 5 December: the resumed run calls beside the December runs
        return answer(request)

    with FakeProvider(respond) as fake:
        with pytest.raises(RunInterrupted):
            start(paths, fake, NOVEMBER, "november-run", "2026-11-20", run_date="2026-11-20")
        time_machine.move_to("2026-12-05T09:00:00Z")
        seen.update(november=0, resumed=True)
        resumed: dict = {}

        def resume():
            try:
                resumed["result"] = start(paths, fake, NOVEMBER, "november-run", "2026-11-20")
            except Exception as exc:           # the outcome is asserted below, in the test's thread
                resumed["error"] = exc

        worker = threading.Thread(target=resume)
        worker.start()
        deadline = time.monotonic() + 60
        while seen["november"] == 0:
            assert time.monotonic() < deadline and worker.is_alive(), resumed
            time.sleep(0.02)
        december = [start(paths, fake, pid, f"december-run-{i}", "2026-12-05", run_date="2026-12-05")
                     for i, pid in enumerate(DECEMBER)]
        held.set()
        worker.join(120)
        billed = fake.billed["calls"]

    entries = budget_mod.ledger_entries(paths)
    charges = [e for e in entries if e.get("record_type", "spend") == "spend"]
    mine = [e for e in entries if e["run_id"] == "november-run"]
    assert {e["month"] for e in mine} == {"2026-11"}, sorted({(e["month"], e["recorded_at"][:10]) for e in mine})
    assert "error" not in resumed, resumed.get("error")
    assert resumed["result"].complete and len(load_run(paths.run_dir("november-run")).trials) == 120
    assert [r.complete for r in december] == [True, True, True]
    for i in range(3):
        paid = [e["cost_eur"] for e in charges if e["run_id"] == f"december-run-{i}" and e.get("answered")]
        assert len(paid) == 120 and sum(paid) == pytest.approx(RUN_EUR), "every December run is paid in full"
    assert never_past_the_cap(paths, "2026-12") <= BUDGET.general_pool_eur + 1e-9
    december_spent = budget_mod.ladder_state(paths, BUDGET, month="2026-12").spent_eur["general"]
    assert december_spent == pytest.approx(3 * RUN_EUR)
    assert budget_mod.ladder_state(paths, BUDGET, month="2026-11").spent_eur["general"] == pytest.approx(RUN_EUR)
    assert billed == sum(1 for e in charges if e.get("answered")) == 4 * 120
