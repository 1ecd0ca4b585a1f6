"""A fresh home for a drill, made the way the tests make one, at the drill's first instant.

The protocols built (the tests' guard seed), the twelve ``v0`` protocols
promoted to their lanes by the human gate and pre-registered with an offline
OpenTimestamps proof (:mod:`tests.instrument_helpers`), a budget written as
``llmarchive budget init`` writes it, a fake key in the environment — and the
environment every part of the drill reads: the archive home, Dagster's home,
the fake provider's URL and the webhook.
"""
import os
from pathlib import Path

import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import ArchivePaths
from llmarchive.protocols import registry
from panels.build import all_protocol_ids


def set_environment(root: Path, base_url: str, webhook_url: str) -> None:
    """What the drill's code location and the CLI read (the archive's own variables, definitions.py's)."""
    os.environ.update({
        "LLMARCHIVE_HOME": str(root / "archive"),
        "DAGSTER_HOME": str(root / "dagster"),
        "LLMARCHIVE_SUBJECT_BASE_URL": base_url,
        "LLMARCHIVE_WEBHOOK_URL": webhook_url,
        "ANTHROPIC_API_KEY": "fake-drill-key",       # the fake provider takes any key; never a real one
        "NO_PROXY": "127.0.0.1",
    })


def budget_of(figures: dict) -> budget_mod.Budget:
    """The budget ``llmarchive budget init --ceiling … --bridge-reserve … …`` writes for ``figures``."""
    return budget_mod.parse_budget({
        "monthly_ceiling_eur": figures["ceiling"], "bridge_reserve_eur": figures["bridge_reserve"],
        "heartbeat_reserve_eur": figures["heartbeat_reserve"],
        "rates_eur_per_call": {"scenario": figures["scenario"], "fingerprint": figures["fingerprint"]}},
        "the drill's budget")


def fresh_home(figures: dict, day: str) -> tuple[ArchivePaths, list[str], pytest.MonkeyPatch]:
    """The admitted, pre-registered, budgeted home; its sweep protocols in the order the monthly tick launches
    them; the patch holding the guard seed.

    The guard seed stays set for the whole drill (the caller undoes the patch at the end).
    """
    from tests.instrument_helpers import admitted_archive, preregister

    patch = pytest.MonkeyPatch()
    paths = admitted_archive(patch)
    sweepable = {p["protocol_id"] for p in registry.sweep_protocols(paths, "v0")}
    protocols = [pid for pid in all_protocol_ids() if pid in sweepable]      # the monthly tick's order
    preregister(paths, protocols, date=day)
    budget_mod.write_budget(paths, budget_of(figures))
    return paths, protocols, patch
