"""Pre-registration: manifest of hashes, OpenTimestamps proofs (built offline), the guard."""
import hashlib
import http.server
import json
import threading

import pytest
from opentimestamps.core.notary import PendingAttestation
from opentimestamps.core.op import OpSHA256
from opentimestamps.core.serialize import BytesSerializationContext, StreamSerializationContext
from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

from llmarchive.protocols import prereg, registry
from llmarchive.cli import main
from llmarchive.archive import ArchivePaths
from tests.panels_helpers import built_paths


@pytest.fixture
def paths(archive_home, monkeypatch):
    """Built with this module's guard seed, and only one open/guard pair promoted (not the shared ``admitted``)."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    p = built_paths(monkeypatch, "a secret guard seed for the prereg tests")
    for args in (["risky_choice_framing__wording__v0", "--lane", "open"],
                 ["risky_choice_framing__anchoring__v0", "--lane", "guard"]):
        assert main(["panels", "promote", *args, "--human-reviewed", "--reviewer", "T"]) == 0
    return p


def write_ots(manifest, digest=None, calendar="https://calendar.invalid"):
    """A real .ots file for ``manifest`` with a pending attestation, made offline."""
    digest = digest if digest is not None else hashlib.sha256(manifest.read_bytes()).digest()
    timestamp = Timestamp(digest)
    timestamp.attestations.add(PendingAttestation(calendar))
    proof = prereg.proof_path(manifest)
    with open(proof, "wb") as fh:
        DetachedTimestampFile(OpSHA256(), timestamp).serialize(StreamSerializationContext(fh))
    return proof


def test_the_manifest_lists_admitted_protocols_hashes_and_head_only(paths):
    path, written = prereg.write_manifest(paths, registry.load_all(paths))
    assert written and path.parent == paths.timestamps and path.name.startswith("preregistration_")
    manifest = json.loads(path.read_text())
    assert [r["protocol_id"] for r in manifest["protocols"]] == [
        "risky_choice_framing__anchoring__v0", "risky_choice_framing__wording__v0"]
    assert all(sorted(r) == ["panel_sha256", "protocol_id", "protocol_sha256"] for r in manifest["protocols"])
    assert len(manifest["head_commit"]) == 40
    raw = path.read_text()
    assert "Option A" not in raw and "DECISION" not in raw
    # Canonical JSON: the file's sha256 is the sha256 of its content.
    assert path.read_bytes() == prereg.canonical_manifest_bytes(manifest)


def test_an_unchanged_set_reuses_its_manifest_and_a_new_set_never_overwrites(paths):
    first, _ = prereg.write_manifest(paths, registry.load_all(paths), date="2026-09-24")
    again, written = prereg.write_manifest(paths, registry.load_all(paths), date="2026-09-24")
    assert (again, written) == (first, False)
    assert main(["panels", "promote", "sunk_cost_fallacy__order__v0", "--lane", "guard", "--human-reviewed"]) == 0
    second, written = prereg.write_manifest(paths, registry.load_all(paths), date="2026-09-24")
    assert written and second.name == "preregistration_2026-09-24-2.json"


def test_no_manifest_without_an_admitted_protocol(archive_home):
    with pytest.raises(prereg.PreregError, match="promote"):
        prereg.write_manifest(ArchivePaths.from_env(), [])


def test_a_listed_protocol_with_a_matching_proof_is_preregistered(paths):
    manifest, _ = prereg.write_manifest(paths, registry.load_all(paths))
    protocol = registry.load_protocol(paths, "risky_choice_framing__wording__v0")
    ok, why = prereg.is_preregistered(paths, protocol, detail=True)
    assert not ok and "no .ots proof" in why
    write_ots(manifest)
    ok, why = prereg.is_preregistered(paths, protocol, detail=True)
    assert ok and manifest.name in why
    assert prereg.proof_status(manifest) == "pending"


def test_a_protocol_missing_from_every_manifest_is_not_preregistered(paths):
    manifest, _ = prereg.write_manifest(paths, registry.load_all(paths))
    write_ots(manifest)
    ok, why = prereg.is_preregistered(paths, registry.load_protocol(paths, "sunk_cost_fallacy__order__v1"),
                                      detail=True)
    assert not ok and "not listed" in why


def test_a_proof_for_other_bytes_does_not_count(paths):
    manifest, _ = prereg.write_manifest(paths, registry.load_all(paths))
    write_ots(manifest, digest=hashlib.sha256(b"some other manifest").digest())
    ok, why = prereg.is_preregistered(paths, registry.load_protocol(paths, "risky_choice_framing__wording__v0"),
                                      detail=True)
    assert not ok and "commits to digest" in why
    # An edited manifest no longer matches the proof made for it.
    write_ots(manifest)
    manifest.write_bytes(manifest.read_bytes().replace(b'"protocols"', b'"protocols" '))
    ok, why = prereg.is_preregistered(paths, registry.load_protocol(paths, "risky_choice_framing__wording__v0"),
                                      detail=True)
    assert not ok and "commits to digest" in why


def test_a_changed_protocol_is_not_covered(paths):
    manifest, _ = prereg.write_manifest(paths, registry.load_all(paths))
    write_ots(manifest)
    protocol = dict(registry.load_protocol(paths, "risky_choice_framing__anchoring__v0"), protocol_sha256="0" * 64)
    ok, why = prereg.is_preregistered(paths, protocol, detail=True)
    assert not ok and "other hashes" in why


def test_a_corrupt_proof_is_reported_not_crashed(paths):
    manifest, _ = prereg.write_manifest(paths, registry.load_all(paths))
    prereg.proof_path(manifest).write_bytes(b"not a proof")
    ok, why = prereg.is_preregistered(paths, registry.load_protocol(paths, "risky_choice_framing__wording__v0"),
                                      detail=True)
    assert not ok and "not a readable OpenTimestamps proof" in why


def test_the_reason_a_run_carries_names_public_facts_only(paths):
    """The reason becomes a run's ``exploratory`` flag and a published flag reason: no path, no file name."""
    pid = "risky_choice_framing__wording__v0"
    protocol = registry.load_protocol(paths, pid)
    assert prereg.is_preregistered(paths, protocol) == (False, f"no pre-registration manifest lists {pid}")
    manifest, _ = prereg.write_manifest(paths, registry.load_all(paths))
    ok, why = prereg.is_preregistered(paths, protocol)
    assert not ok and why == f"the pre-registration manifest that lists {pid} has no timestamp proof that matches it"
    changed = dict(protocol, protocol_sha256="0" * 64)
    assert "only with other hashes" in prereg.is_preregistered(paths, changed)[1]
    write_ots(manifest)
    assert prereg.is_preregistered(paths, protocol) == (True, f"{pid} is listed in a stamped pre-registration manifest")
    for _, reason in (prereg.is_preregistered(paths, protocol), prereg.is_preregistered(paths, changed)):
        assert str(paths.home) not in reason and manifest.name not in reason and "/" not in reason


