"""The subject fingerprint (SPEC §7): 24 single-fact items against the tracked model, daily.

The items (:data:`llmarchive.instrument.prompts.SUBJECT_ITEMS`) never change;
twelve are true and twelve false.  Each is one fresh call; the answer is
read by the archive's decision grammar with the options ``yes`` / ``no``,
after the same outcome table every trial goes through
(:func:`llmarchive.subjects.base.classify`).  The record is a public series:
the score, the yes/no split (a yes-habit shows as many "yes" and 12 correct),
and every item's outcome and response.

Money.  The calls are charged to the ``subject_fingerprint`` job, which is
never gated by the ladder (its cost is kept small by design): first the
general pool, then the heartbeat reserve.

When it cannot run.  If the provider answers none of the 24 calls (every
one ``blocked_upstream`` after retries), no fingerprint is recorded; a
``skip`` with condition ``provider_unreachable`` (cause ``provider_outage``)
is.  A request the provider refuses outright (a rejected key, an unknown
model) is a ``skip`` with ``provider_refused_request``.  A day already
fingerprinted for the same model is returned as recorded, never re-billed.
"""
import asyncio
from dataclasses import dataclass
from typing import Any, Optional

from llmarchive import budget as budget_mod
from llmarchive import records
from llmarchive.coverage import record_skip
from llmarchive.instrument.fingerprint import InstrumentError
from llmarchive.instrument.prompts import (SUBJECT_GRAMMAR_VERSION, SUBJECT_ITEMS, SUBJECT_ITEMS_SHA256,
                                           SUBJECT_MAX_TOKENS, SUBJECT_OPTIONS, subject_prompt)
from llmarchive.paths import ArchivePaths
from llmarchive.subjects.base import CallResult, SubjectError, classify


@dataclass
class SubjectOutcome:
    record: Optional[dict]
    skip: Optional[dict] = None
    already: bool = False


async def _ask_async(subject: Any, calls: list[tuple[str, str]], concurrency: int) -> list[CallResult]:
    gate = asyncio.Semaphore(concurrency)

    async def one(prompt: str, key: str) -> CallResult:
        async with gate:
            return await subject.acall(prompt, key)

    async with subject.connect(concurrency):
        return list(await asyncio.gather(*(one(p, k) for p, k in calls)))


def _ask(subject: Any, calls: list[tuple[str, str]], concurrency: int) -> list[CallResult]:
    if getattr(subject, "is_async", False):
        return asyncio.run(_ask_async(subject, calls, concurrency))
    return [subject.call(p, k) for p, k in calls]


def subject_fingerprint(paths: ArchivePaths, day: str, subject: Any, *, budget: Optional[budget_mod.Budget] = None,
                        unbudgeted: bool = False, concurrency: int = 4) -> SubjectOutcome:
    """Ask the 24 items, score them, record the day (see the module docstring)."""
    model = subject.subject_model_id
    for r in records.read(paths, "subject_fingerprint"):
        if r.get("date") == day and r.get("subject_model_id") == model:
            return SubjectOutcome(r, already=True)
    if subject.max_tokens != SUBJECT_MAX_TOKENS:
        raise InstrumentError(f"the subject sends max_tokens {subject.max_tokens}; the subject fingerprint freezes "
                              f"{SUBJECT_MAX_TOKENS}")
    meter = None
    if subject.billed:
        budget = budget or budget_mod.load_budget(paths)
        if budget is None and not unbudgeted:
            raise InstrumentError(f"{paths.budget_file} does not exist: the subject fingerprint makes paid calls "
                                  "(`llmarchive budget init …`, or --unbudgeted for a server you pay nothing for)")
        auth = (budget_mod.unbudgeted("subject_fingerprint") if budget is None else
                budget_mod.authorize_run(paths, budget, {"protocol_id": "subject_fingerprint"},
                                         "subject_fingerprint", len(SUBJECT_ITEMS), date=day))
        meter = budget_mod.SpendMeter(paths, auth, f"subject_fingerprint_{day}_{model}", subject.provider, model,
                                      budget)
    calls = [(subject_prompt(question), f"subject_fingerprint/{day}/{item_id}")
             for item_id, question, _ in SUBJECT_ITEMS]
    try:
        results = _ask(subject, calls, concurrency)
    except SubjectError as exc:
        skip = record_skip(paths, day, "subject_fingerprint", None, "provider_refused_request",
                           f"{subject.provider} refused the request for {model}: {exc}")
        return SubjectOutcome(None, skip)
    if meter is not None:
        meter.record_many([(key, {"answered": r.answered, "input_tokens": r.input_tokens,
                                  "output_tokens": r.output_tokens, "attempts": r.attempts})
                           for (_, key), r in zip(calls, results)])
    if not any(r.answered for r in results):
        causes = sorted({c for r in results for c in r.retry_causes})
        skip = record_skip(paths, day, "subject_fingerprint", None, "provider_unreachable",
                           f"none of the {len(results)} calls to {model} was answered "
                           f"({', '.join(causes[:3]) or 'no response'})")
        return SubjectOutcome(None, skip)

    items = []
    for (item_id, question, truth), result in zip(SUBJECT_ITEMS, results):
        decided = classify(result, SUBJECT_OPTIONS, SUBJECT_GRAMMAR_VERSION)
        items.append({"item_id": item_id, "question": question, "expected": truth, "outcome": decided.outcome,
                      "token": decided.token, "correct": decided.outcome == "valid" and decided.token == truth,
                      "response_text": result.text, "returned_model_id": result.returned_model_id})
    returned = sorted({r.returned_model_id for r in results if r.returned_model_id})
    record = records.append(paths, "subject_fingerprint", {
        "date": day, "subject_model_id": model, "returned_model_id": ",".join(returned) or None,
        "correct": sum(i["correct"] for i in items), "total": len(items), "items": items,
        "answered_yes": sum(i["token"] == "yes" for i in items), "answered_no": sum(i["token"] == "no" for i in items),
        "invalid": sum(i["outcome"] != "valid" for i in items), "items_sha256": SUBJECT_ITEMS_SHA256,
        "explicitly_set": dict(subject.explicitly_set), "api_surface_sha": subject.api_surface_sha})
    return SubjectOutcome(record)

