"""Guard rotation (method §7): one guard protocol a day on the reference model.

**Which protocol.**  The guard protocols of one protocol series (``v0`` by
default), sorted by ``protocol_id``, are taken in that fixed order, one per
calendar day counted from :data:`ROTATION_EPOCH` (the day the v0
specification froze): day ``d`` runs ``order[(d − epoch) mod len(order)]``.
With v0's ten guard protocols that is a ten-day cycle.  The order is a pure
function of the date and the admitted guard set, so anyone can check which
protocol was due on any day, and a missed day is a missed day rather than a
shifted cycle.

**What is compared, twice.**  The run with that protocol's last *accepted*
baseline on the same reference model file and the same protocol content.
A model given by path alone is first pinned to the sha256 the instrument's
baseline was made on (:mod:`llmarchive.instrument.model_pin`): a different
file at that path is ``unavailable`` and an alarm, never a fresh baseline.

1. *Exactly, slot by slot.*  The reference model answers greedily on a
   pinned runtime (model file, threads, batch, template, library: the
   runtime fingerprint's key), so the same prompt gets the same answer
   every time, and every slot (scenario × version × repeat) must come back
   with the decision it had in the baseline (its option, or its outcome
   when it was not a valid decision).  Any slot that differs raises an
   ``instrument_alarm`` naming the slots and what each said before and now
   — verdict ``changed`` when the statistical rule alone would have called
   it ``flat``.  A statistical margin cannot see this: four scenarios that
   swap their answer in every version leave the stability where it was.
2. *By method §6's change rule* (:func:`measure.stats.compare`) on the
   measurements, the second check and the one that says how large the move
   is: ``improved`` or ``regressed`` is an alarm too (its reason also names
   any changed slots).

The accepted baseline is the first result (verdict ``baseline``) or, later, a
result that raised an alarm and was then accepted by a human ``core_change``
(:mod:`llmarchive.instrument.acknowledge`).  A result that raised an alarm
is never a baseline on its own, and ``flat`` results do not move it either,
so a slow drift in steps each too small to call is still measured against
where it started.
``changed``, ``improved`` or ``regressed`` raises an ``instrument_alarm``, and so does ``unmeasurable``
(a version with no valid decision where the baseline had one);
``flat`` is the expected answer from a frozen model; the first result for a
protocol is the ``baseline``.  A rotation that could not run is ``unavailable`` and raises an
alarm too: an instrument that did not look has not vouched for anything.

**Where the runs live.**  A rotation run is the instrument's, not a
measurement of the open-weights series (that series runs once per
generation, open lane only).  Its folder is
``private/instrument/runs/<run_id>/`` — the runner's usual layout, under a
different root — so publication, which reads ``private/experiments/``,
never mistakes it for a measurement; the ``guard_rotation`` record carries
its numbers into the public instrument table instead.
"""
from dataclasses import dataclass, field
from datetime import date as Date
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional

from llmarchive.archive import (ArchivePaths, RecordFileError, load_run, record_logs as records, records_on,
                                rotation_run_id)
from llmarchive.instrument.fingerprint import InstrumentError
from llmarchive.instrument.model_pin import pin_options, refuse_changed
from llmarchive.instrument.verdict import accepted_rotation_runs, raise_alarm
from llmarchive.protocols import registry
from llmarchive.run import RunResult, RunSettings, run_protocol
from llmarchive.subjects import make_subject
from measure.stats import compare
from measure.errors import ArchiveError

ROTATION_EPOCH = Date(2026, 9, 21)
VERDICTS = ("baseline", "flat", "changed", "improved", "regressed", "unmeasurable", "unavailable")
COMPARED = ("stability_pct", "ci_low_pct", "ci_high_pct", "drop_bound_pct_ab")
RUNTIME_FIELDS = ("model_sha256", "llama_cpp_version", "template_sha256", "runner_arch", "n_threads", "n_batch")


class InstrumentPaths(ArchivePaths):
    """An archive whose run folders are the instrument's own (``private/instrument/runs``)."""

    @property
    def experiments(self) -> Path:
        return self.private / "instrument" / "runs"


def instrument_paths(paths: ArchivePaths) -> InstrumentPaths:
    return InstrumentPaths(paths.home)


def rotation_order(headers: list[dict], series: str = "v0") -> list[str]:
    """Guard protocols of ``series`` in rotation order (by ``protocol_id``)."""
    return sorted(h["protocol_id"] for h in headers if h.get("lane") == "guard" and h.get("series") == series
                  and h.get("status") == "admitted")


def scheduled_protocol(order: list[str], day: str) -> Optional[str]:
    """The guard protocol due on ``day``, or None when no guard protocol is admitted."""
    if not order:
        return None
    offset = (Date.fromisoformat(day) - ROTATION_EPOCH).days
    return order[offset % len(order)]


