"""The simulated readers (panels/readers.py) on hand-worked items, and their trials through the real estimator."""
import copy
import math

import pytest

from measure import grammar
from panels import readers
from panels.build import structure
from panels.scenario import Scenario


def _risky(sure: int, c_sure: int, total: int = 600, p_pct: int = 40) -> dict:
    scenario = Scenario(item_id="s01", title="t", values={"total": total, "sure": sure, "p_pct": p_pct},
                        c_values={"total": total, "sure": c_sure, "p_pct": p_pct},
                        letters={"A": "sure", "B": "gamble"}, context=(), question="", options={})
    return structure("risky_choice_framing", scenario)


def test_prospect_theory_by_hand_the_asian_disease_numbers():
    """240 of 600 for sure against a 40 % chance of all 600, Tversky & Kahneman (1992) parameters.

    Gain frame: v(240) = 240^0.88 = 124.33; the gamble is w⁺(0.4)·v(600) with
    w⁺(0.4) = 0.4^0.61 / (0.4^0.61 + 0.6^0.61)^(1/0.61) = 0.3700, so
    0.3700 × 600^0.88 = 0.3700 × 278.47 = 103.04 < 124.33: the sure option.
    Loss frame (reference: none lost): the sure option is −2.25 × 360^0.88 =
    −2.25 × 177.64 = −399.7; the gamble loses all 600 with probability 0.6,
    weighted w⁻(0.6) = 0.5181 (δ = 0.69): −2.25 × 0.5181 × 278.47 = −324.6
    > −399.7: the gamble.  The classic reversal.
    """
    assert readers.weight(0.4, 0.61) == pytest.approx(0.37002, abs=1e-5)
    assert readers.weight(0.6, 0.69) == pytest.approx(0.51809, abs=1e-5)
    assert readers.value(240) == pytest.approx(124.333, abs=1e-3)
    assert readers.value(-360) == pytest.approx(-2.25 * 360 ** 0.88)
    assert readers.cpt([(0.4, 600), (0.6, 0)]) == pytest.approx(103.039, abs=1e-3)
    assert readers.cpt([(0.4, 0), (0.6, -600)]) == pytest.approx(-2.25 * 0.518090 * 278.4666, abs=1e-2)
    s = _risky(240, 180)
    gain = readers.biased_scores("risky_choice_framing", "wording", s, "A")
    loss = readers.biased_scores("risky_choice_framing", "wording", s, "B")
    assert gain == pytest.approx({"A": 124.333, "B": 103.039}, abs=1e-3)
    assert loss == pytest.approx({"A": -399.70, "B": -324.61}, abs=1e-2)
    assert readers.choice("biased", "risky_choice_framing", "wording", s, "A") == {"A": 1, "B": 0}
    assert readers.choice("biased", "risky_choice_framing", "wording", s, "B") == {"A": 0, "B": 1}


def test_a_c_lowered_only_1_2_times_does_not_flip_the_prospect_theory_reader():
    """The issue's example: 240 → 200 for sure (EV 1.2× in the gamble's favour) still reads as 'sure'."""
    weak = _risky(240, 200)
    assert readers.value(200) == pytest.approx(105.90, abs=1e-2) and 105.90 > 103.04
    assert readers.choice("biased", "risky_choice_framing", "wording", weak, "C") == {"A": 1, "B": 0}
    assert readers.choice("normative", "risky_choice_framing", "wording", weak, "C") == {"A": 0, "B": 1}
    rebuilt = _risky(240, 180)
    assert readers.choice("biased", "risky_choice_framing", "wording", rebuilt, "C") == {"A": 0, "B": 1}


def test_the_normative_reader_splits_an_exact_tie_evenly_and_takes_a_strict_winner():
    s = _risky(240, 180)
    for version in ("A", "A_prime", "B"):
        assert readers.choice("normative", "risky_choice_framing", "wording", s, version) == {"A": 0.5, "B": 0.5}
    assert readers.choice("normative", "risky_choice_framing", "wording", s, "C") == {"A": 0, "B": 1}


def test_base_rate_reader_takes_the_hit_rate_for_the_posterior_only_with_percentages(protocols):
    p = protocols["base_rate_neglect__wording__v0"]
    s = p["panel"][0]["structure"]  # 2 % base rate, 90 % hit rate, 5 % false alarms; 18 vs 49 flagged
    v = s["values"]
    case = next(l for l, r in s["roles"].items() if r == "case")
    clear = next(l for l, r in s["roles"].items() if r == "clear")
    pct = readers.biased_scores("base_rate_neglect", "wording", s, "A")
    assert pct[case] == pytest.approx(0.9 * v["pay_case"]) and pct[clear] == pytest.approx(0.1 * v["pay_clear"])
    assert readers.choice("biased", "base_rate_neglect", "wording", s, "A")[case] == 1
    # Natural frequencies: Bayes, 18/67 against 49/67, and the payouts make it an exact tie.
    assert readers.choice("biased", "base_rate_neglect", "wording", s, "B") == {case: 0.5, clear: 0.5}
    assert readers.choice("biased", "base_rate_neglect", "order", s, "B")[case] == 1


