"""The script's events, applied: the world changes, the daemon stops, a person acts.

Each kind of :class:`scripts.drill_script.Event` has one function here;
:func:`apply` records what it did in the drill's state (the table's "what
happened" column).  :func:`outside_check` is the crontab's line of
``deploy/crontab``: ``llmarchive lease --quiet``, run outside the daemon, so
it runs while the daemon is down too.
"""
import contextlib
import io
from typing import Any, Callable

from llmarchive import budget as budget_mod
from scripts import drill_actions
from scripts.drill_home import budget_of
from scripts.drill_script import Event, at, resolve
from scripts.drill_state import State
from scripts.drill_world import now


def _models(state: State, args: dict) -> str:
    state.provider.set_models(args["ids"])
    return "models list: " + ", ".join(m["id"] if isinstance(m, dict) else m for m in args["ids"])


def _fault(state: State, args: dict) -> str:
    state.provider.open_window(args["codes"], args["hours"], args.get("after_calls", 0))
    return f"provider answers {'/'.join(map(str, args['codes']))} for {args['hours']} h from chat call " \
           f"{args.get('after_calls', 0) + 1}"


def _daemon(state: State, args: dict) -> str:
    if args["state"] == "down":
        state.down = True
        return "daemon stopped"
    state.down = False
    state.daemon.restart()
    return "daemon started (a new process: nothing kept in memory)"


def _budget(state: State, args: dict) -> str:
    figures = {**state.script.budget, **args}
    budget_mod.write_budget(state.paths, budget_of(figures))
    return f"budget.json rewritten: ceiling {budget_mod.eur(figures['ceiling'])}"


def _enospc(state: State, args: dict) -> str:
    state.disk.armed = args["protocol"]
    return f"the next trial-log write of {args['protocol']} fails with ENOSPC"


def _fingerprint(state: State, args: dict) -> str:
    from scripts.drill_engine import REFERENCE

    REFERENCE.changes.append(now().date().isoformat())
    return "the scripted reference engine's fingerprint changes"


def _webhook(state: State, args: dict) -> str:
    from scripts.drill_world import MODES

    state.webhook.set(args["mode"])
    return f"the webhook {MODES[args['mode']]}"


def _launch(state: State, args: dict) -> str:
    run_id = drill_actions.launch(state.context, args["job"], args.get("partition"))
    return f"launched {args['job']} {args.get('partition') or ''} by hand: run {run_id[:8]}"


def _reexecute(state: State, args: dict) -> str:
    since = at(f"{args['since']}T00:00").timestamp()
    runs = drill_actions.reexecute_failed(state.context, args["job"], since)
    return f"re-executed {len(runs)} failed {args['job']} run(s) from failure"


def _backfill(state: State, args: dict) -> str:
    keys = [f"{month}|{pid}" for month in args["months"] for pid in state.protocols]
    backfill_id = drill_actions.backfill(state.context, args["asset"], keys)
    return f"backfill {backfill_id} of {args['asset']}: {len(keys)} partitions ({', '.join(args['months'])})"


def _acknowledge(state: State, args: dict) -> str:
    run_id = drill_actions.acknowledge(state.context, args["core_change"], args["reviewer"])
    return f"acknowledge_instrument_job launched: run {run_id[:8]}"


KINDS: dict[str, Callable[[State, dict], str]] = {
    "models": _models, "fault": _fault, "daemon": _daemon, "budget": _budget, "enospc": _enospc,
    "fingerprint": _fingerprint, "launch": _launch, "reexecute": _reexecute, "backfill": _backfill,
    "acknowledge": _acknowledge, "webhook": _webhook,
}


def apply(state: State, event: Event) -> None:
    """Apply ``event`` now and note what it did; an action Dagster refuses is noted, not raised."""
    args = resolve(event.args, state.protocols)
    try:
        did = KINDS[event.kind](state, args)
    except drill_actions.ActionRefused as exc:
        did = f"REFUSED by Dagster: {exc}"
    state.applied.append((now(), event, did))


def command(state: State, argv: list[str]) -> tuple[int, str]:
    """``llmarchive ARGV`` as an owner or the crontab runs it — in a process of its own when the drill runs its
    steps so (``--runs process``, :mod:`scripts.drill_child`), else in this one; its exit status and what it
    printed."""
    if state.zygote is not None:
        out = state.zygote.run({**state.world_spec(), "kind": "command", "argv": argv})
        state.absorb(out)
        if out.get("error"):
            return 1, str(out["error"])
        return int(out.get("status") or 0), str(out.get("said") or "")
    from llmarchive.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = main(argv)
    return int(status or 0), (stdout.getvalue() + stderr.getvalue()).strip()


def outside_check(state: State) -> int:
    """``llmarchive lease --quiet`` as the crontab runs it; its exit status."""
    status, said = command(state, ["lease", "--quiet"])   # the webhook from LLMARCHIVE_WEBHOOK_URL, as in the crontab
    if said:
        state.outside.append((now(), status, said))
    return int(status or 0)


__all__ = ["apply", "command", "now", "outside_check", "Any"]
