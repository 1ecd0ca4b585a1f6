"""The prose of the static pages and the glossary (all our own words).

The site's pages are a closed list (method §11): Home, Results, Data, Design,
The metric, Methodology, The value, Glossary.  Home, Results and Data are
built from the records by :mod:`publish.site.render`; Design, The metric,
Methodology and The value are fixed HTML files in
``publish/site/templates/prose/``, read here.  The glossary is data, not markup,
so a test can check that every code the tables use — each flag, gap cause, outcome, lane,
series, version, rewording type, family, status and record kind — is
explained.
"""
from importlib.resources import files
from typing import Any

from measure.schema import FLAGS, GAP_CAUSES, LANES, OUTCOMES, SERIES, VERSIONS
from publish.data import instrument_checks

PAGES = (
    ("home", "Home"),
    ("results", "Results"),
    ("data", "Data"),
    ("design", "Design"),
    ("metric", "The metric"),
    ("methodology", "Methodology"),
    ("value", "The value"),
    ("glossary", "Glossary"),
)


def _prose(name: str) -> str:
    """A fixed page's HTML, kept as a package file so prose is edited as HTML, not as a Python string."""
    return (files("publish.site") / "templates" / "prose" / f"{name}.html").read_text(encoding="utf-8")


DESIGN = _prose("design")
METRIC = _prose("metric")
METHODOLOGY = _prose("methodology")
VALUE = _prose("value")

INSTRUMENT_GROUP = "Instrument and succession records"

