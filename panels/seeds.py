"""Which seed chooses a panel's wording, and where a secret one comes from.

Scenario wording is drawn from templates (:mod:`panels.template`) by a
seed.  The builder code is public, so the seed is what decides who can
regenerate a panel's text:

* ``open`` panels use :data:`PUBLIC_SEED`, a constant written here.
  Publishing it is exactly what makes a panel open: anyone with this
  repository can rebuild the text and check its ``panel_sha256``.
* ``guard`` panels use a **secret** seed held outside the repository, in
  ``$LLMARCHIVE_PANEL_SEED`` or the file ``private/panel_seed`` of the
  archive home (``llmarchive panels init-seed`` writes one).  Without it the
  repository cannot produce the guard wording.  Declassifying a guard panel
  means publishing that seed.
* With neither, guard panels fall back to :data:`DEVELOPMENT_SEED`, which is
  public and therefore protects nothing; every protocol built from it says
  ``"wording_seed": "development"`` so it cannot be mistaken for a real
  guard panel, and promotion refuses it unless told otherwise.

Only the *label* of a seed (``public`` / ``secret`` / ``development``) is
ever written into a protocol; the secret text itself never reaches a file,
record or log other than ``private/panel_seed``.
"""
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from llmarchive.paths import ArchivePaths

ENV_VAR = "LLMARCHIVE_PANEL_SEED"
PUBLIC_SEED = "llm-archive/open-panels/2026-09-20"
DEVELOPMENT_SEED = "llm-archive/DEVELOPMENT-guard-seed/public-not-secret"
MIN_SECRET_CHARS = 16
LABELS = ("public", "secret", "development")


class SeedError(ValueError):
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


def _checked(text: str, source: str) -> WordingSeed:
    text = text.strip()
    if len(text) < MIN_SECRET_CHARS:
        raise SeedError(
            f"{source}: a guard seed must be at least {MIN_SECRET_CHARS} characters "
            f"(got {len(text)}); `llmarchive panels init-seed` writes a good one"
        )
    if text in (PUBLIC_SEED, DEVELOPMENT_SEED):
        raise SeedError(f"{source}: the guard seed must not be one of the public seeds written in panels/seeds.py")
    return WordingSeed(text, "secret")


def guard_seed(paths: ArchivePaths) -> WordingSeed:
    """The guard seed: the environment, else ``private/panel_seed``, else development."""
    env = os.environ.get(ENV_VAR)
    if env is not None and env.strip():
        return _checked(env, f"${ENV_VAR}")
    file = paths.panel_seed_file
    if file.exists():
        return _checked(file.read_text(encoding="utf-8"), str(file))
    return development_seed()


def init_secret_seed(paths: ArchivePaths) -> Path:
    """Write a fresh secret guard seed to ``private/panel_seed`` (mode 0600).

    Refuses to replace an existing seed: a new seed gives every guard panel
    new wording and new hashes, which must be a deliberate act (delete the
    file first).  The seed comes from the operating system's cryptographic
    source, not from :mod:`measure.rng`, because it is a secret, not a
    recorded random draw.
    """
    file = paths.panel_seed_file
    if file.exists():
        raise SeedError(f"{file} already exists; a new seed rewrites every guard panel — delete it first if you mean it")
    file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(secrets.token_hex(32) + "\n")
    return file