class _Calendar(http.server.BaseHTTPRequestHandler):
    """A calendar speaking the OpenTimestamps HTTP protocol: POST /digest → a pending timestamp."""

    def do_POST(self):  # noqa: N802 (http.server's naming)
        digest = self.rfile.read(int(self.headers["Content-Length"]))
        timestamp = Timestamp(digest)
        timestamp.attestations.add(PendingAttestation(f"http://127.0.0.1:{self.server.server_port}"))
        ctx = BytesSerializationContext()
        timestamp.serialize(ctx)
        body = ctx.getbytes()
        self.send_response(200 if self.path == "/digest" else 404)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def calendar():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Calendar)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def _closed_port():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def test_stamping_through_a_reachable_calendar_writes_a_proof_the_guard_accepts(paths, calendar, capsys):
    assert main(["prereg", "manifest"]) == 0
    assert main(["prereg", "stamp", "--calendar", _closed_port(), "--calendar", calendar, "--timeout", "5"]) == 0
    out = capsys.readouterr().out
    assert "stamped" in out and calendar in out
    (manifest,) = prereg.manifests(paths)
    detached = prereg.read_proof(prereg.proof_path(manifest))
    assert detached.file_digest == hashlib.sha256(manifest.read_bytes()).digest()
    assert [a.uri for _, a in detached.timestamp.all_attestations()] == [calendar]
    assert main(["prereg", "check"]) == 0
    assert "ok   risky_choice_framing__wording__v0" in capsys.readouterr().out
    # Stamping twice is refused: the proof commits to the bytes once.
    assert main(["prereg", "stamp", str(manifest), "--calendar", calendar]) == 2


def test_with_no_reachable_calendar_stamp_says_so_and_writes_nothing(paths, capsys):
    assert main(["prereg", "manifest"]) == 0
    capsys.readouterr()
    assert main(["prereg", "stamp", "--calendar", _closed_port(), "--timeout", "2"]) == 1
    out = capsys.readouterr().out
    assert "NOT STAMPED" in out and "no OpenTimestamps calendar could be reached" in out
    # what follows (the sweep skips its protocols, spending nothing) and what to do (again later, or --calendar)
    assert "the monthly sweep skips the protocols it lists (not_preregistered" in out
    assert "llmarchive prereg stamp" in out and "--calendar URL" in out and len(out.strip().splitlines()) == 1
    (manifest,) = prereg.manifests(paths)
    assert not prereg.proof_path(manifest).exists()
    assert main(["prereg", "check"]) == 1
    assert "MISS" in capsys.readouterr().out


def test_prereg_check_names_unknown_protocols(paths, capsys):
    assert main(["prereg", "check", "nope"]) == 2
    assert "unknown protocol 'nope'" in capsys.readouterr().err