# The glossary's fixed words.  The published daily checks' entries are not written here: glossary() puts each
# check's own words (its job table row's Public.glossary) first in INSTRUMENT_GROUP.
_GLOSSARY: dict[str, dict[str, str]] = {
    "The core idea": {
        "decision": "The one answer a response gives, read from its final DECISION: line. There is no partial credit.",
        "A": "Version A: the base wording of a question.",
        "A_prime": "Version A′: A with only whitespace and punctuation changed; the honest zero the real comparison "
                   "is measured against.",
        "B": "Version B: the equivalent rewording under test — different words, same facts, same right answer.",
        "C": "Version C: A with one number changed so the right answer flips; proof the model reads the question.",
        "equivalent rewording": "A B that passes every admission gate; the project declares the catalogued "
                                "transformations equivalent in public and measures whether models agree.",
        "panel": "The fixed 15 scenarios of a protocol: the instrument itself, never resampled and never generalised "
                 "beyond.",
        "protocol": "One scenario family combined with one rewording type; a fixed question that is asked again every "
                    "month.",
        "protocol series": "v0 or v1: a set of 12 protocols; changing n, the grammar or the panel makes a new series "
                           "with new ids, never a continuation.",
        "item_id": "The scenario a call was built from (s01 to s15).",
        "run": "One protocol sent to one model on one day: n calls for each of the four versions.",
        "trial": "One call: the version and scenario sent, the hash of the prompt, the response and its outcome.",
        "measurement": "The numbers computed from one complete run by the frozen estimator.",
        "replicate_index": "0 for the first run of a protocol on a model and date; 1, 2 ... for repeats.",
    },
    "Rewording types and families": {
        "wording": "B describes the same outcomes differently (gain against loss; percentages against natural "
                   "frequencies; naming the money already spent). The type with no caveat.",
        "anchoring": "B adds an irrelevant reference number that appears nowhere else in the scenario.",
        "order": "B lists the options in the other order. Labelled mechanical: excluded from any index described as "
                 "measuring reasoning.",
        "default": "B changes which option applies if nobody decides. A consistency check with no human comparison.",
        "risky_choice_framing": "A sure outcome against a gamble with the same expected value.",
        "sunk_cost_fallacy": "Stop a project for a sure amount, or finish it for a gamble of the same expected value; "
                             "money already spent is stated in every version.",
        "base_rate_neglect": "After a check flags a case, bet that it is or is not a true case; the payouts make both "
                             "bets equal in expected value.",
    },
    "Outcomes": {
        "valid": "Exactly one decision line naming an option (or the same one repeated).",
        "unparseable": "No decision line, lines naming different options, or a token that is not an option.",
        "refused": "The provider reported that the model refused.",
        "blocked_upstream": "No usable response after the bounded retries, or the provider blocked the request.",
        "truncated": "Generation stopped at the token limit, so what came after is unknown.",
        "empty": "The response was empty or only whitespace.",
        "off_format": "The reply was not plain text (a tool call or another kind of content).",
    },
    "The published numbers": {
        "gap_pct": "Distance between A's and B's decision distributions, 0 (identical) to 100 (no overlap).",
        "stability_pct": "100 minus gap_pct: higher means the decision moved less.",
        "gap_null_pct": "The same distance between A and A′.",
        "gap_positive_pct": "The same distance between A and C; a reader of the question should move a lot here.",
        "null_floor_pct": "The gap that sampling alone produces at these counts.",
        "at_noise_floor": "True when stability is at or above 100 minus null_floor_pct.",
        "entropy": "entropy_a and entropy_b: how spread a version's decisions are, 0 (always the same) to 1 (even).",
        "u": "u_a, u_a_prime, u_b, u_c: the share of a version's calls with no valid decision, 0 to 1.",
        "drop_bound_pct": "Worst-case error of a pair's gap caused by lost answers: 100 × (u of one + u of the other).",
        "drop_asymmetry_pct": "How differently the two versions of a pair lost answers: 100 × |difference of u|.",
        "ci_low_pct / ci_high_pct": "The 95% bootstrap interval of stability_pct, conditional on this panel.",
        "replicate_agreement_pct": "Share of scenario × version cells whose repeats of one prompt all came back the "
                                   "same.",
        "ci_stratified_low_pct / ci_stratified_high_pct": ("The within-panel interval: only each scenario's repeats "
                                                           "resampled; zero width when every repeat agrees."),
        "gap_role_ab_pct": ("The A–B gap with decisions counted by the option's role (sure or gamble …), not its "
                            "letter; what a human result is read against."),
        "scenario_gaps_pct": "Each scenario's own A–B gap, so a result carried by one or two scenarios is visible.",
        "scenario_concentration_pct": "Share of the summed scenario gaps produced by the two largest.",
        "n / n_valid / k": "Calls per version / valid decisions per version / number of options.",
        "on_curve": "True when no flag is set and the protocol is admitted: the measurement may be drawn.",
        "gates": "Every check with its inputs, threshold and result.",
    },
    "Flags": {
        "below_surface_noise": "B did not move the decision more than the cosmetic change A′ did, once losses are "
                               "allowed for.",
        "not_reading": "The positive control C did not move the decision by more than the pre-declared threshold.",
        "degenerate_candidate": "Very low entropy with very high stability: the model may answer the same way "
                                "whatever is asked.",
        "drop_confounded": "On at least one pair, lost answers could shift the gap by more than 2 points.",
        "asymmetric_missingness": "On at least one pair, the two versions lost answers at rates more than 1 point "
                                  "apart.",
        "below_drop_bound": "The gap is not larger than what lost answers alone could produce.",
        "scenario_dominated": "Two scenarios produce more than the pre-declared share of the gap. It measures "
                              "concentration, not size: near the noise floor it says little.",
        "instrument_suspect": "The instrument's own self-check moved that day.",
        "exploratory": "Outside the one pre-declared comparison of the protocol; never on a curve.",
    },
    "Coverage and gap causes": {
        "ran": "The scheduled job ran.",
        "gap": "It did not; the row carries exactly one cause.",
        "before_archive_start": "Scheduled before the archive began.",
        "budget_halted": "The fixed monthly budget did not allow it; less is published rather than n reduced.",
        "dormant": "The archive was dormant (no maintainer activity for the set time).",
        "provider_outage": "The provider could not be reached.",
        "protocol_confounded": "The protocol could not be run validly at that time.",
        "human_absent": "A step needing a person was not taken in time.",
        "generation_retired_early": "The model was retired with no successor before it could be run.",
        "generation_bridge": "The month's sweep gave way to a generation bridge.",
    },
    "Lanes, status and series": {
        "open": "Wording public by design: the whole panel is published (panels/<protocol_id>.json) and every trial.",
        "guard": "Wording private; outcome counts and measurements published.",
        "sealed": "Existence and count disclosed; content and results never.",
        "twin_id": "The guard protocol paired with an open one from the same family.",
        "candidate": "A built protocol no person has admitted yet; its measurements never count.",
        "admitted": "Promoted by a person against a fixed checklist, with a lane.",
        "commercial": "The archive: the hosted product being followed.",
        "open_weights": "The control experiment: a downloadable model run by the project itself.",
        "model_family": "The product family a curve follows; a curve never crosses families.",
    },
    "The change rule": {
        "improved": "Stability rose by at least the combined interval half-widths and by more than the summed loss "
                    "bounds.",
        "regressed": "Stability fell by the same margins.",
        "flat": "Neither margin was cleared.",
        "min_detectable_change_pct": "The smallest move from a measurement that the change rule could call if the next "
                                     "measurement were as precise; a smaller real move would read as flat.",
        "not measurable": "Shown instead of a stability figure and its interval when more than half of version A's "
                          "or version B's answers were unreadable (or the A–B loss bound is as wide as the scale): "
                          "the figure would say more about which answers happened to be readable than about the "
                          "model.",
    },
    "Reading a row": {
        "reading": ("The first column of every measurement table, stability.csv and the database: what the row's "
                    "numbers can be read as — not measurable, at the noise floor or measurable — then on the curve, "
                    "or off it with a short reason per flag. Derived from the row's own fields, which stay exactly "
                    "as computed."),
        "flag_sentences": "Each flag of a row said as a sentence with its figures, instead of the check's formula.",
        "more than the scale": ("A loss bound or a smallest detectable change above 100 on a 0–100 scale: the "
                                "unreadable answers alone could explain any result, so the row says nothing about "
                                "rewording."),
        "simulated reader, known answer": ("A comparison point run by one of the archive's own deterministic "
                                           "readers (simulated-reader-…) through the outsiders' route: its answer is "
                                           "known before any call, so it checks that the archive sees what it "
                                           "should. Never a model, never on a curve."),
    },
    INSTRUMENT_GROUP: {
        "instrument_alarm": "Anything that makes a day's measurements instrument_suspect.",
        "subject_model": "The tracked model changed to a declared successor.",
        "generation_bridge": "Old and new model measured in the same week, one protocol per type.",
        "needs_review": "A new model id appeared without a declaration; a person decides.",
        "series_closed": "A series ended; a new one starts from zero if and when decided.",
        "bridge_incomplete": "The bridge could not finish: a permanent discontinuity, disclosed on the curve.",
        "comparison_point": "An outside run on an open panel, recomputed here; its own table, never a ranking.",
        "human_model_gap": "A published human result shown beside a comparable protocol, with its collection year.",
    },
    "Fingerprints and files": {
        "panel_sha256": "SHA-256 of the panel; with protocol_id it is the panel's identity.",
        "protocol_sha256": "SHA-256 of the whole protocol definition except status, lane and twin.",
        "prompt_sha256": "SHA-256 of a prompt exactly as sent.",
        "extractor_sha / analysis_code_sha": "Hashes of the grammar's and the estimator's source files.",
        "schema_sha256": "Hash of the record schema's field names and types.",
        "render_manifest": "render_manifest.json: the sha256 of every published file and the build time.",
        "status": "status.json: the archive's state in one file.",
        "Croissant": "croissant.json: machine-readable metadata for the CSV and JSONL files.",
    },
}


