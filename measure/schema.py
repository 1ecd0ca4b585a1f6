"""The record schema: record types, measurement fields and their units.

``SCHEMA_SHA256`` is the SHA-256 of the canonical JSON of the schema version,
the record types, the measurement fields and the outcome fields (names and
type labels only — the human descriptions below can be reworded without
breaking the citation chain).  Every measurement carries it.

Type labels
-----------
``pct``            a number on 0–100 (every such field's name contains ``_pct``)
``unit_interval``  a number on 0–1
``int``            an integer identifier or setting
``count``          a non-negative integer: a number of responses, calls or tokens,
                   or a position counted from 0 (a trial's ``trial_index``)
``bool``           true / false
``text``           a string
``json``           a structured value, one JSON cell in the CSV

Additive evolution, three rules: a field is only ever *added* (never renamed,
retyped or removed); an added field is appended at the end of its list;
every addition bumps ``SCHEMA_VERSION``.  (Version 2 added ``twin_id``.)

The trial — the instrument's basic datum — is described the same way, once:
``TRIAL_FIELDS`` gives each field's name, type label, whether it may be
null and what it means, in the order the runner writes them; every writer
and reader of a trial derives from it and checks a record with
:func:`check_trial`.  ``SCHEMA_SHA256`` does not cover the trial fields (it
predates them and every measurement already carries it).  A trial field is
added the additive way too: appended after the runner's last field (the
chain's two stay last, as the chain adds them) and nullable, so a trial
recorded before it simply lacks it and still reads, chains and verifies;
being outside ``SCHEMA_SHA256`` it moves neither ``schema_version`` nor
``schema_sha256``.  (``system_fingerprint`` was added so.)

``BESIDE_MEASUREMENT_FIELDS`` are published beside a measurement but are not
part of its record: see their comment.

Two words mean two things here and are kept apart: a measurement's
``series`` is method §4's track (``commercial`` or ``open_weights``); a
protocol's ``series`` is its protocol series (``v0`` or ``v1``), which is
also the suffix of its ``protocol_id``.
"""
from typing import Iterable, Mapping, NamedTuple, Optional

from measure.canonical import canonical_sha256
from measure.errors import ArchiveError

SCHEMA_VERSION = 2

RECORD_TYPES = (
    "protocol",
    "experiment_run",
    "trial",
    "measurement",
    "coverage_gap",
    "render_manifest",
    "status",
    "subject_model",
    "generation_bridge",
    "bridge_incomplete",
    "series_closed",
    "needs_review",
    "comparison_point",
)

TYPE_LABELS = ("pct", "unit_interval", "int", "count", "bool", "text", "json")

VERSIONS = ("A", "A_prime", "B", "C")
VERSION_SUFFIX = {"A": "a", "A_prime": "a_prime", "B": "b", "C": "c"}
PAIRS = {"ab": ("A", "B"), "aa": ("A", "A_prime"), "ac": ("A", "C")}

# Every outcome a trial can have; only "valid" carries a token.
OUTCOMES = ("valid", "unparseable", "refused", "blocked_upstream", "truncated", "empty", "off_format")
SERIES = ("commercial", "open_weights")
LANES = ("open", "guard", "sealed")
FLAGS = (
    "below_surface_noise",
    "not_reading",
    "degenerate_candidate",
    "drop_confounded",
    "asymmetric_missingness",
    "below_drop_bound",
    "scenario_dominated",
    "instrument_suspect",
    "exploratory",
)
GAP_CAUSES = (
    "before_archive_start",
    "budget_halted",
    "dormant",
    "provider_outage",
    "protocol_confounded",
    "human_absent",
    "generation_retired_early",
    "generation_bridge",
)

