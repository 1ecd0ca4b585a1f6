"""What a published measurement's numbers can be read as, in plain words.

The estimator's fields are exact and stay exactly as computed; but a bare
``stability_pct`` of 100.0 on a run where 6 answers in 60 were readable, a
``drop_bound_pct`` of 180 on a 0–100 scale or a reason written as a formula
("drop_bound_pct_ab = 180.0 exceeds 2.0") tells a newcomer nothing, or the
wrong thing.  This module writes the words published *beside* those fields
(first, so they are read first), in the CSV, the database and the site alike:

* :func:`reading` — one line per measurement: ``not measurable: …``, ``at
  the noise floor``, ``measurable``, each followed by where it stands (on the
  curve, or off it and why);
* :func:`flag_sentences` — each flag of a measurement as a sentence with its
  figures in it (``scenario_dominated`` naming its scenarios, every one tied
  at the cutoff: :func:`scenarios_at_cutoff`);
* :func:`beyond_scale` — the words that stand in for a loss bound or a
  detectable change larger than the whole 0–100 scale;
* :func:`change_reading` — a row of the change rule (``changes.csv``) in words;
* :func:`point_kind` — what kind of comparison point it is, from how the
  archive filed it (a simulated reader with a known answer, a bridge run,
  or an outside run), and :func:`coincidence_words` — the answers it shares
  with runs the archive holds.

Everything is derived from the measurement's public numeric fields (and the
thresholds its ``gates`` carry), never from the free text of a record, so an
outsider holding ``stability.csv`` alone gets the same words back from the
same function; a comparison point's kind and shared answers come from the
fields the archive itself records when it files the point (``source``,
``coinciding_answers``).
"""
import math
from typing import Mapping, Optional

from llmarchive.comparison import KNOWN_ANSWER_SOURCE
from llmarchive.succession import BRIDGE_SOURCE
from measure.measurement import ASYMMETRY_MAX_PCT, DEGENERATE_ENTROPY, DEGENERATE_STABILITY_PCT, DROP_BOUND_MAX_PCT
from measure.schema import PAIRS, VERSION_SUFFIX
from panels.readers import KNOWN_ANSWER_WORDS, simulated_reader

SCALE_MAX_PCT = 100.0
MORE_THAN_THE_SCALE = "more than the scale: the losses alone could explain any result"
UNREADABLE_SHARE = 0.5
"""Above this share of unreadable answers in A or in B, a measurement is not measurable: too little to read."""
KNOWN_ANSWER = "simulated reader, known answer"
OUTSIDE_RUN = "outside run"
BRIDGE_RUN = "bridge run of a model not declared a successor"

READING_COLUMNS = (
    ("reading", "text",
     "Derived, not a schema field: what this row's numbers can be read as, in plain words — 'not measurable' "
     "(too few readable answers: the losses alone could explain any result), 'at the noise floor' (as stable "
     "as sampling alone allows at this n) or 'measurable' — then 'on the curve', or 'off the curve' with the "
     "reasons. Computed from the row's own fields; the fields themselves are unchanged."),
    ("flag_sentences", "json",
     "Derived, not a schema field: each flag of the row as a sentence with its figures (JSON object, flag -> "
     "sentence); {} when the row has no flag."),
)
"""The derived columns published first, before the schema's fields, in stability.csv and the measurements table."""
CHANGE_READING_COLUMNS = (
    ("reading", "text",
     "Derived: the change rule's verdict on this pair in plain words, with the margins it had to clear."),
)
POINT_COLUMNS = (
    ("reading", "text", "Derived: what the point's recomputed numbers can be read as, in plain words (as in the "
                        "measurements table's reading column); then, when its answers are word for word those of "
                        "a run the archive holds, how many and whose ('answers shared: …', a reproduction of the "
                        "archive's run when most are)."),
    ("point_kind", "text", f"'{KNOWN_ANSWER}' when the archive's own known-answer step filed it (one of its "
                           f"simulated readers: a deterministic reader whose answer is known in advance, a check "
                           f"that the instrument sees what it should); '{BRIDGE_RUN}' for the archive's own bridge "
                           f"run kept beside the curve; else '{OUTSIDE_RUN}'. Derived from how the point was filed, "
                           f"never from its model id or submitter."),
    ("expected", "text", "For a known-answer point: what its reader must come back with, known before any call "
                         "(empty for every other point)."),
)

