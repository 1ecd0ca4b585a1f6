"""Boundary: nothing private leaves in a build — the value check and the sealed-text check.

The face of ``publish/boundary/``: :mod:`~publish.boundary.values` (no private
value in any published file), :mod:`~publish.boundary.sealed` (no sealed or
private protocol text), :mod:`~publish.boundary.texts` (every text a
published file holds) and :mod:`~publish.boundary.setup` (both checks of one
build, set up from the archive).  It stands on ``publish/data/``.
"""
from publish.boundary import sealed, setup, texts, values
from publish.boundary.sealed import SealedTextCheck
from publish.boundary.setup import sealed_text_check, value_check
from publish.boundary.values import BoundaryError, ValueCheck

__all__ = ["sealed", "setup", "texts", "values", "sealed_text_check", "value_check", "SealedTextCheck",
           "BoundaryError", "ValueCheck"]
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
# (end of the face)
