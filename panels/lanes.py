"""Lanes, twins and promotion (method §3, gate 4 and "Lane assignment").

The lane rule was fixed before any protocol ran, and it is mechanical:

* ``risky_choice_framing__wording`` and ``base_rate_neglect__wording`` are
  ``open`` — two different families, both of the one full-status type with
  no constraint;
* each one's twin is its own family's ``anchoring`` protocol, ``guard``;
* the other eight are ``guard`` with no twin.

Which families are open is each family row's ``open_lane``
(:mod:`panels.families`).  The same rule holds within each series (``v0``
twins ``v0``, ``v1`` twins ``v1``).  :func:`planned_lane` states it; the
builder uses it to pick the public or the secret wording seed, and promotion
refuses any lane or twin that contradicts it.

A protocol is born ``candidate``.  Promotion is a human act: it refuses to
run without an explicit ``human_reviewed`` acknowledgement, and its result
is an admission (who, when, which hashes) that :mod:`llmarchive.protocols.admissions`
appends to the hash-chained ``private/protocols/admissions.jsonl``; this
module decides, from the protocol and the admissions so far, whether the
promotion may happen and what the admission says.  An admission names the protocol's
``protocol_sha256``, so editing a protocol silently drops it back to
``candidate``.  A protocol whose ``panel_sha256`` equals that of an
already-reviewed protocol inherits that review (so ``v1`` inherits ``v0``)
and may be promoted without a new acknowledgement; nothing else inherits.

:func:`twin_failures` is the twin-pairing check: it fails on a one-sided
pair, a pair across families or series, a repeated rewording type, a pair
that is not exactly one ``open`` and one ``guard``, an ``open`` protocol
without a twin, and any lane or twin that is not the rule's.
"""
from typing import Iterable, Mapping, Optional

from measure.invariants import Failure
from panels import families
from measure.errors import ArchiveError

LANES = ("open", "guard", "sealed")


def open_families() -> tuple[str, ...]:
    """The families whose ``wording`` protocol is open: each row's ``open_lane``, in table order."""
    return tuple(row.name for row in families.TABLE if row.open_lane)


OPEN_TYPE = "wording"
TWIN_TYPE = "anchoring"


class PromotionError(ArchiveError, ValueError):
    """A promotion that must not happen; the message says why and what to do."""


def _split(pid: str) -> Optional[tuple[str, str, str]]:
    parts = pid.split("__")
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else None


def planned_lane(pid: str) -> tuple[str, Optional[str]]:
    """SPEC's lane and twin for a built protocol id: ``("open"|"guard", twin_id|None)``."""
    split = _split(pid)
    if split is None:
        raise PromotionError(f"{pid!r} is not a protocol id of the form family__type__series")
    family, rewording_type, series = split
    open_family = family in open_families()
    if open_family and rewording_type == OPEN_TYPE:
        return "open", f"{family}__{TWIN_TYPE}__{series}"
    if open_family and rewording_type == TWIN_TYPE:
        return "guard", f"{family}__{OPEN_TYPE}__{series}"
    return "guard", None


def current_admission(admissions: Iterable[Mapping], protocol: Mapping) -> Optional[dict]:
    """The latest admission for exactly this protocol content, if any."""
    found = None
    for row in admissions:
        if row.get("protocol_id") == protocol.get("protocol_id") and \
                row.get("protocol_sha256") == protocol.get("protocol_sha256"):
            found = dict(row)
    return found


def apply_admission(protocol: dict, admission: Optional[Mapping]) -> dict:
    """The protocol with status, lane and twin_id as its admission sets them."""
    out = dict(protocol)
    if admission is None:
        out.update({"status": "candidate", "lane": None, "twin_id": None})
    else:
        out.update({"status": "admitted", "lane": admission["lane"], "twin_id": admission.get("twin_id")})
    return out


def reviewed_source(admissions: Iterable[Mapping], panel_sha256: str) -> Optional[dict]:
    """An admission backed by a review (human or inherited) of this exact panel."""
    for row in admissions:
        if row.get("panel_sha256") == panel_sha256 and row.get("review") in ("human", "inherited"):
            return dict(row)
    return None


