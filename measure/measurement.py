"""Build one measurement record from a protocol, its trials and its run.

:func:`build` is the only producer of ``measurement`` records, and
:mod:`measure.verify` calls it again to re-check one.  It reads only four
fields of each trial — ``item_id``, ``version``, ``outcome``, ``token`` (plus
``replicate_index`` to refuse duplicates) — so it can be run on the
published open-lane trials as well as on the private trial logs.

Beside the frozen figures it reports how the repeats of one prompt behaved
(``replicate_agreement_pct`` and the within-panel interval
``ci_stratified_*``, method §6.7) and the A-B distance over the options'
roles rather than their letters (``gap_role_ab_pct``, method §6.1), which
reads the protocol's ``option_roles`` when the caller has them.

The checks follow method §6.6, each at the edge that does not favour the
result: the loss bound and the asymmetry of losses on each of the three
pairs, the main finding against its loss bound, B against the null change
A′, the positive control C against ``theta_positive_pct``, collapse onto one
answer, and concentration in two scenarios.  Any failed check sets a flag;
any flag takes the measurement off the curve; no flag removes it.

Thresholds are compared on exact fractions computed from counts.  Published
numbers are floats rounded to :data:`DECIMALS` places, so the record is the
same bytes on every machine.
"""
import hashlib
import statistics
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Mapping, Optional

from measure.errors import ArchiveError
from measure import stats
from measure.canonical import canonical_sha256
from measure.schema import (
    MEASUREMENT_FIELD_NAMES,
    OUTCOMES,
    PAIRS,
    SCHEMA_SHA256,
    SCHEMA_VERSION,
    VERSION_SUFFIX,
    VERSIONS,
)

DECIMALS = 9
DROP_BOUND_MAX_PCT = Fraction(2)
ASYMMETRY_MAX_PCT = Fraction(1)
DEGENERATE_ENTROPY = 0.20
DEGENERATE_STABILITY_PCT = 90.0

_MEASURE_DIR = Path(__file__).resolve().parent
_GRAMMAR_FILES = {1: ("grammar.py",), 2: ("grammar.py", "grammar_v2.py")}


class MeasurementError(ArchiveError, ValueError):
    """Trials or a protocol that cannot be measured; the message says why."""


# --------------------------------------------------------------------------
# provenance
# --------------------------------------------------------------------------

def _files_sha(names: Iterable[str]) -> str:
    digests = {name: hashlib.sha256((_MEASURE_DIR / name).read_bytes()).hexdigest() for name in names}
    return canonical_sha256(digests)


def extractor_sha(grammar_version: int) -> str:
    """SHA-256 over ``{file: sha256(bytes)}`` of the files a grammar runs."""
    if grammar_version not in _GRAMMAR_FILES:
        raise MeasurementError(f"unknown grammar_version {grammar_version!r}")
    return _files_sha(_GRAMMAR_FILES[grammar_version])


def analysis_code_sha() -> str:
    """SHA-256 over ``{file: sha256(bytes)}`` of every ``measure/*.py`` source."""
    return _files_sha(sorted(p.name for p in _MEASURE_DIR.glob("*.py")))


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def _num(value: Optional[Fraction | float]) -> Optional[float]:
    return None if value is None else round(float(value), DECIMALS)


def _required(mapping: Mapping, key: str, what: str):
    if key not in mapping or mapping[key] is None:
        raise MeasurementError(f"{what} has no {key!r}")
    return mapping[key]


def _gap(x: Mapping[str, int], y: Mapping[str, int]) -> Optional[Fraction]:
    if sum(x.values()) == 0 or sum(y.values()) == 0:
        return None
    return stats.gap_fraction(x, y)


