"""The change rule as public rows, and the smallest change a measurement lets the rule see."""
import math

import pytest

from measure.stats import compare
from publish.data.changes import (CHANGE_FIELDS, cells_moved, change_rows, min_detectable_change_pct, modal_cells,
                                  newest_first)


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


def interval_point(stability: float, half_width: float, drop: float) -> dict:
    """A measurement whose interval is ``[0, 2·half_width]``: the change rule reads only its width, exactly."""
    return {"run_id": "p", "run_date": "2026-12-01", "stability_pct": stability, "ci_low_pct": 0.0,
            "ci_high_pct": 2 * half_width, "drop_bound_pct_ab": drop}


@pytest.mark.parametrize("half_width, drop", [(6.0, 1.0), (1.0, 5.0), (3.0, 0.0), (0.0, 2.5), (5.0, 3.5355)],
                         ids=["random-error-dominates", "drop-bound-dominates", "no-loss", "no-interval", "near-tie"])
@pytest.mark.parametrize("direction", [1, -1], ids=["up", "down"])
def test_min_detectable_change_is_the_boundary_of_the_change_rule(half_width, drop, direction):
    x = point("x", "2026-12-01", 50.0, half_width, drop)
    threshold = min_detectable_change_pct(x)
    assert threshold == pytest.approx(max(math.sqrt(2) * half_width, 2 * drop))
    called = "improved" if direction > 0 else "regressed"
    assert compare(x, next_point(x, direction * threshold * (1 + 1e-9))) == called
    assert compare(x, next_point(x, direction * threshold * (1 - 1e-9))) == "flat"
    # The boundary itself, to the last bit: one measurement at stability 0 and the other at the
    # threshold (or one unit in the last place either side), so that the difference compare takes is
    # exactly that number.  At the threshold the move is called when the random term is the larger
    # (>=) and not when the systematic term is (>); a step above is always called, a step below never.
    random_term_decides = math.sqrt(2 * half_width * half_width) > 2 * drop
    for move, expected in ((threshold, called if random_term_decides else "flat"),
                           (math.nextafter(threshold, math.inf), called),
                           (math.nextafter(threshold, 0.0), "flat")):
        low, high = (0.0, move) if direction > 0 else (move, 0.0)
        a, b = interval_point(low, half_width, drop), interval_point(high, half_width, drop)
        assert b["stability_pct"] - a["stability_pct"] == direction * move
        assert min_detectable_change_pct(a) == threshold
        assert compare(a, b) == expected, (move, expected)


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


# --------------------------------------------------------------------------
# cells_changed / cells_compared: what moved, scenario by scenario
# --------------------------------------------------------------------------

def deterministic_plan(items: list, flipped: frozenset = frozenset()) -> dict:
    """A subject that repeats itself: A and A′ say A, B says B in the first eight scenarios, C says B.

    In the ``flipped`` scenarios every version says the other option, so
    each of their four cells changes; flipped among the last seven (where A
    and B agree) the shares of A and B move together and every aggregate
    gap stays where it was.
    """
    plan = {"A": {}, "A_prime": {}, "B": {}, "C": {}}
    for index, item in enumerate(items):
        base = {"A": "A", "A_prime": "A", "B": "B" if index < 8 else "A", "C": "B"}
        for version, token in base.items():
            if item in flipped:
                token = "B" if token == "A" else "A"
            plan[version][item] = [token, token]
    return plan


def test_modal_cells_keep_ties_and_leave_cells_without_a_decision_undecided():
    trials = [{"item_id": "s01", "version": "A", "outcome": "valid", "token": t} for t in ("A", "B", "A")]
    trials += [{"item_id": "s02", "version": "A", "outcome": "valid", "token": t} for t in ("B", "A")]
    trials += [{"item_id": "s03", "version": "B", "outcome": "refused", "token": None}]
    trials += [{"record_type": "instrument_note", "item_id": "s04", "version": "A"}]
    assert modal_cells(trials) == {("s01", "A"): ("A",), ("s02", "A"): ("A", "B"), ("s03", "B"): None}
    x = {("s01", "A"): ("A",), ("s02", "A"): ("A", "B"), ("s03", "B"): None, ("s04", "C"): ("B",)}
    y = {("s01", "A"): ("A", "B"), ("s02", "A"): ("A", "B"), ("s03", "B"): ("A",)}
    assert cells_moved(x, y) == (1, 2), "a clear A that became a tie moved; an undecided or missing cell is not compared"


def test_four_scenarios_that_swap_in_every_version_are_counted_though_the_label_is_flat():
    from measure.measurement import build
    from tests.measure_helpers import ITEMS, RUN, protocol, trials_from

    flipped = frozenset(ITEMS[8:12])
    runs = {}
    for run_id, date, plan in (("before", "2026-10-01", deterministic_plan(ITEMS)),
                               ("after", "2026-11-01", deterministic_plan(ITEMS, flipped))):
        trials = trials_from(plan)
        m = build(protocol(), trials, dict(RUN, run_id=run_id, run_date=date))
        assert m["on_curve"], m["flags"]
        runs[run_id] = (m, modal_cells(trials))
    before, after = runs["before"][0], runs["after"][0]
    assert before["stability_pct"] == after["stability_pct"]
    [row] = change_rows([before, after], {k: cells for k, (_, cells) in runs.items()})
    assert row["label"] == "flat"
    assert (row["cells_changed"], row["cells_compared"]) == (4 * 4, 15 * 4)
    [unpaired] = change_rows([before, after])
    assert unpaired["cells_changed"] is None and unpaired["cells_compared"] is None


def test_published_changes_count_the_cells_from_the_runs_trial_logs(archive):
    import csv
    import sqlite3

    from publish import publish_all
    from tests import publish_helpers as ph

    guarded = ph.protocol(archive, "risky_choice_framing__anchoring__v0")   # a guard protocol: log is private
    items = list(guarded["item_ids"])
    ph.write_run(archive, guarded, "g-before", "2026-10-02", plan=deterministic_plan(items))
    ph.write_run(archive, guarded, "g-after", "2026-11-02", plan=deterministic_plan(items, frozenset(items[8:11])))
    publish_all(archive, build_time="2026-12-03T00:00:00Z")
    with open(archive.public / "changes.csv", newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["to_run_id"] == "g-after"]
    assert [(r["from_run_id"], r["label"], r["cells_changed"], r["cells_compared"]) for r in rows] == \
        [("g-before", "flat", "12", "60")]
    db = sqlite3.connect(archive.public / "archive.db")
    try:
        assert db.execute("select cells_changed, cells_compared from changes where to_run_id = 'g-after'"
                          ).fetchall() == [(12, 60)]
    finally:
        db.close()