def test_sunk_cost_reader_books_the_spent_money_as_a_prior_loss(protocols):
    s = protocols["sunk_cost_fallacy__wording__v0"]["panel"][0]["structure"]
    v, c = s["values"], s["c_values"]
    stop = next(l for l, r in s["roles"].items() if r == "stop")
    finish = next(l for l, r in s["roles"].items() if r == "finish")
    scores = readers.biased_scores("sunk_cost_fallacy", "wording", s, "A")
    assert scores[stop] == pytest.approx(readers.value(v["stop_value"] - v["spent"]))
    p = v["p_pct"] / 100
    assert scores[finish] == pytest.approx(readers.cpt([(p, v["win"] - v["spent"]), (1 - p, -v["spent"])]))
    assert readers.choice("biased", "sunk_cost_fallacy", "wording", s, "A")[finish] == 1
    assert readers.choice("biased", "sunk_cost_fallacy", "wording", s, "C")[stop] == 1
    named = readers.biased_scores("sunk_cost_fallacy", "wording", s, "B")
    assert named[stop] == pytest.approx(scores[stop] + readers.value(-v["spent"]))
    assert math.isclose(named[finish], scores[finish])
    assert c["stop_value"] > v["stop_value"]


def test_reader_trials_look_like_runner_trials_and_the_real_grammar_reads_them(protocols):
    p = protocols["risky_choice_framing__wording__v1"]
    trials = readers.trials("biased", p)
    assert len(trials) == 4 * p["n"]
    for t in trials[:8]:
        assert t["response_text"].endswith(f"DECISION: {t['token']}")
        assert grammar.extract(t["response_text"], p["options"]).token == t["token"]
        assert t["outcome"] == "valid" and t["protocol_id"] == p["protocol_id"]
    ties = [t for t in readers.trials("normative", p) if t["item_id"] == "s01" and t["version"] == "A"]
    assert sorted(t["token"] for t in ties) == ["A"] * 4 + ["B"] * 4


def test_figures_come_from_the_real_measurement_record(protocols):
    p = protocols["base_rate_neglect__wording__v0"]
    record = readers.measure_reader("biased", p)
    assert record["record_type"] == "measurement"
    assert readers.figures("biased", p) == {"gap_ab_pct": record["gap_pct"], "gap_aa_prime_pct": record["gap_null_pct"],
                                            "gap_ac_pct": record["gap_positive_pct"],
                                            "stability_pct": record["stability_pct"]}


def test_every_reader_sees_what_the_design_promises_on_every_built_protocol(protocols):
    for pid, p in protocols.items():
        design = readers.design_figures(p)
        assert design == p["design_readers"], pid
        assert design["normative"]["gap_ab_pct"] == 0 and design["normative"]["gap_aa_prime_pct"] == 0, pid
        for reader in readers.READERS:
            assert design[reader]["gap_ac_pct"] >= p["theta_positive_pct"] + 10, (pid, reader)
        assert readers.design_failures(p, design) == [], pid
    for pid in ("risky_choice_framing__wording__v0", "base_rate_neglect__wording__v0"):
        assert protocols[pid]["design_readers"]["biased"]["gap_ab_pct"] >= 20


def test_design_checks_fail_on_a_deliberately_weak_c(protocols):
    """C changed only 1.2× in expected value (the old rule): the biased reader no longer flips."""
    p = copy.deepcopy(protocols["risky_choice_framing__wording__v0"])
    for item in p["panel"]:
        s = item["structure"]
        v = s["values"]
        s["c_values"] = dict(v, sure=v["total"] * v["p_pct"] // 120)  # gamble EV = 1.2 × the sure amount
        s["c_lotteries"] = {l: [[1, 1, s["c_values"]["sure"]]] if r == "sure" else s["lotteries"][l]
                            for l, r in s["roles"].items()}
    failures = readers.design_failures(p)
    assert any(item == "s01" and rule == "design_c_reverses_biased" for item, rule, _ in failures)
    assert not any(rule == "design_c_normative" for _, rule, _ in failures)
    # Weaker still (10 % below the equal-EV amount): the biased reader never flips, the positive control fails.
    for item in p["panel"]:
        s = item["structure"]
        s["c_values"] = dict(s["values"], sure=s["values"]["sure"] * 9 // 10)
    failures = readers.design_failures(p)
    assert ("-", "design_positive_control") in {(i, r) for i, r, _ in failures}
    assert sum(rule == "design_c_reverses_biased" for _, rule, _ in failures) >= 8


def test_design_checks_fail_when_the_open_panel_cannot_see_its_bias(protocols):
    p = copy.deepcopy(protocols["risky_choice_framing__wording__v0"])
    design = readers.design_figures(p)
    design["biased"]["gap_ab_pct"] = 10.0
    assert ("-", "design_biased_gap_ab") in {(i, r) for i, r, _ in readers.design_failures(p, design)}
    design = readers.design_figures(p)
    design["normative"]["gap_aa_prime_pct"] = 3.3
    assert "design_normative_zero" in {r for _, r, _ in readers.design_failures(p, design)}
