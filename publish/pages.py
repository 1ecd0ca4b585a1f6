"""The prose of the static pages and the glossary (all our own words).

The site's pages are a closed list (SPEC §11): Home, Results, Data, Design,
The metric, Methodology, The value, Glossary.  Home, Results and Data are
built from the records by :mod:`publish.site`; the other five are the
fixed text below.  The glossary is data, not markup, so a test can check
that every code the tables use — each flag, gap cause, outcome, lane,
series, version, rewording type, family, status and record kind — is
explained.
"""
from measure.schema import FLAGS, GAP_CAUSES, LANES, OUTCOMES, SERIES, VERSIONS

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

DESIGN = """
<h1>What we are building</h1>
<p>An archive, not a leaderboard. Once a month the same frozen questions are put to a commercial language
model, and the answers are kept: every call, every extracted decision, every number computed from them, with
the date. The property on record is narrow on purpose: when a question is asked again in different words that
do not change what it asks, does the model still decide the same way?</p>
<h3>The yardstick is the panel</h3>
<p>A <em>panel</em> is a fixed set of 15 decision scenarios. It never changes; changing it would create a new
protocol with a new identifier. The model is what is being observed, and models come and go. The value of the
record grows with its length: a measurement made years from now means something because the same panel was
used, unchanged, all along. The panel is identified by <code>protocol_id</code> and <code>panel_sha256</code>,
and every number names both.</p>
<h3>Two series that are never drawn together</h3>
<ul>
<li><strong>commercial</strong> — the archive itself: a hosted product that can change or disappear without
notice, measured on a fixed monthly schedule. One curve follows one product family in sequence; a different
family gets its own curve, never a line joined to this one.</li>
<li><strong>open_weights</strong> — the control experiment: a downloadable model this project runs itself, on
the open protocols, to show that the method reproduces. It is not the archive and is shown in its own
table.</li>
</ul>
<h3>Lanes: what is public</h3>
<p>Two protocols are <strong>open</strong>: their responses are published trial by trial and anyone can
recompute their numbers. Ten are <strong>guard</strong> protocols whose wording is kept private, because text
that is public will sooner or later be read by models in training. Each open protocol has a guard
<em>twin</em> from the same scenario family. If the open number moves and its twin does not, the public wording
may have been learned; if both move, the model itself changed. Two <strong>sealed</strong> protocols exist
only to be run at generation boundaries; their existence and count are disclosed, their content and results
never.</p>
<h3>A gap we disclose</h3>
<p>Of an open protocol's wording, only the first scenario's four versions are published (on the Results page).
The per-trial responses identify each prompt by its SHA-256, not its text. So every published number of an open
run can be recomputed from the responses, and anyone holding a prompt can check it against its hash, but the
full panel cannot yet be rebuilt from published material. That is also why no outside party can currently
submit a comparison point that matches a panel's hash: the route exists and is tested, but cannot be used from
outside until the full open panels are published.</p>
<h3>What is published, and what stays private</h3>
<p>Published: every measurement, the outcome counts, coverage with a cause for every gap, the open-lane trials,
Croissant metadata, this site, a read-only SQL database, and the estimator's code. Private: credentials, the
budget and spending figures, the wording of guard and sealed protocols (and the code that generates it), the raw
trials of guard runs, and internal planning notes.</p>
"""