def _tally(protocol: Mapping, trials: Iterable[Mapping]):
    options = list(_required(protocol, "options", "protocol"))
    protocol_id = _required(protocol, "protocol_id", "protocol")
    n = _required(protocol, "n", "protocol")
    item_ids = protocol.get("item_ids")
    decisions = {v: {o: 0 for o in options} for v in VERSIONS}
    outcomes = {v: {o: 0 for o in OUTCOMES} for v in VERSIONS}
    per_item: dict[str, dict[str, dict[str, int]]] = {}
    cells: dict[tuple[str, str], list[tuple[str, Optional[str]]]] = {}
    seen: set = set()
    items_seen: set = set()
    for index, trial in enumerate(trials):
        where = f"trial #{index}"
        if trial.get("protocol_id", protocol_id) != protocol_id:
            raise MeasurementError(f"{where} belongs to {trial.get('protocol_id')!r}, not {protocol_id!r}")
        version = trial.get("version")
        if version not in VERSIONS:
            raise MeasurementError(f"{where}: version {version!r} is not one of {VERSIONS}")
        item = trial.get("item_id")
        if not isinstance(item, str) or (item_ids is not None and item not in item_ids):
            raise MeasurementError(f"{where}: item_id {item!r} is not in the protocol's panel")
        outcome = trial.get("outcome")
        if outcome not in OUTCOMES:
            raise MeasurementError(f"{where}: outcome {outcome!r} is not one of {OUTCOMES}")
        token = trial.get("token")
        if outcome == "valid" and token not in options:
            raise MeasurementError(f"{where}: valid trial with token {token!r} not in options {options}")
        if outcome != "valid" and token is not None:
            raise MeasurementError(f"{where}: a {outcome!r} trial must carry token null, got {token!r}")
        identity = (item, version, trial.get("replicate_index", index))
        if identity in seen:
            raise MeasurementError(f"{where}: duplicate trial {identity}")
        seen.add(identity)
        items_seen.add(item)
        cells.setdefault((item, version), []).append((outcome, token))
        outcomes[version][outcome] += 1
        if outcome == "valid":
            decisions[version][token] += 1
            per_item.setdefault(item, {v: {o: 0 for o in options} for v in VERSIONS})[version][token] += 1
        else:
            per_item.setdefault(item, {v: {o: 0 for o in options} for v in VERSIONS})
    for version in VERSIONS:
        got = sum(outcomes[version].values())
        if got != n:
            raise MeasurementError(
                f"version {version} has {got} trials but the protocol freezes n = {n}; "
                "a measurement is built only from a complete run"
            )
    return options, decisions, outcomes, per_item, sorted(items_seen), cells


def option_roles(protocol: Mapping) -> Optional[dict[str, dict[str, str]]]:
    """``{item_id: {option: role}}``: which role of the family each option letter plays, per scenario.

    The roles are the protocol structure's names for what an option *is*
    (``sure``/``gamble``, ``stop``/``finish``, ``case``/``clear``); which
    letter carries which role changes from scenario to scenario.  They come
    from the header's ``option_roles`` when it has them (what a run folder
    records), else from the panel's ``structure.roles`` (a full protocol);
    ``None`` when the protocol gives neither — a header recorded before
    roles were — and then ``gap_role_ab_pct`` is null.
    """
    roles = protocol.get("option_roles")
    if roles is None and isinstance(protocol.get("panel"), list):
        roles = {}
        for item in protocol["panel"]:
            structure = item.get("structure") if isinstance(item, Mapping) else None
            if not isinstance(structure, Mapping) or not isinstance(structure.get("roles"), Mapping):
                return None
            roles[item.get("item_id")] = dict(structure["roles"])
    if roles is None:
        return None
    if not isinstance(roles, Mapping):
        raise MeasurementError(f"protocol field 'option_roles' must be an object keyed by item_id, got {roles!r}")
    options = list(protocol.get("options") or [])
    out: dict[str, dict[str, str]] = {}
    for item, by_letter in roles.items():
        if not isinstance(by_letter, Mapping) or sorted(by_letter) != sorted(options) or \
                not all(isinstance(r, str) and r for r in by_letter.values()) or \
                len(set(by_letter.values())) != len(by_letter):
            raise MeasurementError(f"protocol field 'option_roles' for item {item!r} must give each of the "
                                   f"options {options} its own role name, got {by_letter!r}")
        out[str(item)] = dict(by_letter)
    return out


def _role_counts(per_item: Mapping, roles: Mapping[str, Mapping[str, str]], version: str) -> dict[str, int]:
    counts = {role: 0 for by_letter in roles.values() for role in by_letter.values()}
    for item, versions in per_item.items():
        if item not in roles:
            raise MeasurementError(f"protocol field 'option_roles' has no roles for item {item!r}")
        for token, count in versions[version].items():
            counts[roles[item][token]] += count
    return counts