MEASUREMENT_FIELDS = (
    ("record_type", "text"),
    ("schema_version", "int"),
    ("run_id", "text"),
    ("run_date", "text"),
    ("protocol_id", "text"),
    ("rewording_type", "text"),
    ("subject_model_id", "text"),
    ("stability_pct", "pct"),
    ("ci_low_pct", "pct"),
    ("ci_high_pct", "pct"),
    ("gap_pct", "pct"),
    ("gap_null_pct", "pct"),
    ("gap_positive_pct", "pct"),
    ("null_floor_pct", "pct"),
    ("at_noise_floor", "bool"),
    ("n", "count"),
    ("n_valid", "json"),
    ("item_id", "json"),
    ("n_items", "count"),
    ("k", "count"),
    ("entropy_a", "unit_interval"),
    ("entropy_b", "unit_interval"),
    ("u_a", "unit_interval"),
    ("u_a_prime", "unit_interval"),
    ("u_b", "unit_interval"),
    ("u_c", "unit_interval"),
    ("drop_bound_pct_ab", "pct"),
    ("drop_bound_pct_aa", "pct"),
    ("drop_bound_pct_ac", "pct"),
    ("drop_asymmetry_pct_ab", "pct"),
    ("drop_asymmetry_pct_aa", "pct"),
    ("drop_asymmetry_pct_ac", "pct"),
    ("scenario_gaps_pct", "json"),
    ("scenario_spread_pct", "json"),
    ("scenario_concentration_pct", "pct"),
    ("outcomes", "json"),
    ("decisions", "json"),
    ("flags", "json"),
    ("flag_reasons", "json"),
    ("gates", "json"),
    ("on_curve", "bool"),
    ("protocol_status", "text"),
    ("panel_sha256", "text"),
    ("protocol_sha256", "text"),
    ("extractor_sha", "text"),
    ("analysis_code_sha", "text"),
    ("schema_sha256", "text"),
    ("grammar_version", "int"),
    ("series", "text"),
    ("lane", "text"),
    ("twin_id", "text"),
    ("model_family", "text"),
    ("returned_model_id", "text"),
    ("api_surface_sha", "text"),
    ("condition_profile", "text"),
    ("replicate_index", "int"),
    ("bootstrap_seed", "text"),
    ("bootstrap_b", "count"),
    ("replicate_agreement_pct", "pct"),
    ("ci_stratified_low_pct", "pct"),
    ("ci_stratified_high_pct", "pct"),
    ("gap_role_ab_pct", "pct"),
)

OUTCOME_FIELDS = (
    ("run_id", "text"),
    ("version", "text"),
    ("outcome", "text"),
    ("count", "count"),
)

# Appended last (method §6.1, §6.7).  A measurement written before them lacks them;
# a reader takes each as null (publication does), never as a broken record.
LATER_MEASUREMENT_FIELDS = ("replicate_agreement_pct", "ci_stratified_low_pct", "ci_stratified_high_pct",
                            "gap_role_ab_pct")

MEASUREMENT_FIELD_NAMES = tuple(name for name, _ in MEASUREMENT_FIELDS)
OUTCOME_FIELD_NAMES = tuple(name for name, _ in OUTCOME_FIELDS)

SCHEMA_SHA256 = canonical_sha256({
    "schema_version": SCHEMA_VERSION,
    "record_types": list(RECORD_TYPES),
    "measurement_fields": [list(f) for f in MEASUREMENT_FIELDS],
    "outcome_fields": [list(f) for f in OUTCOME_FIELDS],
})

# Text-free fields of a protocol: what a measurement needs and what may be
# published for every lane (the panel's wording is never among them).
PROTOCOL_HEADER_FIELDS = (
    "protocol_id", "series", "family", "rewording_type", "options", "n", "n_per_scenario", "n_items",
    "item_ids", "grammar_version", "theta_positive_pct", "scenario_dominated_share_pct", "generation",
    "panel_sha256", "protocol_sha256", "status", "lane", "twin_id",
)

# Recorded beside the header, derived from the panel's structure and as text-free:
# ``option_roles`` is ``{item_id: {option: role}}`` (which role each letter plays in
# each scenario), what ``gap_role_ab_pct`` reads.  Not part of the protocol file
# itself, so adding it changed no protocol's hash.
PROTOCOL_DERIVED_FIELDS = ("option_roles",)

