"""Publication: every public file, generated from the archive's records.

This is the package's face: it re-exports what the entry points (the CLI,
the Dagster assets, the make scripts) call, and holds nothing itself.  The
pipeline is :mod:`publish.build` (:func:`publish_all`); the guards of one
build are :mod:`publish.boundary`; the checks before and after a build are
:mod:`publish.checks`.  Modules inside ``publish/`` import from each other,
never from this face.
"""
from publish.boundary import leak_guard, publication_guard
from publish.build import publish_all
from publish.errors import LeakError, PublishError, SiteError
from publish.guard import GuardError

__all__ = ["publish_all", "PublishError", "LeakError", "GuardError", "SiteError", "leak_guard", "publication_guard"]
