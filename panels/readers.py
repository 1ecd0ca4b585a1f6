"""Simulated readers: the panel's own controls, scored with the real estimator.

A panel is only useful if it can *see* the bias it was built for and can
tell a reader who reads from one who does not.  These deterministic readers
answer each version of each item from the item's ``structure`` block and
from the version's *frame* (what the version's text presents — gain or loss
description, percentages or natural frequencies, the sunk amount named in
an option or not), never from the English.  Their trials are shaped like
the runner's (a response ending in a ``DECISION:`` line, read by the real
grammar) and measured by :func:`measure.measurement.build`, so the design
figures are exactly what the archive would publish for such a reader.

Readers
-------
``normative``
    Expected value (for base-rate items this *is* Bayes: the lotteries carry
    the posterior).  An exact tie splits the replicates evenly between the
    tied options.  On A, A′ and B every option ties by construction, so this
    reader's ``gap_ab`` and ``gap_aa'`` are 0; on C it takes the dominant
    option.

``biased`` — the family's classic biased reader (its formula is the family row's
``biased_reader``, :mod:`panels.families`):

* ``risky_choice_framing``: cumulative prospect theory (Tversky & Kahneman,
  1992, *J. Risk Uncertain.* 5:297–323) with their median parameters
  α = β = 0.88, λ = 2.25, γ = 0.61 (gains), δ = 0.69 (losses), and the
  reference point the frame sets: a gain description ("saved") is valued
  from "none saved", a loss description ("lost") from "none lost", as in
  Tversky & Kahneman (1981, *Science* 211:453–458).
* ``base_rate_neglect``: with the rates as percentages the reader takes the
  hit rate (``sens_pct``) for the posterior probability that the flagged unit
  is a true case (the inverse fallacy; Eddy 1982; Kahneman & Tversky 1973);
  with natural frequencies it computes Bayes correctly (the natural-frequency
  effect, Gigerenzer & Hoffrage 1995, *Psychol. Rev.* 102:684–704).  It then
  bets on the higher expected payout under the probability it believes.
* ``sunk_cost_fallacy``: prospect-theory mental accounting (Thaler 1980,
  *J. Econ. Behav. Organ.* 1:39–60; the explanation Arkes & Blumer 1985,
  *Organ. Behav. Hum. Decis. Process.* 35:124–140, give of the sunk-cost
  effect): the project's account was opened when the money was spent, so
  its reference point is the position *before* spending; stopping closes the
  account and books the sunk amount as a realised loss
  (v(stop_value − spent)), finishing keeps the chance to recover it
  (w(p)·v(win − spent) + w(q)·v(−spent)), with the 1992 parameters.  The
  loss region's convexity is what makes finishing attractive.  Where the stop
  option itself names the sunk amount (the ``wording`` type's B) the reader
  counts it once more as a loss to avoid — the salience the phrase adds
  (v(−spent) added to stopping).

Every reader ignores what its model says nothing about (an anchor, the order
of the options, a default), so its B equals its A there.

Known-answer readers
--------------------
Three readers answer as models with figures known in advance, each under a
model id ``simulated-reader-<name>`` (:func:`simulated_reader` tells such an
id from any other): ``invariant`` (the normative reader: no A↔B gap),
``framing-sensitive`` (the biased reader: a known A↔B gap) and
``ignores-question`` (``constant``: the first option whatever the text says,
so C moves nothing and the run is ``not_reading``).  :func:`known_answer`
gives what each must come back with; ``llmarchive.comparison.reader_server`` serves
them over HTTP as an OpenAI-compatible server.

The figures (``gap_ab_pct``, ``gap_aa_prime_pct``, ``gap_ac_pct``,
``stability_pct``) are what :func:`design_figures` returns and what the
builder writes into each protocol as ``design_readers``.
"""
import copy
from fractions import Fraction
from typing import Mapping, Optional

