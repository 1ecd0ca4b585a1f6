"""Guard: nothing private leaves in a build — the publication guard and the leak guard.

The face of ``publish/guard/``: :mod:`~publish.guard.publication` (no private
value in any published file), :mod:`~publish.guard.leak` (no sealed or
private protocol text), :mod:`~publish.guard.published_texts` (every text a
published file holds) and :mod:`~publish.guard.boundary` (both guards of one
build, set up from the archive).  It stands on ``publish/data/``.
"""
from publish.guard import boundary, leak, publication, published_texts
from publish.guard.boundary import leak_guard, publication_guard
from publish.guard.leak import LeakGuard
from publish.guard.publication import GuardError, PublicationGuard

__all__ = ["boundary", "leak", "publication", "published_texts", "leak_guard", "publication_guard", "LeakGuard",
           "GuardError", "PublicationGuard"]
