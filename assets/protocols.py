"""The protocols and their pre-registration manifest."""
from collections import Counter

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
    multi_asset_check,
)

from assets.resources import ArchiveResource
from llmarchive import prereg
from llmarchive import registry
from panels import checks

CHECK_DESCRIPTIONS = {
    "gate_1": "Gate 1: equal expected value in A and B, same options and right answer, numbers in the text "
              "match the structure; C has exactly one strictly dominant option.",
    "gate_1b": "Gate 1b: B is A plus exactly the transformation its type names (with the self-test that "
               "every rule rejects a broken B).",
    "twin_pairing": "Twin pairing: each open protocol has exactly one guard twin of its own family and "
                    "another type, named both ways.",
    "leak_12_words": "No run of 12 consecutive words of a guard item appears in an open item.",
    "design_readers": "Simulated readers (panels.readers) scored by the real estimator: the normative reader's "
                      "gap_ab and gap_aa' are 0; every reader's gap_ac >= theta_positive_pct + 10; the biased "
                      "reader's gap_ab >= 20 on the two open wording protocols; on every item C reverses the "
                      "biased reader's choice; the stored design_readers match.",
}


def _table(protocols) -> str:
    rows = ["| protocol | status | lane | panel_sha256 | protocol_sha256 |", "|---|---|---|---|---|"]
    for p in protocols:
        rows.append(f"| {p['protocol_id']} | {p.get('status')} | {p.get('lane') or '-'} | "
                    f"`{p['panel_sha256'][:12]}` | `{p['protocol_sha256'][:12]}` |")
    return "\n".join(rows)


@asset(group_name="panels", description="Every protocol file (24 public ones) built from the panels, with hashes.")
def protocols(context: AssetExecutionContext, archive: ArchiveResource) -> MaterializeResult:
    paths = archive.paths()
    built = registry.build_all(paths)
    loaded = registry.load_all(paths)
    status = Counter(p.get("status") for p in loaded)
    lanes = Counter(p.get("lane") or "none" for p in loaded)
    context.log.info(f"built {len(built)} protocols under {paths.protocols}")
    return MaterializeResult(metadata={
        "protocols": len(loaded),
        "sealed_records": len(registry.sealed_records(paths)),
        "status": MetadataValue.json(dict(status)),
        "lanes": MetadataValue.json(dict(lanes)),
        "hashes": MetadataValue.md(_table(loaded)),
        "design_readers": MetadataValue.md(_design_table(loaded)),
    })


def _design_table(protocols) -> str:
    rows = ["| protocol | reader | gap_ab | gap_aa′ | gap_ac | stability |", "|---|---|---|---|---|---|"]
    for p in protocols:
        for reader, f in (p.get("design_readers") or {}).items():
            rows.append(f"| {p['protocol_id']} | {reader} | {f.get('gap_ab_pct')} | {f.get('gap_aa_prime_pct')} | "
                        f"{f.get('gap_ac_pct')} | {f.get('stability_pct')} |")
    return "\n".join(rows)


@multi_asset_check(
    specs=[AssetCheckSpec(name, asset="protocols", description=CHECK_DESCRIPTIONS[name], blocking=True)
           for name in checks.GROUPS],
)
def protocol_checks(archive: ArchiveResource):
    paths = archive.paths()
    loaded = registry.load_all(paths)
    groups = checks.run_groups(loaded, registry.headers_with_sealed(paths, loaded))
    for name in checks.GROUPS:
        failures = groups[name]
        yield AssetCheckResult(
            asset_key="protocols",
            check_name=name,
            passed=not failures,
            severity=AssetCheckSeverity.ERROR,
            metadata={
                "failures": len(failures),
                "first_failures": MetadataValue.md("\n".join(f"- {f}" for f in failures[:20]) or "none"),
            },
        )


class ManifestConfig(Config):
    """``stamp``: also try to timestamp a new manifest with OpenTimestamps (needs a calendar)."""

    stamp: bool = False
    timeout_s: float = 10.0


@asset(group_name="panels", deps=[protocols],
       description="The pre-registration manifest of the admitted protocols (hashes only) and its stamp status.")
def preregistration_manifest(context: AssetExecutionContext, config: ManifestConfig,
                             archive: ArchiveResource) -> MaterializeResult:
    paths = archive.paths()
    admitted = [p for p in registry.load_all(paths) if p.get("status") == "admitted"]
    admitted += [r for r in registry.sealed_records(paths) if r.get("status") == "admitted"]
    if not admitted:
        context.log.warning("no protocol is admitted yet: no manifest to write")
        return MaterializeResult(metadata={"admitted": 0, "stamp_status": "none"})
    manifest, written = prereg.write_manifest(paths, admitted)
    notes = [f"{'wrote' if written else 'unchanged:'} {manifest.name}"]
    if config.stamp and prereg.stamp_status(manifest) == "none":
        try:
            _, answered = prereg.stamp(manifest, timeout=config.timeout_s)
            notes.append(f"stamped by {', '.join(answered)}")
        except prereg.NoCalendar as exc:
            notes.append(f"not stamped: {exc}")
    for note in notes:
        context.log.info(note)
    return MaterializeResult(metadata={
        "admitted": len(admitted),
        "manifest": str(manifest),
        "manifest_sha256": prereg.file_sha256(manifest),
        "new_manifest": written,
        "stamp_status": prereg.stamp_status(manifest),
    })
