"""The ladder: what may run this month, and each run's permission (method §9).

The ladder, evaluated at the start of every run on the current month's
spend: from 60 % the sweep drops to 6 protocols, from 80 % only 4 guard
protocols run, from 95 % only ``subject_fingerprint``.  ``n`` and the checks
are never reduced — a protocol runs whole or not at all — and every
protocol left out is recorded as a ``skip`` with cause ``budget_halted``
(through :func:`llmarchive.archive.skips.record_skip`, condition ``budget_refused``).

Which protocols survive a cut is decided by one disclosed rule
(:func:`select_protocols`): first one protocol of each rewording type (in
the order wording, anchoring, order, default), then the rest; within each
step ``open`` protocols first, then the guard twins of open protocols
(the contamination check needs both halves of a pair), then the others, by
``protocol_id``.  At 6 that keeps both open protocols, both twins and one
``order`` and one ``default`` protocol; at 4 guard protocols, one per type.

The month's plan (:func:`allowed_protocols`) and one run's permission
(:func:`authorize_run`, an :class:`Authorization` naming the pool that
pays) ask the same two rules — :func:`rung_selection` and
:func:`pool_shortfall` — so they can never disagree.
"""
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Mapping, Optional, Sequence

from llmarchive.archive import (ArchivePaths, RecordFileError, file_lock, jobs as job_table, record_skip, utc_month,
                                utc_now, utc_today)
from llmarchive.budget.config import (EPSILON_EUR, JOBS, POOL_NAMES, Budget, BudgetError, BudgetHalted, Rung,
                                      eur, job_name, load_budget)
from llmarchive.budget import earmarks
from llmarchive.budget.checkpoint import LedgerView, read_ledger
from measure.chain import ChainError

TYPE_ORDER = ("wording", "anchoring", "order", "default")
# The observed condition a budget refusal records (llmarchive.archive.skips maps it to the cause budget_halted).
REFUSED = "budget_refused"


@dataclass(frozen=True)
class LadderState:
    """Where the month stands: spend per pool (charged + worst case), the used share, the rung in force."""

    month: str
    general_pool_eur: float
    spent_eur: Mapping[str, float]
    used_pct: float
    rung: Optional[Rung]
    bridge_left_eur: float
    heartbeat_left_eur: float
    charged_eur: Mapping[str, float] = field(default_factory=dict)
    worst_case_eur: Mapping[str, float] = field(default_factory=dict)
    priced: bool = False
    earmarked_eur: Mapping[str, float] = field(default_factory=dict)   # what running neighbours still earmark (earmarks.py)

    @property
    def general_left_eur(self) -> float:
        return self.general_pool_eur - self.spent_eur["general"]

    def describe(self) -> str:
        return "no cut: every protocol may run" if self.rung is None else self.rung.describe()

    def to_json(self) -> dict:
        out = asdict(self)
        out["rung"] = None if self.rung is None else self.describe()
        out["general_left_eur"] = self.general_left_eur
        out["charging"] = "usage" if self.priced else "flat_rate"
        return out


def judged_month(month: Optional[str] = None, date: Optional[str] = None) -> str:
    """The month the ladder judges: ``month`` when given, else the month of ``date``, else the clock's.

    A decision dated 2026-11-02 is about November's pools whatever day it is
    taken on, so a date given always wins over the clock.
    """
    if month:
        return month[:7]
    if date:
        return str(date)[:7]
    return utc_month()


def ledger_view(paths: ArchivePaths) -> LedgerView:
    """The ledger as a run start reads it (:func:`~llmarchive.budget.checkpoint.read_ledger`), or a budget error."""
    try:
        return read_ledger(paths)
    except (RecordFileError, ChainError) as exc:
        raise BudgetError(str(exc)) from None


