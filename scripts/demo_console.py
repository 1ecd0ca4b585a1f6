"""What ``make demo`` prints after each step: verdicts in plain words, and failures that were expected, said so.

The embedded model (SmolLM2-135M) answers in the ``DECISION:`` format only
now and then, so most gates of its measurements fail — correctly.  A wall of
failed checks would read as a broken instrument; one line per check saying
*that* it failed, *why* in words, and *whether that was expected* reads as
what it is.  A failure counts as expected only when the data say so: every
measurement failing the check has fewer than half of its answers readable.
"""
from typing import Any, Iterable, Mapping, Optional, Sequence

from assets.reporting import gate_checks, gate_failures
from scripts.demo_archive import readable_words

# Each gate check of a measurement, as the consequence of too few readable answers.
WHY = {
    "drop_bound": "the losses alone could explain any gap",
    "missingness_asymmetry": "the unreadable answers fall unevenly across the versions",
    "finding_above_losses": "no gap stands above what the losses could explain",
    "above_surface_noise": "B moves the answers no more than the null rewording A′ once the losses count",
    "positive_control": "C, which flips the right answer, does not move the few readable answers",
    "not_degenerate": "the few readable answers are one option whatever the wording",
    "scenario_concentration": "what gap there is sits in two scenarios",
    "on_curve": "every measurement carries a flag and stays off the curve",
}
MOSTLY_UNREADABLE = 0.5


def readable_share(m: Mapping) -> Optional[float]:
    outcomes = m.get("outcomes") or {}
    total = sum(sum(v.values()) for v in outcomes.values() if isinstance(v, dict))
    valid = sum((v or {}).get("valid", 0) for v in outcomes.values() if isinstance(v, dict))
    return valid / total if total else None


def outcome_line(m: Mapping) -> str:
    """``   <protocol>: 120 trials, 9 readable, 111 not (unparseable 100, truncated 11)``."""
    counts: dict[str, int] = {}
    for version in (m.get("outcomes") or {}).values():
        for outcome, count in (version or {}).items():
            counts[outcome] = counts.get(outcome, 0) + count
    total = sum(counts.values())
    valid = counts.pop("valid", 0)
    others = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]) if v)
    return f"   {m.get('protocol_id')}: {total} trials, {valid} readable, {total - valid} not" + \
        (f" ({others})" if others else "")


def check_lines(evaluations: Iterable[Any], measurements: Sequence[Mapping] = (), model: str = "the model"
                ) -> list[str]:
    """One line per failed check (expected or not, and why), one line for all that passed."""
    passed, lines = [], []
    for e in evaluations:
        name = e.check_name
        if e.passed:
            passed.append(name)
            continue
        failing = [m for m in measurements if gate_failures(m, name)]
        shares = [readable_share(m) for m in failing]
        if failing and all(s is not None and s < MOSTLY_UNREADABLE for s in shares):
            lines.append(f"   check {name} failed as expected: {model} rarely answers in the format "
                         f"({_readable_counts(failing)}), so {WHY.get(name, 'the gate cannot pass')}")
        else:
            why = (getattr(e, "description", None) or "").strip()
            lines.append(f"   check {name} failed: {why or gate_checks().get(name, name)}")
    if passed:
        lines.insert(0, f"   checks passed: {', '.join(passed)}")
    return lines


def _readable_counts(measurements: Sequence[Mapping]) -> str:
    """``10 of 120 and 8 of 120 answers readable`` over the measurements given."""
    counts = [readable_words(m).replace(" answers readable", "") for m in measurements]
    return " and ".join(counts) + " answers readable"


def protocol_checks_line(results: Sequence[Any]) -> list[str]:
    """The 24 protocol partitions' gate checks in one line, and a line per failure."""
    evaluations = [e for r in results for e in r.get_asset_check_evaluations()]
    failed = [e for e in evaluations if not e.passed]
    names = sorted({e.check_name for e in evaluations})
    out = [f"   {len(results)} protocols built; gate checks: {len(evaluations) - len(failed)} of {len(evaluations)} "
           f"passed ({', '.join(names)} on each protocol)"]
    for e in failed:
        detail = e.metadata.get("first_failures")
        out.append(f"   check {e.check_name} failed on {e.partition}: {getattr(detail, 'value', '') or 'see the UI'}")
    return out


def metadata(result: Any, asset: str) -> dict[str, Any]:
    """The last materialisation's metadata of ``asset`` in ``result``, as plain values."""
    events = [e for e in result.get_asset_materialization_events() if e.asset_key.to_user_string() == asset]
    if not events:
        return {}
    return {k: getattr(v, "value", v) for k, v in events[-1].materialization.metadata.items()}