FIELD_DESCRIPTIONS = {
    "record_type": "Always 'measurement' in this table; one value of the closed list of record types.",
    "schema_version": "Version of the record schema the row was written under.",
    "run_id": "Identifier of the experiment run whose trials produced this measurement.",
    "run_date": "UTC calendar date (YYYY-MM-DD) the run was made; part of the bootstrap seed.",
    "protocol_id": "The frozen protocol measured: family, rewording type and protocol series.",
    "rewording_type": "Which change B makes: wording, anchoring, order or default.",
    "subject_model_id": "Model id requested from the provider (or the reference model's file name).",
    "stability_pct": "100 minus gap_pct: how little the decision distribution moved between A and B (0-100).",
    "ci_low_pct": "Low end of the 95% bootstrap interval of stability_pct, conditional on this panel.",
    "ci_high_pct": "High end of the 95% bootstrap interval of stability_pct, conditional on this panel.",
    "gap_pct": "Total variation distance between the valid decisions of A and B, times 100.",
    "gap_null_pct": "The same distance between A and A-prime (whitespace and punctuation only).",
    "gap_positive_pct": "The same distance between A and C (the positive control, where the right answer flips).",
    "null_floor_pct": "Average A-B gap that sampling alone produces at these counts (permutation, exact).",
    "at_noise_floor": "True when stability_pct is at least 100 minus null_floor_pct: indistinguishable from perfect invariance.",
    "n": "Frozen number of calls per version.",
    "n_valid": "Valid decisions per version (JSON object keyed A, A_prime, B, C).",
    "item_id": "The panel's scenario ids covered by the trials (JSON list).",
    "n_items": "Number of scenarios in the panel (15).",
    "k": "Number of options a response may choose from.",
    "entropy_a": "Normalised entropy of A's decisions: 0 always the same answer, 1 fully spread.",
    "entropy_b": "Normalised entropy of B's decisions.",
    "u_a": "Share of A's calls that produced no valid decision (0-1).",
    "u_a_prime": "Share of A-prime's calls that produced no valid decision (0-1).",
    "u_b": "Share of B's calls that produced no valid decision (0-1).",
    "u_c": "Share of C's calls that produced no valid decision (0-1).",
    "drop_bound_pct_ab": "Worst-case error of the A-B gap from lost responses: 100 x (u_a + u_b).",
    "drop_bound_pct_aa": "Worst-case error of the A-A-prime gap from lost responses.",
    "drop_bound_pct_ac": "Worst-case error of the A-C gap from lost responses.",
    "drop_asymmetry_pct_ab": "How differently A and B lost responses: 100 x |u_a - u_b|.",
    "drop_asymmetry_pct_aa": "How differently A and A-prime lost responses.",
    "drop_asymmetry_pct_ac": "How differently A and C lost responses.",
    "scenario_gaps_pct": "The A-B gap of each scenario on its own (JSON object keyed by item_id; null when a side has no valid decision).",
    "scenario_spread_pct": "Minimum, maximum, median and interquartile range of the per-scenario gaps (JSON).",
    "scenario_concentration_pct": "Share of the summed per-scenario gaps produced by the two largest.",
    "outcomes": "Every outcome of every call, counted per version (JSON).",
    "decisions": "Valid decisions counted per version and option (JSON).",
    "flags": "Checks this measurement failed (JSON list); any flag takes it off the main curve.",
    "flag_reasons": "For each flag, the reason in words (JSON object).",
    "gates": "Every check with its inputs, threshold and result (JSON list).",
    "on_curve": "True when no flag is set and the protocol was admitted: the measurement may be drawn on the main curve.",
    "protocol_status": "The protocol's status when measured: candidate or admitted.",
    "panel_sha256": "SHA-256 of the panel (scenarios and their four versions) in canonical JSON.",
    "protocol_sha256": "SHA-256 of the whole protocol definition except status, lane and twin.",
    "extractor_sha": "SHA-256 identifying the decision grammar's source files.",
    "analysis_code_sha": "SHA-256 identifying every source file of the estimator (measure/).",
    "schema_sha256": "SHA-256 of this schema's record types and field lists.",
    "grammar_version": "Decision grammar version the protocol declares.",
    "series": "commercial (the archive) or open_weights (the control experiment); never drawn on one chart.",
    "lane": "How public the protocol is: open, guard or sealed.",
    "twin_id": "The protocol this one is paired with across the open/guard lanes, if any.",
    "model_family": "The product family a curve follows; a curve never crosses families.",
    "returned_model_id": "Model id the provider reported back (the most frequent one over the run).",
    "api_surface_sha": "SHA-256 of the request the subject sent, minus the prompt.",
    "condition_profile": "Name of the frozen request configuration (for example thinking disabled, no system prompt).",
    "replicate_index": "0 for the first measurement of this protocol, model and date; 1, 2... for repeats.",
    "bootstrap_seed": "The bootstrap's 64-bit seed as 16 hex digits (first 8 bytes of SHA-256 of protocol_id, run_date and subject_model_id joined with no separator).",
    "bootstrap_b": "Number of bootstrap replicates (10,000).",
    "replicate_agreement_pct": "Share of scenario x version cells whose repeats of the one prompt all came back with the same outcome and decision (0-100); null when each prompt was sent once.",
    "ci_stratified_low_pct": "Low end of the within-panel 95% interval of stability_pct: only the repeats of each scenario and version are resampled, never the scenarios (same seed, 10,000 replicates). Zero width when every repeat agrees.",
    "ci_stratified_high_pct": "High end of the within-panel 95% interval of stability_pct (see ci_stratified_low_pct).",
    "gap_role_ab_pct": "Total variation distance between A and B over the options' roles (sure/gamble, stop/finish, bet true case/bet not a case) rather than their letters, times 100; the construct the human studies report. Null when the run's protocol header records no option roles (runs recorded before the roles were).",
}