def due_protocol(paths: ArchivePaths, day: str, series: str = "v0") -> Optional[str]:
    return scheduled_protocol(rotation_order(registry.list_protocols(paths), series), day)


def previous_result(paths: ArchivePaths, protocol_id: str, protocol_sha256: Optional[str],
                    model_sha256: Optional[str], before: str, override: Optional[int] = None) -> Optional[dict]:
    """The last accepted baseline for this protocol before ``before`` (see the module's docstring)."""
    accepted = accepted_rotation_runs(paths)
    found = None
    for r in records.read(paths, "guard_rotation"):
        if (r.get("protocol_id") == protocol_id and r.get("protocol_sha256") == protocol_sha256
                and r.get("generation_override") == override
                and r.get("model_sha256") == model_sha256 and str(r.get("date")) < before
                and (r.get("verdict") == "baseline" or r.get("run_id") in accepted)
                and all(isinstance(r.get(k), (int, float)) for k in COMPARED)):
            found = r
    return found


def slot_decisions(trials: Iterable[Mapping]) -> dict[str, str]:
    """``{"item/version/replicate": decision}`` of a run: the option of a valid answer, else its outcome."""
    out = {}
    for trial in trials:
        if trial.get("record_type", "trial") != "trial":
            continue
        key = f"{trial.get('item_id')}/{trial.get('version')}/{trial.get('replicate_index')}"
        out[key] = str(trial.get("token")) if trial.get("outcome") == "valid" else str(trial.get("outcome"))
    return out


def baseline_slots(paths: ArchivePaths, previous: Mapping) -> dict[str, str]:
    """The slot decisions of an accepted baseline, from its run folder under ``private/instrument/runs/``.

    Raises :class:`InstrumentError` when the folder cannot be read: without
    it the exact check cannot be made, and a rotation that could not look
    has not vouched for anything.
    """
    folder = instrument_paths(paths).run_dir(str(previous.get("run_id")))
    try:
        trials = load_run(folder).trials
    except (RecordFileError, OSError, ValueError) as exc:
        raise InstrumentError(f"the trials of the accepted baseline {previous.get('run_id')} cannot be read, so "
                              f"its decisions cannot be compared exactly: {exc}") from None
    if not trials:
        raise InstrumentError(f"the accepted baseline {previous.get('run_id')} has no trials in {folder}, so its "
                              "decisions cannot be compared exactly")
    return slot_decisions(trials)


def changed_slots(before: Mapping[str, str], now: Mapping[str, str]) -> list[dict]:
    """Every slot whose decision differs (a slot present on one side only counts, as ``missing``), in slot order."""
    def order(key: str) -> tuple:
        item, version, replicate = (key.split("/") + ["", "", ""])[:3]
        return (item, version, int(replicate) if replicate.isdigit() else -1, key)

    out = []
    for key in sorted(set(before) | set(now), key=order):
        was, became = before.get(key, "missing"), now.get(key, "missing")
        if was != became:
            out.append({"slot": key, "baseline": was, "now": became})
    return out


def _runtime_note(previous: Mapping, runtime: Mapping) -> str:
    """Which pinned runtime fields differ from the baseline's, in words ('' when none do or none were recorded)."""
    before = previous.get("runtime")
    if not isinstance(before, Mapping):
        return ""
    moved = [f"{k} {before.get(k)} → {runtime.get(k)}" for k in RUNTIME_FIELDS if before.get(k) != runtime.get(k)]
    return f"; the runtime differs from the baseline's ({', '.join(moved)})" if moved else ""


def _slots_text(changed: list[dict], limit: int = 40) -> str:
    shown = [f"{c['slot']} {c['baseline']}→{c['now']}" for c in changed[:limit]]
    more = f" and {len(changed) - limit} more" if len(changed) > limit else ""
    return ", ".join(shown) + more


def _existing(paths: ArchivePaths, day: str, protocol_id: str, override: Optional[int]) -> Optional[dict]:
    for r in records_on(paths, "guard_rotation", day):
        if (r.get("protocol_id") == protocol_id and r.get("verdict") != "unavailable"
                and r.get("generation_override") == override):
            return r
    return None


