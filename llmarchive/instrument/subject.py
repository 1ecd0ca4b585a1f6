"""The subject fingerprint (method §7.3): 24 single-fact items against the tracked model, daily.

The items (:data:`llmarchive.instrument.prompts.SUBJECT_ITEMS`) never change;
twelve are true and twelve false.  Each is one fresh call; the answer is
read by the archive's decision grammar with the options ``yes`` / ``no``,
after the same outcome table every trial goes through
(:func:`llmarchive.subjects.base.classify`).  The record is a public series:
the score, the yes/no split (a yes-habit shows as many "yes" and 12 correct),
and every item's outcome and response.

A day is all 24 answers or nothing.  A call that never got an answer (a
timeout, a dropped connection, a 429/5xx that outlasted the retries: the
result carries ``failure``) is not a trial, so it cannot be scored — and a
score over fewer than 24 items would not be comparable with any other day.
If any call of the day went unanswered, no fingerprint is recorded; a
``skip`` with condition ``provider_unreachable`` (cause ``provider_outage``)
is, and the day can be asked again.  A request the provider refuses outright
(a rejected key, an unknown model) is a ``skip`` with
``provider_refused_request``.  A day already fingerprinted for the same
model is returned as recorded, never re-billed; a day being asked of the
same model by another launch (a double click, the schedule's tick beside a
manual launch) is refused (``RunBusy``) before any call.

Money (method §9).  The calls are charged to the ``subject_fingerprint``
job, which the ladder never gates (its cost is kept small by design): first
the general pool, then the heartbeat reserve, and never past both — when
what is left of the two cannot hold the day's 24 calls at their worst case,
nothing is sent and the day is a ``skip`` with condition ``budget_refused``
(cause ``budget_halted``).  Every call that left is charged, whatever
happened to the others: an answered call from the usage the provider
reported, an attempt whose fate is unknown (a read timeout, a malformed
200) at its worst case (prompt bytes + framing + ``max_tokens``), an HTTP
error answer at nothing.  Each attempt's worst case is reserved in the
ledger before it leaves, so a process killed mid-call leaves it charged.
The day's worst case is earmarked, under the day's lock, in the pool that
will pay it (method §9.4), and every call is charged to the day's month.
"""
import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Optional, Union

from llmarchive import budget as budget_mod
from llmarchive.archive import (ArchivePaths, SUBJECT_FINGERPRINT, fingerprint_lock_id, fingerprint_run_id,
                                fingerprint_session, first_condition, record_logs as records, record_skip)
from llmarchive.instrument.fingerprint import InstrumentError
from llmarchive.instrument.prompts import (SUBJECT_GRAMMAR_VERSION, SUBJECT_ITEMS, SUBJECT_ITEMS_SHA256,
                                           SUBJECT_MAX_TOKENS, SUBJECT_OPTIONS, subject_prompt)
from llmarchive.subjects import CallResult, SubjectError, classify, returned_model_id

JOB = SUBJECT_FINGERPRINT
# What one call came back as: a result (answered, or with ``failure`` set), or what it raised.
Answer = Union[CallResult, BaseException]
BeforeSendFor = Callable[[str, str], Optional[Callable[[int], Awaitable[None]]]]


@dataclass
class SubjectOutcome:
    record: Optional[dict]
    skip: Optional[dict] = None
    already: bool = False


async def _ask_async(subject: Any, calls: list[tuple[str, str]], concurrency: int,
                     before_send_for: Optional[BeforeSendFor]) -> list[Answer]:
    gate = asyncio.Semaphore(concurrency)

    async def one(prompt: str, key: str) -> CallResult:
        async with gate:
            hook = before_send_for(prompt, key) if before_send_for else None
            if hook is None:
                return await subject.acall(prompt, key)
            return await subject.acall(prompt, key, before_send=hook)

    async with subject.connect(concurrency):
        # return_exceptions: one call raising must not lose the answers (and the bill) of the others
        return list(await asyncio.gather(*(one(p, k) for p, k in calls), return_exceptions=True))


def _ask(subject: Any, calls: list[tuple[str, str]], concurrency: int,
         before_send_for: Optional[BeforeSendFor] = None) -> list[Answer]:
    if getattr(subject, "is_async", False):
        return asyncio.run(_ask_async(subject, calls, concurrency, before_send_for))
    answers: list[Answer] = []
    for prompt, key in calls:
        try:
            answers.append(subject.call(prompt, key))
        except SubjectError as exc:   # the provider refuses the request: the next call would be refused too
            answers.append(exc)
            break
    return answers