def admission_row(protocol: Mapping, lane: str, admissions: Iterable[Mapping], *, reviewer: str, reviewed_at: str,
                  twin_id: Optional[str] = None, human_reviewed: bool = False,
                  allow_development_seed: bool = False, known_ids: Iterable[str] = ()) -> dict:
    """The admission row that promotes one built protocol to a lane, given every admission so far.

    Raises :class:`PromotionError` when the acknowledgement is missing and
    no identical panel was reviewed before, when lane or twin contradict
    the rule, or when a guard protocol's wording came from the public
    development seed (unless ``allow_development_seed``).
    """
    pid = protocol["protocol_id"]
    if lane not in ("open", "guard"):
        raise PromotionError(f"{pid}: --lane must be open or guard, got {lane!r}")
    rule_lane, rule_twin = planned_lane(pid)
    if lane != rule_lane:
        raise PromotionError(f"{pid}: method §3's lane rule puts this protocol in {rule_lane!r}, not {lane!r}")
    if twin_id is not None and twin_id != rule_twin:
        raise PromotionError(f"{pid}: method §3's lane rule pairs this protocol with "
                             f"{rule_twin or 'no twin'}, not {twin_id!r}")
    known = set(known_ids)
    if rule_twin and known and rule_twin not in known:
        raise PromotionError(f"{pid}: its twin {rule_twin} is not a known protocol")
    if lane == "guard" and protocol.get("wording_seed") != "secret" and not allow_development_seed:
        raise PromotionError(
            f"{pid}: its wording came from the {protocol.get('wording_seed')!r} seed, which is public, so it "
            f"cannot guard anything; set $LLMARCHIVE_PANEL_SEED or run `llmarchive panels init-seed`, rebuild, "
            f"and promote again (or pass --allow-development-seed for a demo archive)"
        )
    if lane == "open" and protocol.get("wording_seed") != "public":
        raise PromotionError(f"{pid}: an open protocol must be built from the public seed")
    source = reviewed_source(admissions, protocol["panel_sha256"])
    if human_reviewed:
        review, inherited_from = "human", None
    elif source is not None:
        review, inherited_from = "inherited", source["protocol_id"]
    else:
        raise PromotionError(
            f"{pid}: promotion is the human gate (method §3, gate 4): check gates 1 and 1b, that every phrase B "
            f"adds or changes is one the catalogue names, and the blind reader's verdict, then pass "
            f"--human-reviewed. No reviewed protocol has the same panel_sha256, so there is no review to inherit."
        )
    return {
        "record_type": "admission",
        "protocol_id": pid,
        "panel_sha256": protocol["panel_sha256"],
        "protocol_sha256": protocol["protocol_sha256"],
        "status": "admitted",
        "lane": lane,
        "twin_id": rule_twin,
        "review": review,
        "inherited_from": inherited_from,
        "reviewer": reviewer,
        "reviewed_at": reviewed_at,
        "wording_seed": protocol.get("wording_seed"),
    }


def twin_failures(headers: Iterable[Mapping]) -> list[Failure]:
    """The twin-pairing check over protocol headers (any lane, any status)."""
    by_id = {h["protocol_id"]: h for h in headers}
    failures: list[Failure] = []

    def fail(pid: str, rule: str, detail: str) -> None:
        failures.append(Failure(pid, "-", rule, detail))

    for pid, h in sorted(by_id.items()):
        lane, twin = h.get("lane"), h.get("twin_id")
        if lane is None and twin is None:
            continue
        if lane is not None and lane not in LANES:
            fail(pid, "lane", f"unknown lane {lane!r}")
            continue
        if lane != "sealed" and _split(pid) is not None and h.get("family") in families.names():
            rule_lane, rule_twin = planned_lane(pid)
            if lane is not None and lane != rule_lane:
                fail(pid, "lane_rule", f"lane {lane!r} contradicts SPEC's rule ({rule_lane!r})")
            if twin is not None and twin != rule_twin:
                fail(pid, "lane_rule", f"twin {twin!r} contradicts SPEC's rule ({rule_twin!r})")
        if lane == "open" and twin is None:
            fail(pid, "open_without_twin", "an open protocol needs a guard twin")
        if twin is None:
            continue
        other = by_id.get(twin)
        if other is None:
            fail(pid, "twin_unknown", f"twin {twin} is not a known protocol")
            continue
        if other.get("twin_id") != pid:
            fail(pid, "twin_one_sided", f"twin {twin} does not name {pid} back")
        if other.get("family") != h.get("family"):
            fail(pid, "twin_cross_family", f"twin {twin} is of another family")
        if other.get("series") != h.get("series"):
            fail(pid, "twin_cross_series", f"twin {twin} is of another series")
        if other.get("rewording_type") == h.get("rewording_type"):
            fail(pid, "twin_same_type", f"twin {twin} repeats the rewording type")
        if sorted([lane or "none", other.get("lane") or "none"]) != ["guard", "open"]:
            fail(pid, "twin_lanes", f"a pair must be exactly one open and one guard; "
                                    f"here {lane or 'none'} and {other.get('lane') or 'none'}")
    return failures