def guard_rotation(paths: ArchivePaths, day: str, subject: Any = None, *, series: str = "v0",
                   protocol_id: Optional[str] = None, reference_options: Optional[dict] = None,
                   max_tokens: Optional[int] = None, progress: Optional[Callable] = None) -> dict:
    """Run the day's guard protocol on the reference model and record the verdict.

    ``subject`` defaults to the reference model (``reference_options`` are
    passed to :func:`llmarchive.subjects.make_subject`: model, model_path,
    model_sha256, n_threads, n_batch).  ``protocol_id`` overrides the
    schedule (a re-check by hand).  ``max_tokens`` replaces the protocol's
    frozen value for a quick trial of the machinery: the run is then
    ``exploratory``, the record carries ``generation_override``, and it is
    compared only with results made under the same override — never with
    the real rotation.  A day already rotated returns its record without
    running again.  ``progress`` is the runner's progress callback
    (:data:`llmarchive.run.runner.Progress`), called after each recorded trial.

    The steps: the protocol due and a day already rotated; the run, read
    against its accepted baseline (:func:`_rotate`) — or, when it cannot run,
    an ``unavailable`` record and its alarm (:func:`_unavailable`); the
    verdict (:func:`_verdict`); its record (:func:`_record`); its alarm
    (:func:`_alarm`).
    """
    pid = protocol_id or due_protocol(paths, day, series)
    if pid is None:
        raise InstrumentError(f"no admitted guard protocol in series {series}: nothing to rotate "
                              "(promote guard protocols with `llmarchive panels promote`)")
    done = _existing(paths, day, pid, max_tokens)
    if done is not None:
        return done
    protocol = registry.load_protocol(paths, pid)
    base = {"date": day, "protocol_id": pid, "protocol_sha256": protocol.get("protocol_sha256"),
            "protocol_series": series, "generation_override": max_tokens}
    rotation = _Rotation(pid)
    try:
        _rotate(paths, day, protocol, subject, rotation, reference_options, max_tokens, progress)
    except (ArchiveError, OSError, RuntimeError, ValueError, MemoryError) as exc:
        # The protocol, the model or the run failed: an unavailable rotation (recorded, alarmed), not a
        # crash. Anything else is a bug in this code and keeps its traceback.
        return _unavailable(paths, day, pid, base, rotation.runtime, exc)
    _verdict(rotation)
    record = _record(paths, base, rotation)
    _alarm(paths, day, rotation)
    return record


@dataclass
class _Rotation:
    """One rotation as it is made: the run, its accepted baseline, and what comparing them found."""

    pid: str
    runtime: dict = field(default_factory=dict)
    previous: Optional[dict] = None              # the accepted baseline's record
    before: Optional[dict[str, str]] = None      # the baseline's slot decisions
    run_id: Optional[str] = None
    result: Optional[RunResult] = None
    verdict: str = "baseline"
    rule: Optional[str] = None                   # method §6's change rule on the measurements
    changed: list[dict] = field(default_factory=list)
    measurable: bool = True

    @property
    def measurement(self) -> Mapping:
        return self.result.measurement


def _rotate(paths: ArchivePaths, day: str, protocol: Mapping, subject: Any, rotation: _Rotation,
            reference_options: Optional[dict], max_tokens: Optional[int], progress: Optional[Callable]) -> None:
    """The run of the day, with its accepted baseline found and read before any call is made."""
    if subject is None:
        # A model given by path alone is pinned to the instrument's baseline: a changed file is refused unloaded.
        options = pin_options(paths, reference_options or {})
        subject = make_subject("reference", max_tokens=max_tokens or protocol["generation"]["max_tokens"],
                               model=options.get("model"), model_path=options.get("model_path"),
                               model_sha256=options.get("model_sha256"), pin_source=options.get("pin_source"),
                               n_threads=options.get("n_threads", 1), n_batch=options.get("n_batch", 512))
    refuse_changed(paths, subject)     # one loaded elsewhere from such a file: refused before any call
    rotation.runtime = subject.runtime()
    rotation.previous = previous_result(paths, rotation.pid, protocol.get("protocol_sha256"),
                                        rotation.runtime.get("model_sha256"), day, max_tokens)
    # Read before the run, so a baseline that cannot be compared is known before any call is made.
    rotation.before = baseline_slots(paths, rotation.previous) if rotation.previous is not None else None
    rotation.run_id = rotation_run_id(day, rotation.pid)
    settings = RunSettings(run_id=rotation.run_id, run_date=day, series="open_weights",
                           model_family="instrument-reference", allow_generation_override=max_tokens is not None,
                           concurrency=getattr(subject, "workers", 1), extra={"job": "guard_rotation"})
    rotation.result = run_protocol(instrument_paths(paths), protocol, subject, settings, progress=progress)
    if rotation.result.measurement is None:
        raise InstrumentError(f"rotation run {rotation.run_id} did not complete")


