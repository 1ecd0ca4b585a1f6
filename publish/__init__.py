"""Publication: every public file, generated from the archive's records.

This is the package's face: it re-exports what the entry points (the CLI,
the Dagster assets, the make scripts) call, and holds nothing itself.  The
packages stand on floors, one concern each, every one with its own face
(``.importlinter``, publish-floors):

* ``pipeline`` — one build (:func:`publish_all`), its checks, a release;
* ``site`` — the static site; ``readback`` — published files read back;
* ``datasette`` — how the database is served; ``boundary`` — the two boundary checks;
* ``data`` — the archive's records read once, and every data file;
* ``tasks`` — the outside routes' task files; ``words`` — numbers and fields
  in plain words;
* ``errors`` and ``workers`` — the errors and the process pool, under all.

Modules inside ``publish/`` import from each other, never from this face.
"""
from publish.errors import LeakError, PublishError, SiteError
from publish.boundary import BoundaryError, sealed_text_check, value_check
from publish.pipeline import publish_all

__all__ = ["publish_all", "PublishError", "LeakError", "BoundaryError", "SiteError", "sealed_text_check", "value_check"]
