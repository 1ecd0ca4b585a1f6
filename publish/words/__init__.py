"""Words: the published numbers, fields and succession reasons said in plain words.

The face of ``publish/words/``: :mod:`~publish.words.numbers` (what a rate or a
change can be read as), :mod:`~publish.words.wording` (the shared sentences),
:mod:`~publish.words.fields` (each published field's description) and
:mod:`~publish.words.succession` (a succession's public reason).  The bottom
floor of ``publish/``: it imports nothing else from it.
"""
from publish.words import fields, numbers, succession, wording
from publish.words.fields import PUBLISHED_DESCRIPTIONS
from publish.words.succession import PRIVATE_FIELDS, public_reason

__all__ = ["fields", "numbers", "succession", "wording", "PUBLISHED_DESCRIPTIONS", "PRIVATE_FIELDS", "public_reason"]
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from publish.words.numbers import CHANGE_READING_COLUMNS, READING_COLUMNS, change_reading, derived_columns
__all__ += ["CHANGE_READING_COLUMNS", "READING_COLUMNS", "change_reading", "derived_columns"]
# (end of the face)
