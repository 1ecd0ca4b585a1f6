"""Pre-registration (method §3): a manifest of hashes, stamped with OpenTimestamps.

Admission fixes *what* a protocol asks; the stamp proves *by when* that was
fixed, on a clock nobody here controls.  Three steps:

1. :func:`write_manifest` writes ``private/timestamps/preregistration_<date>.json``:
   one row per admitted protocol (``protocol_id``, ``panel_sha256``,
   ``protocol_sha256``, sealed ones included) and the repository's HEAD
   commit.  Hashes only, never text.  It is written as canonical JSON, so
   its sha256 is the sha256 of its bytes.
2. :func:`stamp` submits that sha256 to OpenTimestamps calendars (the
   ``opentimestamps-client``'s calendar code) and writes the pending proof
   next to it as ``….json.ots``.  When no calendar answers it says so and
   writes nothing.  Upgrading the proof to a Bitcoin attestation later is
   ``ots upgrade`` (a maintainer's step).
3. :func:`is_preregistered` is the guard the paid, unattended path calls:
   a protocol counts only if its current ``(protocol_id, panel_sha256,
   protocol_sha256)`` is listed in a manifest whose ``.ots`` file — parsed
   with the ``opentimestamps`` library — commits to that manifest's own
   sha256.  It does not verify the proof cryptographically (``ots verify``
   does); it protects against forgetting, not against a determined insider.

Manifests live under ``private/`` because they list sealed protocols'
hashes; publishing one later is how a protocol is revealed.
"""
import hashlib
import os
import subprocess
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

from llmarchive.archive import (ArchivePaths, REPO_ROOT, RecordFileError, check_id, read_json, utc_now, utc_today,
                                write_json)
from measure.canonical import canonical_json
from llmarchive.protocols import registry
from measure.errors import ArchiveError

MANIFEST_PREFIX = "preregistration_"
MANIFEST_GLOB = f"{MANIFEST_PREFIX}*.json"
DEFAULT_CALENDARS = (
    "https://a.pool.opentimestamps.org",
    "https://b.pool.opentimestamps.org",
    "https://a.pool.eternitywall.com",
    "https://ots.btc.catallaxy.com",
)
ROW_FIELDS = ("protocol_id", "panel_sha256", "protocol_sha256")


class PreregError(ArchiveError, ValueError):
    """A manifest or proof that cannot be written or read; the message names the file."""


class NoCalendar(ArchiveError, RuntimeError):
    """No OpenTimestamps calendar could be reached; nothing was written."""


def head_commit(repo: Path = REPO_ROOT) -> Optional[str]:
    """The repository's HEAD commit, or None when it is not a git checkout."""
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and len(commit) == 40 else None


def admitted_rows(protocols: Iterable[Mapping]) -> list[dict]:
    """Manifest rows of the admitted protocols, sorted by id."""
    rows = [{k: p[k] for k in ROW_FIELDS} for p in protocols if p.get("status") == "admitted"]
    return sorted(rows, key=lambda r: r["protocol_id"])


def manifests(paths: ArchivePaths) -> list[Path]:
    """Every manifest file, oldest name first."""
    if not paths.timestamps.exists():
        return []
    return sorted(p for p in paths.timestamps.glob(MANIFEST_GLOB) if p.is_file())


def manifest_key(path: Path) -> str:
    """A manifest's key: the date in its name, with ``-2``, ``-3`` … for a later one that day."""
    return path.name[len(MANIFEST_PREFIX):-len(".json")]


def manifest_file(paths: ArchivePaths, key: str) -> Path:
    """The manifest file of ``key`` (:func:`manifest_key`'s inverse); a key that could leave the folder is refused."""
    return paths.timestamps / f"{MANIFEST_PREFIX}{check_id(key, 'the manifest key')}.json"


