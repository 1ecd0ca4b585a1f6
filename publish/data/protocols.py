"""The protocol registry as publication sees it: headers, example texts, private texts.

Publication never reads ``private/protocols/`` itself; it asks
:mod:`llmarchive.protocols.registry` (the contract in the panels issue) for text-free
headers of every protocol and, for the sealed-text check and the open-lane
examples, for full protocols.  The split made here is the one method §10
draws:

* an ``open`` protocol's wording is public by lane, but only its *first*
  scenario's four versions are shown (:func:`example_texts`);
* every other protocol's wording — ``guard``, ``sealed`` and a candidate
  that has no lane yet — must not appear in any published byte
  (:attr:`ProtocolTexts.private`, from :func:`collect_texts`).
"""
import contextlib
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Iterator, Optional

from llmarchive.protocols import registry
from llmarchive.archive import ArchivePaths
from measure.schema import PROTOCOL_DERIVED_FIELDS, PROTOCOL_HEADER_FIELDS, VERSIONS
from publish.errors import PublishError


@dataclass(frozen=True)
class ProtocolText:
    """One version of one scenario of one protocol (the text itself is never printed)."""

    protocol_id: str
    item_id: str
    version: str
    text: str


@dataclass(frozen=True)
class _Registry:
    """Every protocol of one home as read once: the full ones by id (sealed ones hash-only) and the headers."""

    home: object
    full: dict[str, dict]
    headers: list[dict]


_OUTSIDE = object()     # no read_once block is open: every ask reads the registry
_READ: ContextVar = ContextVar("publish_protocols_read", default=_OUTSIDE)


@contextlib.contextmanager
def read_once(paths: ArchivePaths) -> Iterator[None]:
    """Within the block, every protocol of ``paths`` is read and hash-checked once, on first use.

    A build asks for the headers in its check, its inputs and its panel
    files, and for each full protocol in its texts and its panel files;
    without this each ask read and hash-checked the files again (about three
    times per protocol per publication).  What the block sees is the registry
    as it was at the first ask, which is what one build publishes from.
    """
    token = _READ.set(None)
    try:
        yield
    finally:
        _READ.reset(token)


def _registry(paths: ArchivePaths) -> Optional[_Registry]:
    """The memo of :func:`read_once` for ``paths`` (read now if this is the first ask), or None outside one."""
    found = _READ.get()
    if found is _OUTSIDE:
        return None
    if found is None or found.home != paths.home:
        try:
            full = {pid: registry.load_protocol(paths, pid) for pid in registry.known_ids(paths)}
        except ValueError as exc:  # a protocol file that fails its own hashes, a bad guard seed …
            raise PublishError(f"cannot read the protocols: {exc}") from None
        found = _Registry(paths.home, full, [registry.header(p) for p in full.values()])
        _READ.set(found)
    return found


def list_headers(paths: ArchivePaths) -> list[dict]:
    """Every protocol's header (sealed ones included, hash-only), sorted by id."""
    headers = []
    memo = _registry(paths)
    try:
        records = memo.headers if memo is not None else registry.list_protocols(paths)
    except ValueError as exc:  # a protocol file that fails its own hashes, a bad guard seed …
        raise PublishError(f"cannot read the protocols: {exc}") from None
    for record in records:
        if not isinstance(record, dict) or not isinstance(record.get("protocol_id"), str):
            raise PublishError(f"llmarchive.protocols.registry.list_protocols returned a record without a protocol_id: {record!r}")
        headers.append({k: record.get(k) for k in PROTOCOL_HEADER_FIELDS + PROTOCOL_DERIVED_FIELDS})
    return sorted(headers, key=lambda h: h["protocol_id"])


def load_full(paths: ArchivePaths, protocol_id: str) -> Optional[dict]:
    """The full protocol with its panel, or ``None`` when only its hashes exist here (sealed)."""
    memo = _registry(paths)
    try:
        protocol = memo.full[protocol_id] if memo is not None and protocol_id in memo.full \
            else registry.load_protocol(paths, protocol_id)
    except ValueError as exc:
        raise PublishError(f"cannot read protocol {protocol_id}: {exc}") from None
    panel = protocol.get("panel")
    if not isinstance(panel, list) or not panel:
        return None
    return protocol


def _texts(protocol: dict) -> list[ProtocolText]:
    out = []
    for index, item in enumerate(protocol["panel"]):
        versions = item.get("versions") if isinstance(item, dict) else None
        if not isinstance(versions, dict):
            raise PublishError(f"protocol {protocol['protocol_id']}: panel item #{index} has no versions object")
        for version in VERSIONS:
            text = versions.get(version)
            if not isinstance(text, str):
                raise PublishError(f"protocol {protocol['protocol_id']}: item {item.get('item_id')} "
                                   f"has no text for version {version}")
            out.append(ProtocolText(protocol["protocol_id"], item.get("item_id"), version, text))
    return out


@dataclass
class ProtocolTexts:
    """What the sealed-text check and the results page need from the full protocols."""

    private: list[ProtocolText]
    public: list[ProtocolText]
    examples: dict[str, list[ProtocolText]]
    designs: dict[str, dict] = field(default_factory=dict)


def collect_texts(paths: ArchivePaths, headers: list[dict]) -> ProtocolTexts:
    """Split every protocol's wording into private text, public text and open examples."""
    private: list[ProtocolText] = []
    public: list[ProtocolText] = []
    examples: dict[str, list[ProtocolText]] = {}
    designs: dict[str, dict] = {}
    for header in headers:
        protocol = load_full(paths, header["protocol_id"])
        if protocol is None:
            continue
        if isinstance(protocol.get("design_readers"), dict) and protocol.get("lane") != "sealed":
            designs[protocol["protocol_id"]] = protocol["design_readers"]
        texts = _texts(protocol)
        if protocol.get("lane") == "open":
            public.extend(texts)
            first = protocol["panel"][0].get("item_id")
            examples[protocol["protocol_id"]] = [t for t in texts if t.item_id == first]
        else:
            private.extend(texts)
    return ProtocolTexts(private, public, examples, designs)