def _cost_facts(prompt: str) -> dict:
    """What the ledger needs for an attempt's worst case."""
    return {"prompt_bytes": len(prompt.encode("utf-8")), "max_tokens": SUBJECT_MAX_TOKENS}


def _worst_case_day(budget: budget_mod.Budget, calls: list[tuple[str, str]]) -> float:
    """The most the day's calls can cost, one attempt each (the flat rate when the budget has no prices)."""
    if budget.priced:
        return sum(budget.attempt_worst_case(_cost_facts(p)["prompt_bytes"], SUBJECT_MAX_TOKENS) for p, _ in calls)
    return budget.rate("fingerprint") * len(calls)


def _session(ledger: budget_mod.LedgerView, day: str, model: str) -> str:
    """This attempt at the day's number (1, 2, …): its own ledger run, so a day asked again is charged again.

    Numbered from the ledger as read under the day's lock, where no other
    launch can number an attempt of the same day and model.
    """
    return str(fingerprint_session(ledger.tally.run_ids, day, model))


def _ledger_run(day: str, model: str) -> Callable[[budget_mod.LedgerView], str]:
    """The ledger run of this attempt at the day, which draws the day's earmark down."""
    return lambda ledger: fingerprint_run_id(day, model, _session(ledger, day, model))


def _meter(meter: budget_mod.SpendMeter, session: str, calls: list[tuple[str, str]],
           answers: list[Answer]) -> None:
    """Charge every call that left: answered ones from usage, the others for their attempts of unknown fate."""
    answered = []
    for (prompt, key), answer in zip(calls, answers):
        facts = {**_cost_facts(prompt), "session": session}
        if isinstance(answer, CallResult) and answer.failure is None:
            answered.append((key, {"answered": answer.answered, "input_tokens": answer.input_tokens,
                                   "output_tokens": answer.output_tokens, "attempts": answer.attempts,
                                   "unknown_attempts": answer.unknown_attempts, **facts}))
        elif isinstance(answer, CallResult):
            meter.charge_unanswered(key, session, {"attempts": answer.attempts,
                                                   "unknown_attempts": answer.unknown_attempts, **facts})
        elif isinstance(answer, SubjectError) and isinstance(getattr(answer, "attempts", None), int):
            meter.charge_unanswered(key, session, {"attempts": answer.attempts,
                                                   "unknown_attempts": getattr(answer, "unknown_attempts", 0) or 0,
                                                   **facts})
        # anything else raised before or while sending: its reservations stay open, charged at their worst case
    meter.charge(answered)


def _hook_factory(meter: budget_mod.SpendMeter, session: str) -> BeforeSendFor:
    def before_send_for(prompt: str, key: str) -> Callable[[int], Awaitable[None]]:
        facts = _cost_facts(prompt)

        async def reserve(attempt: int) -> None:
            await asyncio.to_thread(meter.reserve, key, session, attempt, facts["prompt_bytes"], facts["max_tokens"])
        return reserve
    return before_send_for


def _skip_for(paths: ArchivePaths, day: str, subject: Any, calls: list[tuple[str, str]],
              answers: list[Answer]) -> Optional[dict]:
    """The day's skip when not every call was answered (None: all 24 answered), or re-raise a bug."""
    model = subject.subject_model_id
    halted = [a for a in answers if isinstance(a, budget_mod.BudgetHalted)]
    refused = [a for a in answers if isinstance(a, SubjectError)]
    failed = [a for a in answers if isinstance(a, CallResult) and a.failure is not None]
    other = [a for a in answers if isinstance(a, BaseException) and a not in halted and a not in refused]
    if other:
        raise other[0]
    conditions = {"budget_refused": halted, "provider_refused_request": refused, "provider_unreachable": failed}
    observed = [c for c, found in conditions.items() if found]
    if len(answers) < len(calls) and not observed:
        raise InstrumentError(f"{len(answers)} of {len(calls)} subject fingerprint calls came back")
    if not observed:
        return None
    condition = first_condition(observed)
    unanswered = len(calls) - sum(isinstance(a, CallResult) and a.failure is None for a in answers)
    if condition == "budget_refused":
        reason = f"stopped before sending: {halted[0]} ({unanswered} of {len(calls)} calls unanswered)"
    elif condition == "provider_refused_request":
        reason = (f"{subject.provider} refused the request for {model}: {refused[0]} "
                  f"({unanswered} of {len(calls)} calls unanswered)")
    else:
        causes = sorted({str(a.failure) for a in failed})
        reason = (f"{unanswered} of the {len(calls)} calls to {model} got no answer "
                  f"({', '.join(causes[:3])}): no fingerprint for a partial day")
    return record_skip(paths, day, JOB, None, condition, reason)


