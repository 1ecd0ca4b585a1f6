"""The monthly budget, the spend ledger and the degradation ladder (method §9).

Everything here is private (``private/budget.json``, ``private/spend.jsonl``):
the mechanism is ordinary, the euro figures are the owner's.

Three pools, never mixed:

* **general** = ceiling − bridge reserve − heartbeat reserve.  Scenario work
  (the sweep, a manual run) is charged here and may never run past it, so
  no scenario run ever reaches a reserve.  "Spend used" on the ladder is
  general spend ÷ general pool.
* **bridge** — a generation bridge draws on ``bridge_reserve_eur`` and on
  nothing else, and its spend never counts against the general pool.
* **heartbeat** — ``subject_fingerprint`` is never gated by the ladder: it is
  charged to the general pool while that has room, then to the heartbeat
  reserve, and stops (``budget_halted``) when both are spent — the ceiling is
  hard for it too.  No other job reaches the heartbeat reserve.

That last rule is the reading method §9.3 states of two sentences of the
design that cannot both hold literally: the subject fingerprint (a daily
job) is never budget-gated, and the heartbeat reserve is never consumed by
the daily cycle.  The reserve has no other use — the bridge has its own, the
sweep may not touch it — so it is read as what keeps the daily paid check
alive once the general pool is spent (the ladder's "never zero"), and "the
daily cycle" as the cycle's scenario work.  Each job's pool is fixed by the
jobs table and checked where a run's permission is made
(:class:`~llmarchive.budget.ladder.Authorization`).

Money has one month (method §9.4): the month a run's permission is judged
against — the month of the day the decision is made for — is the month
each of its reservations and charges is written to, whatever day the call
is made on.  A run dated November and resumed in December is charged to
November, whose pools let it go.

One module per concern, each importing only those above it in this list:

* :mod:`~llmarchive.budget.config` — ``budget.json``, the paid jobs and
  their pools, the errors, and :func:`eur`, how an amount is written for a
  person;
* :mod:`~llmarchive.budget.spend_ledger` — reading the ledger: charges,
  reservations, a month's spend;
* :mod:`~llmarchive.budget.earmarks` — what running paid jobs keep back of
  a pool until they end, and the lock that refuses a second launch of one
  (method §9.4);
* :mod:`~llmarchive.budget.ladder` — the ladder: the month's plan, one
  run's permission, the protocol selection rule;
* :mod:`~llmarchive.budget.degradation` — method §9's order of cuts;
* :mod:`~llmarchive.budget.meter` — :class:`SpendMeter`, the one writer of
  the ledger.

Every name below is the one name of its operation, defined in one of those
modules and only re-exported here, so ``from llmarchive import budget``
reaches the whole API.  A skip the budget records gets its cause from
:mod:`llmarchive.archive.skips`, never by hand.
"""
from llmarchive.budget.config import (CATEGORIES, DEFAULT_LADDER, EPSILON_EUR, JOBS, POOL_NAMES, POOLS, PRICE_KEYS,
                                      PROMPT_FRAMING_TOKENS, Budget, BudgetError, BudgetHalted, Rung, eur, job_name,
                                      load_budget, parse_budget, write_budget)
from llmarchive.budget.degradation import (CUT_KIND, FINGERPRINT_CALLS_PER_MONTH, LEVELS, MEASURED_MONTHS,
                                           MIN_MEASURED_CALLS, QUARTER_START_MONTHS, Level, budget_cuts,
                                           current_level, kept_protocols, measured_rate, projected_month_eur,
                                           review_degradation, sweep_due)
from llmarchive.budget.checkpoint import LedgerTally, LedgerView, fingerprint_day, read_ledger
from llmarchive.budget.earmarks import Earmark, RunBusy, busy_protocols
from llmarchive.budget.ladder import (TYPE_ORDER, Authorization, LadderState, Plan, allowed_protocols,
                                      authorize_run, earmark_run, judged_month, ladder_state, ledger_view,
                                      pool_shortfall,
                                      protocol_calls, record_plan_skips, refusal_facts, rung_selection,
                                      select_protocols, unbudgeted)
from llmarchive.budget.spend_ledger import (CHARGE, RESERVATION, MonthTotals, ledger, ledger_entries,
                                            month_totals, open_reservations)
from llmarchive.budget.meter import SpendMeter

__all__ = [
    # config
    "CATEGORIES", "DEFAULT_LADDER", "EPSILON_EUR", "JOBS", "POOL_NAMES", "POOLS", "PRICE_KEYS",
    "PROMPT_FRAMING_TOKENS",
    "Budget", "BudgetError", "BudgetHalted", "Rung", "eur", "job_name", "load_budget", "parse_budget", "write_budget",
    # ledger
    "CHARGE", "RESERVATION", "MonthTotals", "ledger", "ledger_entries", "month_totals",
    "open_reservations",
    # checkpoint
    "LedgerTally", "LedgerView", "fingerprint_day", "read_ledger",
    # earmarks
    "Earmark", "RunBusy", "busy_protocols",
    # ladder
    "TYPE_ORDER", "Authorization", "LadderState", "Plan", "allowed_protocols", "authorize_run", "earmark_run",
    "judged_month",
    "ladder_state", "ledger_view", "pool_shortfall", "protocol_calls", "record_plan_skips", "refusal_facts", "rung_selection",
    "select_protocols", "unbudgeted",
    # degradation
    "CUT_KIND", "FINGERPRINT_CALLS_PER_MONTH", "LEVELS", "MEASURED_MONTHS", "MIN_MEASURED_CALLS",
    "QUARTER_START_MONTHS", "Level", "budget_cuts", "current_level", "kept_protocols", "measured_rate",
    "projected_month_eur", "review_degradation", "sweep_due",
    # meter
    "SpendMeter",
]
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from llmarchive.budget.meter import Request
__all__ += ["Request"]
# (end of the face)
