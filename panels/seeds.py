"""Which seed chooses a panel's wording.

Scenario wording is drawn from templates (:mod:`panels.template`) by a
seed.  The builder code is public, so the seed is what decides who can
regenerate a panel's text:

* ``open`` panels use :data:`PUBLIC_SEED`, a constant written here.
  Publishing it is exactly what makes a panel open: anyone with this
  repository can rebuild the text and check its ``panel_sha256``.
* ``guard`` panels use a **secret** seed held outside the repository
  (:func:`secret_seed` checks one; :mod:`llmarchive.protocols.panel_seed` finds it in
  the environment or the archive home and writes a fresh one).  Without it
  the repository cannot produce the guard wording.  Declassifying a guard
  panel means publishing that seed.
* With no secret seed, guard panels fall back to :data:`DEVELOPMENT_SEED`,
  which is public and therefore protects nothing; every protocol built from
  it says ``"wording_seed": "development"`` so it cannot be mistaken for a
  real guard panel, and promotion refuses it unless told otherwise.

Only the *label* of a seed (``public`` / ``secret`` / ``development``) is
ever written into a protocol; the secret text itself never reaches a file,
record or log other than ``private/panel_seed``.  This module reads no file
and no environment: it turns seed text into a :class:`WordingSeed`.
"""
from dataclasses import dataclass

from measure.errors import ArchiveError

PUBLIC_SEED = "llm-archive/open-panels/2026-09-20"
DEVELOPMENT_SEED = "llm-archive/DEVELOPMENT-guard-seed/public-not-secret"
MIN_SECRET_CHARS = 16
LABELS = ("public", "secret", "development")


class SeedError(ArchiveError, ValueError):
    """A secret seed that is present but unusable; the message names its source."""


@dataclass(frozen=True)
class WordingSeed:
    """A seed text and its label.  ``repr`` never shows the text."""

    text: str
    label: str

    def __repr__(self) -> str:
        return f"WordingSeed(label={self.label!r})"

    __str__ = __repr__


def public_seed() -> WordingSeed:
    """The published seed of every ``open`` panel."""
    return WordingSeed(PUBLIC_SEED, "public")


def development_seed() -> WordingSeed:
    """The labelled, non-secret stand-in for a guard seed (tests, demo)."""
    return WordingSeed(DEVELOPMENT_SEED, "development")


def secret_seed(text: str, source: str) -> WordingSeed:
    """``text`` as a secret guard seed, or :class:`SeedError` naming ``source`` when it is too short or public.

    Surrounding whitespace is dropped, so a seed file's final newline does
    not change the wording.
    """
    text = text.strip()
    if len(text) < MIN_SECRET_CHARS:
        raise SeedError(
            f"{source}: a guard seed must be at least {MIN_SECRET_CHARS} characters "
            f"(got {len(text)}); `llmarchive panels init-seed` writes a good one"
        )
    if text in (PUBLIC_SEED, DEVELOPMENT_SEED):
        raise SeedError(f"{source}: the guard seed must not be one of the public seeds written in panels/seeds.py")
    return WordingSeed(text, "secret")