def _unavailable(paths: ArchivePaths, day: str, pid: str, base: dict, runtime: dict, exc: Exception) -> dict:
    """A rotation that could not run: recorded ``unavailable`` and alarmed (an instrument that did not look)."""
    reason = f"guard rotation of {pid} could not run: {type(exc).__name__}: {exc}"
    record = records.append(paths, "guard_rotation", {
        **base, "run_id": None, "previous_run_id": None, "verdict": "unavailable", "reason": reason,
        "model_sha256": None})
    raise_alarm(paths, day, "guard_rotation", reason, protocol_id=pid, runtime=runtime)
    return record


def _verdict(rotation: _Rotation) -> None:
    """The verdict: the first result is the baseline; then the change rule, then the exact slot check."""
    m, previous = rotation.measurement, rotation.previous
    rotation.measurable = all(isinstance(m.get(k), (int, float)) for k in COMPARED)
    rotation.rule = compare(previous, m) if previous is not None and rotation.measurable else None
    if rotation.before is not None:
        rotation.changed = changed_slots(rotation.before, slot_decisions(rotation.result.trials))
    if previous is None:
        rotation.verdict = "baseline"
    elif not rotation.measurable:
        rotation.verdict = "unmeasurable"      # was measurable before, is not now: the instrument moved
    elif rotation.rule in ("improved", "regressed"):
        rotation.verdict = rotation.rule
    else:
        rotation.verdict = "changed" if rotation.changed else "flat"


def _record(paths: ArchivePaths, base: dict, rotation: _Rotation) -> dict:
    """The day's ``guard_rotation`` record: the numbers, the comparison made and its reason in words."""
    m, previous, before, changed = rotation.measurement, rotation.previous, rotation.before, rotation.changed
    slots_note = ""
    if previous is not None:
        slots_note = (f"; {len(changed)} of {len(before or {})} slots decided differently from the baseline: "
                      f"{_slots_text(changed)}" if changed else
                      f"; all {len(before or {})} slots decided exactly as in the baseline")
    return records.append(paths, "guard_rotation", {
        **base, "run_id": rotation.run_id, "previous_run_id": previous.get("run_id") if previous else None,
        "verdict": rotation.verdict, **{k: m.get(k) for k in COMPARED},
        "previous": {k: previous.get(k) for k in COMPARED} if previous else None,
        "change_rule": rotation.rule,
        "slots_compared": len(before) if before is not None else None,
        "slots_changed": changed if previous is not None else None,
        "flags": m.get("flags"), "model_sha256": rotation.runtime.get("model_sha256"),
        "subject_model_id": m.get("subject_model_id"), "runtime": rotation.runtime,
        "reason": ("first rotation result for this protocol on this model: the baseline" if previous is None
                   else f"exact slot check and method §6 change rule ({rotation.rule or 'not applicable'}) against "
                        f"the accepted baseline {previous.get('run_id')} of {previous.get('date')}: "
                        f"{rotation.verdict}{slots_note}"),
    })


def _alarm(paths: ArchivePaths, day: str, rotation: _Rotation) -> None:
    """The alarm a verdict other than ``baseline`` or ``flat`` raises, naming what moved."""
    m, previous, before, changed = rotation.measurement, rotation.previous, rotation.before, rotation.changed
    pid, runtime, verdict = rotation.pid, rotation.runtime, rotation.verdict
    against = f"the accepted baseline of {previous.get('date')} (run {previous.get('run_id')})" if previous else ""
    named = (f"; {len(changed)} of {len(before or {})} slots decided differently: {_slots_text(changed)}"
             f"{_runtime_note(previous, runtime)}" if changed else "")
    if verdict == "unmeasurable":
        raise_alarm(paths, day, "guard_rotation",
                    f"{pid} can no longer be measured on the reference model (a version has no valid decision); "
                    f"it was on {previous.get('date')} (run {previous.get('run_id')}){named}", protocol_id=pid,
                    runtime=runtime)
    if verdict in ("improved", "regressed"):
        raise_alarm(paths, day, "guard_rotation",
                    f"{pid} {verdict} on the reference model: stability_pct {m.get('stability_pct')} against "
                    f"{previous.get('stability_pct')} on {previous.get('date')} (run {previous.get('run_id')})"
                    f"{named}", protocol_id=pid, runtime=runtime)
    if verdict == "changed":
        raise_alarm(paths, day, "guard_rotation",
                    f"{pid} changed on the reference model: {len(changed)} of {len(before or {})} slots decided "
                    f"differently from {against} on a greedy, pinned runtime, where every answer should repeat "
                    f"exactly: {_slots_text(changed)}{_runtime_note(previous, runtime)}. The change rule alone "
                    f"says {rotation.rule} (stability_pct {m.get('stability_pct')} against "
                    f"{previous.get('stability_pct')})", protocol_id=pid, runtime=runtime)
