"""Hand-built trial sets for estimator tests."""
from typing import Mapping, Optional

ITEMS = [f"s{i:02d}" for i in range(1, 16)]


def protocol(n_per_scenario: int = 2, **overrides) -> dict:
    base = {
        "protocol_id": "risky_choice_framing__wording__v0",
        "series": "v0",
        "family": "risky_choice_framing",
        "rewording_type": "wording",
        "options": ["A", "B"],
        "n": 15 * n_per_scenario,
        "n_per_scenario": n_per_scenario,
        "n_items": 15,
        "item_ids": ITEMS,
        "grammar_version": 1,
        "theta_positive_pct": 15,
        "scenario_dominated_share_pct": 40,
        "panel_sha256": "a" * 64,
        "protocol_sha256": "b" * 64,
        "status": "admitted",
        "lane": "open",
        "twin_id": "risky_choice_framing__anchoring__v0",
    }
    base.update(overrides)
    return base


RUN = {
    "run_id": "test-run",
    "run_date": "2026-11-29",
    "subject_model_id": "test-model",
    "series": "commercial",
    "model_family": "test-family",
    "returned_model_id": "test-model-001",
    "api_surface_sha": "c" * 64,
    "condition_profile": "default",
    "replicate_index": 0,
}


def trials_from(plan: Mapping[str, Mapping[str, list]], n_per_scenario: int = 2) -> list[dict]:
    """``plan[version][item]`` is a list of tokens or outcome names per replicate.

    A token "A"/"B" is a valid decision; any other string is that outcome.
    Versions or items not in the plan get all-"A" answers.
    """
    out = []
    for version in ("A", "A_prime", "B", "C"):
        for item in ITEMS:
            answers = plan.get(version, {}).get(item, ["A"] * n_per_scenario)
            assert len(answers) == n_per_scenario
            for r, answer in enumerate(answers):
                valid = answer in ("A", "B")
                out.append({
                    "record_type": "trial",
                    "protocol_id": "risky_choice_framing__wording__v0",
                    "item_id": item,
                    "version": version,
                    "replicate_index": r,
                    "outcome": "valid" if valid else answer,
                    "token": answer if valid else None,
                })
    return out


def uniform(version_tokens: Mapping[str, list], n_per_scenario: int = 2) -> dict:
    """The same replicate answers for every item of each version."""
    return {v: {item: list(tokens) for item in ITEMS} for v, tokens in version_tokens.items()}


def set_items(plan: dict, version: str, items: list, answers: list) -> dict:
    for item in items:
        plan.setdefault(version, {})[item] = list(answers)
    return plan


def healthy_plan() -> dict:
    """A measurement that passes every check: B moves, A′ does not, C moves a lot."""
    plan = uniform({"A": ["A", "B"], "A_prime": ["A", "B"], "B": ["A", "B"], "C": ["B", "B"]})
    # B shifts towards "B" in eight scenarios (gap 8/30 ≈ 26.7 points, spread out).
    set_items(plan, "B", ITEMS[:8], ["B", "B"])
    return plan


def only(values: Optional[list], default: str) -> list:
    return values if values is not None else [default]