PAIR_WORDS = {"ab": ("A", "B"), "aa": ("A", "A′"), "ac": ("A", "C")}
FLAG_PHRASES = {
    "drop_confounded": "too many unreadable answers",
    "asymmetric_missingness": "unequal losses between versions",
    "below_drop_bound": "gap within what the losses allow",
    "below_surface_noise": "moved no more than a cosmetic change",
    "not_reading": "does not read the question",
    "degenerate_candidate": "nearly always the same answer",
    "scenario_dominated": "two scenarios carry the gap",
    "instrument_suspect": "instrument in doubt that day",
    "exploratory": "exploratory",
}


# --------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------

def _number(m: Mapping, name: str) -> Optional[float]:
    value = m.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _pts(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.1f}"


def beyond_scale(value_pct) -> Optional[str]:
    """The words shown instead of a loss bound or a detectable change above 100, else ``None``.

    Every stability and gap lives on 0–100, so a bound above 100 says the
    unreadable answers alone could move the result anywhere on the scale:
    the figure is exact, and it means the row says nothing.
    """
    if isinstance(value_pct, bool) or not isinstance(value_pct, (int, float)):
        return None
    return MORE_THAN_THE_SCALE if value_pct > SCALE_MAX_PCT else None


def bound_words(value_pct) -> str:
    """A bound for a table cell: its figure, or :data:`MORE_THAN_THE_SCALE` with the figure beside it."""
    words = beyond_scale(value_pct)
    return f"{words} ({_pts(value_pct)})" if words else _pts(value_pct if isinstance(value_pct, (int, float)) else None)


def readable(m: Mapping) -> Optional[dict]:
    """``{"readable": n, "total": N}`` for A and B together when too few answers were readable, else ``None``.

    With more than half of A's or of B's answers unreadable, or a loss bound
    as wide as the scale, which answers happened to be readable decides the
    stability figure; the count is what can be published as a reading.
    """
    u_a, u_b = _number(m, "u_a"), _number(m, "u_b")
    drop = _number(m, "drop_bound_pct_ab")
    if u_a is None or u_b is None:
        return None
    if max(u_a, u_b) <= UNREADABLE_SHARE and (drop is None or drop < SCALE_MAX_PCT) \
            and _number(m, "stability_pct") is not None:
        return None
    n_valid = m.get("n_valid") if isinstance(m.get("n_valid"), Mapping) else {}
    n = int(m.get("n") or 0)
    return {"readable": int(n_valid.get("A", 0) or 0) + int(n_valid.get("B", 0) or 0), "total": 2 * n}


def _gate(m: Mapping, check: str) -> Mapping:
    for g in m.get("gates") or []:
        if isinstance(g, Mapping) and g.get("check") == check:
            return g
    return {}


def _threshold(m: Mapping, check: str, default=None) -> Optional[float]:
    """The threshold the measurement's own gate records for ``check`` (``default`` when it records none)."""
    value = _gate(m, check).get("threshold")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None if default is None else float(default)


# --------------------------------------------------------------------------
# the reading
# --------------------------------------------------------------------------

def reading(m: Mapping) -> str:
    """The measurement's plain-words reading: what its number is, then where it stands.

    ``not measurable: 6 of 60 answers of A and B readable; off the curve``,
    ``at the noise floor; on the curve``, ``measurable; off the curve: does
    not read the question`` …
    """
    counts = readable(m)
    if counts is not None:
        head = f"not measurable: {counts['readable']} of {counts['total']} answers of A and B readable"
        if beyond_scale(_number(m, "drop_bound_pct_ab")):
            head += " — the losses alone could explain any result"
        # every figure of such a row is in doubt: its flags are listed beside it, not repeated here
        return f"{head}; {'on the curve' if m.get('on_curve') is True else 'off the curve'}"
    if m.get("at_noise_floor") is True:
        head = "at the noise floor"
    else:
        head = "measurable"
    return f"{head}; {standing(m)}"


def standing(m: Mapping) -> str:
    """``on the curve``, or ``off the curve:`` with a short phrase per flag (or the protocol's status)."""
    if m.get("on_curve") is True:
        return "on the curve"
    flags = [f for f in (m.get("flags") or []) if isinstance(f, str)]
    if flags:
        return "off the curve: " + ", ".join(FLAG_PHRASES.get(f, f) for f in flags)
    status = m.get("protocol_status")
    if status == "admitted":
        return "off the curve"
    return f"off the curve: the protocol is a {status}, not admitted" if status else \
        "off the curve: the protocol is not admitted"


# --------------------------------------------------------------------------
# flags as sentences
# --------------------------------------------------------------------------

