"""The drill's month-by-month table: what ran, what was refused and why, money, alerts, what happened.

One line per month of the drill:

``runs``      Dagster runs launched in the month, succeeded / failed
``sweep``     the month's ``full_sweep`` coverage: protocols that ran, and the gaps by cause
``refused``   failed runs by refusal kind (``assets/refusals.py``), ``other`` for a one-line failure
``€``         what the ledger charged for the month (every pool)
``calls``     what the fake provider billed during the month
``pages``     the outbox's pages delivered in the month (the webhook answered 2xx)
``owed``      the outbox's pages recorded and not yet delivered at the month's end
``alerts``    the pages the webhook took, by kind (lease, bridge, failed check, failed run), and instrument alarms
``events``    the script's events of the month, in short
``cpu s``     the month's CPU seconds of the work (:meth:`scripts.drill_loop.Loop.cpu`), and of it ``status``'s
"""
import datetime as dt
from collections import Counter

from llmarchive.archive import record_logs as records
from llmarchive.budget import ledger_entries
from scripts.drill_checks import failure_reasons
from scripts.drill_state import State

SHORT_KIND = {"lease": "lease", "generation_bridge": "bridge", "asset_check": "check", "run_failure": "run",
              "schedule_tick": "tick"}


def _statuses(state: State) -> dict[str, str]:
    return {run.run_id: run.status.value for run in state.instance.get_runs()}


def _runs(state: State, statuses: dict[str, str]) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for run_id, month in state.run_month.items():
        out.setdefault(month, Counter())[statuses.get(run_id, "?")] += 1
    return out


def _refusals(state: State, statuses: dict[str, str]) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for run_id, month in state.run_month.items():
        if statuses.get(run_id) != "FAILURE":
            continue
        refusal, _, _ = failure_reasons(state, run_id)
        out.setdefault(month, Counter())[refusal or "other"] += 1
    return out


def _sweep(state: State) -> dict[str, str]:
    from llmarchive.schedule import row_key

    latest: dict = {}
    for r in records.read(state.paths, "coverage"):
        if r.get("job") == "full_sweep":
            latest[row_key(r)] = r
    out: dict[str, Counter] = {}
    for r in latest.values():
        out.setdefault(str(r["period"]), Counter())["ran" if r["status"] == "ran" else r.get("cause")] += 1
    return {m: " ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: (kv[0] != "ran", kv[0])))
            for m, c in out.items()}


def _money(state: State) -> Counter:
    charged: Counter = Counter()
    for entry in ledger_entries(state.paths):
        if entry.get("record_type", "spend") == "spend":
            charged[str(entry.get("month"))] += float(entry.get("cost_eur") or 0.0)
    return charged


def _pages(state: State, months: list[str]) -> dict[str, tuple[int, int]]:
    """``(delivered, owed)`` by month: attempts delivered in the month, pages recorded and not delivered by its end."""
    from llmarchive.archive import read_jsonl
    from llmarchive.schedule import outbox

    path = outbox.log_file(state.paths)
    log = read_jsonl(path) if path.exists() else []
    recorded = [e["recorded_at"] for e in log if e.get("record_type") == "page"]
    delivered = [e["at"] for e in log if e.get("record_type") == "page_attempt" and e.get("delivered")]
    out = {}
    for month in months:
        owed = sum(1 for at in recorded if at[:7] <= month) - sum(1 for at in delivered if at[:7] <= month)
        out[month] = (sum(1 for at in delivered if at[:7] == month), owed)
    return out


def _alerts(state: State) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for r in state.webhook.taken():
        kind = SHORT_KIND.get(str(r.body.get("kind")), str(r.body.get("kind") or "?"))
        event = r.body.get("event")
        out.setdefault(r.at.strftime("%Y-%m"), Counter())[f"{kind}{':' + event if event else ''}"] += 1
    for alarm in records.read(state.paths, "instrument_alarm"):
        out.setdefault(str(alarm.get("date"))[:7], Counter())["instrument_alarm"] += 1
    return out


def _events(state: State) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for when, event, did in state.applied:
        out.setdefault(when.strftime("%Y-%m"), []).append(f"{when:%d %H:%M} {event.kind}"
                                                          + (" REFUSED" if did.startswith("REFUSED") else ""))
    return out


def table(state: State) -> str:
    months = state.script.months()
    months = [m for m in months if m in state.month_seconds] or months
    statuses = _statuses(state)
    runs, refused, sweep, money, alerts, events = (_runs(state, statuses), _refusals(state, statuses), _sweep(state),
                                                   _money(state), _alerts(state), _events(state))
    pages = _pages(state, months)
    lines = [f"{'month':8} {'runs ok/failed':>14}  {'sweep (full_sweep rows)':28} {'refused':30} {'€':>7} "
             f"{'calls':>6} {'pages':>5} {'owed':>4} {'cpu s':>6} {'status':>6}  {'alerts':40} events"]
    for month in months:
        r = runs.get(month, Counter())
        calls = state.provider.billed_by_month.get(month, 0)
        lines.append(
            f"{month:8} {r['SUCCESS']:>7}/{r['FAILURE']:<6}  {sweep.get(month, '-'):28.28} "
            f"{_counter(refused.get(month)):30.30} {money.get(month, 0.0):7.2f} {calls:6} {pages[month][0]:5} {pages[month][1]:4} "
            f"{state.month_cpu.get(month, 0.0):6.0f} {state.status_cpu.get(month, 0.0):6.1f}  "
            f"{_counter(alerts.get(month)):40.40} {'; '.join(events.get(month, []))}")
    return "\n".join(lines)


def _counter(counter: Counter | None) -> str:
    if not counter:
        return "-"
    return " ".join(f"{k}×{v}" for k, v in sorted(counter.items()))


def month_of(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m")


def run_seconds(state: State) -> dict[str, float]:
    """Wall seconds the runs took, by job (each run's start to end: the moved clock ticks in real time)."""
    out: dict[str, float] = {}
    for record in state.instance.get_run_records():
        if record.start_time and record.end_time:
            job = record.dagster_run.job_name
            out[job] = out.get(job, 0.0) + record.end_time - record.start_time
    return out