from measure import grammar, grammar_v2, measurement
from measure.canonical import canonical_sha256
from measure.invariants import version_frame
from measure.schema import VERSIONS
from panels import families
# Re-exported: the readers' valuations are these functions (tests and callers read them here).
from panels.prospect import cpt, value, weight  # noqa: F401

READERS = ("normative", "biased")
# The reader that ignores the question (see :func:`choice`); a known-answer reader, never a design reader.
CONSTANT = "constant"
# Float valuations closer than this (relative) count as a tie: a knife-edge
# must not decide a design figure on the last bit of a libm ``pow``.
TIE_TOLERANCE = 1e-9

# The normative reader is one model for every family; each family's biased
# reader is cited in its own row (``biased_reader_model``, panels.families).
NORMATIVE_MODEL = "expected value (Bayes for base-rate items); an exact tie splits the replicates evenly"


# --------------------------------------------------------------------- frames
def frame(family: str, rewording_type: str, version: str) -> str:
    """What the version's text presents: ``gain``/``loss``, ``pct``/``freq``, ``plain``/``sunk`` (gate 1's rule)."""
    return version_frame(family, rewording_type, version)


def _numbers(structure: Mapping, version: str) -> Mapping[str, int]:
    return structure["c_values"] if version == "C" else structure["values"]


def _split(scores: Mapping[str, float], exact: bool) -> dict[str, Fraction]:
    """Shares of each option: all to the best, split evenly among (near-)ties."""
    best = max(scores.values())
    if exact:
        top = [k for k, s in scores.items() if s == best]
    else:
        top = [k for k, s in scores.items() if best - s <= TIE_TOLERANCE * max(1.0, abs(best))]
    return {k: (Fraction(1, len(top)) if k in top else Fraction(0)) for k in sorted(scores)}


def normative_scores(structure: Mapping, version: str) -> dict[str, Fraction]:
    """Exact expected value of each option letter under the version's numbers."""
    rows = structure["c_lotteries"] if version == "C" else structure["lotteries"]
    return {letter: sum((Fraction(num, den) * pay for num, den, pay in lottery), Fraction(0))
            for letter, lottery in rows.items()}


def biased_scores(family: str, rewording_type: str, structure: Mapping, version: str) -> dict[str, float]:
    """The family's biased reader's valuation of each option letter."""
    v = _numbers(structure, version)
    shown = frame(family, rewording_type, version)
    row = families.find(family)
    if row is None:
        raise ValueError(f"no biased reader for family {family!r}")
    # Each family's formula is its row's ``biased_reader`` (panels/families/<family>.py).
    return {letter: row.biased_reader(role, v, shown) for letter, role in structure["roles"].items()}


def choice(reader: str, family: str, rewording_type: str, structure: Mapping, version: str) -> dict[str, Fraction]:
    """The reader's share of answers per option letter for one version of one item.

    Besides the design readers (:data:`READERS`) this answers for
    :data:`CONSTANT`, the reader that ignores the question: the first option
    letter, whatever the text says.  It is not a design reader (it fails the
    positive control by construction); it is the known-answer reader whose
    run must come back flagged ``not_reading``.
    """
    if reader == "normative":
        return _split(normative_scores(structure, version), exact=True)
    if reader == "biased":
        return _split(biased_scores(family, rewording_type, structure, version), exact=False)
    if reader == CONSTANT:
        first = min(structure["roles"])
        return {letter: Fraction(1 if letter == first else 0) for letter in sorted(structure["roles"])}
    raise ValueError(f"unknown reader {reader!r}; readers: {', '.join(READERS + (CONSTANT,))}")


# --------------------------------------------------------------------- trials and figures
def _letters_for(shares: Mapping[str, Fraction], n: int, where: str) -> list[str]:
    """``n`` replicate answers realising the shares exactly."""
    out: list[str] = []
    for letter in sorted(shares):
        count = shares[letter] * n
        if count.denominator != 1:
            raise ValueError(f"{where}: {n} replicates cannot split shares {dict(shares)} evenly")
        out += [letter] * int(count)
    return out


