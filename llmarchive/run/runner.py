"""Run one protocol against one subject: a durable, resumable trial log.

A run is ``4 versions × n_items × n_per_scenario`` calls, each a fresh
session.  Its folder (``private/experiments/<run_id>/``, see
:mod:`llmarchive.archive.paths`) holds ``run.json`` (the ``experiment_run`` record),
``trials.jsonl`` (append-only, hash-chained) and, once every trial is in,
``measurement.json`` from :func:`measure.measurement.build`.

Durability.  A trial counts as done only once its record has been appended,
flushed and fsynced (the trials that finish together share one fsync); a
SIGKILL therefore loses at most the calls in flight and the answers still
waiting for their fsync (at most one per worker, :mod:`llmarchive.run.calls`).
Running the same ``run_id`` again verifies the chain, cuts a torn last line,
and calls only what is missing — identity ``(item_id, version,
replicate_index)`` — so no recorded trial is ever re-sent or re-billed, and
nothing already written (trials, their tokens and timestamps, the run's
first start) is rewritten.  A lock file stops two processes from working on
one run at once.  There is no response cache: repeated samples are real calls.

Failures that are not trials.  A call that never got an answer (a timeout,
a reset, 429/5xx/529 or a malformed 200 outlasting the retries) is not
data: nothing is recorded for its slot, the calls already in flight are
recorded as they finish, and the run stops as ``interrupted`` — ``run.json``
carries ``status: "interrupted"`` and ``interruption: {cause, condition,
at, detail, slot}`` (cause ``provider_outage``) and :class:`RunInterrupted`
says so.  The slot stays open and the next session calls it.  The same
stop, with cause ``budget_halted``, when the next attempt's worst case would
take the pool past its cap, and with cause ``write_failed`` when a trial or
ledger write fails (a full disk): the log is cut back to its last whole
record, so it reopens cleanly.

Money.  For a paid subject each attempt's worst case is reserved in the
spend ledger before it is sent (the attempts leaving together with one
fsync, :mod:`llmarchive.run.reservations`), and each recorded trial is charged from the
usage the provider reported, settling its reservations
(:class:`llmarchive.budget.SpendMeter`); a call killed in flight stays
charged at its worst case.

Order.  The schedule is deterministic and interleaved so that a drift
during a run (provider load, a model swap, thermal throttling) cannot fall
on one version: replicate by replicate, item by item, the four versions of
each item in a rotating (Latin-square) order.  With ``concurrency`` > 1,
calls start in schedule order and are recorded as they finish; the
``trial_index`` keeps the schedule position.

What a trial record carries is :data:`measure.schema.TRIAL_FIELDS` (each
field's type, whether it may be null and what it means), written in that
order and checked against it before it is appended: ``prompt_sha256`` and
never the prompt itself (so no guard wording travels in a trial), the
outcome, token and reason, and the transport, ``response_text`` (the full
trace, for every lane — method §10) included.  Never a key.
"""
import asyncio
import contextlib
import dataclasses
import hashlib
import re
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Optional

from llmarchive.budget import Authorization, Budget, BudgetHalted, LedgerView, SpendMeter
from llmarchive.archive import ArchivePaths, RecordFileError, check_id, measurement_run, store, utc_now, utc_today
from llmarchive.run.alarms import alarm_since
from llmarchive.subjects import CallResult, SubjectError, classify, returned_model_id
from llmarchive.run.calls import CallLoop
from llmarchive.run.reservations import Reserver
# What a run is made of lives in llmarchive.run.plan; its names are the runner's too (callers import them here).
from llmarchive.run.plan import (  # noqa: F401
    INTERRUPTION_CONDITIONS, PlannedTrial, Progress, RunError, RunHalted, RunInterrupted, RunResult, RunSettings,
    default_model_family, protocol_header, schedule, trial_key, validate_protocol)
from measure.measurement import MeasurementError, build, extractor_sha
from measure.chain import ChainError
from measure.schema import (OUTCOMES, SCHEMA_VERSION, SERIES, TRIAL_WRITTEN_FIELDS, VERSIONS, check_trial,
                            system_fingerprints)
