"""Every check a protocol set must pass, grouped the way a maintainer reads them.

``llmarchive panels check`` prints them; the Dagster ``protocols`` asset
reports each group as its own asset check.  Both call :func:`run_groups`,
so the two can never disagree about what "the protocols pass" means.
"""
from typing import Mapping, Sequence

from llmarchive.paths import ArchivePaths
from measure import invariants
from measure.invariants import Failure
from panels import conformance, lanes, leak, registry

GROUPS = ("gate_1", "gate_1b", "twin_pairing", "leak_12_words")


def headers_with_sealed(paths: ArchivePaths, protocols: Sequence[Mapping]) -> list[dict]:
    """Headers of the built protocols plus the hash-only sealed records."""
    return [registry.header(p) for p in protocols] + [registry.header(r) for r in registry.sealed_records(paths)]


def run_groups(protocols: Sequence[Mapping], headers: Sequence[Mapping]) -> dict[str, list[Failure]]:
    """Failures per group (an empty list is a pass)."""
    return {
        "gate_1": invariants.check_all(protocols),
        "gate_1b": conformance.self_test_failures(protocols) + conformance.check_all(protocols),
        "twin_pairing": lanes.twin_failures(headers),
        "leak_12_words": leak.check(protocols),
    }


def run_all(protocols: Sequence[Mapping], headers: Sequence[Mapping]) -> list[Failure]:
    """Every failure, in group order."""
    groups = run_groups(protocols, headers)
    return [failure for name in GROUPS for failure in groups[name]]
