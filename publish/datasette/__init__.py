"""Datasette: how the published database is served — its metadata, plugins and templates.

The face of ``publish/datasette/``: :mod:`~publish.datasette.meta` writes
``metadata.yml`` and the ``datasette serve`` command; ``plugins/`` and
``templates/`` are passed to Datasette by folder (``--plugins-dir``,
``--template-dir``).  It stands on ``publish/data/``.
"""
from publish.datasette import meta
from publish.datasette.meta import CANNED_QUERIES, DATABASE, DB_FILE, REPO_METADATA, render, serve_command

__all__ = ["meta", "CANNED_QUERIES", "DATABASE", "DB_FILE", "REPO_METADATA", "render", "serve_command"]
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
# (end of the face)
