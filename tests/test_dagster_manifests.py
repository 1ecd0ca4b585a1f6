"""Each pre-registration manifest is a partition: the protocols it lists and its OpenTimestamps state.

Manifests are written the two ways a maintainer writes them — from the UI
(``write_manifest_job``) and from the command line (a file appears) — and
the ``preregistration_manifests`` sensor, evaluated against a real instance,
adds the partitions and asks for a run whenever a manifest is new or its
proof moved on (pending → upgraded).
"""
import hashlib

from dagster import AssetKey, build_sensor_context

from assets.partitions import MANIFESTS
from assets.protocols import write_manifest_job
from assets.resources import ArchiveResource
from assets.sensors import preregistration_manifests
from llmarchive.protocols import prereg
from tests.dagster_helpers import materialization_metadata, refusals, resources, run, today
from tests.instrument_helpers import preregister

OPEN = "risky_choice_framing__wording__v0"
OTHER = "base_rate_neglect__wording__v0"


def upgrade(manifest, height: int = 923456) -> None:
    """Rewrite the manifest's proof with a Bitcoin block attestation (what `ots upgrade` leaves)."""
    from opentimestamps.core.notary import BitcoinBlockHeaderAttestation
    from opentimestamps.core.op import OpSHA256
    from opentimestamps.core.serialize import StreamSerializationContext
    from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

    timestamp = Timestamp(hashlib.sha256(manifest.read_bytes()).digest())
    timestamp.attestations.add(BitcoinBlockHeaderAttestation(height))
    with open(prereg.proof_path(manifest), "wb") as fh:
        DetachedTimestampFile(OpSHA256(), timestamp).serialize(StreamSerializationContext(fh))


def evaluate(instance, paths, cursor=None):
    result = preregistration_manifests(build_sensor_context(
        instance=instance, cursor=cursor, resources={"archive": ArchiveResource(home=str(paths.home))}))
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def test_manifests_are_partitions_with_their_protocols_and_timestamp_state_and_the_sensor_follows_the_proof(
        admitted, instance):
    earlier = preregister(admitted, [OPEN, OTHER], date="2026-10-01")      # from the command line, with a pending proof
    written = write_manifest_job.execute_in_process(
        instance=instance, resources={"archive": ArchiveResource(home=str(admitted.home))})
    key = written.output_for_node("write_preregistration_manifest")
    assert key == today() and instance.get_dynamic_partitions(MANIFESTS) == [key]
    recorded = instance.get_latest_materialization_event(AssetKey("preregistration_manifest")).asset_materialization
    assert recorded.partition == key and recorded.metadata["stamp_status"].value == "none"
    assert recorded.metadata["protocols_listed"].value == 12, "every admitted v0 protocol, open and guard"

    first = evaluate(instance, admitted)
    assert sorted(instance.get_dynamic_partitions(MANIFESTS)) == ["2026-10-01", key]
    assert sorted(r.partition_key for r in first.run_requests) == ["2026-10-01", key]

    res = resources(admitted)
    meta = materialization_metadata(run(["preregistration_manifest"], res, instance, partition_key="2026-10-01"),
                                    "preregistration_manifest")
    assert meta["stamp_status"] == "pending" and meta["protocols"] == sorted([OPEN, OTHER])
    assert meta["manifest_sha256"] == prereg.file_sha256(earlier)

    quiet = evaluate(instance, admitted, first.cursor)
    assert not quiet.run_requests, "nothing new, nothing asked for"
    upgrade(earlier)
    moved = evaluate(instance, admitted, first.cursor)
    assert [r.partition_key for r in moved.run_requests] == ["2026-10-01"], "only the manifest whose proof moved on"
    meta = materialization_metadata(run(["preregistration_manifest"], res, instance, partition_key="2026-10-01"),
                                    "preregistration_manifest")
    assert meta["stamp_status"] == "upgraded"


def test_a_manifest_partition_without_its_file_is_an_intended_failure(admitted, instance):
    instance.add_dynamic_partitions(MANIFESTS, ["2026-10-05"])
    result = run(["preregistration_manifest"], resources(admitted), instance, partition_key="2026-10-05",
                 raise_on_error=False)
    [(said, facts)] = refusals(result)
    assert "preregistration_2026-10-05.json" in said and facts["refusal"] == "no_manifest"