def read_manifest(path: Path) -> dict:
    try:
        manifest = read_json(path)
    except (OSError, RecordFileError) as exc:
        raise PreregError(f"not a readable manifest: {exc}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("protocols"), list):
        raise PreregError(f"{path}: a manifest needs a 'protocols' list")
    return manifest


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_manifest(paths: ArchivePaths, protocols: Iterable[Mapping], date: Optional[str] = None,
                   commit: Optional[str] = None) -> tuple[Path, bool]:
    """Write a manifest of the admitted protocols; return ``(path, written)``.

    When a manifest already lists exactly these rows, no new one is written
    and that manifest's path is returned with ``written=False``.  A second
    manifest on the same day gets a ``-2``, ``-3`` … suffix: an existing
    manifest is never rewritten, since its proof commits to its bytes.
    """
    rows = admitted_rows(protocols)
    if not rows:
        raise PreregError("no protocol is admitted yet; promote protocols (`llmarchive panels promote`) first")
    for existing in manifests(paths):
        if read_manifest(existing).get("protocols") == rows:
            return existing, False
    day = date or utc_today()
    paths.timestamps.mkdir(parents=True, exist_ok=True)
    path = paths.timestamps / f"{MANIFEST_PREFIX}{day}.json"
    suffix = 2
    while path.exists():
        path = paths.timestamps / f"{MANIFEST_PREFIX}{day}-{suffix}.json"
        suffix += 1
    manifest = {
        "manifest": "preregistration",
        "created_at": utc_now(),
        "head_commit": commit if commit is not None else head_commit(),
        "protocols": rows,
    }
    write_json(path, manifest, pretty=False)
    return path, True


def proof_path(manifest: Path) -> Path:
    return manifest.with_name(manifest.name + ".ots")


def read_proof(path: Path):
    """Parse an ``.ots`` file with the opentimestamps library."""
    # opentimestamps is imported where a proof is read or made, not above: every run imports this module
    # (the preregistration check) and loading opentimestamps costs ~60 ms it does not need.  Not a cycle.
    from opentimestamps.core.serialize import DeserializationError, StreamDeserializationContext
    from opentimestamps.core.timestamp import DetachedTimestampFile

    try:
        with open(path, "rb") as fh:
            return DetachedTimestampFile.deserialize(StreamDeserializationContext(fh))
    except (OSError, DeserializationError, ValueError) as exc:
        raise PreregError(f"{path}: not a readable OpenTimestamps proof ({exc})") from None


def proof_matches(manifest: Path) -> tuple[bool, str]:
    """Does the manifest's ``.ots`` header commit to the manifest's own sha256?"""
    from opentimestamps.core.op import OpSHA256     # loaded here: see read_proof

    proof = proof_path(manifest)
    if not proof.exists():
        return False, f"{manifest.name} has no .ots proof (run `llmarchive prereg stamp`)"
    detached = read_proof(proof)
    if not isinstance(detached.file_hash_op, OpSHA256):
        return False, f"{proof.name} commits to a {detached.file_hash_op.TAG_NAME} digest, not sha256"
    want = file_sha256(manifest)
    if detached.file_digest.hex() != want:
        return False, (f"{proof.name} commits to digest {detached.file_digest.hex()}, but {manifest.name} has "
                       f"sha256 {want}")
    return True, f"{proof.name} commits to {manifest.name} (sha256 {want})"


def proof_status(manifest: Path) -> str:
    """``pending`` (calendar receipts only) or ``bitcoin block N``, for display."""
    from opentimestamps.core.notary import BitcoinBlockHeaderAttestation   # loaded here: see read_proof

    detached = read_proof(proof_path(manifest))
    heights = [a.height for _, a in detached.timestamp.all_attestations()
               if isinstance(a, BitcoinBlockHeaderAttestation)]
    return f"bitcoin block {min(heights)}" if heights else "pending"


def stamp_status(manifest: Path) -> str:
    """``none`` (no proof yet), ``pending`` (calendar receipts only) or ``upgraded`` (a Bitcoin attestation)."""
    if not proof_path(manifest).exists():
        return "none"
    return "upgraded" if proof_status(manifest).startswith("bitcoin") else "pending"


def stamp_state(manifest: Path) -> str:
    """:func:`stamp_status`, or ``unreadable proof`` when the proof cannot be read: for a display, never raises."""
    try:
        return stamp_status(manifest)
    except PreregError:
        return "unreadable proof"


def write_admitted_manifest(paths: ArchivePaths, stamp_it: bool = False, timeout_s: float = 10.0
                            ) -> tuple[Optional[Path], bool, list[str]]:
    """Write the manifest of the admitted protocols when their set changed; ``(path, written, notes)``.

    ``path`` is None when nothing is admitted (said in ``notes``, nothing
    written).  ``stamp_it`` also tries to timestamp a manifest that has no
    proof yet; a calendar that cannot be reached is a note, not an error.
    """
    admitted = registry.admitted_protocols(paths)
    if not admitted:
        return None, False, ["no protocol is admitted yet: no manifest to write"]
    path, written = write_manifest(paths, admitted)
    notes = [f"{'wrote' if written else 'unchanged:'} {path.name}"]
    if stamp_it and stamp_state(path) == "none":
        try:
            _, answered = stamp(path, timeout=timeout_s)
            notes.append(f"stamped by {', '.join(answered)}")
        except NoCalendar as exc:
            notes.append(f"not stamped: {exc}")
    return path, written, notes


# Why a protocol is not pre-registered, in public words (the protocol id and what the manifests show of it):
# the reason travels into a run's ``exploratory`` flag and from there into published measurements.
NOT_LISTED = "no pre-registration manifest lists {pid}"
OTHER_HASHES = "the pre-registration manifests list {pid} only with other hashes (its content changed since)"
NO_PROOF = "the pre-registration manifest that lists {pid} has no timestamp proof that matches it"
UNREADABLE = "a pre-registration manifest could not be read, and no readable stamped one lists {pid}"


def is_preregistered(paths: ArchivePaths, protocol: Mapping, detail: bool = False) -> tuple[bool, str]:
    """(listed?, reason in words) for a protocol's current hash triple.

    The reason names public facts only — the protocol id and what the
    manifests show of it — because it becomes a run's ``exploratory`` flag
    and so a published measurement's ``flag_reasons``.  ``detail=True``
    gives the owner's version instead (``llmarchive prereg check``): the
    manifests' file names, their folder and what is wrong with each proof.
    """
    triple = {k: protocol.get(k) for k in ROW_FIELDS}
    pid = triple["protocol_id"]
    reasons: list[str] = []
    kinds: list[str] = []
    for manifest in manifests(paths):
        try:
            rows = read_manifest(manifest)["protocols"]
        except PreregError as exc:
            reasons.append(str(exc))
            kinds.append(UNREADABLE)
            continue
        same_id = [r for r in rows if isinstance(r, dict) and r.get("protocol_id") == pid]
        if not same_id:
            continue
        if triple not in [{k: r.get(k) for k in ROW_FIELDS} for r in same_id]:
            reasons.append(f"{manifest.name} lists {pid} with other hashes (the protocol changed since)")
            kinds.append(OTHER_HASHES)
            continue
        try:
            ok, why = proof_matches(manifest)
        except PreregError as exc:
            ok, why = False, str(exc)
        if ok:
            return True, (f"listed in {manifest.name}; {why}" if detail
                          else f"{pid} is listed in a stamped pre-registration manifest")
        reasons.append(f"listed in {manifest.name}, but {why}")
        kinds.append(NO_PROOF)
    if detail:
        return False, "; ".join(reasons) if reasons else f"{pid} is not listed in any manifest under {paths.timestamps}"
    # The most telling public fact first: a manifest that lists the protocol beats one that could not be read.
    for kind in (NO_PROOF, OTHER_HASHES, UNREADABLE):
        if kind in kinds:
            return False, kind.format(pid=pid)
    return False, NOT_LISTED.format(pid=pid)


def stamp(manifest: Path, calendars: Sequence[str] = DEFAULT_CALENDARS, timeout: float = 10.0) -> tuple[Path, list[str]]:
    """Stamp a manifest; return the ``.ots`` path and the calendars that answered.

    Raises :class:`NoCalendar` (writing nothing) when none answers, and
    :class:`PreregError` when the manifest already has a proof.
    """
    import http.client       # this and opentimestamps' client loaded here, for stamping only: see read_proof

    from opentimestamps.core.op import OpAppend, OpSHA256
    from opentimestamps.core.serialize import DeserializationError, StreamSerializationContext
    from opentimestamps.core.timestamp import DetachedTimestampFile
    from otsclient.cmds import remote_calendar

    proof = proof_path(manifest)
    if proof.exists():
        raise PreregError(f"{proof} already exists; a manifest is stamped once (upgrade it with `ots upgrade`)")
    read_manifest(manifest)
    with open(manifest, "rb") as fh:
        detached = DetachedTimestampFile.from_fd(OpSHA256(), fh)
    # As the client does: a nonce keeps the calendars from learning the
    # manifest's digest itself.
    tip = detached.timestamp.ops.add(OpAppend(os.urandom(16))).ops.add(OpSHA256())
    answered, errors = [], []
    for url in calendars:
        try:
            tip.merge(remote_calendar(url).submit(tip.msg, timeout=timeout))
            answered.append(url)
        except (OSError, http.client.HTTPException, DeserializationError, ValueError) as exc:
            errors.append(f"{url}: {exc.__class__.__name__}: {exc}")   # the network or the answer failed
        except Exception as exc:
            # opentimestamps raises a bare Exception for a non-200 or oversized answer; anything of
            # another class is a bug and keeps its traceback.
            if type(exc) is not Exception:
                raise
            errors.append(f"{url}: {exc}")
    if not answered:
        raise NoCalendar("no OpenTimestamps calendar could be reached, so the manifest is NOT stamped and no .ots "
                         "was written. Tried: " + "; ".join(errors))
    tmp = proof.with_name(proof.name + ".tmp")
    with open(tmp, "wb") as fh:
        detached.serialize(StreamSerializationContext(fh))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, proof)
    return proof, answered


def manifest_summary(path: Path) -> dict:
    """Text-free facts about one manifest, for ``prereg check``."""
    manifest = read_manifest(path)
    try:
        ok, why = proof_matches(path)
        status = proof_status(path) if ok else "no valid proof"
    except PreregError as exc:
        ok, why, status = False, str(exc), "unreadable proof"
    return {"manifest": path.name, "sha256": file_sha256(path), "protocols": len(manifest["protocols"]),
            "head_commit": manifest.get("head_commit"), "proof_matches": ok, "proof": status, "detail": why}


def canonical_manifest_bytes(manifest: Mapping) -> bytes:
    """The bytes a manifest file holds (canonical JSON), for tests and re-checks."""
    return canonical_json(manifest).encode("utf-8")
