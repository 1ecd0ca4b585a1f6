"""The protocols, one partition each, and the pre-registration manifests, one partition each.

The UI shows what was declared when beside what was measured: each of the
24 protocols is a partition of ``protocols`` (its file, its hashes, its lane
and its gate checks, evaluated per partition), and each pre-registration
manifest is a partition of ``preregistration_manifest``, keyed by the date
in its file name, with the protocols it lists and its OpenTimestamps state
(``none`` → ``pending`` once stamped → ``upgraded`` once a Bitcoin
attestation is in the proof).  Manifest partitions are added by whoever
writes a manifest (:func:`llmarchive.protocols.prereg.write_admitted_manifest`: the
``write_manifest_job`` op, ``make demo``) and by the
``preregistration_manifests`` sensor, which also records a manifest written
by ``llmarchive prereg manifest`` or stamped or upgraded since.
"""
import warnings
from collections import Counter
from pathlib import Path

from dagster import (
    AllPartitionMapping,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    AssetMaterialization,
    Config,
    MaterializeResult,
    MetadataValue,
    OpExecutionContext,
    Output,
    asset,
    job,
    op,
)

from assets.partitions import MANIFESTS, manifests, protocol_ids
from assets.refusals import refusal
from assets.resources import ArchiveResource
from llmarchive.protocols import prereg, registry
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

# Dagster calls checks evaluated per partition a preview; the gates are per protocol, so that is what we use.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*partitions_def on an AssetCheckSpec.*")
    PROTOCOL_CHECKS = [AssetCheckSpec(name, asset="protocols", description=CHECK_DESCRIPTIONS[name], blocking=True,
                                      partitions_def=protocol_ids)
                       for name in checks.GROUPS]


def _design_table(protocol) -> str:
    rows = ["| reader | gap_ab | gap_aa′ | gap_ac | stability |", "|---|---|---|---|---|"]
    for reader, f in (protocol.get("design_readers") or {}).items():
        rows.append(f"| {reader} | {f.get('gap_ab_pct')} | {f.get('gap_aa_prime_pct')} | {f.get('gap_ac_pct')} | "
                    f"{f.get('stability_pct')} |")
    return "\n".join(rows)


@asset(partitions_def=protocol_ids, group_name="panels", check_specs=PROTOCOL_CHECKS,
       description="One protocol file (of the 24 public ones) built from the panels, with its hashes, its lane "
                   "and its gate checks (evaluated for this protocol; the rules between protocols, twins and the "
                   "12-word leak, over the whole set).")
def protocols(context: AssetExecutionContext, archive: ArchiveResource) -> MaterializeResult:
    pid = context.partition_key
    paths = archive.paths()
    registry.build_all(paths)
    loaded = registry.load_all(paths)
    [protocol] = [p for p in loaded if p["protocol_id"] == pid]
    groups = checks.run_groups_for(pid, loaded, registry.headers_with_sealed(paths, loaded))
    results = [AssetCheckResult(
        asset_key="protocols", check_name=name, passed=not groups[name], severity=AssetCheckSeverity.ERROR,
        metadata={"failures": len(groups[name]),
                  "first_failures": MetadataValue.md("\n".join(f"- {f}" for f in groups[name][:20]) or "none")})
        for name in checks.GROUPS]
    failing = [name for name in checks.GROUPS if groups[name]]
    context.log.info(f"{pid}: {protocol.get('status')}, lane {protocol.get('lane') or 'none'}; "
                     f"{'checks failing: ' + ', '.join(failing) if failing else 'every check passes'}")
    return MaterializeResult(metadata={
        "status": protocol.get("status") or "-",
        "lane": protocol.get("lane") or "none",
        "twin_id": protocol.get("twin_id") or "-",
        "series": protocol.get("series"),
        "family": protocol.get("family"),
        "rewording_type": protocol.get("rewording_type"),
        "n": MetadataValue.int(protocol["n"]),
        "panel_sha256": protocol["panel_sha256"],
        "protocol_sha256": protocol["protocol_sha256"],
        "design_readers": MetadataValue.md(_design_table(protocol)),
        "all_protocols_by_status": MetadataValue.json(dict(Counter(p.get("status") for p in loaded))),
    }, check_results=results)