def ladder_state(paths: ArchivePaths, budget: Budget, month: Optional[str] = None,
                 date: Optional[str] = None, exclude_run: Optional[str] = None,
                 ledger: Optional[LedgerView] = None) -> LadderState:
    """Where ``month`` stands (else the month of ``date``, else the clock's: :func:`judged_month`).

    Spent is charged + open worst case + what the live earmarks of running
    neighbours still keep back (:mod:`llmarchive.budget.earmarks`; not
    ``exclude_run``'s own), so a decision taken while another run is calling
    is the one it would be once that run had finished.  ``ledger``: the view
    the caller's run start already read (else it is read here, from the
    checkpoint and what was appended after it).
    """
    month = judged_month(month, date)
    view = ledger if ledger is not None else ledger_view(paths)
    totals = view.tally.month_totals(month)
    live = earmarks.live(paths)
    kept = earmarks.earmarked_eur(live, view.tally.committed, month, exclude_run) if live else {}
    spent = {pool: eur + kept.get(pool, 0.0) for pool, eur in totals.spent_eur.items()}
    used = 100.0 * spent["general"] / budget.general_pool_eur
    rung = None
    for candidate in budget.ladder:
        if used >= candidate.at_pct:
            rung = candidate
    return LadderState(month, budget.general_pool_eur, spent, used, rung,
                       budget.bridge_reserve_eur - spent["bridge"], budget.heartbeat_reserve_eur - spent["heartbeat"],
                       dict(totals.charged_eur), dict(totals.worst_case_eur), budget.priced, kept)



# --------------------------------------------------------------------------
# which protocols may run
# --------------------------------------------------------------------------

def _open_twins(protocols: Sequence[Mapping]) -> set[str]:
    return {p.get("twin_id") for p in protocols if p.get("lane") == "open" and p.get("twin_id")}


def select_protocols(protocols: Sequence[Mapping], limit: int, lanes: Optional[Iterable[str]] = None) -> list[str]:
    """The ``limit`` protocols a cut keeps (the rule in the module docstring)."""
    lane_set = None if lanes is None else set(lanes)
    twins = _open_twins(protocols)
    pool = [p for p in protocols if lane_set is None or p.get("lane") in lane_set]

    def rank(p: Mapping) -> tuple:
        lane_rank = 0 if p.get("lane") == "open" else 1 if p.get("protocol_id") in twins else 2
        return (lane_rank, p.get("protocol_id"))

    chosen: list[str] = []
    for kind in TYPE_ORDER:
        of_type = sorted((p for p in pool if p.get("rewording_type") == kind), key=rank)
        if of_type and len(chosen) < limit:
            chosen.append(of_type[0]["protocol_id"])
    for p in sorted(pool, key=rank):
        if len(chosen) >= limit:
            break
        if p["protocol_id"] not in chosen:
            chosen.append(p["protocol_id"])
    return chosen


def protocol_calls(header: Mapping) -> int:
    """Calls one run of a protocol makes: four versions × ``n``."""
    n = header.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise BudgetError(f"protocol {header.get('protocol_id')!r} has no usable 'n' ({n!r})")
    return 4 * n


def rung_selection(state: LadderState, protocols: Sequence[Mapping]) -> tuple[list[str], Optional[str]]:
    """The ladder rule, in one place: which of ``protocols`` the rung in force keeps, best first, and why not the rest.

    No rung (below the first ``at_pct``): every protocol, by id, and no
    reason.  A rung: :func:`select_protocols` with its limit and lanes, and
    the reason the others are left out.  Both the month's plan
    (:func:`allowed_protocols`) and each run's permission
    (:func:`authorize_run`) ask this, so they can never disagree.
    """
    rung = state.rung
    if rung is None:
        return [p["protocol_id"] for p in sorted(protocols, key=lambda p: p["protocol_id"])], None
    return (select_protocols(protocols, rung.max_protocols, rung.lanes),
            f"{state.used_pct:.1f} % of the general pool used; {rung.describe()}")


def pool_shortfall(calls: int, rate_eur: float, left_eur: float, job: str, month: str) -> Optional[str]:
    """Why ``calls`` at ``rate_eur`` do not fit in what ``job``'s pool has left (None: they fit).

    The pool rule of both the plan and each run's permission: a protocol
    runs whole or not at all, so its whole remaining cost must fit.
    """
    cost = calls * rate_eur
    if cost <= left_eur + EPSILON_EUR:
        return None
    pool = "bridge reserve" if job == "bridge" else "general pool"
    return f"a run of {calls} calls costs about {eur(cost)}; {eur(max(left_eur, 0))} left in the {pool} for {month}"


