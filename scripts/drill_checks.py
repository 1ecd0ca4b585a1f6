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
  made, and the fake provider billed exactly the calls the ledger knows of:
  charged, of unknown fate, or reserved at their worst case and never settled
  (an answer the archive could not write down stays a reservation);
* runs — no run is left STARTED, and every failed run says why: a refusal
  (``refusal`` metadata) or a one-line ``Failure``, never a traceback;
* alarms (at the end) — instrument alarms dated exactly on the script's days,
  the bridge's alarms from the day the id appeared until it was left
  incomplete and never after, the dead-man paged by the outside check on the
  day it fell due and not after the daemon came back.
"""
import datetime as dt
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Optional

from dagster import DagsterEventType, DagsterRunStatus, RunsFilter

from llmarchive.archive import record_logs as records
from llmarchive.budget import eur, ledger_entries, open_reservations
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
                      money(state), runs_settled(state), failures_say_why(state)[0]]
    return check


# -- coverage ------------------------------------------------------------------------------------------------

def _covered(row: dict, month: str) -> bool:
    return str(row.get("period"))[:7] <= month


def coverage_agrees(state: State, month: str) -> Verdict:
    """Coverage afresh equals coverage recorded for every period of ``month`` and before; none unexplained."""
    from llmarchive.schedule import coverage
    from llmarchive.schedule import row_key

    today = now().date().isoformat()
    fresh = coverage.compute(state.paths, today)
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


def money(state: State) -> Verdict:
    """Charges never pass the ceiling in force; the fake provider billed the calls the ledger charged."""
    month_total: dict[str, float] = {}
    problems, charged_calls, unknown = [], 0, 0
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
        charged_calls += 1 if entry.get("answered") else 0
        unknown += int(entry.get("unknown_attempts") or 0)
    billed = state.provider.billed_calls
    still_open = len(open_reservations(entries))
    if billed != charged_calls + unknown + still_open:
        problems.append(f"the provider billed {billed} calls; the ledger charged {charged_calls} answered, "
                        f"{unknown} of unknown fate and holds {still_open} open at their worst case")
    said = f"{billed} calls billed = {charged_calls} charged" + (f" + {unknown} of unknown fate" if unknown else "") \
        + (f" + {still_open} reserved at their worst case, never settled" if still_open else "")
    return ("the ledger never passes the ceiling; billed calls = the ledger's calls", not problems,
            _first(problems) or said)


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
    """Every failed run: a refusal, or a one-line Failure; never a traceback. Also the refusals by kind."""
    kinds: dict[str, int] = {}
    problems = []
    for run in state.instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.FAILURE])):
        refusal, reason, traceback = failure_reasons(state, run.run_id)
        if refusal:
            kinds[refusal] = kinds.get(refusal, 0) + 1
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
    """The monthly checks once more over everything, the refusals and the alarms (scripts.drill_alarms)."""
    from scripts.drill_alarms import alarm_checks

    last = (now().date().replace(day=1) - dt.timedelta(days=1)).strftime("%Y-%m")
    failing_months = sorted({c.month for c in state.monthly for _, ok, _ in c.verdicts if not ok})
    said, kinds = failures_say_why(state)
    expected: dict[str, int] = {}
    for refusal in state.script.expect.refusals:
        expected[refusal.kind] = expected.get(refusal.kind, 0) + refusal.count
    short = [f"{kind}: {kinds.get(kind, 0)} < {count}" for kind, count in expected.items() if kinds.get(kind, 0) < count]
    return [
        ("every month's publication checks passed", not failing_months,
         f"failing in {', '.join(failing_months)} ({_first_failing(state)})" if failing_months
         else f"{len(state.monthly)} publications checked"),
        coverage_agrees(state, last), causes_as_scripted(state, last), verify_public(state), money(state),
        runs_settled(state), said,
        ("the refusals the script causes happened", not short,
         _first(short) or ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))),
        *alarm_checks(state),
        ("no daemon pass raised an error", not state.daemon.errors,
         _first([f"{when[:16]} {message.splitlines()[0][:160]}" for when, message in state.daemon.errors])),
    ]