def _cell_vectors(cells: Mapping, items: list[str], version: str, options: list[str]) -> list[list[int]]:
    """Per scenario of ``version``, its answers as ``[invalid, option_1, …]`` (options sorted)."""
    tokens = sorted(options)
    out = []
    for item in items:
        answers = cells.get((item, version), [])
        if answers:
            out.append([sum(1 for o, _ in answers if o != "valid")]
                       + [sum(1 for o, t in answers if o == "valid" and t == token) for token in tokens])
    return out


def _spread(values: list[float]) -> dict:
    if not values:
        return {"min": None, "max": None, "median": None, "iqr": None}
    if len(values) == 1:
        q1 = q3 = values[0]
    else:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {
        "min": _num(min(values)),
        "max": _num(max(values)),
        "median": _num(statistics.median(values)),
        "iqr": _num(q3 - q1),
    }


# --------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------

def build(protocol: Mapping, trials: Iterable[Mapping], run: Mapping) -> dict:
    """The measurement record of one complete run of one protocol.

    ``protocol`` needs its text-free header fields (``protocol_id``,
    ``options``, ``n``, ``n_items``, ``grammar_version``, the two pre-declared
    thresholds, the two hashes, ``rewording_type``, ``status``, ``lane``,
    ``twin_id``; ``item_ids`` when known; ``option_roles`` — or the panel — when
    known, else ``gap_role_ab_pct`` is null).  ``run`` supplies ``run_id``,
    ``run_date``, ``subject_model_id``, ``series``, ``model_family``,
    ``returned_model_id``, ``api_surface_sha``, ``condition_profile`` and
    ``replicate_index``, and the two flags only the caller can know:
    ``instrument_suspect`` and ``exploratory`` (each false, true, or a reason).
    """
    options, decisions, outcomes, per_item, items_seen, cells = _tally(protocol, trials)
    n = protocol["n"]
    k = len(options)
    theta = Fraction(str(_required(protocol, "theta_positive_pct", "protocol")))
    share = Fraction(str(_required(protocol, "scenario_dominated_share_pct", "protocol")))
    grammar_version = _required(protocol, "grammar_version", "protocol")
    protocol_id = protocol["protocol_id"]
    run_date = _required(run, "run_date", "run")
    subject_model_id = _required(run, "subject_model_id", "run")

    n_valid = {v: sum(decisions[v].values()) for v in VERSIONS}
    u = {v: Fraction(n - n_valid[v], n) for v in VERSIONS}
    gaps = {pair: _gap(decisions[x], decisions[y]) for pair, (x, y) in PAIRS.items()}
    drop = {pair: stats.drop_bound_fraction(u[x], u[y]) for pair, (x, y) in PAIRS.items()}
    asym = {pair: 100 * abs(u[x] - u[y]) for pair, (x, y) in PAIRS.items()}
    gap_ab = None if gaps["ab"] is None else 100 * gaps["ab"]
    gap_aa = None if gaps["aa"] is None else 100 * gaps["aa"]
    gap_ac = None if gaps["ac"] is None else 100 * gaps["ac"]
    stability = None if gap_ab is None else 100 - gap_ab

    seed = stats.bootstrap_seed(protocol_id, run_date, subject_model_id)
    if gap_ab is None:
        floor = ci = None
        entropy_a = entropy_b = None
    else:
        floor = stats.null_floor_pct(decisions["A"], decisions["B"], seed)
        # The resampling unit is the response: n per version, invalid ones included.
        ci = stats.bootstrap_ci_pct(decisions["A"], decisions["B"], seed, stats.B_DEFAULT, n_x=n, n_y=n)
        entropy_a = stats.entropy_norm(decisions["A"], k)
        entropy_b = stats.entropy_norm(decisions["B"], k)
    at_noise_floor = None if floor is None else float(stability) >= 100 - floor

    # Repeats of one prompt (method §6.7): do they agree, and what does the
    # interval look like when only they are resampled?
    agreement = stats.replicate_agreement_fraction(cells[key] for key in sorted(cells))
    if gap_ab is None or agreement is None:
        ci_stratified = None
    else:
        ci_stratified = stats.stratified_bootstrap_ci_pct(
            _cell_vectors(cells, items_seen, "A", options), _cell_vectors(cells, items_seen, "B", options),
            seed, stats.B_DEFAULT)

    # The same A-B distance over what the options are, not which letter they wear (method §6.1).
    roles = option_roles(protocol)
    if gap_ab is None or roles is None:
        gap_role_ab = None
    else:
        gap_role_ab = 100 * stats.gap_fraction(_role_counts(per_item, roles, "A"), _role_counts(per_item, roles, "B"))

    scenario_gaps: dict[str, Optional[float]] = {}
    exact_item_gaps: list[Fraction] = []
    for item in items_seen:
        g = _gap(per_item[item]["A"], per_item[item]["B"])
        scenario_gaps[item] = None if g is None else _num(100 * g)
        if g is not None:
            exact_item_gaps.append(100 * g)
    summed = sum(exact_item_gaps, Fraction(0))
    top_two = sum(sorted(exact_item_gaps, reverse=True)[:2], Fraction(0))
    concentration = Fraction(0) if summed == 0 else 100 * top_two / summed

    gates: list[dict] = []
    flags: list[str] = []
    reasons: dict[str, str] = {}

    def gate(check: str, pair: Optional[str], rule: str, inputs: dict, threshold, passed: Optional[bool],
             flag: str, reason: str) -> None:
        entry = {
            "check": check,
            "pair": pair,
            "rule": rule,
            "inputs": {name: (_num(value) if isinstance(value, (Fraction, float, int)) and not isinstance(value, bool)
                              else value) for name, value in inputs.items()},
            "threshold": _num(threshold) if threshold is not None else None,
            "pass": bool(passed),
            "flag": flag,
        }
        gates.append(entry)
        if not passed and flag not in flags:
            flags.append(flag)
            reasons[flag] = reason

    for pair in PAIRS:
        gate("drop_bound", pair, f"drop_bound_pct_{pair} <= 2.0", {f"drop_bound_pct_{pair}": drop[pair]},
             DROP_BOUND_MAX_PCT, drop[pair] <= DROP_BOUND_MAX_PCT, "drop_confounded",
             f"drop_bound_pct_{pair} = {_num(drop[pair])} exceeds 2.0")
    for pair in PAIRS:
        gate("missingness_asymmetry", pair, f"drop_asymmetry_pct_{pair} <= 1.0",
             {f"drop_asymmetry_pct_{pair}": asym[pair]}, ASYMMETRY_MAX_PCT, asym[pair] <= ASYMMETRY_MAX_PCT,
             "asymmetric_missingness", f"drop_asymmetry_pct_{pair} = {_num(asym[pair])} exceeds 1.0")

    undefined = "cannot be evaluated: a version has no valid decision"
    gate("finding_above_losses", "ab", "drop_bound_pct_ab < gap_pct",
         {"drop_bound_pct_ab": drop["ab"], "gap_pct": gap_ab}, None,
         gap_ab is not None and drop["ab"] < gap_ab, "below_drop_bound",
         undefined if gap_ab is None else f"drop_bound_pct_ab = {_num(drop['ab'])} is not below gap_pct = {_num(gap_ab)}")

    if gap_ab is None or gap_aa is None:
        passed, reason = False, undefined
    else:
        lower_signal, upper_noise = gap_ab - drop["ab"], gap_aa + drop["aa"]
        passed = lower_signal > upper_noise
        reason = (f"gap_pct - drop_bound_pct_ab = {_num(lower_signal)} does not exceed "
                  f"gap_null_pct + drop_bound_pct_aa = {_num(upper_noise)}")
    gate("above_surface_noise", "aa", "gap_pct - drop_bound_pct_ab > gap_null_pct + drop_bound_pct_aa",
         {"gap_pct": gap_ab, "drop_bound_pct_ab": drop["ab"], "gap_null_pct": gap_aa, "drop_bound_pct_aa": drop["aa"]},
         None, passed, "below_surface_noise", reason)

    if gap_ac is None:
        passed, reason = False, undefined
    else:
        lower = gap_ac - drop["ac"]
        passed = lower > theta
        reason = f"gap_positive_pct - drop_bound_pct_ac = {_num(lower)} does not exceed theta_positive_pct = {_num(theta)}"
    gate("positive_control", "ac", "gap_positive_pct - drop_bound_pct_ac > theta_positive_pct",
         {"gap_positive_pct": gap_ac, "drop_bound_pct_ac": drop["ac"], "theta_positive_pct": theta},
         theta, passed, "not_reading", reason)

    if entropy_a is None:
        passed, reason = False, undefined
    else:
        collapsed = max(entropy_a, entropy_b) < DEGENERATE_ENTROPY and float(stability) > DEGENERATE_STABILITY_PCT
        passed = not collapsed
        reason = (f"max(entropy_a, entropy_b) = {_num(max(entropy_a, entropy_b))} < 0.20 "
                  f"with stability_pct = {_num(stability)} > 90")
    gate("not_degenerate", "ab", "not (max(entropy_a, entropy_b) < 0.20 and stability_pct > 90)",
         {"entropy_a": entropy_a, "entropy_b": entropy_b, "stability_pct": stability}, None, passed,
         "degenerate_candidate", reason)

    gate("scenario_concentration", "ab", "scenario_concentration_pct <= scenario_dominated_share_pct",
         {"scenario_concentration_pct": concentration, "scenario_dominated_share_pct": share}, share,
         concentration <= share, "scenario_dominated",
         f"the two largest scenario gaps make {_num(concentration)}% of the summed gap, above {_num(share)}%")

    for flag in ("instrument_suspect", "exploratory"):
        given = run.get(flag)
        if given:
            flags.append(flag)
            reasons[flag] = given if isinstance(given, str) else f"{flag} set by the caller"

    status = protocol.get("status")
    on_curve = not flags and status == "admitted"

    record = {
        "record_type": "measurement",
        "schema_version": SCHEMA_VERSION,
        "run_id": _required(run, "run_id", "run"),
        "run_date": run_date,
        "protocol_id": protocol_id,
        "rewording_type": protocol.get("rewording_type"),
        "subject_model_id": subject_model_id,
        "stability_pct": _num(stability),
        "ci_low_pct": _num(ci[0]) if ci else None,
        "ci_high_pct": _num(ci[1]) if ci else None,
        "gap_pct": _num(gap_ab),
        "gap_null_pct": _num(gap_aa),
        "gap_positive_pct": _num(gap_ac),
        "null_floor_pct": _num(floor),
        "at_noise_floor": at_noise_floor,
        "n": n,
        "n_valid": n_valid,
        "item_id": items_seen,
        "n_items": protocol.get("n_items", len(items_seen)),
        "k": k,
        "entropy_a": _num(entropy_a),
        "entropy_b": _num(entropy_b),
    }
    for version in VERSIONS:
        record[f"u_{VERSION_SUFFIX[version]}"] = _num(u[version])
    for pair in PAIRS:
        record[f"drop_bound_pct_{pair}"] = _num(drop[pair])
    for pair in PAIRS:
        record[f"drop_asymmetry_pct_{pair}"] = _num(asym[pair])
    record.update({
        "scenario_gaps_pct": scenario_gaps,
        "scenario_spread_pct": _spread([float(g) for g in exact_item_gaps]),
        "scenario_concentration_pct": _num(concentration),
        "outcomes": outcomes,
        "decisions": decisions,
        "flags": flags,
        "flag_reasons": reasons,
        "gates": gates,
        "on_curve": on_curve,
        "protocol_status": status,
        "panel_sha256": protocol.get("panel_sha256"),
        "protocol_sha256": protocol.get("protocol_sha256"),
        "extractor_sha": extractor_sha(grammar_version),
        "analysis_code_sha": analysis_code_sha(),
        "schema_sha256": SCHEMA_SHA256,
        "grammar_version": grammar_version,
        "series": run.get("series"),
        "lane": protocol.get("lane"),
        "twin_id": protocol.get("twin_id"),
        "model_family": run.get("model_family"),
        "returned_model_id": run.get("returned_model_id"),
        "api_surface_sha": run.get("api_surface_sha"),
        "condition_profile": run.get("condition_profile"),
        "replicate_index": run.get("replicate_index", 0),
        "bootstrap_seed": f"{seed:016x}",
        "bootstrap_b": stats.B_DEFAULT,
        "replicate_agreement_pct": None if agreement is None else _num(100 * agreement),
        "ci_stratified_low_pct": _num(ci_stratified[0]) if ci_stratified else None,
        "ci_stratified_high_pct": _num(ci_stratified[1]) if ci_stratified else None,
        "gap_role_ab_pct": _num(gap_role_ab),
    })
    if tuple(record) != MEASUREMENT_FIELD_NAMES:
        raise MeasurementError("measurement fields are out of step with measure.schema.MEASUREMENT_FIELDS")
    return record