def refusal_facts(state: LadderState, job: str, by_rung: bool) -> dict[str, str]:
    """The public facts of a refusal (:data:`llmarchive.archive.skips.PUBLIC_FACTS`): the rung or the pool by name.

    The skip's reason keeps the amounts for the owner; coverage publishes
    only these — which rung left the protocol out, or which pool (and for
    which month) had no room — never a figure.
    """
    if by_rung and state.rung is not None:
        return {"rung": state.rung.effect()}
    return {"pool": JOBS[job][1], "month": state.month}


@dataclass
class Plan:
    """What the ladder lets run this month, and what it leaves out (with why, and its public facts)."""

    job: str
    state: LadderState
    allowed: list[str]
    skipped: list[tuple[str, str]] = field(default_factory=list)
    facts: dict[str, dict[str, str]] = field(default_factory=dict)   # protocol_id -> refusal_facts

    def to_json(self) -> dict:
        return {"job": self.job, "state": self.state.to_json(), "allowed": list(self.allowed),
                "skipped": [{"protocol_id": p, "reason": r} for p, r in self.skipped]}


def allowed_protocols(paths: ArchivePaths, protocols: Sequence[Mapping], job: str = job_table.FULL_SWEEP,
                      month: Optional[str] = None, date: Optional[str] = None,
                      record_skips: bool = True, budget: Optional[Budget] = None) -> Plan:
    """Decide which of ``protocols`` (headers: id, type, lane, twin, n) may run this month.

    This is the entry point of the sweep and of Dagster.  The ladder's rung
    limits how many and which lanes; then protocols are admitted in rank
    order while their whole cost (``4 × n`` calls at the scenario rate) fits
    in what is left of the general pool.  For ``job="bridge"`` the bridge
    reserve is the only limit.  Every protocol left out gets a ``skip``
    record with cause ``budget_halted`` unless ``record_skips`` is false.
    """
    budget = budget or load_budget(paths)
    if budget is None:
        raise BudgetError(f"{paths.budget_file} does not exist: paid work needs a budget "
                          "(create one with `llmarchive budget init`)")
    job = job_name(job)
    if job == job_table.SUBJECT_FINGERPRINT:
        scenario_jobs = ", ".join(j for j in JOBS if j != "subject_fingerprint")
        raise BudgetError(f"allowed_protocols plans scenario jobs ({scenario_jobs}); got {job!r}")
    state = ladder_state(paths, budget, month, date)
    rate = budget.rate("scenario")
    ids = [p["protocol_id"] for p in protocols]
    if job == "bridge":
        ranked, left, why_rung = ids, state.bridge_left_eur, None
    else:
        ranked, why_rung = rung_selection(state, protocols)
        left = state.general_left_eur
    by_id = {p["protocol_id"]: p for p in protocols}
    allowed: list[str] = []
    skipped: list[tuple[str, str]] = []
    facts: dict[str, dict[str, str]] = {}
    for pid in ranked:
        calls = protocol_calls(by_id[pid])
        short = pool_shortfall(calls, rate, left, job, state.month)
        if short is None:
            allowed.append(pid)
            left -= calls * rate
        else:
            skipped.append((pid, short))
            facts[pid] = refusal_facts(state, job, by_rung=False)
    for pid in ids:
        if pid not in allowed and all(pid != s for s, _ in skipped):
            skipped.append((pid, why_rung or "not selected"))
            facts[pid] = refusal_facts(state, job, by_rung=True)
    plan = Plan(job, state, allowed, sorted(skipped), facts)
    if record_skips:
        record_plan_skips(paths, plan, date)
    return plan


def record_plan_skips(paths: ArchivePaths, plan: Plan, date: Optional[str] = None) -> None:
    """One ``skip`` per protocol the plan leaves out, its cause from :mod:`llmarchive.archive.skips`."""
    day = date or utc_today()
    for pid, reason in plan.skipped:
        record_skip(paths, day, plan.job, pid, REFUSED, reason,
                    plan.facts.get(pid) or refusal_facts(plan.state, plan.job, by_rung=False))