def _bound_phrase(value: Optional[float]) -> str:
    """``up to 12.0 points``, or the bound beyond the scale said as such with its figure."""
    if beyond_scale(value):
        return f"more than the whole 0–100 scale (bound {_pts(value)} points)"
    return f"up to {_pts(value)} points"


def _drop_sentence(m: Mapping) -> str:
    limit = _threshold(m, "drop_bound", DROP_BOUND_MAX_PCT)
    parts, wide = [], False
    for pair in PAIRS:
        value = _number(m, f"drop_bound_pct_{pair}")
        if value is None or value <= limit:
            continue
        x, y = PAIR_WORDS[pair]
        parts.append(f"between {x} and {y} by up to {_pts(value)} points")
        wide = wide or beyond_scale(value) is not None
    said = ", ".join(parts) or "of a pair by more than the check allows"
    beyond = " — more than the whole 0–100 scale, so the losses alone could explain any result" if wide else ""
    return (f"Unreadable answers alone could move the gap {said}{beyond}. "
            f"The check allows at most {_pts(limit)} points per pair.")


def _lost(m: Mapping, version: str) -> Optional[float]:
    u = _number(m, f"u_{VERSION_SUFFIX[version]}")
    return None if u is None else 100 * u


def _asymmetry_sentence(m: Mapping) -> str:
    limit = _threshold(m, "missingness_asymmetry", ASYMMETRY_MAX_PCT)
    parts = []
    for pair, (vx, vy) in PAIRS.items():
        value = _number(m, f"drop_asymmetry_pct_{pair}")
        if value is None or value <= limit:
            continue
        x, y = PAIR_WORDS[pair]
        parts.append(f"{x} lost {_pts(_lost(m, vx))}% of its answers and {y} {_pts(_lost(m, vy))}%, "
                     f"{_pts(value)} points apart")
    return (f"The versions lost different shares of answers: {'; '.join(parts) or 'beyond the limit'}. "
            f"The check allows at most {_pts(limit)} points of difference within a pair.")


def _undefined(m: Mapping, versions: str) -> str:
    return f"{versions} has no readable answer, so this check could not be evaluated; it counts as failed."


def _below_drop_sentence(m: Mapping) -> str:
    gap, drop = _number(m, "gap_pct"), _number(m, "drop_bound_pct_ab")
    if gap is None:
        return _undefined(m, "A or B")
    return (f"The A–B gap of {_pts(gap)} points is not larger than what unreadable answers alone could "
            f"produce: {_bound_phrase(drop)}.")


def _surface_sentence(m: Mapping) -> str:
    gap, drop = _number(m, "gap_pct"), _number(m, "drop_bound_pct_ab")
    null, drop_aa = _number(m, "gap_null_pct"), _number(m, "drop_bound_pct_aa")
    if None in (gap, drop, null, drop_aa):
        return _undefined(m, "A, B or A′")
    low, high = max(0.0, gap - drop), null + drop_aa
    return (f"The rewording moved the decisions no more than a cosmetic change did: A–B differ by {_pts(gap)} "
            f"points, at least {_pts(low)} once lost answers are allowed for, while A–A′ (punctuation only) "
            f"differ by {_pts(null)}, up to {_pts(high)} with their losses.")


def _reading_sentence(m: Mapping) -> str:
    gap, drop = _number(m, "gap_positive_pct"), _number(m, "drop_bound_pct_ac")
    theta = _threshold(m, "positive_control")
    need = f"more than {_pts(theta)}" if theta is not None else "more than the protocol's threshold"
    if gap is None or drop is None:
        return _undefined(m, "A or C")
    return (f"The positive control did not move the decisions enough: changing the one number that flips the right "
            f"answer (version C) moved them by {_pts(gap)} points, at least {_pts(max(0.0, gap - drop))} once lost "
            f"answers are allowed for; a model reading the question must move by {need}.")


def _degenerate_sentence(m: Mapping) -> str:
    ea, eb, s = _number(m, "entropy_a"), _number(m, "entropy_b"), _number(m, "stability_pct")
    if ea is None or eb is None or s is None:
        return _undefined(m, "A or B")
    return (f"Nearly always the same answer: entropy {ea:.2f} in A and {eb:.2f} in B (below {DEGENERATE_ENTROPY:.2f}) "
            f"with stability {_pts(s)} (above {DEGENERATE_STABILITY_PCT:.0f}), so the high stability says little "
            f"about rewording.")


