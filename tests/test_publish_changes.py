"""The change rule as public rows, and the smallest change a measurement lets the rule see."""
import math

import pytest

from measure.stats import compare
from publish.changes import CHANGE_FIELDS, change_rows, min_detectable_change_pct, newest_first


def point(run_id: str, run_date: str, stability: float, half_width: float, drop: float, *,
          protocol_id: str = "p1", series: str = "commercial", family: str = "claude-sonnet",
          on_curve: bool = True, replicate_index: int = 0) -> dict:
    return {"run_id": run_id, "run_date": run_date, "protocol_id": protocol_id, "series": series,
            "model_family": family, "rewording_type": "wording", "subject_model_id": "m",
            "stability_pct": stability, "ci_low_pct": stability - half_width, "ci_high_pct": stability + half_width,
            "drop_bound_pct_ab": drop, "on_curve": on_curve, "replicate_index": replicate_index}


def next_point(x: dict, move: float) -> dict:
    """A measurement exactly as precise as ``x`` (same half-width, same drop bound), ``move`` points away."""
    hw = (x["ci_high_pct"] - x["ci_low_pct"]) / 2
    return point("y", "2027-01-01", x["stability_pct"] + move, hw, x["drop_bound_pct_ab"])


@pytest.mark.parametrize("half_width, drop", [(6.0, 1.0), (1.0, 5.0), (3.0, 0.0), (0.0, 2.5)],
                         ids=["random-error-dominates", "drop-bound-dominates", "no-loss", "no-interval"])
@pytest.mark.parametrize("direction", [1, -1], ids=["up", "down"])
def test_min_detectable_change_is_the_boundary_of_the_change_rule(half_width, drop, direction):
    x = point("x", "2026-12-01", 50.0, half_width, drop)
    threshold = min_detectable_change_pct(x)
    assert threshold == pytest.approx(max(math.sqrt(2) * half_width, 2 * drop))
    called = "improved" if direction > 0 else "regressed"
    assert compare(x, next_point(x, direction * threshold * (1 + 1e-9))) == called
    assert compare(x, next_point(x, direction * threshold * (1 - 1e-9))) == "flat"
    if math.sqrt(2) * half_width > 2 * drop:
        # the random-error condition is inclusive: a move of exactly the threshold is called
        y = next_point(x, direction * threshold)
        if abs(y["stability_pct"] - x["stability_pct"]) >= threshold:
            assert compare(x, y) == called


def test_min_detectable_change_is_none_without_numbers():
    x = point("x", "2026-12-01", 50.0, 3.0, 1.0)
    x["ci_low_pct"] = None
    assert min_detectable_change_pct(x) is None
    assert min_detectable_change_pct({"stability_pct": 50.0}) is None


def test_change_rows_pair_consecutive_on_curve_points_and_label_them_with_compare():
    ms = [
        point("a1", "2026-10-01", 60.0, 2.0, 0.5),
        point("a2", "2026-11-01", 70.0, 2.0, 0.5),
        point("off", "2026-11-15", 10.0, 2.0, 0.5, on_curve=False),
        point("a3", "2026-12-01", 71.0, 2.0, 0.5),
        point("b1", "2026-10-01", 80.0, 2.0, 0.5, family="gpt"),
        point("w1", "2026-11-20", 30.0, 2.0, 0.5, series="open_weights"),
        point("b2", "2026-11-01", 50.0, 2.0, 6.0, family="gpt"),
    ]
    rows = change_rows(ms)
    pairs = [(r["from_run_id"], r["to_run_id"]) for r in rows]
    assert sorted(pairs) == [("a1", "a2"), ("a2", "a3"), ("b1", "b2")]
    by_id = {m["run_id"]: m for m in ms}
    for r in rows:
        assert set(r) == set(CHANGE_FIELDS)
        x, y = by_id[r["from_run_id"]], by_id[r["to_run_id"]]
        assert r["label"] == compare(x, y)
        assert r["delta_pct"] == pytest.approx(y["stability_pct"] - x["stability_pct"])
        assert r["bound_pct"] == pytest.approx(math.sqrt(2 * 2.0 ** 2))
        assert r["cap_pct"] == x["drop_bound_pct_ab"] + y["drop_bound_pct_ab"]
    labels = {(r["from_run_id"], r["to_run_id"]): r["label"] for r in rows}
    assert labels == {("a1", "a2"): "improved", ("a2", "a3"): "flat", ("b1", "b2"): "regressed"}
    assert [r["to_run_id"] for r in newest_first(rows)][0] == "a3"


def test_replicates_of_one_day_are_ordered_by_replicate_index():
    ms = [point("r1", "2026-10-01", 60.0, 1.0, 0.1, replicate_index=1),
          point("r0", "2026-10-01", 50.0, 1.0, 0.1, replicate_index=0)]
    [row] = change_rows(ms)
    assert (row["from_run_id"], row["to_run_id"]) == ("r0", "r1")


def test_database_rows_with_on_curve_as_one_give_the_same_changes_as_records():
    records = [point("a1", "2026-10-01", 60.0, 2.0, 0.5), point("a2", "2026-11-01", 70.0, 2.0, 0.5),
               point("a3", "2026-12-01", 20.0, 2.0, 0.5, on_curve=False)]
    rows = [dict(m, on_curve=1 if m["on_curve"] else 0) for m in records]
    assert change_rows(rows) == change_rows(records) and len(change_rows(rows)) == 1