METRIC = """
<h1>What the metric does</h1>
<p>Each protocol's question exists in four versions. <strong>A</strong> is the base wording.
<strong>A′</strong> differs from A only in whitespace and punctuation. <strong>B</strong> is the equivalent
rewording under test. <strong>C</strong> changes one number so that the right answer flips. Every version is
sent <code>n</code> times, each call a fresh session, and each response is reduced to one decision by a fixed
grammar.</p>
<h3>The gap and the stability score</h3>
<p>For two versions, take the share of valid decisions that went to each option and add up the absolute
differences; half that sum is the <em>total variation distance</em>. Times 100 it is <code>gap_pct</code>:
0 when the two distributions are identical, 100 when they do not overlap at all. With two options it is simply
the difference, in points, in the share choosing one option — the same effect size human framing studies
report. <code>stability_pct</code> is <code>100 − gap_pct</code> for A against B, so that a higher number
means the decision moved less.</p>
<h3>What a perfect score looks like</h3>
<p>Two samples from the very same model still differ a little, because each has only <code>n</code> answers.
<code>null_floor_pct</code> is the gap sampling alone produces at the measured counts, computed by
permutation. A score at or above <code>100 − null_floor_pct</code> is indistinguishable from perfect
invariance and is marked <code>at_noise_floor</code>; it is not evidence of being more stable than a slightly
lower score.</p>
<h3>Entropy: the guard against collapse</h3>
<p>A model that gives the same answer whatever the question says scores 100, and that score says nothing about wording.
<code>entropy_a</code> and <code>entropy_b</code> measure how spread the decisions are, from 0 (always the same
answer) to 1 (evenly spread). They are always shown next to stability. Very low entropy together with very high
stability is flagged <code>degenerate_candidate</code>.</p>
<h3>Lost answers, bounded rather than estimated</h3>
<p>Some calls produce no valid decision (a refusal, a cut-off answer, a missing decision line). For each
version, <code>u</code> is that share. Because nothing is assumed about what a lost answer would have been, the
published gap can be off by at most the two versions' losses added together; that worst case, in points, is
<code>drop_bound_pct</code>. It is a hard bound, not a confidence interval.</p>
<h3>The interval, and why there is no wider one</h3>
<p><code>ci_low_pct</code> and <code>ci_high_pct</code> come from 10,000 bootstrap resamples of the individual
responses. They describe how much this same panel's score would wobble with a fresh sample of answers. The 15
scenarios themselves are never resampled, so nothing here generalises to "wording effects" at large. In place
of a generalisation interval, each scenario's own gap is published (<code>scenario_gaps_pct</code>), with their
spread and the share of the total produced by the two largest.</p>
<h3>When a change is called a change</h3>
<p>Two measurements of the same protocol are called <em>improved</em> or <em>regressed</em> only if the
difference is at least the two intervals' half-widths combined in quadrature <strong>and</strong> larger than
their two loss bounds added together. Otherwise it is <em>flat</em>. Random error and worst-case loss are
different kinds of uncertainty and are combined differently; both tests must pass.</p>
"""

METHODOLOGY = """
<h1>How it is done</h1>
<h3>Protocols</h3>
<p>Three scenario families, each a different kind of judgment — <code>risky_choice_framing</code> (a sure
outcome against a gamble of equal expected value), <code>sunk_cost_fallacy</code> (stop a project or finish
it, with money already spent) and <code>base_rate_neglect</code> (bet on whether a flagged case is real) — are
combined with four rewording types: <code>wording</code>, <code>anchoring</code> (an irrelevant reference
number), <code>order</code> (the options swapped; mechanical, excluded from any index described as measuring
reasoning) and <code>default</code> (which option applies if nobody decides; a consistency check with no human
comparison). Three families times four types gives 12 protocols per protocol series.</p>
<h3>What counts as an equivalent rewording</h3>
<p>There is no complete definition of two sentences meaning the same thing, and none is claimed. A B version
counts as equivalent if it passes every gate: code checks that the odds, payoffs, options and right answer are
unchanged; code checks that B differs from A by exactly one transformation from a short public catalogue and
nothing else; a blind reader checks that the wording does not point at an answer; both versions use the same
answer format; and a person signs off against a fixed checklist before a protocol is admitted. Whether each
catalogued transformation should be irrelevant is not proven — it is exactly what is being measured.</p>
<h3>Reading the answer</h3>
<p>Every version ends with the same instruction, asking for a final line <code>DECISION: A</code> or
<code>DECISION: B</code>. A fixed, deterministic grammar reads that line and nothing else: no judge model, no
free-text scoring. One valid decision line (or the same one repeated) is <code>valid</code>; no line,
conflicting lines or a token that is not an option is <code>unparseable</code>. Provider-side failures are
classified before any text is read: <code>refused</code>, <code>blocked_upstream</code>,
<code>truncated</code>, <code>empty</code>, <code>off_format</code>.</p>
<h3>The checks on every measurement</h3>
<p>Each measurement runs the same gates, each set at the edge that does not favour the result: the loss bound and
the difference in losses on each of the three pairs (A–B, A–A′, A–C); the finding against its own loss bound;
B against the cosmetic change A′; the positive control C, which must move by more than a pre-declared
threshold; collapse onto one answer; and concentration of the gap in two scenarios. A failed gate sets a flag,
any flag takes the measurement off the main curve, and no flag ever deletes it: it is published with the reason
in words.</p>
<h3>The monthly cycle</h3>
<p>Once a month every admitted protocol is run against the tracked commercial model, with every request setting
sent explicitly and recorded. Each call is appended to a hash-chained log as it happens; the measurement is
computed from the log by the frozen estimator; publication regenerates every file from the records. Before a
protocol is run for real, its hashes are written into a manifest whose own hash is timestamped with
OpenTimestamps, so a protocol cannot be quietly changed after a result is seen.</p>
<h3>The instrument checks itself</h3>
<p>A fixed local open-weights model answers fixed prompts every day; its output is expected to be identical to
the byte. One guard protocol a day is replayed on it and expected to stay within noise. If either moves, that
day's measurements are still recorded but marked <code>instrument_suspect</code> and kept off every curve. A
stable instrument rules out only our own pipeline; it says nothing about changes on the provider's side.</p>
<h3>Coverage</h3>
<p>Every scheduled job either ran or has exactly one cause from a closed list, assigned by code rather than
written by hand afterwards. A missing month is never silent.</p>
<h3>When the model changes</h3>
<p>When a new model id appears in the tracked family, the old and the new model are run on one protocol of
each type in the same week — a bridge, because a retired model can never be measured again. The series
switches to the new model only when the provider explicitly declares it the successor; a similar name is not a
declaration. If the old model disappears with no successor, the series is closed and a new one starts from
zero.</p>
"""

