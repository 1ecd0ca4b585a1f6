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
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from llmarchive.instrument.acknowledge import AcknowledgeError
from llmarchive.instrument.engine import Generated
from llmarchive.instrument.fingerprint import default_engine_factory, runtime_fingerprint
from llmarchive.instrument.prompts import SUBJECT_ITEMS, SUBJECT_MAX_TOKENS
from llmarchive.instrument.revalidate import RevalidationFailed
from llmarchive.instrument.rotation import due_protocol, guard_rotation, rotation_order, scheduled_protocol
from llmarchive.instrument.subject import subject_fingerprint
from llmarchive.instrument.verdict import (ALARM_VERDICTS, CORE_CHANGE, apply_pending, latch_reason, latched_from,
                                           pending_folders, run_roots)
__all__ += ["ALARM_VERDICTS", "AcknowledgeError", "CORE_CHANGE", "Generated", "RevalidationFailed", "SUBJECT_ITEMS",
            "SUBJECT_MAX_TOKENS", "apply_pending", "default_engine_factory", "due_protocol", "guard_rotation",
            "latch_reason", "latched_from", "pending_folders", "rotation_order", "run_roots", "runtime_fingerprint",
            "scheduled_protocol", "subject_fingerprint"]
# (end of the face)
