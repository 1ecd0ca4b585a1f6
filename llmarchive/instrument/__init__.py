"""The instrument (method §7): the archive's check on its own pipeline, and on the subject.

* :mod:`~llmarchive.instrument.fingerprint` — the runtime fingerprint: twelve
  fixed prompts on the reference model, top-5 logprobs per generated token,
  compared for exact equality with the expectation of the runtime;
* :mod:`~llmarchive.instrument.rotation` — one guard protocol a day on the
  reference model, compared slot by slot with its accepted baseline (a greedy,
  pinned runtime must repeat every decision), then by method §6's change rule;
* :mod:`~llmarchive.instrument.subject` — the subject fingerprint: 24
  single-fact items against the tracked model, a public daily series;
* :mod:`~llmarchive.instrument.verdict` — :func:`day_verdict`, the one
  function that says whether a day's measurements are ``instrument_suspect``,
  and :func:`latched_alarm`: an alarm stays latched until a human
  acknowledges it;
* :mod:`~llmarchive.instrument.acknowledge` — that acknowledgement, a
  ``core_change`` record, the only way a new expectation is established;
* :mod:`~llmarchive.instrument.revalidate` — the daily revalidation: a few
  historical measurements recomputed from their own trials, any difference
  a loud failure.

The texts live in :mod:`~llmarchive.instrument.prompts`; the log-probability
engine in :mod:`~llmarchive.instrument.engine`.
"""
from llmarchive.instrument.verdict import (DayVerdict, day_verdict, latched_alarm, mark_day_suspect, raise_alarm,
                                           suspect_value)

__all__ = ["DayVerdict", "day_verdict", "latched_alarm", "mark_day_suspect", "raise_alarm", "suspect_value"]