from llmarchive.protocols import is_preregistered

MAX_CONCURRENCY = 256   # an inference cluster behind one URL (bench/runner_bench.py part c runs 256)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _run_lock(folder: Path) -> contextlib.AbstractContextManager:
    return store.lock_run(folder, busy=RunError(f"run {folder.name} is being worked on by another process"))


def run_protocol(paths: ArchivePaths, protocol: Mapping, subject: Any, settings: RunSettings, *,
                 authorization: Optional[Authorization] = None, budget: Optional[Budget] = None,
                 progress: Optional[Progress] = None, ledger: Optional[LedgerView] = None) -> RunResult:
    """Run (or resume) ``protocol`` on ``subject``; build the measurement when complete.

    ``authorization`` (from :func:`llmarchive.budget.authorize_run`) is
    required for a paid subject and makes every recorded call one ledger
    entry; the free reference subject takes none.  ``ledger`` is the ledger
    as that authorisation read it, taken over by the run's meter (a start
    reads the ledger once; None: the meter reads it).  Raises
    :class:`RunHalted` when the subject fails for good (a bad key, an unknown
    model) — what was recorded stays, and the run can be resumed.
    """
    validate_protocol(protocol)
    check_id(settings.run_id, "run_id")
    if not 1 <= settings.concurrency <= MAX_CONCURRENCY:
        raise RunError(f"concurrency must be between 1 and {MAX_CONCURRENCY}, got {settings.concurrency}")
    if subject.billed and authorization is None:
        raise RunError(f"the {subject.provider} subject is paid: a run needs a budget authorization")
    generation = dict(protocol["generation"])
    unsupported = sorted(set(generation) - {"max_tokens"})
    if unsupported:
        raise RunError(f"protocol {protocol['protocol_id']}: generation parameter(s) {', '.join(unsupported)} "
                       "are not supported by the subjects; only max_tokens is sent besides the prompt")
    if subject.max_tokens != generation["max_tokens"]:
        if not settings.allow_generation_override:
            raise RunError(f"the subject sends max_tokens {subject.max_tokens} but protocol "
                           f"{protocol['protocol_id']} freezes generation.max_tokens {generation['max_tokens']}")
        note = (f"generation override: max_tokens {subject.max_tokens} instead of the protocol's "
                f"{generation['max_tokens']}")
        settings = dataclasses.replace(
            settings, exploratory="; ".join(x for x in (settings.exploratory or "", note) if x),
            extra={**settings.extra, "generation_override": {"max_tokens": subject.max_tokens}})
    folder = paths.run_dir(settings.run_id)
    with _run_lock(folder):
        run = _Run(paths, folder, protocol, subject, settings, authorization, budget, progress, ledger)
        return run.execute()


