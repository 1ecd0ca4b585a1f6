"""The drill's verdicts, at every month's publication and at the end.

Each check returns ``(name, passed, detail)``; ``detail`` names what failed.

* coverage — computed afresh (:func:`llmarchive.schedule.coverage.compute`)
  it agrees with what was recorded for every ended period of the months
  published so far, and no ended period is without ran-or-one-cause;
* causes — every gap is one the script expects, with the script's cause, and
  every gap the script expects is there;
* verify — every published open-lane measurement recomputes from ``public/``
  alone, through the functions ``llmarchive verify --public`` calls (a guard-lane
  run publishes no trials: it is counted, not recomputed);
* money — no month's charges ever passed the ceiling in force when they were
  made, and in every calendar month the fake provider billed exactly the
  calls the ledger wrote down that month: charged, of unknown fate, or
  reserved at their worst case and never settled (an answer the archive
  could not write down stays a reservation);
* runs — no run is left STARTED, and every failed run says why: a refusal
  (``refusal`` metadata) or a one-line ``Failure``, never a traceback;
* pages — every page the outbox recorded was delivered exactly once
  (:func:`scripts.drill_alarms.pages`);
* refusals (at the end) — each refusal the script causes, on its day;
* ticks (at the end) — no schedule or sensor tick Dagster recorded took
  :data:`TICK_BOUND_S` seconds or more (Dagster allows a sensor 60);
* cost (at the end) — the last whole month's CPU seconds of the work within
  :data:`COST_BOUND` times the third month's (issue 45: a month's work may not
  grow with the archive's age; the first two months are the archive's start);
* alarms (at the end) — instrument alarms dated exactly on the script's days,
  the bridge's alarms from the day the id appeared until it was left
  incomplete and never after, the dead-man recorded by the outside check on
  the day it fell due and not after the daemon came back
  (:mod:`scripts.drill_alarms`).
"""
import bisect
import datetime as dt
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Optional

from dagster import DagsterEventType, DagsterRunStatus, RunsFilter

from llmarchive.archive import record_logs as records
from llmarchive.budget import eur, ledger_entries, open_reservations
from scripts.drill_alarms import alarm_checks, pages
from scripts.drill_script import resolve
from scripts.drill_state import State
from scripts.drill_world import now

Verdict = tuple[str, bool, str]


@dataclass
class MonthCheck:
    month: str
    at: dt.datetime
    verdicts: list = field(default_factory=list)


def new_publications(state: State) -> list[str]:
    """Successful publication runs not checked yet (each one is a month's publication)."""
    runs = state.instance.get_runs(RunsFilter(job_name="publication_job", statuses=[DagsterRunStatus.SUCCESS]),
                                   limit=5)
    return [r.run_id for r in runs if r.run_id not in state.checked_publications]


def month_checks(state: State, published: list[str]) -> MonthCheck:
    state.checked_publications.update(published)
    month = (now().date().replace(day=1) - dt.timedelta(days=1)).strftime("%Y-%m")
    check = MonthCheck(month, now())
    check.verdicts = [coverage_agrees(state, month), causes_as_scripted(state, month), verify_public(state),
                      money(state), runs_settled(state), failures_say_why(state)[0], pages(state, now())]
    return check


# -- coverage ------------------------------------------------------------------------------------------------

def _covered(row: dict, month: str) -> bool:
    return str(row.get("period"))[:7] <= month


def coverage_agrees(state: State, month: str) -> Verdict:
    """Coverage afresh equals coverage recorded for every period of ``month`` and before; none unexplained."""
    from llmarchive.schedule import coverage
    from llmarchive.schedule import row_key

    today = now().date().isoformat()
    fresh = coverage.compute(state.paths, today, read_back=False)   # afresh: sealed months judged again too
    latest: dict = {}
    for r in records.read(state.paths, "coverage"):
        latest[row_key(r)] = r
    problems = [f"unexplained {job} {period} {pid or ''}".strip() for job, period, pid in fresh.unexplained
                if str(period)[:7] <= month]
    for row in fresh.rows:
        if not _covered(row, month):
            continue
        old = latest.get(row_key(row))
        if old is None:
            problems.append(f"not recorded: {row['job']} {row['period']} {row.get('protocol_id') or ''}".strip())
        elif (old.get("status"), old.get("cause")) != (row["status"], row.get("cause")):
            problems.append(f"{row['job']} {row['period']} {row.get('protocol_id') or ''}: recorded "
                            f"{old.get('status')}/{old.get('cause')}, afresh {row['status']}/{row.get('cause')}")
    return ("coverage afresh = coverage recorded, no ended period without ran-or-one-cause", not problems,
            _first(problems))