def scenarios_at_cutoff(m: Mapping) -> Optional[dict]:
    """Which scenarios make "the two worst", every one tied at the cutoff included; ``None`` without per-scenario gaps.

    ``scenario_dominated`` compares the two largest per-scenario gaps with
    the threshold.  When several scenarios share the second-largest gap (or
    more than two the largest), any of them makes the pair and the share is
    the same whichever is picked, so none is picked: ``named`` is every
    scenario whose gap reaches the cutoff (the second-largest gap, or the
    only one), largest first; ``tied`` lists those at the cutoff when they
    are more than the pair needs.  A scenario whose gap is zero adds nothing
    to the share and is never named.
    """
    gaps = m.get("scenario_gaps_pct")
    if not isinstance(gaps, Mapping):
        return None
    moved = sorted(((float(v), str(k)) for k, v in gaps.items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0),
                   key=lambda vk: (-vk[0], vk[1]))
    if not moved:
        return None
    cutoff = moved[min(1, len(moved) - 1)][0]
    named = [item for value, item in moved if value >= cutoff]
    tied = [item for value, item in moved if value == cutoff] if len(named) > 2 else []
    return {"named": named, "cutoff_pct": cutoff, "tied": tied}


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _named_scenarios(m: Mapping, cut: dict) -> str:
    """The scenarios of :func:`scenarios_at_cutoff` in words, each with its gap; a tie said as one."""
    gaps = m["scenario_gaps_pct"]
    named, tied, cutoff = cut["named"], cut["tied"], cut["cutoff_pct"]
    if len(named) == 1:
        return f"{named[0]} alone ({_pts(cutoff)} points); every other scenario's A–B gap is zero"
    if not tied:
        first, second = (float(gaps[item]) for item in named)
        if first == second:
            return f"{named[0]} and {named[1]} ({_pts(cutoff)} points each)"
        return f"{named[0]} ({_pts(first)} points) and {named[1]} ({_pts(second)} points)"
    above = [f"{item} ({_pts(float(gaps[item]))} points)" for item in named if item not in tied]
    return (", then ".join(above + [f"{_listed(tied)}, tied at {_pts(cutoff)} points"])
            + f" — {'any one of them completes' if above else 'any two of them make'} the pair, so all are named")


def _dominated_sentence(m: Mapping) -> str:
    share = _number(m, "scenario_concentration_pct")
    limit = _threshold(m, "scenario_concentration")
    allowed = f"the {_pts(limit)}% the protocol allows" if limit is not None else "the protocol's limit"
    cut = scenarios_at_cutoff(m)
    if cut is None:
        head = f"Two scenarios produce {_pts(share)}% of the summed per-scenario gap, above {allowed}."
    else:
        who = "One scenario produces" if len(cut["named"]) == 1 else "The two largest per-scenario gaps produce"
        head = (f"{who} {_pts(share)}% of the summed per-scenario gap, above {allowed}: "
                f"{_named_scenarios(m, cut)}.")
    return (f"{head} Read it with the gap ({_pts(_number(m, 'gap_pct'))} points) and the noise floor "
            f"({_pts(_number(m, 'null_floor_pct'))}): near the floor, one or two stray answers make this flag by "
            f"themselves.")


def _suspect_sentence(m: Mapping) -> str:
    return (f"The instrument was in doubt on {m.get('run_date') or 'the run date'} (an alarm not yet acknowledged, or "
            f"no passing check of the reference model that day), so the measurement is kept and taken off every "
            f"curve.")


def _exploratory_sentence(m: Mapping) -> str:
    return ("Outside the protocol's one pre-declared contrast (an outside comparison point or an extra analysis), "
            "so it is never on a curve or in an aggregate.")


_SENTENCES = {
    "drop_confounded": _drop_sentence,
    "asymmetric_missingness": _asymmetry_sentence,
    "below_drop_bound": _below_drop_sentence,
    "below_surface_noise": _surface_sentence,
    "not_reading": _reading_sentence,
    "degenerate_candidate": _degenerate_sentence,
    "scenario_dominated": _dominated_sentence,
    "instrument_suspect": _suspect_sentence,
    "exploratory": _exploratory_sentence,
}


def flag_sentences(m: Mapping) -> dict[str, str]:
    """Each flag of ``m`` as a sentence with its figures, in the order the flags were raised."""
    out = {}
    for flag in m.get("flags") or []:
        if isinstance(flag, str) and flag not in out:
            write = _SENTENCES.get(flag)
            out[flag] = write(m) if write else f"The check behind {flag} failed."
    return out


def derived_columns(m: Mapping) -> dict:
    """The :data:`READING_COLUMNS` values of one measurement."""
    return {"reading": reading(m), "flag_sentences": flag_sentences(m)}


