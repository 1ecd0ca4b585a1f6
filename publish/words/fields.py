"""The words published beside each measurement field: the schema's own, except where they misdescribe the value.

``measure.schema.FIELD_DESCRIPTIONS`` is frozen with the rest of
``measure/`` (its bytes are in every measurement's ``analysis_code_sha``),
and one of its sentences does not say what the field holds:
``returned_model_id`` is described as "the most frequent one over the run",
while every run since the first has recorded every id the provider
returned, sorted and comma-joined.  The value is the record and stays as it
is; what is published beside it — the Data page, ``archive.db`` and
Datasette's ``metadata.yml``, ``croissant.json`` — takes its words from
:data:`PUBLISHED_DESCRIPTIONS`, which is the schema's mapping with that one
sentence corrected (:mod:`llmarchive.subjects.returned_model`, where the rule
and ``verify``'s check of it live).
"""
from llmarchive.subjects import returned_model
from measure.schema import FIELD_DESCRIPTIONS

CORRECTED = {returned_model.FIELD: returned_model.DESCRIPTION}
"""Each field whose published description replaces the frozen schema's, with the words published instead."""

PUBLISHED_DESCRIPTIONS = {name: CORRECTED.get(name, words) for name, words in FIELD_DESCRIPTIONS.items()}
"""Every measurement field's published description, in the schema's order."""
