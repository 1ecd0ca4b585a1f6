"""The protocol registry: where built protocols are stored, and the one API the archive calls for them.

Built protocol files live only under ``private/protocols/`` (text included,
every lane); ``sealed`` protocols exist only as hash-only records under
``private/protocols/sealed/``.  A file always holds the protocol as built —
``status: candidate``, no lane, no twin — so rebuilding is byte-identical
whatever has been admitted; the admissions log is merged in when a
protocol is loaded.  The builder (:mod:`panels.build`) makes the protocols
from text alone; this module gives it the seeds, writes and reads the files,
and merges the admissions (:mod:`llmarchive.protocols.admissions`).

The functions below are a contract (``/tmp/protocol_contract.md`` in the
issue that introduced them): the runner, publication, the instrument and the
Dagster assets call exactly these.
"""
import hashlib
import json
from pathlib import Path
from typing import Mapping, Optional, Sequence

from llmarchive.protocols import admissions as lanes
from llmarchive.archive import ArchivePaths, check_id, read_json, utc_now, write_json
from llmarchive.protocols.panel_seed import guard_seed
from measure.canonical import canonical_sha256
from measure.measurement import option_roles
from measure.schema import PROTOCOL_HEADER_FIELDS, SCHEMA_VERSION
from panels.build import all_protocol_ids, build_protocols, protocol_hash
from panels.lanes import apply_admission, current_admission
from panels.seeds import public_seed
from measure.errors import ArchiveError

_HEX64 = set("0123456789abcdef")


class UnknownProtocol(ArchiveError, ValueError):
    """A protocol id that is neither built nor sealed; the message lists the known ids."""

    def __init__(self, protocol_id: str, known: list[str]) -> None:
        super().__init__(f"unknown protocol {protocol_id!r}; known protocols: {', '.join(known)}")
        self.protocol_id = protocol_id


class ProtocolFileError(ArchiveError, ValueError):
    """A protocol file whose content does not match its own hashes."""


class ProtocolNotBuilt(ArchiveError, ValueError):
    """A built protocol's file is missing: reading never builds (``llmarchive panels build`` does)."""

    def __init__(self, protocol_id: str, file: Path) -> None:
        super().__init__(f"protocol {protocol_id} is not built ({file} does not exist): build the protocols with "
                         "`llmarchive panels build` (or materialise the Dagster `protocols` asset)")
        self.protocol_id = protocol_id


class SealedProtocolError(ArchiveError, ValueError):
    """A sealed protocol that cannot be registered as given (its id, its hashes, its review)."""