def replicate_answers(reader: str, protocol: Mapping, item: Mapping, version: str) -> list[str]:
    """The option letter of each of the ``n_per_scenario`` replicates of one item's version, in order.

    A tie is split across the replicates exactly (letters in sorted order),
    so a complete run holds the reader's shares and nothing else.
    """
    shares = choice(reader, protocol["family"], protocol["rewording_type"], item["structure"], version)
    return _letters_for(shares, protocol["n_per_scenario"], f"{protocol['protocol_id']} {item['item_id']} {version}")


def response_text(reader: str, letter: str) -> str:
    """The reader's whole response: one sentence, then the ``DECISION:`` line both grammars read."""
    return f"The {reader} reader chooses option {letter}.\nDECISION: {letter}"


def trials(reader: str, protocol: Mapping) -> list[dict]:
    """The reader's complete run of a protocol, as trial records read by the real grammar."""
    options = protocol["options"]
    extract = grammar_v2.extract if protocol["grammar_version"] == 2 else grammar.extract
    out = []
    for item in protocol["panel"]:
        for version in VERSIONS:
            for replicate, letter in enumerate(replicate_answers(reader, protocol, item, version)):
                response = response_text(reader, letter)
                decided = extract(response, options)
                out.append({"record_type": "trial", "protocol_id": protocol["protocol_id"],
                            "item_id": item["item_id"], "version": version, "replicate_index": replicate,
                            "response_text": response, "outcome": decided.outcome, "token": decided.token,
                            "reason": decided.reason})
    return out


def _run(reader: str, protocol: Mapping) -> dict:
    return {"run_id": f"design-{reader}-{protocol['protocol_id']}", "run_date": "2000-01-01",
            "subject_model_id": f"simulated-{reader}-reader", "series": protocol.get("series"),
            "model_family": "simulated", "returned_model_id": f"simulated-{reader}-reader",
            "api_surface_sha": None, "condition_profile": "design", "replicate_index": 0,
            "instrument_suspect": False, "exploratory": False}


def measure_reader(reader: str, protocol: Mapping) -> dict:
    """The measurement record the archive would publish for this reader."""
    return measurement.build(protocol, trials(reader, protocol), _run(reader, protocol))


def figures(reader: str, protocol: Mapping) -> dict[str, Optional[float]]:
    """``gap_ab_pct``, ``gap_aa_prime_pct``, ``gap_ac_pct``, ``stability_pct`` for one reader."""
    record = measure_reader(reader, protocol)
    return {"gap_ab_pct": record["gap_pct"], "gap_aa_prime_pct": record["gap_null_pct"],
            "gap_ac_pct": record["gap_positive_pct"], "stability_pct": record["stability_pct"]}


_DESIGN_CACHE: dict[str, dict[str, dict]] = {}
_DESIGN_CACHE_MAX = 256


def _design_key(protocol: Mapping) -> str:
    """Everything the figures depend on: the header and each item's structure, never the wording.

    The readers answer from the structure alone, so two panels with the same
    structures (a guard panel under another seed) share their figures; the
    bootstrap inside a measurement is the slow part worth not repeating.
    """
    key = {k: protocol.get(k) for k in (
        "protocol_id", "family", "rewording_type", "options", "n", "n_per_scenario", "n_items", "item_ids",
        "grammar_version", "theta_positive_pct", "scenario_dominated_share_pct", "series")}
    key["structures"] = [[item.get("item_id"), item.get("structure")] for item in protocol.get("panel") or []]
    return canonical_sha256(key)