VALUE = """
<h1>Why it matters</h1>
<p>Hosted models change under the same name, are replaced, and are retired; once retired they can never be
measured again, at any price. A record kept from the start, on an instrument that does not change, is the only
way to know later how a product behaved at a given time. Its worth is in its continuity: a point with years of
unbroken history behind it says more than many points without any.</p>
<p>The choice of which product to follow is partly arbitrary, and is disclosed. What does not change is the
panel, the grammar and the estimator, so every later measurement adds to the same history.</p>
<h3>What this is not</h3>
<p>It is a research record. It is not a product evaluation, a ranking or a certification; it is not run to rate,
endorse or promote any provider; and no number on this site is a basis for deciding whether to buy, use or
trust a model. It measures one narrow property — sameness of decisions under rewording — on fictional decision
problems, with no personal data sent or collected.</p>
<h3>Human results, as secondary context</h3>
<p>The primary claim is a model's stability with itself; it needs no human comparison. Where a published
multi-lab replication or meta-analysis measured the same kind of two-option choice, its effect is shown next to
the matching protocol, in the same units and with the year the human data were collected. It is never averaged
with anything and never used as a headline.</p>
<h3>Comparison points</h3>
<p>Because the grammar and the open panels are public by design, someone else can run an open panel against a
model of their choice, and the result can be recomputed with this project's own estimator. Such a point is
shown in its own table, with its date, never on a curve and never in an aggregate.</p>
"""

GLOSSARY: dict[str, dict[str, str]] = {
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
        "open": "Wording public by design; every trial published.",
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
    },
    "Instrument and succession records": {
        "runtime_fingerprint": "The reference model's daily answers to fixed prompts; any difference raises an "
                               "alarm.",
        "guard_rotation": "One guard protocol a day replayed on the reference model, compared with its last result.",
        "subject_fingerprint": "24 short single-fact questions put to the tracked model every day.",
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


def glossary_terms() -> set[str]:
    return {term for group in GLOSSARY.values() for term in group}


REQUIRED_TERMS = (set(FLAGS) | set(GAP_CAUSES) | set(OUTCOMES) | set(LANES) | set(SERIES) | set(VERSIONS)
                  | {"wording", "anchoring", "order", "default", "candidate", "admitted", "improved", "regressed",
                     "flat", "risky_choice_framing", "sunk_cost_fallacy", "base_rate_neglect", "twin_id",
                     "comparison_point", "human_model_gap", "runtime_fingerprint", "guard_rotation",
                     "subject_fingerprint", "instrument_alarm", "subject_model", "generation_bridge", "needs_review",
                     "series_closed", "bridge_incomplete", "on_curve", "gap_pct", "stability_pct", "null_floor_pct"})
