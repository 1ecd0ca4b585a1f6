"""Every check a protocol set must pass, grouped the way a maintainer reads them.

``llmarchive panels check`` prints them; the Dagster ``protocols`` asset
reports each group as its own asset check.  Both call :func:`run_groups`,
so the two can never disagree about what "the protocols pass" means.
The protocols and their headers come in as values (the caller loads them,
sealed records included, with :func:`llmarchive.protocols.registry.headers_with_sealed`).
The ``design_readers`` group runs the simulated readers (:mod:`panels.readers`):
the panel must let a normative reader show no gap on A/A′/B, every reader
must pass the positive control with room to spare, and the two open wording
panels must see their classic bias.
"""
from typing import Mapping, Sequence

from measure import invariants
from measure.invariants import Failure
from panels import conformance, lanes, leak, readers

GROUPS = ("gate_1", "gate_1b", "twin_pairing", "leak_12_words", "design_readers")


def run_groups(protocols: Sequence[Mapping], headers: Sequence[Mapping]) -> dict[str, list[Failure]]:
    """Failures per group (an empty list is a pass)."""
    return {
        "gate_1": invariants.check_all(protocols),
        "gate_1b": conformance.self_test_failures(protocols) + conformance.check_all(protocols),
        "twin_pairing": lanes.twin_failures(headers),
        "leak_12_words": leak.check(protocols),
        "design_readers": design_failures(protocols),
    }


def run_groups_for(protocol_id: str, protocols: Sequence[Mapping], headers: Sequence[Mapping]
                   ) -> dict[str, list[Failure]]:
    """One protocol's failures per group: what its partition of the Dagster ``protocols`` asset reports.

    The rules of one protocol (gates 1 and 1b, the design readers) run on it
    alone; the rules between protocols (twins, the 12-word leak) run on the
    whole set and keep every failure that names it; gate 1b's self-test —
    whether the gate can catch a broken B at all — concerns every protocol.
    Each of :func:`run_groups`'s failures about the protocol is here.
    """
    mine = [p for p in protocols if p.get("protocol_id") == protocol_id]

    def naming(failures: list[Failure]) -> list[Failure]:
        return [f for f in failures if f.protocol_id == protocol_id or protocol_id in f.detail]

    return {
        "gate_1": invariants.check_all(mine),
        "gate_1b": conformance.self_test_failures(protocols) + conformance.check_all(mine),
        "twin_pairing": naming(lanes.twin_failures(headers)),
        "leak_12_words": naming(leak.check(protocols)),
        "design_readers": design_failures(mine),
    }


def design_failures(protocols: Sequence[Mapping]) -> list[Failure]:
    """The simulated readers' design rules (:func:`panels.readers.design_failures`) on every built protocol.

    Also recomputes each protocol's stored ``design_readers`` and fails when
    the file says something else: the figures are outside
    ``protocol_sha256``, so this comparison is what keeps them honest.
    """
    out: list[Failure] = []
    for protocol in protocols:
        if not protocol.get("panel"):
            continue
        pid = str(protocol.get("protocol_id"))
        try:
            design = readers.design_figures(protocol)
            problems = readers.design_failures(protocol, design)
        except (KeyError, TypeError, ValueError) as exc:
            out.append(Failure(pid, "-", "design_readers", f"the simulated readers cannot run on it: {exc}"))
            continue
        if protocol.get("design_readers") != design:
            out.append(Failure(pid, "-", "design_readers_stale",
                               "the stored design_readers differ from the readers' figures on this panel; "
                               "rebuild with `llmarchive panels build`"))
        out.extend(Failure(pid, item, rule, detail) for item, rule, detail in problems)
    return out


def run_all(protocols: Sequence[Mapping], headers: Sequence[Mapping]) -> list[Failure]:
    """Every failure, in group order."""
    groups = run_groups(protocols, headers)
    return [failure for name in GROUPS for failure in groups[name]]