def causes_as_scripted(state: State, month: str) -> Verdict:
    """Every recorded gap through ``month`` is one the script expects, with its cause, and none is missing."""
    from llmarchive.schedule import row_key

    latest: dict = {}
    for r in records.read(state.paths, "coverage"):
        latest[row_key(r)] = r
    gaps = [r for r in latest.values() if r.get("status") == "gap" and _covered(r, month)]
    expected = [resolve_gap(g, state.protocols) for g in state.script.expect.gaps if g.period[:7] <= month]
    problems = []
    for row in gaps:
        match = next((g for g in expected if g.matches(row)), None)
        if match is None:
            problems.append(f"unexpected gap {row['job']} {row['period']} {row.get('protocol_id') or ''}: "
                            f"{row.get('cause')} ({row.get('condition')})")
        elif match.cause != row.get("cause"):
            problems.append(f"{row['job']} {row['period']}: cause {row.get('cause')}, the script says {match.cause}")
    for g in expected:
        if not g.may and not any(g.matches(r) for r in gaps):
            problems.append(f"missing gap {g.job} {g.period} {g.protocol or ''}: {g.cause} ({g.why})")
    return "every gap has the cause the script says", not problems, _first(problems)


def resolve_gap(gap: Any, protocols: list[str]) -> Any:
    from dataclasses import replace

    return replace(gap, protocol=resolve(gap.protocol, protocols)) if gap.protocol else gap


# -- verify --public -------------------------------------------------------------------------------------------

def verify_public(state: State) -> Verdict:
    """Every published open-lane measurement recomputes from public/ as ``llmarchive verify --public`` does."""
    from llmarchive.subjects import returned_model_id_differences
    from llmarchive.cli.verify import beside_differences
    from measure.verify import recompute
    from publish.readback import public_inputs

    public = state.paths.public
    db = public / "archive.db"
    if not db.exists():
        return "verify --public recomputes every published measurement", False, "no public/archive.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        rows = connection.execute("select run_id, lane from measurements").fetchall()
    problems, verified, closed = [], 0, 0
    for run_id, lane in rows:
        if lane != "open":
            closed += 1
            continue
        found = public_inputs(public, run_id)
        differences = (recompute(found.measurement, found.trials, found.header)
                       + beside_differences(found.beside or {}, found.trials)
                       + returned_model_id_differences(found.measurement, found.trials))
        verified += 1
        if differences:
            problems.append(f"{run_id}: {differences[0]}")
    detail = _first(problems) or f"{verified} open-lane measurements recompute; {closed} guard-lane ones publish no trials"
    return "verify --public recomputes every published measurement", not problems, detail


# -- money -------------------------------------------------------------------------------------------------------

def _ceiling_at(state: State, when: str) -> float:
    ceiling = state.script.budget["ceiling"]
    for event in state.script.events:
        if event.kind == "budget" and event.when.isoformat()[:19] <= when[:19]:
            ceiling = event.args["ceiling"]
    return ceiling


def ledger_calls_by_month(entries: list[dict]) -> dict[str, int]:
    """The calls the ledger knows of, by the month each entry was written (``recorded_at``): every answered
    charge, every attempt of unknown fate, every reservation never settled (the worst case of an answer the
    archive could not write down).  By when it was written, not by ``month``, the month a charge counts against:
    a run resumed after a month's end is charged to the month it was authorised in, and makes its calls now."""
    calls: dict[str, int] = {}

    def add(entry: dict, n: int) -> None:
        if n:
            month = str(entry.get("recorded_at") or "?")[:7]
            calls[month] = calls.get(month, 0) + n

    for entry in entries:
        if entry.get("record_type", "spend") == "spend":
            add(entry, (1 if entry.get("answered") else 0) + int(entry.get("unknown_attempts") or 0))
    for entry in open_reservations(entries):
        add(entry, 1)
    return calls


def calls_by_month_problems(billed: dict[str, int], known: dict[str, int]) -> list[str]:
    """Each month in which the provider billed other than the ledger's calls, in one line."""
    return [f"{month}: the provider billed {billed.get(month, 0)} calls, the ledger wrote down "
            f"{known.get(month, 0)}" for month in sorted(set(billed) | set(known))
            if billed.get(month, 0) != known.get(month, 0)]


