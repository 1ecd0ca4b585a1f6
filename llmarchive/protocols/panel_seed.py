"""Where the secret guard seed comes from: the environment or ``private/panel_seed``.

:mod:`panels.seeds` says which seed builds which panel and what makes a
seed text acceptable; this module is the part that touches the machine.
The guard seed is looked up in ``$LLMARCHIVE_PANEL_SEED`` first, then in the
file ``private/panel_seed`` of the archive home (``llmarchive panels
init-seed`` writes one), and falls back to the public, labelled development
seed when neither exists.  The seed text is never logged or recorded; only
its label reaches a protocol.
"""
import os
import secrets
from pathlib import Path

from llmarchive.archive import ArchivePaths
from panels.seeds import SeedError, WordingSeed, development_seed, secret_seed

ENV_VAR = "LLMARCHIVE_PANEL_SEED"


def guard_seed(paths: ArchivePaths) -> WordingSeed:
    """The guard seed: the environment, else ``private/panel_seed``, else development."""
    env = os.environ.get(ENV_VAR)
    if env is not None and env.strip():
        return secret_seed(env, f"${ENV_VAR}")
    file = paths.panel_seed_file
    if file.exists():
        return secret_seed(file.read_text(encoding="utf-8"), str(file))
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