def glossary() -> dict[str, dict[str, str]]:
    """The glossary as the site shows it, group by group, with the published checks read from the job table now."""
    checks = {job.record.kind: job.public.glossary for job in instrument_checks() if job.record and job.public}
    return {group: {**checks, **terms} if group == INSTRUMENT_GROUP else dict(terms)
            for group, terms in _GLOSSARY.items()}


def glossary_terms() -> set[str]:
    return {term for group in glossary().values() for term in group}


# The codes the glossary must explain besides the published checks' record kinds (required_terms adds those).
_REQUIRED_TERMS = (set(FLAGS) | set(GAP_CAUSES) | set(OUTCOMES) | set(LANES) | set(SERIES) | set(VERSIONS)
                   | {"wording", "anchoring", "order", "default", "candidate", "admitted", "improved", "regressed",
                      "flat", "risky_choice_framing", "sunk_cost_fallacy", "base_rate_neglect", "twin_id",
                      "comparison_point", "human_model_gap", "instrument_alarm", "subject_model",
                      "generation_bridge", "needs_review", "series_closed", "bridge_incomplete", "on_curve",
                      "gap_pct", "stability_pct", "null_floor_pct"})


def required_terms() -> set[str]:
    """Every code the tables use that the glossary must explain, the published checks' kinds among them."""
    return _REQUIRED_TERMS | {job.record.kind for job in instrument_checks() if job.record}


def __getattr__(name: str) -> Any:
    """``GLOSSARY`` and ``REQUIRED_TERMS``: as the job table is now, not as it was at import (a toy check's row)."""
    if name == "GLOSSARY":
        return glossary()
    if name == "REQUIRED_TERMS":
        return required_terms()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
