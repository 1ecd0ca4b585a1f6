"""``returned_model_id``: what the provider said it was, over a whole run — one rule, written once (method §10.2).

A run makes many calls and each answer names the model that produced it
(the trial's ``returned_model_id``).  The run's, and so the measurement's,
``returned_model_id`` is **every id the provider returned, each once,
sorted and joined by commas**: one id when every call named the same
model, several when the provider answered part of a run under another id.
Every id is kept, not the most frequent one, because a run answered by two
models is exactly what this field exists to show; the count per id stays in
the run record (``returned_model_ids``).

The estimator's own description of the field (``measure/schema.py``) still
says "the most frequent one over the run"; ``measure/`` is frozen, so the
words published beside the field are :data:`DESCRIPTION`, and
:func:`returned_model_id_differences` is the check ``llmarchive verify``
makes of the recorded value against the trials.

The rule lives with the subjects because the ids are theirs: each
:class:`~llmarchive.subjects.base.CallResult` carries the id its provider
named, and this module says what a run makes of them — for the runner, the
subject fingerprint, ``verify`` and the published description alike.
"""
from typing import Iterable, Mapping, Optional

FIELD = "returned_model_id"
SEPARATOR = ","
DESCRIPTION = ("Every model id the provider reported back over the run, each once, sorted and joined by commas "
               "(one id when every call named the same model). Recomputed from the trials by llmarchive verify.")


def returned_model_id(trials: Iterable[Mapping]) -> Optional[str]:
    """The run's ``returned_model_id``: the distinct non-empty ids of ``trials``, sorted, comma-joined; None if none."""
    ids = sorted({str(t.get(FIELD)) for t in trials if t.get(FIELD)})
    return SEPARATOR.join(ids) if ids else None


def returned_model_id_differences(measurement: Mapping, trials: Iterable[Mapping]) -> list[dict]:
    """``verify``'s check of the field: a one-entry difference list when the record disagrees with its trials.

    Trials that name no model at all (an outside log that kept none; the
    intake then records the id the submission declares) leave nothing to
    recompute the value from, so the record is not judged on it.
    """
    again = returned_model_id(trials)
    if again is None or measurement.get(FIELD) == again:
        return []
    return [{"field": FIELD, "recorded": measurement.get(FIELD), "recomputed": again}]