# --------------------------------------------------------------------------
# one run: its authorisation (the meter, llmarchive.budget.meter, charges it)
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Authorization:
    """Permission for one run: which pool pays, at which per-call rate, in which month.

    The pool is the job's own, from the one jobs table, and nothing else: a
    permission naming another pool is refused when it is made, so no caller
    can point a sweep at a reserve.  Method §9.3's reading: the general pool
    pays the sweep and manual runs, the bridge reserve pays the bridge only,
    and the heartbeat reserve is reached by the subject fingerprint alone,
    once the general pool is spent (:class:`llmarchive.budget.meter.SpendMeter`
    moves its charges there; its permission names the general pool).

    ``month`` is the month the permission was judged against
    (:func:`judged_month`), and every entry of the run — each reservation and
    each charge — is written to it, whatever day its calls are made on: the
    money a month's pools let go is the money charged to them (method §9.4,
    one month for money).  None is a permission made by hand outside a run's
    start (a test, a tool): its meter keeps the month it is opened in.
    """

    job: str
    category: str
    pool: str
    rate_eur_per_call: Optional[float]
    budgeted: bool = True
    month: Optional[str] = None

    def __post_init__(self) -> None:
        job = job_name(self.job)
        category, pool = JOBS[job]
        if (self.category, self.pool) != (category, pool):
            raise BudgetError(f"{job} is paid from the {POOL_NAMES[pool]} at the {category} rate; a permission "
                              f"naming the {POOL_NAMES.get(self.pool, repr(self.pool))} ({self.category} rate) is "
                              f"refused")

    def to_json(self) -> dict:
        return asdict(self)


def unbudgeted(job: str = "manual", month: Optional[str] = None, date: Optional[str] = None) -> Authorization:
    """For a paid subject explicitly run without a budget (costs unknown, logged as null), in the month judged."""
    job = job_name(job)
    category, pool = JOBS[job]
    return Authorization(job, category, pool, None, budgeted=False, month=judged_month(month, date))


def authorize_run(paths: ArchivePaths, budget: Budget, header: Mapping, job: str, calls: int,
                  all_protocols: Optional[Sequence[Mapping]] = None, month: Optional[str] = None,
                  date: Optional[str] = None) -> Authorization:
    """Allow one run of ``header`` making ``calls`` paid calls, or raise :class:`BudgetHalted`.

    A refusal is recorded as a ``skip`` with cause ``budget_halted`` before
    it is raised.  ``all_protocols`` (headers of every protocol the sweep
    knows) lets the ladder's selection rule be applied exactly as the sweep
    would; without it the protocol is judged on its own.  Nothing is earmarked:
    a run that calls should be authorised by :func:`earmark_run`.
    """
    return earmark_run(paths, budget, header, job, calls, all_protocols, month, date)[0]


def fingerprint_room(state: LadderState, need_eur: float, calls: int) -> tuple[Optional[str], str]:
    """(why the subject fingerprint's day may not be asked, or None; the pool that will pay for it).

    Method §9.3: the ladder never gates the fingerprint, but the ceiling is
    hard for it too — the day's worst case must fit what the general pool
    and the heartbeat reserve have left together.  It is paid by the general
    pool while that has room for the whole day, else by the heartbeat reserve.
    """
    general = max(state.general_left_eur, 0.0)
    left = general + max(state.heartbeat_left_eur, 0.0)
    if need_eur > left + EPSILON_EUR:
        return (f"the day's {calls} calls may cost up to {eur(need_eur, 4)}; {eur(left, 4)} is left in the general "
                f"pool and the heartbeat reserve for {state.month}"), "general"
    return None, "general" if need_eur <= general + EPSILON_EUR else "heartbeat"