def _recorded(paths: ArchivePaths, day: str, model: str) -> Optional[dict]:
    """The day's fingerprint of ``model`` when one is recorded: asked once before the lock (cheap), once under it."""
    found = records.dated(paths, JOB, day, lambda r: r.get("subject_model_id") == model)
    return found[0] if found else None


def subject_fingerprint(paths: ArchivePaths, day: str, subject: Any, *, budget: Optional[budget_mod.Budget] = None,
                        unbudgeted: bool = False, concurrency: int = 4) -> SubjectOutcome:
    """Ask the 24 items, score them, record the day (see the module docstring).

    A paid day takes the day's lock and earmark first (method §9.4): a second
    launch of the same day and model while this one is asking is refused
    (:class:`~llmarchive.budget.RunBusy`) before any call, and one that starts
    after this one finished finds its record, looked for again under the lock.
    """
    model = subject.subject_model_id
    recorded = _recorded(paths, day, model)
    if recorded is not None:
        return SubjectOutcome(recorded, already=True)
    if subject.max_tokens != SUBJECT_MAX_TOKENS:
        raise InstrumentError(f"the subject sends max_tokens {subject.max_tokens}; the subject fingerprint freezes "
                              f"{SUBJECT_MAX_TOKENS}")
    calls = [(subject_prompt(question), f"{JOB}/{day}/{item_id}") for item_id, question, _ in SUBJECT_ITEMS]
    if not subject.billed:
        return _ask_and_record(paths, day, subject, calls, concurrency, None, "")
    budget = budget or budget_mod.load_budget(paths)
    if budget is None and not unbudgeted:
        raise InstrumentError(f"{paths.budget_file} does not exist: the subject fingerprint makes paid calls "
                              "(`llmarchive budget init …`, or --unbudgeted for a server you pay nothing for)")
    try:
        # the start's one reading of the ledger: room, the attempt's number and the meter
        auth, earmark, ledger = budget_mod.earmark_run(
            paths, budget, {}, JOB, len(calls), date=day, run_id=fingerprint_lock_id(day, model),
            cost_eur=None if budget is None else _worst_case_day(budget, calls), ledger_run=_ledger_run(day, model))
    except budget_mod.BudgetHalted as halted:
        return SubjectOutcome(None, halted.skip)
    with earmark:
        recorded = _recorded(paths, day, model)    # a launch that finished while this one was starting
        if recorded is not None:
            return SubjectOutcome(recorded, already=True)
        session = _session(ledger, day, model)     # the attempt the earmark was taken for
        meter = budget_mod.SpendMeter(paths, auth, fingerprint_run_id(day, model, session), subject.provider, model,
                                      budget, ledger=ledger)
        return _ask_and_record(paths, day, subject, calls, concurrency, meter, session)


def _ask_and_record(paths: ArchivePaths, day: str, subject: Any, calls: list[tuple[str, str]], concurrency: int,
                    meter: Optional[budget_mod.SpendMeter], session: str) -> SubjectOutcome:
    """The day itself: the calls, their charges (``meter``: a paid day), then its record or its skip."""
    model = subject.subject_model_id
    hooks = _hook_factory(meter, session) if meter is not None and getattr(subject, "is_async", False) else None
    answers = _ask(subject, calls, concurrency, hooks)
    if meter is not None:
        _meter(meter, session, calls, answers)
    skip = _skip_for(paths, day, subject, calls, answers)
    if skip is not None:
        return SubjectOutcome(None, skip)
    results: list[CallResult] = answers  # type: ignore[assignment]  # _skip_for proved every one answered

    items = []
    for (item_id, question, truth), result in zip(SUBJECT_ITEMS, results):
        decided = classify(result, SUBJECT_OPTIONS, SUBJECT_GRAMMAR_VERSION)
        items.append({"item_id": item_id, "question": question, "expected": truth, "outcome": decided.outcome,
                      "token": decided.token, "correct": decided.outcome == "valid" and decided.token == truth,
                      "response_text": result.text, "returned_model_id": result.returned_model_id})
    record = records.append(paths, JOB, {
        "date": day, "subject_model_id": model, "returned_model_id": returned_model_id(items),   # the run's rule
        "correct": sum(i["correct"] for i in items), "total": len(items), "items": items,
        "answered_yes": sum(i["token"] == "yes" for i in items), "answered_no": sum(i["token"] == "no" for i in items),
        "invalid": sum(i["outcome"] != "valid" for i in items), "items_sha256": SUBJECT_ITEMS_SHA256,
        "explicitly_set": dict(subject.explicitly_set), "api_surface_sha": subject.api_surface_sha})
    return SubjectOutcome(record)