OUTCOME_FIELD_DESCRIPTIONS = {
    "run_id": "Identifier of the experiment run.",
    "version": "A, A_prime, B or C.",
    "outcome": "valid, unparseable, refused, blocked_upstream, truncated, empty or off_format.",
    "count": "Number of calls of that version with that outcome.",
}


# --------------------------------------------------------------------------
# the trial
# --------------------------------------------------------------------------

# (name, type label, nullable, description), in the order the runner writes a trial; the chain
# appends prev_sha256 and record_sha256 when the record is logged.  What may be null is what a real
# trial can lack: only a valid outcome carries a token (and no reason), a response may have no text,
# stop reason, model id or token counts.  The outcome never is: every recorded call has one.
TRIAL_FIELDS = (
    ("record_type", "text", False, "Always 'trial'."),
    ("schema_version", "int", False, "Version of the record schema the trial was written under."),
    ("run_id", "text", False, "The experiment run the trial belongs to; each run's lines form one hash chain."),
    ("protocol_id", "text", False, "The open protocol the prompt came from."),
    ("item_id", "text", False, "The panel scenario (s01 ... s15) the prompt was built from."),
    ("n_items", "count", False, "Number of scenarios in the panel."),
    ("version", "text", False, "Which version was sent: A, A_prime, B or C."),
    ("replicate_index", "count", False, "Which repetition of this scenario and version the call was."),
    ("trial_index", "count", False, "Position of the call in the run's schedule."),
    ("prompt_sha256", "text", False, "SHA-256 of the exact prompt text sent (the text itself is not published)."),
    ("outcome", "text", False, "valid, unparseable, refused, blocked_upstream, truncated, empty or off_format."),
    ("token", "text", True, "The extracted decision for a valid outcome, otherwise empty."),
    ("reason", "text", True, "Why the outcome: the grammar's reason or the outcome table's (empty when valid)."),
    ("response_text", "text", True, "The model's full response, as received."),
    ("stop_reason", "text", True, "The provider's own stop reason, unchanged."),
    ("returned_model_id", "text", True, "Model id the provider reported back for this call."),
    ("input_tokens", "count", True, "Prompt tokens the provider reported."),
    ("output_tokens", "count", True, "Response tokens the provider reported."),
    ("latency_ms", "count", False, "Milliseconds from the first attempt's start to the answer, back-off included."),
    ("attempts", "count", False, "Attempts the call took, the answered one included."),
    ("retry_causes", "json", False, "Why each failed attempt failed (JSON list)."),
    ("unknown_attempts", "count", False, "Attempts that may have been billed without an answer arriving."),
    ("answered", "bool", False, "True when the provider returned a response (so the call could be billed)."),
    ("session", "text", False, "Which session of the run made the call (its ledger reservations)."),
    ("started_at", "text", False, "When the call's first attempt started (UTC)."),
    ("finished_at", "text", False, "When the answer arrived (UTC)."),
    ("system_fingerprint", "text", True, "The server's build identity as the API reported it with this answer "
                                         "(system_fingerprint on OpenAI-compatible servers, llama.cpp's build among "
                                         "them); null when the API reports none (Anthropic's does not) or for the "
                                         "embedded model. A trial recorded before this field existed lacks it."),
    ("prev_sha256", "text", False, "record_sha256 of the previous trial of the same run (zeros for the first)."),
    ("record_sha256", "text", False, "SHA-256 of this trial's canonical JSON without this field."),
)
TRIAL_FIELD_NAMES = tuple(name for name, _, _, _ in TRIAL_FIELDS)
TRIAL_FIELD_LABELS = {name: label for name, label, _, _ in TRIAL_FIELDS}
TRIAL_NULLABLE = frozenset(name for name, _, nullable, _ in TRIAL_FIELDS if nullable)
TRIAL_DESCRIPTIONS = {name: description for name, _, _, description in TRIAL_FIELDS}
# Added by the hash chain when the record is logged (measure.chain), never by the runner.
TRIAL_CHAIN_FIELDS = ("prev_sha256", "record_sha256")
# What the runner writes, in its order: every field but the chain's.
TRIAL_WRITTEN_FIELDS = tuple(n for n in TRIAL_FIELD_NAMES if n not in TRIAL_CHAIN_FIELDS)
# What the estimator reads of a trial (measure.measurement.build): a reader that recomputes needs these.
TRIAL_ESTIMATOR_FIELDS = ("item_id", "version", "replicate_index", "outcome", "token", "response_text")

