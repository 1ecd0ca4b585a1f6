"""Hand-built protocols in exactly the format llmarchive.protocols.registry writes.

The runner's unit tests need protocols of controlled size and content
without depending on the scenario builders.  :func:`make_protocol` builds
one dict in the contract's format (``/tmp/protocol_contract.md``): every
field, the panel, and both hashes computed the way the registry computes
them (``panel_sha256`` over the canonical panel; ``protocol_sha256`` over the
protocol without ``status``, ``lane``, ``twin_id`` and itself).
"""
from typing import Optional, Sequence

from measure.canonical import canonical_sha256
from measure.schema import SCHEMA_VERSION, VERSIONS

INSTRUCTION = "End with one line: DECISION: A or DECISION: B"


def make_protocol(protocol_id: str = "fixture_family__wording__v0", *, n_items: int = 15,
                  n_per_scenario: int = 2, max_tokens: int = 64, options: Sequence[str] = ("A", "B"),
                  grammar_version: int = 1, status: str = "candidate", lane: Optional[str] = None,
                  twin_id: Optional[str] = None, rewording_type: str = "wording",
                  family: str = "fixture_family") -> dict:
    """A complete protocol dict; every version text is distinct and ends with the instruction."""
    panel = []
    for i in range(1, n_items + 1):
        item_id = f"s{i:02d}"
        versions = {}
        for version in VERSIONS:
            versions[version] = (f"Scenario {item_id}, version {version}: a fictional decision between "
                                 f"two plans.\n\nOption A: the sure plan.\nOption B: the gamble.\n\n{INSTRUCTION}")
        panel.append({"item_id": item_id, "structure": {"index": i}, "versions": versions})
    series = protocol_id.rsplit("__", 1)[-1] if "__" in protocol_id else "v0"
    protocol = {
        "record_type": "protocol",
        "schema_version": SCHEMA_VERSION,
        "protocol_id": protocol_id,
        "series": series,
        "family": family,
        "rewording_type": rewording_type,
        "options": list(options),
        "n": n_items * n_per_scenario,
        "n_per_scenario": n_per_scenario,
        "n_items": n_items,
        "item_ids": [item["item_id"] for item in panel],
        "grammar_version": grammar_version,
        "theta_positive_pct": 15,
        "scenario_dominated_share_pct": 40,
        "generation": {"max_tokens": max_tokens},
        "instruction": INSTRUCTION,
        "wording_seed": "public",
        "panel": panel,
        "panel_sha256": canonical_sha256(panel),
    }
    protocol["protocol_sha256"] = canonical_sha256(protocol)
    protocol.update({"status": status, "lane": lane, "twin_id": twin_id})
    return protocol


def header_for(protocol_id: str, lane: Optional[str], twin_id: Optional[str] = None, n: int = 30) -> dict:
    """A text-free header, as ``registry.list_protocols`` returns them."""
    family, rewording_type, series = protocol_id.split("__")
    return {"protocol_id": protocol_id, "family": family, "rewording_type": rewording_type, "series": series,
            "n": n, "lane": lane, "twin_id": twin_id, "status": "admitted" if lane else "candidate"}