def money(state: State) -> Verdict:
    """Charges never pass the ceiling in force; in every month the fake provider billed the calls the ledger
    wrote down that month (:func:`ledger_calls_by_month`)."""
    month_total: dict[str, float] = {}
    problems: list[str] = []
    entries = ledger_entries(state.paths)
    for entry in entries:
        if entry.get("record_type", "spend") != "spend":
            continue
        month = str(entry.get("month"))
        month_total[month] = month_total.get(month, 0.0) + float(entry.get("cost_eur") or 0.0)
        ceiling = _ceiling_at(state, str(entry.get("recorded_at") or ""))
        if month_total[month] > ceiling + 1e-9:
            problems.append(f"{month}: {eur(month_total[month])} charged past the ceiling of "
                            f"{eur(ceiling)}")
    billed = dict(state.provider.billed_by_month)
    known = ledger_calls_by_month(entries)
    problems += calls_by_month_problems(billed, known)
    months = [m for m in billed if billed[m]]
    said = (f"{sum(billed.values())} calls billed over {len(months)} months, each month's = the calls the ledger "
            "wrote down in it (answered, of unknown fate, or reserved and never settled)")
    return ("the ledger never passes the ceiling; in every month billed calls = the ledger's calls", not problems,
            _first(problems) or said)


# -- ticks -------------------------------------------------------------------------------------------------------

TICK_BOUND_S = 45.0
"""Dagster gives a sensor's evaluation 60 s; the drill holds every tick to 45, a margin for a slower machine."""


def tick_seconds(tick: Any, passes: list[tuple[float, float]]) -> tuple[Optional[float], Optional[float]]:
    """How long ``tick`` took, and the real seconds of the daemon pass that evaluated it; (None, …) for a tick
    that never ended.  ``passes``: ``(the moved clock's timestamp as a pass began, its real seconds)``, in order.

    From the tick's own start to its end — or, when it began before the pass
    (a schedule's tick is stamped with its scheduled instant, which a
    catch-up evaluates days later), from the pass's start: the longest it
    can have taken.  The drill moves its clock only between passes, and the
    clock ticks in real time within one, so this is real time; the pass's
    own real duration (``time.monotonic``, which the moved clock does not
    touch) bounds it, which :func:`tick_problems` checks.
    """
    end = tick.end_timestamp
    index = bisect.bisect_right([start for start, _ in passes], end if end is not None else tick.timestamp) - 1
    pass_start, pass_real = passes[index] if index >= 0 else (tick.timestamp, None)
    if end is None:
        return None, pass_real
    return end - max(tick.timestamp, pass_start), pass_real


def tick_problems(ticks: dict[str, list], passes: list[tuple[float, float]],
                  bound_s: float = TICK_BOUND_S) -> tuple[list[str], str]:
    """Each tick over ``bound_s``, never ended, or longer than the real time of its pass (the clock jumped: the
    measure would not be real time), and what the longest was: ``ticks`` by instigator name."""
    problems, longest, count = [], (0.0, "-"), 0
    passes = sorted(passes)
    for name, items in sorted(ticks.items()):
        for tick in items:
            count += 1
            seconds, real = tick_seconds(tick, passes)
            at = dt.datetime.fromtimestamp(tick.timestamp, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
            if seconds is None:
                problems.append(f"{name} {at}: the tick never ended ({tick.status.value})")
                continue
            if seconds > longest[0]:
                longest = (seconds, f"{name} {at}")
            if seconds > bound_s:
                problems.append(f"{name} {at}: {seconds:.1f} s")
            if real is not None and seconds > real + 1.0:
                problems.append(f"{name} {at}: {seconds:.1f} s on the moved clock in a pass of {real:.1f} real s "
                                "(the clock moved during the tick: not a measure of real time)")
    return problems, f"{count} ticks, the longest {longest[0]:.1f} s ({longest[1]})"


def ticks_bounded(state: State, bound_s: float = TICK_BOUND_S) -> Verdict:
    """Every schedule and sensor tick Dagster recorded took less than ``bound_s`` real seconds."""
    from scripts.drill_dagster import repository

    repo = repository(state.context)
    ticks = {item.name: list(state.instance.get_ticks(item.get_remote_origin_id(), item.selector_id))
             for item in [*repo.get_schedules(), *repo.get_sensors()]}
    problems, said = tick_problems(ticks, state.daemon.timed_passes, bound_s)
    return (f"no schedule or sensor tick over {bound_s:.0f} s (Dagster's limit: 60)", not problems,
            _first(problems) + (f" — {said}" if problems else said))


# -- cost ----------------------------------------------------------------------------------------------------

COST_BOUND = 1.25
"""The last month's CPU seconds may be at most this many times the third month's (issue 45's verdict)."""


def month_cost(cpu: dict[str, float], months: list[str], bound: float = COST_BOUND) -> Verdict:
    """The last of ``months`` that ran costs within ``bound`` × the third (``cpu``: CPU seconds by month); not
    judged (passed, and said so) before a fourth month has run."""
    ran = [m for m in months if m in cpu]
    name = f"the last month's CPU seconds within {bound:.2f}× the third month's"
    if len(ran) < 4:
        return name, True, f"not judged: {len(ran)} whole month(s), the fourth is the first compared with the third"
    third, last = cpu[ran[2]], cpu[ran[-1]]
    ratio = last / third if third > 0 else float("inf")
    return name, ratio <= bound, f"{ran[-1]} {last:.0f} s / {ran[2]} {third:.0f} s = {ratio:.2f}×"


# -- runs --------------------------------------------------------------------------------------------------------

def runs_settled(state: State) -> Verdict:
    left = state.instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.STARTING,
                                                        DagsterRunStatus.CANCELING]))
    return ("no run left STARTED", not left,
            _first([f"{r.job_name} {r.run_id[:8]} {r.status.value}" for r in left]))