# Published beside a measurement's own fields, never inside its record: what the run saw of the server,
# composed by the library from the run's trials (the runner writes it into the run record; publication puts
# it after the measurement's columns; verify recomputes it from the trials).  The frozen estimator neither
# computes nor reads it, so it is outside MEASUREMENT_FIELDS, SCHEMA_SHA256 and the estimator's recomputation,
# and a measurement whose run recorded none has it as null.  (name, type label, description)
BESIDE_MEASUREMENT_FIELDS = (
    ("system_fingerprints", "json", "Every distinct server build identity (system_fingerprint) the run's trials "
                                    "recorded, sorted (JSON list): two values mean the server changed build during "
                                    "the run; [] when the API reported none (Anthropic's reports none); empty when "
                                    "the run was recorded before trials carried the field."),
)
BESIDE_MEASUREMENT_FIELD_NAMES = tuple(name for name, _, _ in BESIDE_MEASUREMENT_FIELDS)


def system_fingerprints(trials: Iterable[Mapping]) -> Optional[list[str]]:
    """The distinct ``system_fingerprint`` values of ``trials``, sorted: what ``system_fingerprints`` lists.

    The one definition, so the runner that writes the list, publication and
    ``llmarchive verify`` that recomputes it cannot disagree.  ``None`` when no
    trial carries the field at all (every trial was recorded before it
    existed: nothing is known); ``[]`` when trials carry it and the server
    reported no build.  A null or non-string value is not a build.
    """
    seen: set[str] = set()
    carried = False
    for trial in trials:
        if "system_fingerprint" in trial:
            carried = True
            value = trial["system_fingerprint"]
            if isinstance(value, str):
                seen.add(value)
    return sorted(seen) if carried else None