# --------------------------------------------------------------------------
# change rows and comparison points
# --------------------------------------------------------------------------

def change_reading(row: Mapping) -> str:
    """A ``changes`` row in words: the verdict (from the row's frozen label) and the margins it had to clear."""
    label, delta = row.get("label"), _number(row, "delta_pct")
    bound, cap = _number(row, "bound_pct"), _number(row, "cap_pct")
    if delta is None or label not in ("improved", "regressed", "flat"):
        return "no verdict: the pair lacks a figure the change rule needs"
    margins = f"random-error bound {bound_words(bound)}, loss cap {bound_words(cap)}"
    if label != "flat":
        return f"{label}: stability moved {delta:+.1f} points, clearing both margins ({margins})"
    return f"flat: the move of {delta:+.1f} points does not clear both margins ({margins})"


def point_kind(point: Mapping) -> str:
    """What kind of comparison point this is, from how the archive filed it (the record's ``source``).

    :data:`KNOWN_ANSWER` for a point the archive's known-answer step filed, :data:`BRIDGE_RUN` for the
    archive's own bridge run of a model never declared a successor, else :data:`OUTSIDE_RUN` — never from
    the model id or the submitter, which an outsider writes.  A record without ``source`` (every outside
    submission) is an outside run.
    """
    source = point.get("source")
    if source == KNOWN_ANSWER_SOURCE and simulated_reader(point.get("model_id")):
        return KNOWN_ANSWER
    return BRIDGE_RUN if source == BRIDGE_SOURCE else OUTSIDE_RUN


def expected(point: Mapping) -> Optional[str]:
    """For a point the known-answer step filed, the answer its reader must come back with, in words; else ``None``."""
    if point_kind(point) != KNOWN_ANSWER:
        return None
    return KNOWN_ANSWER_WORDS.get(simulated_reader(point.get("model_id")) or "")


def _count(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def coincidence_words(point: Mapping) -> Optional[str]:
    """What the point's answers share with runs the archive already holds, from the intake's
    ``coinciding_answers`` (counts and the archive's own ids only); ``None`` when it shares nothing.

    An own run is named by its run id, a filed point by its key on the site (``point-`` and the first 16
    characters of its record hash); a run most of whose answers the point gives word for word is called a
    reproduction of it.
    """
    entries = point.get("coinciding_answers")
    if not isinstance(entries, list):
        return None
    parts = []
    for e in entries[:5]:
        if not isinstance(e, Mapping):
            continue
        answers, trials, total = _count(e.get("answers")), _count(e.get("trials")), _count(e.get("of"))
        if answers is None or total is None:
            continue
        if e.get("source") == "own_run" and isinstance(e.get("id"), str) and e["id"].replace("_", "").replace(
                "-", "").replace(".", "").isalnum():
            what = f"the archive's run {e['id']}" + (" (a reproduction of it)" if e.get("reproduction") is True
                                                       else "")
        elif e.get("source") == "comparison_point" and isinstance(e.get("record_sha256"), str) \
                and e["record_sha256"].isalnum():
            what = f"comparison point point-{e['record_sha256'][:16]}"
        else:
            continue
        copied = f", {trials} of them the same trials as recorded" if trials else ""
        parts.append(f"{answers} of {total} answers word for word those of {what}{copied}")
    more = len(entries) - 5
    if not parts:
        return None
    return "answers shared: " + "; ".join(parts) + (f"; and {more} more runs" if more > 0 else "")


def point_columns(point: Mapping) -> dict:
    """The :data:`POINT_COLUMNS` values of one comparison point (its recomputed ``measurement`` inside).

    Its reading ends with :func:`coincidence_words` when its answers coincide with a run the archive holds.
    """
    m = point.get("measurement") if isinstance(point.get("measurement"), Mapping) else {}
    shared = coincidence_words(point)
    return {"reading": " — ".join(w for w in (reading(m) if m else None, shared) if w) or None,
            "point_kind": point_kind(point), "expected": expected(point)}


__all__ = ["BRIDGE_RUN", "CHANGE_READING_COLUMNS", "FLAG_PHRASES", "KNOWN_ANSWER", "MORE_THAN_THE_SCALE",
           "OUTSIDE_RUN", "POINT_COLUMNS", "READING_COLUMNS", "SCALE_MAX_PCT", "UNREADABLE_SHARE", "beyond_scale",
           "bound_words", "change_reading", "coincidence_words", "derived_columns", "expected", "flag_sentences",
           "point_columns", "point_kind", "readable", "reading", "scenarios_at_cutoff", "standing"]