def design_figures(protocol: Mapping) -> dict[str, dict]:
    """Every reader's figures for one protocol: ``{reader: {figure: value}}``.

    Deterministic, so a result is remembered per content (tests and the
    check command rebuild the same panels many times in one process).
    """
    key = _design_key(protocol)
    if key not in _DESIGN_CACHE:
        if len(_DESIGN_CACHE) >= _DESIGN_CACHE_MAX:
            _DESIGN_CACHE.clear()
        _DESIGN_CACHE[key] = {reader: figures(reader, protocol) for reader in READERS}
    return copy.deepcopy(_DESIGN_CACHE[key])


def reader_models(family: str) -> dict[str, str]:
    """One line per reader saying which model it uses (for the protocol header)."""
    return {"normative": NORMATIVE_MODEL, "biased": families.get(family).biased_reader_model}


# --------------------------------------------------------------------- design checks
MIN_BIASED_GAP_AB_PCT = 20
POSITIVE_MARGIN_PCT = 10


def design_failures(protocol: Mapping, design: Optional[Mapping[str, Mapping]] = None) -> list[tuple[str, str, str]]:
    """``(item, rule, detail)`` for every design rule the protocol breaks.

    * the normative reader's ``gap_ab`` and ``gap_aa'`` are 0;
    * every reader's ``gap_ac`` ≥ ``theta_positive_pct`` + 10;
    * on the two open wording protocols the biased reader's ``gap_ab`` ≥ 20;
    * per item, C reverses the biased reader's choice on A and the normative
      reader strictly prefers C's dominant option.
    """
    design = design if design is not None else design_figures(protocol)
    out: list[tuple[str, str, str]] = []
    normative = design["normative"]
    if normative["gap_ab_pct"] != 0 or normative["gap_aa_prime_pct"] != 0:
        out.append(("-", "design_normative_zero",
                    f"the normative reader's gap_ab = {normative['gap_ab_pct']}, gap_aa' = "
                    f"{normative['gap_aa_prime_pct']}; both must be 0"))
    floor = protocol["theta_positive_pct"] + POSITIVE_MARGIN_PCT
    for reader, figs in design.items():
        if figs["gap_ac_pct"] is None or figs["gap_ac_pct"] < floor:
            out.append(("-", "design_positive_control",
                        f"the {reader} reader's gap_ac = {figs['gap_ac_pct']} is below theta_positive_pct + "
                        f"{POSITIVE_MARGIN_PCT} = {floor}"))
    # The open wording protocols are the ones whose effect the public can see, so they must show it.
    open_row = families.find(protocol["family"])
    open_wording = open_row is not None and open_row.open_lane and protocol["rewording_type"] == "wording"
    if open_wording and (design["biased"]["gap_ab_pct"] or 0) < MIN_BIASED_GAP_AB_PCT:
        out.append(("-", "design_biased_gap_ab",
                    f"the biased reader's gap_ab = {design['biased']['gap_ab_pct']} is below "
                    f"{MIN_BIASED_GAP_AB_PCT}; the panel cannot see the effect it exists for"))
    family, rewording_type = protocol["family"], protocol["rewording_type"]
    for item in protocol["panel"]:
        structure = item["structure"]
        dominant = structure["c_correct"]
        on_a = choice("biased", family, rewording_type, structure, "A")
        on_c = choice("biased", family, rewording_type, structure, "C")
        if on_c.get(dominant) != 1 or on_a.get(dominant) != 0:
            out.append((item["item_id"], "design_c_reverses_biased",
                        "C does not reverse the biased reader's choice on A onto C's dominant option"))
        if choice("normative", family, rewording_type, structure, "C").get(dominant) != 1:
            out.append((item["item_id"], "design_c_normative", "the normative reader does not strictly prefer "
                                                              "C's dominant option"))
    return out