# ---------------------------------------------------------------------------------------------- manifests
def manifest_metadata(path: Path) -> dict:
    """What the UI shows of one manifest: the protocols it lists (hashes only) and its OpenTimestamps state."""
    manifest = prereg.read_manifest(path)
    rows = manifest["protocols"]
    table = ["| protocol | panel_sha256 | protocol_sha256 |", "|---|---|---|"]
    table += [f"| {r.get('protocol_id')} | `{str(r.get('panel_sha256'))[:12]}` | "
              f"`{str(r.get('protocol_sha256'))[:12]}` |" for r in rows]
    return {
        "manifest": path.name,
        "manifest_sha256": prereg.file_sha256(path),
        "created_at": manifest.get("created_at") or "-",
        "head_commit": manifest.get("head_commit") or "-",
        "stamp_status": prereg.stamp_state(path),
        "protocols_listed": MetadataValue.int(len(rows)),
        "protocols": MetadataValue.json([r.get("protocol_id") for r in rows]),
        "hashes": MetadataValue.md("\n".join(table)),
    }


class ManifestConfig(Config):
    """``stamp``: also try to timestamp a manifest that has no proof yet, with OpenTimestamps (needs a calendar)."""

    stamp: bool = False
    timeout_s: float = 10.0


@asset(partitions_def=manifests, group_name="panels",
       # A manifest lists whichever protocols were admitted when it was written: all of them, not one partition.
       deps=[AssetDep(protocols, partition_mapping=AllPartitionMapping())],
       description="One pre-registration manifest (hashes of the admitted protocols, never text), keyed by the "
                   "date in its name: the protocols it lists and its OpenTimestamps state (none, pending, "
                   "upgraded). Materialise with stamp: true to timestamp one that has no proof yet.")
def preregistration_manifest(context: AssetExecutionContext, config: ManifestConfig,
                             archive: ArchiveResource) -> MaterializeResult:
    paths = archive.paths()
    key = context.partition_key
    path = prereg.manifest_file(paths, key)
    if not path.exists():
        raise refusal("no_manifest", f"no pre-registration manifest {path.name} in this archive: a manifest "
                                     f"partition is added when its manifest is written", manifest=path.name,
                      what_to_do="run write_manifest_job (or `llmarchive prereg manifest`) after admitting "
                                 "protocols") from None
    if config.stamp and prereg.stamp_state(path) == "none":
        try:
            _, answered = prereg.stamp(path, timeout=config.timeout_s)
            context.log.info(f"stamped {path.name} by {', '.join(answered)}")
        except prereg.NoCalendar as exc:
            context.log.warning(f"{path.name} not stamped: {exc}")
    metadata = manifest_metadata(path)
    context.log.info(f"{path.name}: {metadata['protocols_listed'].value} protocols listed, OpenTimestamps "
                     f"{metadata['stamp_status']}")
    return MaterializeResult(metadata=metadata)


@op(description="Write a pre-registration manifest of the admitted protocols when their set changed since the "
                "last one (config stamp: true also timestamps it), add its partition and record it as that "
                "partition's materialisation.")
def write_preregistration_manifest(context: OpExecutionContext, config: ManifestConfig,
                                   archive: ArchiveResource):
    paths = archive.paths()
    path, written, notes = prereg.write_admitted_manifest(paths, config.stamp, config.timeout_s)
    for note in notes:
        context.log.info(note)
    if path is None:
        yield Output(None, metadata={"written": False})
        return
    key = prereg.manifest_key(path)
    context.instance.add_dynamic_partitions(MANIFESTS, [key])
    yield AssetMaterialization(asset_key="preregistration_manifest", partition=key, metadata=manifest_metadata(path))
    yield Output(key, metadata={"written": written, "partition": key})


@job(description="Write the pre-registration manifest of the admitted protocols (when their set changed) and add "
                 "its partition. Not one of the archive's scheduled jobs.")
def write_manifest_job():
    write_preregistration_manifest()