def earmark_run(paths: ArchivePaths, budget: Optional[Budget], header: Mapping, job: str, calls: int,
                all_protocols: Optional[Sequence[Mapping]] = None, month: Optional[str] = None,
                date: Optional[str] = None, *, run_id: Optional[str] = None, cost_eur: Optional[float] = None,
                ledger_run: Optional[Callable[[LedgerView], str]] = None,
                ) -> tuple[Authorization, Optional[earmarks.Earmark], LedgerView]:
    """:func:`authorize_run`, and for ``run_id`` an earmark of the whole remaining cost for as long as the run lives.

    Decided under the ledger's lock, so two runs authorised at the same
    moment are judged one after the other, each seeing what the other earmarks
    (method §9.4).  A run whose earmark is live in another process is refused
    (:class:`~llmarchive.budget.earmarks.RunBusy`) before anything is recorded.
    The caller releases the earmark when the run ends, however it ends, and
    hands the third value — the ledger as this start read it, its one reading
    — to the run's :class:`~llmarchive.budget.meter.SpendMeter`.

    ``run_id`` is what a second launch collides on; ``ledger_run`` names,
    from the ledger read under the lock, the ledger run whose entries draw
    the earmark down when that is not ``run_id`` (the subject fingerprint
    locks its day and model, and charges each attempt of the day as a run of
    its own, numbered by what the ledger already holds).  ``cost_eur`` is the
    whole remaining cost when it is not ``calls`` at the job's rate (the
    fingerprint's day at its worst case).  The subject fingerprint is judged
    by :func:`fingerprint_room`, never by the ladder; without a ``budget`` the
    permission is unbudgeted (costs unknown) and the earmark only a lock.
    """
    job = job_name(job)
    category, pool = JOBS[job]
    protocol_id = header.get("protocol_id")
    with file_lock(paths.spend_ledger):
        if run_id is not None and any(h.run_id == run_id for h in earmarks.live(paths)):
            raise earmarks.RunBusy(f"run {run_id} is being worked on by another process: a second launch of it "
                                   "is refused. Nothing was spent.")
        view = ledger_view(paths)      # one reading of the ledger for the whole decision, and for the run's meter
        month = judged_month(month, date)
        if budget is None:
            authorization, cost = unbudgeted(job, month), 0.0
        else:
            cost = calls * budget.rate(category) if cost_eur is None else cost_eur
            pool = _judge(paths, budget, header, job, calls, cost, all_protocols, month, date, view)
            authorization = Authorization(job, category, JOBS[job][1], budget.rate(category), month=month)
        if run_id is None or calls <= 0:
            return authorization, None, view
        charged_as = ledger_run(view) if ledger_run is not None else run_id
        base = view.tally.committed(charged_as, month, pool)
        record = earmarks.EarmarkRecord(run_id, protocol_id or job, job, pool, month, calls, cost, base, utc_now(),
                                        charged_as)
        return authorization, earmarks.take(paths, record), view


def _judge(paths: ArchivePaths, budget: Budget, header: Mapping, job: str, calls: int, cost: float,
           all_protocols: Optional[Sequence[Mapping]], month: str, date: Optional[str], view: LedgerView) -> str:
    """The pool that pays ``cost`` for this run, or a :class:`BudgetHalted` with its ``skip`` recorded (lock held)."""
    state = ladder_state(paths, budget, month, ledger=view)
    protocol_id = header.get("protocol_id")
    pool, by_rung, reason = JOBS[job][1], False, None
    if job == job_table.SUBJECT_FINGERPRINT:
        reason, pool = fingerprint_room(state, cost, calls)
    elif job == "bridge":
        reason = pool_shortfall(calls, budget.rate(JOBS[job][0]), state.bridge_left_eur, job, state.month)
    else:
        series = header.get("series")
        pool_list = [p for p in all_protocols or [] if series is None or p.get("series") == series]
        if not any(p.get("protocol_id") == protocol_id for p in pool_list):
            pool_list.append(header)
        kept, why_rung = rung_selection(state, pool_list)
        if protocol_id not in kept:
            reason, by_rung = why_rung, True
        else:
            reason = pool_shortfall(calls, budget.rate(JOBS[job][0]), state.general_left_eur, job, state.month)
    if reason:
        day = date or utc_today()
        if job == job_table.SUBJECT_FINGERPRINT:    # a refusal of the day, not of a protocol
            halted = BudgetHalted(f"the {job} of {day} may not run: {reason}")
            halted.skip = record_skip(paths, day, job, None, REFUSED, reason)
        else:
            halted = BudgetHalted(f"{protocol_id} may not run ({job}): {reason}")
            halted.skip = record_skip(paths, day, job, protocol_id, REFUSED, reason,
                                      refusal_facts(state, job, by_rung))
        raise halted
    return pool