class _Run(CallLoop):
    STOP_ERRORS = (SubjectError, BudgetHalted)

    def __init__(self, paths: ArchivePaths, folder: Path, protocol: Mapping, subject: Any, settings: RunSettings,
                 authorization: Optional[Authorization], budget: Optional[Budget],
                 progress: Optional[Progress], ledger: Optional[LedgerView] = None) -> None:
        self.paths, self.folder, self.protocol, self.subject = paths, folder, protocol, subject
        self.settings, self.progress = settings, progress
        self.header = protocol_header(protocol)
        self.prompts = {item["item_id"]: item["versions"] for item in protocol["panel"]}
        self.prompt_sha256 = {(item_id, version): hashlib.sha256(prompt.encode("utf-8")).hexdigest()
                              for item_id, versions in self.prompts.items() for version, prompt in versions.items()}
        self.plan = schedule(protocol)
        self.previous = self._previous_run()
        self.run_date = self._run_date()
        try:
            self.log = store.open_trial_log(folder)
        except (ChainError, RecordFileError) as exc:
            raise RunError(f"{store.trial_log(folder)}: the trial log does not verify ({exc}); "
                           "refusing to add to it") from None
        self.done = self._recorded_trials()
        self.meter = None
        if authorization is not None and subject.billed:
            self.meter = SpendMeter(paths, authorization, settings.run_id, subject.provider,
                                    subject.subject_model_id, budget, ledger=ledger)
            self.reserver = Reserver(self.meter)   # the attempts leaving together are reserved with one fsync
        self.authorization = authorization
        self.called = 0
        self.session_tag = "s0"

    # -- checks on an existing folder ------------------------------------
    def _previous_run(self) -> Optional[dict]:
        try:
            previous = store.read_run_if_any(self.folder)
            if previous is None:
                return None
        except RecordFileError as exc:
            raise RunError(str(exc)) from None
        mine = {
            "protocol_id": self.protocol["protocol_id"],
            "protocol_sha256": self.protocol.get("protocol_sha256"),
            "panel_sha256": self.protocol.get("panel_sha256"),
            "subject_kind": self.subject.config().get("kind"),
            "subject_model_id": self.subject.subject_model_id,
            "api_surface_sha": self.subject.api_surface_sha,
        }
        theirs = dict(previous)
        theirs["subject_kind"] = (previous.get("subject") or {}).get("kind")
        for key, value in mine.items():
            if theirs.get(key) != value:
                raise RunError(f"run {self.settings.run_id} was started with {key} {theirs.get(key)!r}, "
                               f"this one has {value!r}; resume with the same protocol and subject, "
                               "or choose a new --run-id")
        return previous

    def _run_date(self) -> str:
        stored = (self.previous or {}).get("run_date")
        given = self.settings.run_date
        if given is not None and not _DATE.match(given):
            raise RunError(f"run_date must be YYYY-MM-DD, got {given!r}")
        if stored and given and stored != given:
            raise RunError(f"run {self.settings.run_id} has run_date {stored}; it cannot be resumed as {given}")
        return stored or given or utc_today()

    def _recorded_trials(self) -> dict[tuple, dict]:
        planned = {p.identity: p for p in self.plan}
        done: dict[tuple, dict] = {}
        for index, trial in enumerate(self.log.records):
            where = f"{self.log.path}, record #{index}"
            if trial.get("record_type") != "trial" or trial.get("run_id") != self.settings.run_id:
                raise RunError(f"{where} is not a trial of run {self.settings.run_id}")
            identity = (trial.get("item_id"), trial.get("version"), trial.get("replicate_index"))
            if identity not in planned:
                raise RunError(f"{where}: trial {identity} is not in this protocol's schedule")
            if identity in done:
                raise RunError(f"{where}: trial {identity} is recorded twice")
            done[identity] = trial
        return done

    # -- recording ------------------------------------------------------------
    def _record(self, batch: list[tuple[PlannedTrial, CallResult]]) -> list[dict]:
        """Make trials durable (one fsync for the whole batch) and report them."""
        written = self.log.extend([self._trial(planned, result) for planned, result in batch])
        before = len(self.done)
        for (planned, _), trial in zip(batch, written):
            self.done[planned.identity] = trial
        self.called += len(written)
        if self.progress:     # each trial counted once, in order: a batch is not its last count repeated
            for n, trial in enumerate(written, start=before + 1):
                self.progress(n, len(self.plan), trial)
        return written

    def _cost_facts(self, trial: Mapping) -> dict:
        """What the ledger needs beyond a trial record: the size of its prompt and max_tokens (its worst case)."""
        prompt = self.prompts.get(trial.get("item_id"), {}).get(trial.get("version"), "")
        return {"prompt_bytes": len(prompt.encode("utf-8")), "max_tokens": self.subject.max_tokens}

    def _charge(self, written: list[dict]) -> None:
        """Ledger charges for recorded trials (derivable from the trial log: a resumed run charges what is missing)."""
        if self.meter is not None:
            self.meter.charge([(trial_key(trial), {**trial, **self._cost_facts(trial)}) for trial in written])

    def _trial(self, planned: PlannedTrial, result: CallResult) -> dict:
        decided = classify(result, self.protocol["options"], self.protocol["grammar_version"])
        trial = {
            "record_type": "trial",
            "schema_version": SCHEMA_VERSION,
            "run_id": self.settings.run_id,
            "protocol_id": self.protocol["protocol_id"],
            "item_id": planned.item_id,
            "n_items": self.protocol["n_items"],
            "version": planned.version,
            "replicate_index": planned.replicate_index,
            "trial_index": planned.trial_index,
            "prompt_sha256": self.prompt_sha256[planned.item_id, planned.version],
            "outcome": decided.outcome,
            "token": decided.token,
            "reason": decided.reason,
            "response_text": result.text,
            "stop_reason": result.stop_reason,
            "returned_model_id": result.returned_model_id,
            "input_tokens": result.input_tokens,
            "output_tokens": result.output_tokens,
            "latency_ms": result.latency_ms,
            "attempts": result.attempts,
            "retry_causes": list(result.retry_causes),
            "unknown_attempts": result.unknown_attempts,
            "answered": result.answered,
            "session": self.session_tag,
            "started_at": result.started_at,
            "finished_at": result.finished_at,
            "system_fingerprint": result.system_fingerprint,
        }
        # The schema's trial, exactly: a value of the wrong type is refused here, before it is made durable.
        check_trial(trial, f"run {self.settings.run_id}, trial {planned.key}", needs=TRIAL_WRITTEN_FIELDS, closed=True)
        return trial

    def _prompt(self, planned: PlannedTrial) -> str:
        return self.prompts[planned.item_id][planned.version]

    def _call_key(self, planned: PlannedTrial) -> str:
        return f"{self.settings.run_id}/{planned.key}"

    def _interruption(self, cause: str, planned: Optional[PlannedTrial], detail: str) -> dict:
        return {"cause": cause, "condition": INTERRUPTION_CONDITIONS.get(cause), "at": utc_now(),
                "detail": detail, "slot": None if planned is None else planned.key}

    def _settle_unanswered(self, planned: PlannedTrial, attempts: Any, unknown: Any) -> None:
        """Ledger: the attempts of a call that is not a trial (an error answer costs nothing, an unknown its worst)."""
        if self.meter is None or not isinstance(attempts, int):
            return
        facts = self._cost_facts({"item_id": planned.item_id, "version": planned.version})
        self.meter.charge_unanswered(planned.key, self.session_tag,
                                     {"attempts": attempts, "unknown_attempts": unknown or 0, **facts})

    def _before_send(self, planned: PlannedTrial):
        """The hook that reserves each attempt's worst case before it leaves (paid subjects only)."""
        if self.meter is None:
            return None
        facts = self._cost_facts({"item_id": planned.item_id, "version": planned.version})

        async def reserve(attempt: int) -> None:
            await self.reserver.reserve((planned.key, self.session_tag, attempt, facts["prompt_bytes"],
                                         facts["max_tokens"]))
        return reserve

    def _call_failed(self, planned: PlannedTrial, exc: BaseException) -> Optional[tuple]:
        """Turn what a call raised into a stop (None: not ours to handle, re-raise)."""
        if isinstance(exc, SubjectError):
            self._settle_unanswered(planned, getattr(exc, "attempts", None), getattr(exc, "unknown_attempts", 0))
            return ("halted", str(exc))
        if isinstance(exc, BudgetHalted):
            return ("interrupted", self._interruption("budget_halted", planned, str(exc)))
        return None

    def _unanswered(self, planned: PlannedTrial, result: CallResult) -> tuple:
        self._settle_unanswered(planned, result.attempts, result.unknown_attempts)
        return ("interrupted", self._interruption("provider_outage", planned,
                                                  f"{result.failure}: {result.detail or 'no answer'}"))

    # -- the whole run -----------------------------------------------------------
    def execute(self) -> RunResult:
        already = len(self.done)
        if self.meter is not None:
            self._charge(list(self.done.values()))   # what a killed run recorded but never charged
        if (already == len(self.plan) and self.previous and self.previous.get("status") == "complete"
                and store.is_complete(self.folder)):
            # Nothing to do: a complete run is returned as it stands, nothing rewritten.
            return RunResult(self.folder, self.previous, self._ordered_trials(), store.read_measurement(self.folder),
                             0, already)
        session = {"started_at": utc_now(), "ended_at": None, "recorded_before": already, "called": 0,
                   "outcome": "running"}
        sessions = list((self.previous or {}).get("sessions", [])) + [session]
        # Names this session's ledger reservations; unique even when two sessions start in the same second.
        self.session_tag = f"s{len(sessions)}"
        self._write_run("running", sessions)
        remaining = [p for p in self.plan if p.identity not in self.done]
        status, error, interruption = "complete", None, None
        try:
            stop = None
            if remaining:
                if self.subject.is_async:
                    stop = asyncio.run(self._execute_async(remaining))
                else:
                    stop = self._execute_sync(remaining)
            if stop is not None:
                status = stop[0]
                if status == "halted":
                    error = stop[1]
                else:
                    interruption = stop[1]
        except KeyboardInterrupt:
            status = "interrupted"
            interruption = self._interruption("stopped_by_operator", None, "KeyboardInterrupt")
            raise
        finally:
            if status == "complete" and len(self.done) < len(self.plan):
                status = "interrupted"
            session.update(ended_at=utc_now(), called=self.called, outcome=status)
            if error:
                session["error"] = error
            if interruption:
                session["interruption"] = interruption
            try:
                run = self._write_run(status, sessions, interruption)
            except OSError as exc:
                if interruption is None or interruption["cause"] != "write_failed":
                    raise
                run = dict(self.previous or {}, status=status, interruption=interruption)
                interruption["detail"] += f"; {store.RUN_FILE} could not be updated either ({type(exc).__name__})"
        measurement = None
        if status == "complete":
            measurement = self._measure(run)
        # After the measurement is written, never before: an alarm raised while this session was calling the
        # model is seen here, or its own marking sees the measurement (method §7; instrument.verdict).
        try:
            run, measurement = self._flag_if_alarmed(session["started_at"], run, measurement)
        except OSError:
            if interruption is None or interruption["cause"] != "write_failed":
                raise     # a disk that refused the trials refuses this too; the stop is reported below
        trials = self._ordered_trials()
        if status == "halted":
            raise RunHalted(f"run {self.settings.run_id} stopped after {len(self.done)} of {len(self.plan)} trials: "
                            f"{error}; fix the cause and run the same --run-id again to resume")
        if interruption is not None:
            open_slots = len(self.plan) - len(self.done)
            raise RunInterrupted(
                f"run {self.settings.run_id} interrupted ({interruption['cause']}) after {len(self.done)} of "
                f"{len(self.plan)} trials: {interruption['detail']}. {open_slots} slot(s) are still open and nothing "
                "was recorded for them; run the same --run-id again (or materialise again) to resume",
                interruption)
        return RunResult(self.folder, run, trials, measurement, self.called, already)

    def _flag_if_alarmed(self, started_at: str, run: dict, measurement: Optional[dict]
                         ) -> tuple[dict, Optional[dict]]:
        """Mark this run ``instrument_suspect`` when an alarm was recorded since ``started_at`` (lock held)."""
        reason = alarm_since(self.paths, started_at)
        if reason is None or not store.mark_suspect(self.folder, reason):
            return run, measurement
        self.previous = store.read_run(self.folder)
        return self.previous, (store.read_measurement(self.folder) if measurement is not None else None)

    def _ordered_trials(self) -> list[dict]:
        return sorted(self.done.values(), key=lambda t: t["trial_index"])

    def _measure(self, run: dict) -> dict:
        try:
            record = build(self.header, self._ordered_trials(), measurement_run(run))
        except MeasurementError as exc:
            raise RunError(f"run {self.settings.run_id} is complete but cannot be measured: {exc}") from None
        store.write_measurement(self.folder, record)
        return record

    def _write_run(self, status: str, sessions: list[dict], interruption: Optional[dict] = None) -> dict:
        trials = list(self.done.values())
        subject, previous = self.subject, self.previous or {}
        returned = Counter(t.get("returned_model_id") for t in trials if t.get("returned_model_id"))
        outcomes = {v: {o: 0 for o in OUTCOMES} for v in VERSIONS}
        for t in trials:
            outcomes[t["version"]][t["outcome"]] += 1
        series = self.settings.series or previous.get("series") or subject.default_series
        if series not in SERIES:
            raise RunError(f"series must be one of {SERIES}, got {series!r}")
        family = (self.settings.model_family or previous.get("model_family")
                  or default_model_family(getattr(subject, "name", None) or subject.subject_model_id))
        charged, worst = (0.0, 0.0) if not subject.billed else (self.meter.run_totals() if self.meter else (None, 0.0))
        cost = None if charged is None else round(charged + worst, 6)

        def total(key: str) -> int:
            return sum(t.get(key) or 0 for t in trials)

        run = {
            "record_type": "experiment_run",
            "schema_version": SCHEMA_VERSION,
            "run_id": self.settings.run_id,
            "run_date": self.run_date,
            "protocol_id": self.protocol["protocol_id"],
            "protocol_header": self.header,
            "panel_sha256": self.protocol.get("panel_sha256"),
            "protocol_sha256": self.protocol.get("protocol_sha256"),
            "lane": self.protocol.get("lane"),
            "grammar_version": self.protocol["grammar_version"],
            "extractor_sha": extractor_sha(self.protocol["grammar_version"]),
            "series": series,
            "model_family": family,
            "subject_model_id": subject.subject_model_id,
            "returned_model_id": returned_model_id(trials),     # every id, each once, sorted, comma-joined
            "returned_model_ids": dict(sorted(returned.items())),
            "system_fingerprints": system_fingerprints(trials),   # the server builds that answered (method §10.1)
            "api_surface_sha": subject.api_surface_sha,
            "condition_profile": subject.condition_profile,
            "explicitly_set": subject.explicitly_set,
            "subject": subject.config(),
            "runtime": subject.runtime(),
            "replicate_index": self.settings.replicate_index,
            "instrument_suspect": self.settings.instrument_suspect or previous.get("instrument_suspect", False),
            "exploratory": self.settings.exploratory or previous.get("exploratory", False),
            "budget": None if self.authorization is None else self.authorization.to_json(),
            "concurrency": self.settings.concurrency,
            "status": status,
            "started_at": previous.get("started_at") or sessions[0]["started_at"],
            "finished_at": utc_now() if status == "complete" else None,
            "sessions": sessions,
            "n_trials_planned": len(self.plan),
            "n_trials_recorded": len(trials),
            "outcomes": outcomes,
            "input_tokens": total("input_tokens"),
            "output_tokens": total("output_tokens"),
            "attempts": total("attempts"),
            "latency_ms": total("latency_ms"),
            "cost_eur": cost,                       # charged + open worst case
            "cost_charged_eur": charged,
            "cost_worst_case_eur": worst,
            "interruption": interruption,
            "trials_last_sha256": self.log.last_hash,
        }
        if previous.get("status") == "complete" and previous.get("finished_at"):
            run["finished_at"] = previous["finished_at"]
        run.update(self.settings.extra)
        store.write_run(self.folder, run)
        self.previous = run
        return run


def recorded_trials(paths: ArchivePaths, run_id: str) -> int:
    """How many trials a run folder already holds (0 for a new run)."""
    try:
        return len(store.read_trials(paths.run_dir(run_id)))
    except RecordFileError as exc:
        raise RunError(str(exc)) from None


def preregistration(paths: ArchivePaths, protocol: Mapping) -> dict:
    """``{"listed": bool, "reason": str}``: whether the protocol's hashes are in a stamped manifest."""
    listed, reason = is_preregistered(paths, dict(protocol))
    return {"listed": bool(listed), "reason": reason}