_LABEL_WORDS = {"text": "a string", "int": "an integer", "count": "a non-negative integer",
                "bool": "true or false", "json": "a list or an object"}


class TrialError(ArchiveError, ValueError):
    """A trial record that breaks :data:`TRIAL_FIELDS`; the message names where, the field and the problem."""


class TrialProblem(NamedTuple):
    """One field of one trial that breaks the schema: ``expected`` and ``got`` are words for a person."""

    field: str
    expected: str
    got: str

    def sentence(self) -> str:
        if self.got == "missing":
            return f"the trial has no {self.field!r}"
        if self.got == "unknown":
            return f"the trial has a field {self.field!r} that no trial has (not in TRIAL_FIELDS)"
        return f"field {self.field!r} should be {self.expected}, got {self.got}"


def expected_words(name: str) -> str:
    """What a value of trial field ``name`` must be, in words ("a string or null")."""
    return _LABEL_WORDS[TRIAL_FIELD_LABELS[name]] + (" or null" if name in TRIAL_NULLABLE else "")


def json_type_words(value: object) -> str:
    """The JSON type of ``value`` in words ("a string", "null"), for messages about a wrong type."""
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def fits_label(value: object, label: str) -> bool:
    """Whether a non-null ``value`` is of type label ``label`` (a boolean is never a number)."""
    if label == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if label == "text":
        return isinstance(value, str)
    if label == "int":
        return isinstance(value, int)
    if label == "count":
        return isinstance(value, int) and value >= 0
    if label in ("pct", "unit_interval"):
        return isinstance(value, (int, float))
    return isinstance(value, (list, dict))


def trial_problems(trial: Mapping, needs: Iterable[str] = (), closed: bool = False) -> list[TrialProblem]:
    """Every way ``trial`` breaks the schema, in schema order; ``[]`` when it keeps it.

    Every schema field the record carries is judged by its label and
    nullability.  A field in ``needs`` that may not be null must also be
    present (a reader names what it reads; the runner names every field it
    writes).  ``closed`` refuses a key the schema does not know, which only a
    writer can promise; a reader keeps other keys and does not judge them.
    """
    needed = set(needs)
    problems = []
    for name, label, nullable, _ in TRIAL_FIELDS:
        if name not in trial:
            if name in needed and not nullable:
                problems.append(TrialProblem(name, expected_words(name), "missing"))
            continue
        value = trial[name]
        if (value is None and not nullable) or (value is not None and not fits_label(value, label)):
            shown = repr(value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            got = "null" if value is None else f"{json_type_words(value)} {shown}"
            problems.append(TrialProblem(name, expected_words(name), got))
    if closed:
        problems += [TrialProblem(str(key), "absent", "unknown")
                     for key in trial if key not in TRIAL_FIELD_LABELS]
    return problems


def check_trial(trial: Mapping, where: str, needs: Iterable[str] = (), closed: bool = False) -> None:
    """Raise :class:`TrialError` naming ``where``, the field and the problem for the first thing wrong.

    The one validator of a trial record: the runner calls it before appending,
    the comparison intake and ``llmarchive verify`` (run folder and
    ``--public``) before anything is computed from a trial.
    """
    if not isinstance(trial, Mapping):
        raise TrialError(f"{where}: a trial must be a JSON object, got {json_type_words(trial)}")
    problems = trial_problems(trial, needs, closed)
    if problems:
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise TrialError(f"{where}: {problems[0].sentence()}{more}")