def failure_reasons(state: State, run_id: str) -> tuple[Optional[str], Optional[str], Optional[str]]:
    """(refusal kind, the one-line reason, a traceback's class) of a failed run."""
    kinds = {DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE}
    refusal, reason, traceback = None, None, None
    for record in state.instance.get_records_for_run(run_id, of_type=kinds).records:
        event = record.event_log_entry.dagster_event
        if event is None:
            continue
        if event.event_type == DagsterEventType.STEP_FAILURE:
            data = event.step_failure_data
            user = data.user_failure_data
            if user is not None:
                meta = {k: getattr(v, "value", v) for k, v in (user.metadata or {}).items()}
                refusal = refusal or meta.get("refusal")
                reason = reason or (user.description or "")
            elif data.error is not None:
                traceback = traceback or data.error.cls_name or "error"
                reason = reason or (data.error.message or "").strip()
        elif reason is None:
            reason = (event.message or "").strip()
    return refusal, reason, traceback


def failures_say_why(state: State) -> tuple[Verdict, dict]:
    """Every failed run: a refusal, or a one-line Failure; never a traceback. Also the refusals by kind and by the
    day (the moved clock's) their run was created: ``{(kind, day): count}``."""
    kinds: dict[tuple[str, str], int] = {}
    problems = []
    for run in state.instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.FAILURE])):
        refusal, reason, traceback = failure_reasons(state, run.run_id)
        if refusal:
            record = state.instance.get_run_record_by_id(run.run_id)
            day = record.create_timestamp.astimezone(dt.timezone.utc).date().isoformat() if record else "?"
            kinds[(refusal, day)] = kinds.get((refusal, day), 0) + 1
        if traceback:
            problems.append(f"{run.job_name} {run.run_id[:8]}: a traceback ({traceback}: {(reason or '')[:120]})")
        elif not reason or "\n" in reason.strip():
            problems.append(f"{run.job_name} {run.run_id[:8]}: no one-line reason")
    return ("every failed run says why (a refusal or one line, no traceback)", not problems,
            _first(problems)), kinds


def _first(problems: list[str], shown: int = 3) -> str:
    if not problems:
        return ""
    more = f" (and {len(problems) - shown} more)" if len(problems) > shown else ""
    return "; ".join(problems[:shown]) + more


def _first_failing(state: State) -> str:
    """The first monthly verdict that failed, with its detail: "failing in" alone sends a reader to the logs."""
    for c in state.monthly:
        for name, ok, detail in c.verdicts:
            if not ok:
                return f"{c.month}: {name}: {detail}"
    return ""


def final_checks(state: State) -> list[Verdict]:
    """The monthly checks once more over everything, the refusals, the ticks and the alarms (scripts.drill_alarms)."""
    last = (now().date().replace(day=1) - dt.timedelta(days=1)).strftime("%Y-%m")
    failing_months = sorted({c.month for c in state.monthly for _, ok, _ in c.verdicts if not ok})
    said, kinds = failures_say_why(state)
    expected: dict[tuple[str, str], int] = {}
    for refusal in state.script.expect.refusals:
        expected[(refusal.kind, refusal.day)] = expected.get((refusal.kind, refusal.day), 0) + refusal.count
    short = [f"{kind} on {day}: {kinds.get((kind, day), 0)} < {count}" for (kind, day), count in expected.items()
             if kinds.get((kind, day), 0) < count]
    by_kind: dict[str, int] = {}
    for (kind, _), count in kinds.items():
        by_kind[kind] = by_kind.get(kind, 0) + count
    return [
        ("every month's publication checks passed", not failing_months,
         f"failing in {', '.join(failing_months)} ({_first_failing(state)})" if failing_months
         else f"{len(state.monthly)} publications checked"),
        coverage_agrees(state, last), causes_as_scripted(state, last), verify_public(state), money(state),
        runs_settled(state), said,
        ("the refusals the script causes happened, each on its day", not short,
         _first(short) or ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items()))),
        ticks_bounded(state),
        month_cost(state.month_cpu, state.script.months()),
        *alarm_checks(state, now()),
        ("no daemon pass raised an error", not state.daemon.errors,
         _first([f"{when[:16]} {message.splitlines()[0][:160]}" for when, message in state.daemon.errors])),
    ]
