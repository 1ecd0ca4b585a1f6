"""The words the succession table publishes, composed from each record's structured fields.

A succession record's ``reason`` is written for the owner and can carry an
error's text (a bridge run that stopped), and a review's ``note`` is the
reviewer's private remark.  Neither is copied into ``public/``: the row
says what happened from the record's kind, model ids, statuses and
resolution — the facts the record holds as fields (method §10.6).
"""
from typing import Mapping, Optional

from llmarchive.schedule import code_word

# Fields of a succession record that are free text and never published.
PRIVATE_FIELDS = ("reason", "note")


def _model(value: object) -> str:
    return str(value) if isinstance(value, str) and value else "an unnamed model"


def public_reason(kind: str, record: Mapping) -> Optional[str]:
    """What the record says, in public words; None for a kind with nothing to add beyond its columns."""
    family = _model(record.get("model_family"))
    if kind == "needs_review":
        model = _model(record.get("model_id"))
        resolution = code_word(record.get("resolution"))
        if resolution == "successor":
            return f"{model} was decided to be the successor in {family}; its bridge runs join the curve"
        if resolution == "not_successor":
            return f"{model} was decided not to be the successor in {family}; its bridge runs stay comparison points"
        return (f"{model} appeared in {family} with no provider declaration of succession; the bridge runs, "
                "the active model stays until a person decides")
    if kind == "series_closed":
        return (f"{_model(record.get('model_id'))} is no longer listed and no successor was declared; "
                f"the {family} series is closed")
    if kind == "bridge_incomplete":
        return (f"the bridge from {_model(record.get('old_model_id'))} to {_model(record.get('new_model_id'))} "
                "could not be completed before the old model left: a permanent discontinuity")
    return None