def _file_text(protocol: Mapping) -> str:
    return json.dumps(protocol, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def build_all(paths: ArchivePaths) -> list[dict]:
    """Build every protocol and write the files; return them with admissions merged.

    Idempotent: a file whose bytes would not change is not rewritten.
    """
    protocols = build_protocols(public_seed(), guard_seed(paths))
    paths.protocols.mkdir(parents=True, exist_ok=True)
    for protocol in protocols:
        file = paths.protocol_file(protocol["protocol_id"])
        text = _file_text(protocol)
        if not file.exists() or file.read_text(encoding="utf-8") != text:
            write_json(file, protocol)
    admissions = lanes.read_admissions(paths)
    return [apply_admission(p, current_admission(admissions, p)) for p in protocols]


def _require_built(paths: ArchivePaths, protocol_ids: Sequence[str]) -> None:
    """Refuse, naming the first missing protocol, unless every one of ``protocol_ids`` has its file.

    A read never builds: building writes every protocol file (and needs the
    guard seed), which is ``llmarchive panels build``'s and the ``protocols``
    asset's work, not a side effect of a paid run's or publication's read.
    """
    for pid in protocol_ids:
        file = paths.protocol_file(pid)
        if not file.exists():
            raise ProtocolNotBuilt(pid, file)


# (path, SHA-256 of the file's bytes) of every protocol file whose own two hashes this process has checked.
_VERIFIED: set[tuple[str, str]] = set()


def clear_memo() -> None:
    """Forget which protocol files were checked (what a fresh process knows; for benches and tests)."""
    _VERIFIED.clear()


def _read_protocol_file(file: Path) -> dict:
    """The protocol in ``file``; its ``panel_sha256`` and ``protocol_sha256`` checked once per process per bytes.

    The check (canonical JSON of the panel and of the whole protocol, two
    hashes) is three quarters of a read, and a month's pass reads the same
    files again and again.  It is remembered by the file's path *and the
    digest of its raw bytes*, taken on every read.  That is safe: a protocol
    file is immutable once built (a rebuild is byte-identical and an edited
    file is refused by the check), so the check is skipped only for bytes
    already found good — and a digest, unlike size and mtime, also catches an
    edit that keeps the size within one tick of the file system's clock.
    Each read parses its own copy, so no caller can change another's.
    """
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise ProtocolFileError(f"{file}: no such file") from None
    key = (str(file), hashlib.sha256(raw).hexdigest())
    try:
        protocol = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolFileError(f"{file}: not a readable JSON file ({type(exc).__name__}: {exc})") from None
    if not isinstance(protocol, dict) or "panel" not in protocol:
        raise ProtocolFileError(f"{file}: not a protocol file (no panel)")
    if key in _VERIFIED:
        return protocol
    if canonical_sha256(protocol["panel"]) != protocol.get("panel_sha256"):
        raise ProtocolFileError(f"{file}: panel_sha256 does not match the panel; the file was edited — rebuild it "
                                f"with `llmarchive panels build`")
    if protocol_hash(protocol) != protocol.get("protocol_sha256"):
        raise ProtocolFileError(f"{file}: protocol_sha256 does not match the protocol; the file was edited — "
                                f"rebuild it with `llmarchive panels build`")
    _VERIFIED.add(key)
    return protocol


def sealed_records(paths: ArchivePaths) -> list[dict]:
    """Hash-only records of sealed protocols, sorted by id."""
    if not paths.sealed.exists():
        return []
    return [read_json(f) for f in sorted(paths.sealed.glob("*.json"))]


def known_ids(paths: ArchivePaths) -> list[str]:
    return all_protocol_ids() + [r["protocol_id"] for r in sealed_records(paths)]


def load_protocol(paths: ArchivePaths, protocol_id: str) -> dict:
    """The full protocol (text included for built ones) with its admission merged.

    A sealed id gives its hash-only record.  Raises :class:`ProtocolNotBuilt`
    for a built protocol whose file is missing (reading never builds) and
    :class:`UnknownProtocol` for any other id.
    """
    if protocol_id in all_protocol_ids():
        _require_built(paths, [protocol_id])
        protocol = _read_protocol_file(paths.protocol_file(protocol_id))
        return apply_admission(protocol, current_admission(lanes.read_admissions(paths), protocol))
    for record in sealed_records(paths):
        if record["protocol_id"] == protocol_id:
            return dict(record)
    raise UnknownProtocol(protocol_id, known_ids(paths))


def load_all(paths: ArchivePaths) -> list[dict]:
    """Every built protocol, text included, admissions merged (:class:`ProtocolNotBuilt` when one is missing)."""
    _require_built(paths, all_protocol_ids())
    admissions = lanes.read_admissions(paths)
    out = []
    for pid in all_protocol_ids():
        protocol = _read_protocol_file(paths.protocol_file(pid))
        out.append(apply_admission(protocol, current_admission(admissions, protocol)))
    return out


def admitted_protocols(paths: ArchivePaths) -> list[dict]:
    """Every admitted protocol, sealed ones included (their hash-only records): what a manifest lists."""
    admitted = [p for p in load_all(paths) if p.get("status") == "admitted"]
    return admitted + [r for r in sealed_records(paths) if r.get("status") == "admitted"]


def header(protocol: Mapping) -> dict:
    """The text-free header: :data:`measure.schema.PROTOCOL_HEADER_FIELDS`, plus the option roles derived from the panel."""
    out = {key: protocol.get(key) for key in PROTOCOL_HEADER_FIELDS}
    out["option_roles"] = option_roles(protocol)
    return out


def headers_with_sealed(paths: ArchivePaths, protocols: Sequence[Mapping]) -> list[dict]:
    """Headers of the given built protocols plus the hash-only sealed records (what the twin check reads)."""
    return [header(p) for p in protocols] + [header(r) for r in sealed_records(paths)]


def list_protocols(paths: ArchivePaths) -> list[dict]:
    """Headers of every protocol, sealed ones included; never any text."""
    return [header(p) for p in load_all(paths)] + [header(r) for r in sealed_records(paths)]


def sweep_protocols(paths: ArchivePaths, series: str = "v0", headers: Optional[Sequence[Mapping]] = None) -> list[dict]:
    """Headers of the protocols a sweep runs: admitted, not sealed, of the protocol series; with admission date.

    The sweep and the bridge choose their work from it and coverage audits the same list, so it lives
    with the protocols rather than with either.  ``headers``: :func:`list_protocols` already read by the
    caller (the month's plan), so no protocol file is read twice.  With no admission at all no protocol
    is admitted, so the list is empty without a file read: an archive not yet built has nothing to sweep
    (and ``status`` or coverage on it do not stop at :class:`ProtocolNotBuilt`).
    """
    admissions = lanes.read_admissions(paths)
    if not admissions:
        return []
    admitted_on: dict[str, str] = {}
    for row in admissions:
        when = str(row.get("reviewed_at") or "")[:10]
        if row.get("protocol_id") and when:
            admitted_on.setdefault(row["protocol_id"], when)
    out = []
    for h in (list_protocols(paths) if headers is None else headers):
        if h.get("status") == "admitted" and h.get("lane") in ("open", "guard") and h.get("series") == series:
            out.append({**h, "admitted_on": admitted_on.get(h["protocol_id"])})
    return sorted(out, key=lambda h: h["protocol_id"])


def open_protocol_ids(paths: ArchivePaths) -> list[str]:
    """Protocols whose current lane is ``open``."""
    return [h["protocol_id"] for h in list_protocols(paths) if h["lane"] == "open"]


def guard_protocol_ids(paths: ArchivePaths) -> list[str]:
    """Protocols whose current lane is ``guard``."""
    return [h["protocol_id"] for h in list_protocols(paths) if h["lane"] == "guard"]


def _check_hash(value: str, name: str) -> str:
    if not isinstance(value, str) or len(value) != 64 or set(value) - _HEX64:
        raise SealedProtocolError(f"{name} must be 64 lowercase hexadecimal characters, got {value!r}")
    return value


def register_sealed(paths: ArchivePaths, protocol_id: str, panel_sha256: str, protocol_sha256: str,
                    reviewer: Optional[str] = None, human_reviewed: bool = False) -> dict:
    """Record a sealed protocol by its two hashes only (method §10).

    The text stays in the isolated sealed repository; what crosses is the id
    and the two hashes, copied by hand, plus the fact that it was reviewed.
    """
    check_id(protocol_id, "protocol_id")
    if protocol_id in all_protocol_ids():
        raise SealedProtocolError(f"{protocol_id} is a built protocol of this repository, not a sealed one")
    if not human_reviewed:
        raise SealedProtocolError(f"{protocol_id}: registering a sealed protocol admits it; it needs --human-reviewed "
                         f"(its review happened in the sealed repository)")
    record = {key: None for key in PROTOCOL_HEADER_FIELDS}
    record.update({
        "record_type": "protocol",
        "schema_version": SCHEMA_VERSION,
        "protocol_id": protocol_id,
        "panel_sha256": _check_hash(panel_sha256, "panel_sha256"),
        "protocol_sha256": _check_hash(protocol_sha256, "protocol_sha256"),
        "status": "admitted",
        "lane": "sealed",
        "twin_id": None,
        "reviewed": True,
        "reviewer": lanes.reviewer_name(reviewer),
        "registered_at": utc_now(),
    })
    file = paths.sealed / f"{protocol_id}.json"
    if file.exists():
        old = read_json(file)
        if (old.get("panel_sha256"), old.get("protocol_sha256")) != (panel_sha256, protocol_sha256):
            raise SealedProtocolError(f"{file} already records other hashes for {protocol_id}; a changed sealed protocol "
                             f"is a new protocol with a new id")
        return old
    write_json(file, record)
    return record
