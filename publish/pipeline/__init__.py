"""Pipeline: one build of every public file, its checks, and a release.

The face of ``publish/pipeline/``: :mod:`~publish.pipeline.build`
(:func:`publish_all`), :mod:`~publish.pipeline.checks` (what must hold before
and after a build) and :mod:`~publish.pipeline.release` (a release's public
payload).  The top floor of ``publish/``: it stands on every other package.
"""
from publish.pipeline import build, checks, release
from publish.pipeline.build import publish_all
from publish.pipeline.release import assemble

__all__ = ["build", "checks", "release", "publish_all", "assemble"]