# --------------------------------------------------------------------- known-answer readers
# Three readers whose figures on any protocol are known before a single call: served over HTTP by
# llmarchive.comparison.reader_server, they let the whole outside route (prompts as published, the client, the
# grammar, the estimator, the intake) be checked against answers nobody has to guess.
SIMULATED_MODEL_PREFIX = "simulated-reader-"
INVARIANT, FRAMING_SENSITIVE, IGNORES_QUESTION = "invariant", "framing-sensitive", "ignores-question"
# known-answer reader → the reader of :func:`choice` that answers for it
KNOWN_ANSWER_READERS: dict[str, str] = {INVARIANT: "normative", FRAMING_SENSITIVE: "biased",
                                        IGNORES_QUESTION: CONSTANT}
KNOWN_ANSWER_WORDS = {
    INVARIANT: "answers A, A′ and B alike (expected value, a tie split evenly) and takes C's better option: "
               "no A↔B gap, a reading at the noise floor",
    FRAMING_SENSITIVE: "the family's classic biased reader: its answer follows the frame the text sets, so B "
                       "moves it by a gap known in advance",
    IGNORES_QUESTION: "always the first option, whatever the text says: C moves nothing, so its run is flagged "
                      "not_reading",
}


def simulated_model_id(name: str) -> str:
    """The model id a known-answer reader answers as (``simulated-reader-<name>``)."""
    if name not in KNOWN_ANSWER_READERS:
        raise ValueError(f"unknown simulated reader {name!r}; readers: {', '.join(KNOWN_ANSWER_READERS)}")
    return SIMULATED_MODEL_PREFIX + name


def simulated_reader(model_id: object) -> Optional[str]:
    """The known-answer reader's name when ``model_id`` is one's id; None for any other model id."""
    if not isinstance(model_id, str) or not model_id.startswith(SIMULATED_MODEL_PREFIX):
        return None
    name = model_id[len(SIMULATED_MODEL_PREFIX):]
    return name if name in KNOWN_ANSWER_READERS else None


_KNOWN_CACHE: dict[tuple[str, str], dict] = {}


def known_answer(name: str, protocol: Mapping) -> dict:
    """What the known-answer reader ``name`` must come back with on ``protocol``, from the real estimator.

    ``figures`` are :func:`figures`'s four (``gap_ab_pct``, ``gap_aa_prime_pct``,
    ``gap_ac_pct``, ``stability_pct``) — design figures for the two design
    readers — and ``null_floor_pct`` and ``flags`` are the reader's complete
    run measured as the archive measures any run (before the flags a
    comparison point adds, ``exploratory``).  The bootstrap's seed depends on
    the run's date and model, so an interval is not known in advance; the
    point figures are.
    """
    simulates = KNOWN_ANSWER_READERS.get(name)
    if simulates is None:
        raise ValueError(f"unknown simulated reader {name!r}; readers: {', '.join(KNOWN_ANSWER_READERS)}")
    key = (_design_key(protocol), name)
    if key not in _KNOWN_CACHE:
        if len(_KNOWN_CACHE) >= _DESIGN_CACHE_MAX:
            _KNOWN_CACHE.clear()
        record = measure_reader(simulates, protocol)
        _KNOWN_CACHE[key] = {
            "reader": name, "model_id": simulated_model_id(name), "simulates": simulates,
            "words": KNOWN_ANSWER_WORDS[name],
            "figures": {"gap_ab_pct": record["gap_pct"], "gap_aa_prime_pct": record["gap_null_pct"],
                        "gap_ac_pct": record["gap_positive_pct"], "stability_pct": record["stability_pct"]},
            "null_floor_pct": record["null_floor_pct"],
            "flags": list(record["flags"]),
        }
    return copy.deepcopy(_KNOWN_CACHE[key])


__all__ = ["CONSTANT", "KNOWN_ANSWER_READERS", "READERS", "SIMULATED_MODEL_PREFIX", "choice", "cpt",
           "design_failures", "design_figures", "figures", "frame", "known_answer", "measure_reader",
           "reader_models", "replicate_answers", "response_text", "simulated_model_id", "simulated_reader",
           "trials", "value", "weight"]
