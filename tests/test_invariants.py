"""Gate 1 (measure/invariants.py): the structure and the texts' numbers, pass and fail."""
import copy

from measure import invariants
from panels.build import load_scenarios
from panels import families
from panels.scenario import derived, lotteries


def _one_item(protocol, mutate):
    """A copy of the protocol holding only its first item, after ``mutate(item)``."""
    p = copy.deepcopy(protocol)
    item = p["panel"][0]
    mutate(item)
    return p, item


def _rules(protocol, item):
    return {f.rule for f in invariants.check_item(protocol, item)}


def test_every_built_protocol_passes_gate_1(protocols):
    assert invariants.check_all(protocols.values()) == []


def test_gate_1_family_formulas_agree_with_the_panel_builders():
    for family in families.names():
        for scenario in load_scenarios(family):
            for numbers in (scenario.values, scenario.c_values):
                assert invariants.derived(family, numbers) == derived(family, numbers)
                assert invariants.lotteries(family, numbers) == lotteries(family, numbers)


def _replace_in_option(item, version, letter, old, new):
    lines = item["versions"][version].split("\n")
    i = next(k for k, line in enumerate(lines) if line.startswith(f"Option {letter}: "))
    assert old in lines[i]
    lines[i] = lines[i].replace(old, new, 1)
    item["versions"][version] = "\n".join(lines)


def test_a_b_that_quietly_changes_a_payoff_fails_even_with_an_untouched_structure(protocols):
    p = protocols["sunk_cost_fallacy__wording__v0"]
    item = p["panel"][0]
    stop = next(l for l, r in item["structure"]["roles"].items() if r == "stop")
    value = f"{item['structure']['values']['stop_value']:,}"
    broken, b_item = _one_item(p, lambda it: _replace_in_option(it, "B", stop, value, "61,000"))
    failures = invariants.check_item(broken, b_item)
    assert [(f.rule, f.item_id) for f in failures] == [("option_numbers", "s01")]
    assert "B:" in failures[0].detail and "61" not in failures[0].detail


def test_a_changed_probability_in_the_loss_frame_fails(protocols):
    p = protocols["risky_choice_framing__wording__v0"]
    gamble = next(l for l, r in p["panel"][0]["structure"]["roles"].items() if r == "gamble")
    q = p["panel"][0]["structure"]["values"]["p_pct"]
    broken, item = _one_item(p, lambda it: _replace_in_option(it, "B", gamble, f"{100 - q}%", f"{99 - q}%"))
    assert _rules(broken, item) == {"option_numbers"}


def test_c_text_must_quote_c_numbers(protocols):
    p = protocols["risky_choice_framing__order__v0"]
    s = p["panel"][0]["structure"]
    sure = next(l for l, r in s["roles"].items() if r == "sure")
    # C quoting A's sure amount is C failing to make its one change.
    broken, item = _one_item(p, lambda it: _replace_in_option(
        it, "C", sure, f"{s['c_values']['sure']:,}", f"{s['values']['sure']:,}"))
    assert _rules(broken, item) == {"option_numbers"}


def test_unequal_expected_values_fail(protocols):
    p = protocols["risky_choice_framing__order__v0"]
    def mutate(it):
        s = it["structure"]
        s["values"]["total"] += 10
        s["c_values"]["total"] += 10
    broken, item = _one_item(p, mutate)
    assert "equal_ev" in _rules(broken, item) or "lotteries_match" in _rules(broken, item)


def test_declared_lotteries_must_follow_from_the_numbers(protocols):
    p = protocols["base_rate_neglect__order__v0"]
    def mutate(it):
        letter = sorted(it["structure"]["lotteries"])[0]
        it["structure"]["lotteries"][letter][0][2] += 1
    broken, item = _one_item(p, mutate)
    assert _rules(broken, item) == {"lotteries_match"}


def test_c_must_change_exactly_one_number(protocols):
    p = protocols["sunk_cost_fallacy__order__v0"]
    broken, item = _one_item(p, lambda it: it["structure"]["c_values"].__setitem__("win", 1))
    assert _rules(broken, item) == {"one_number_changed"}


def test_c_needs_exactly_one_strictly_dominant_option_of_the_right_role(protocols):
    p = protocols["risky_choice_framing__anchoring__v0"]
    def flip(it):
        s = it["structure"]
        other = next(l for l in s["roles"] if l != s["c_correct"])
        s["c_correct"] = other
    broken, item = _one_item(p, flip)
    assert _rules(broken, item) == {"c_dominance"}

    def wrong_role(it):
        # Make the sure option dominate in C: the one a gain-frame reader would pick anyway.
        s = it["structure"]
        s["c_values"]["sure"] = s["values"]["total"] - 1
        s["c_lotteries"] = {l: invariants.lotteries("risky_choice_framing", s["c_values"])[r]
                            for l, r in s["roles"].items()}
        s["c_expected_value"] = {l: invariants.fraction_text(invariants.expected_value(rows))
                                 for l, rows in s["c_lotteries"].items()}
        s["c_correct"] = next(l for l, r in s["roles"].items() if r == "sure")
    broken, item = _one_item(p, wrong_role)
    failures = invariants.check_item(broken, item)
    assert failures[0].rule == "c_dominance" and "would not pick" in failures[0].detail


def test_a_correct_answer_declared_for_a_fails(protocols):
    p = protocols["sunk_cost_fallacy__default__v0"]
    broken, item = _one_item(p, lambda it: it["structure"].__setitem__("correct", "A"))
    assert _rules(broken, item) == {"correct_answer"}


def test_a_missing_or_extra_option_line_fails(protocols):
    p = protocols["base_rate_neglect__wording__v0"]
    def drop(it):
        lines = it["versions"]["B"].split("\n")
        it["versions"]["B"] = "\n".join(l for l in lines if not l.startswith("Option B: "))
    broken, item = _one_item(p, drop)
    assert _rules(broken, item) == {"option_count"}
    def third(it):
        it["versions"]["A"] = it["versions"]["A"].replace("Option A: ", "Option C: x\nOption A: ", 1)
    broken, item = _one_item(p, third)
    assert _rules(broken, item) == {"option_count"}
    broken, item = _one_item(p, lambda it: None)
    broken["options"] = ["A", "B", "C"]
    assert _rules(broken, item) == {"option_count"}


def test_a_stray_number_in_the_context_fails(protocols):
    p = protocols["risky_choice_framing__wording__v0"]
    broken, item = _one_item(p, lambda it: it["versions"].__setitem__(
        "A_prime", it["versions"]["A_prime"].replace(" ", " 37 ", 1)))
    assert _rules(broken, item) == {"text_numbers"}


def test_the_rates_must_be_stated_as_percentages_or_frequencies(protocols):
    p = protocols["base_rate_neglect__order__v0"]
    base = p["panel"][0]["structure"]["values"]["base_pct"]
    broken, item = _one_item(p, lambda it: it["versions"].__setitem__(
        "B", it["versions"]["B"].replace(f"{base}%", "some", 1)))
    assert _rules(broken, item) == {"context_numbers"}


def test_sunk_cost_text_must_state_the_money_already_spent(protocols):
    p = protocols["sunk_cost_fallacy__order__v0"]
    spent = f"€{p['panel'][0]['structure']['values']['spent']:,}"
    broken, item = _one_item(p, lambda it: it["versions"].__setitem__(
        "C", it["versions"]["C"].replace(spent, "a lot of money")))
    assert _rules(broken, item) == {"context_numbers"}


def test_anchoring_versions_carry_exactly_one_lone_anchor_number(protocols):
    p = protocols["sunk_cost_fallacy__anchoring__v0"]
    def no_anchor(it):
        a = it["versions"]["A"].split("\n")
        b = it["versions"]["B"].split("\n")
        line = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
        del b[line]
        it["versions"]["B"] = "\n".join(b)
    broken, item = _one_item(p, no_anchor)
    assert _rules(broken, item) == {"text_numbers"}
    # The same removal is fine in a type that has no anchor... but not in an anchoring protocol.
    p2 = protocols["sunk_cost_fallacy__order__v0"]
    assert invariants.check_item(p2, p2["panel"][0]) == []


def test_a_version_without_the_instruction_fails(protocols):
    p = protocols["risky_choice_framing__default__v1"]
    broken, item = _one_item(p, lambda it: it["versions"].__setitem__(
        "C", it["versions"]["C"].replace("DECISION: B", "DECISION: maybe")))
    assert _rules(broken, item) == {"instruction"}


def test_panel_shape_is_checked(protocols):
    p = copy.deepcopy(protocols["risky_choice_framing__wording__v0"])
    p["panel"] = p["panel"][:14]
    assert [f.rule for f in invariants.check_protocol(p)] == ["panel"]
    assert invariants.check_protocol({"protocol_id": "x", "panel": []})[0].rule == "panel"
    assert invariants.check_item({"protocol_id": "x", "family": "nope"}, {"item_id": "s01"})[0].rule == "family"


def test_failure_messages_never_quote_scenario_text(protocols):
    from panels.template import words

    def runs(text, n=4):
        w = words(text)
        return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}

    for pid in ("risky_choice_framing__wording__v0", "base_rate_neglect__anchoring__v0"):
        p = protocols[pid]
        broken, item = _one_item(p, lambda it: it["versions"].__setitem__(
            "B", it["versions"]["B"].replace("Option A: ", "Option A: 999 ", 1).replace("\n\n", "\n\n12 ", 1)))
        failures = invariants.check_item(broken, item)
        assert failures
        body = set().union(*(runs(t[: -len(p["instruction"])]) for t in item["versions"].values()))
        for failure in failures:
            assert not runs(str(failure)) & body


# ----------------------------------------------------------------- order-aware rules (issue 11)
def _swap_in_line(item, version, want, x: int, y: int):
    """Swap the first occurrences of two numbers inside the first line of ``version`` that has both."""
    lines = item["versions"][version].split("\n")
    i = next(k for k, line in enumerate(lines) if want(line) and f"{x:,}" in line and f"{y:,}" in line)
    lines[i] = lines[i].replace(f"{x:,}", "@@", 1).replace(f"{y:,}", f"{x:,}", 1).replace("@@", f"{y:,}", 1)
    item["versions"][version] = "\n".join(lines)


def test_swapping_the_gambles_two_probabilities_fails_option_numbers(protocols):
    """The swap the old set-based gate let through: the gamble now saves all with the other chance."""
    p = protocols["risky_choice_framing__wording__v0"]
    v = p["panel"][0]["structure"]["values"]
    broken, item = _one_item(p, lambda it: _swap_in_line(it, "B", lambda l: l.startswith("Option"),
                                                         v["p_pct"], 100 - v["p_pct"]))
    assert _rules(broken, item) == {"option_numbers"}
    assert invariants.check_item(p, p["panel"][0]) == []


def test_swapping_the_two_flagged_counts_fails_context_numbers(protocols):
    p = protocols["base_rate_neglect__wording__v0"]
    d = invariants.derived("base_rate_neglect", p["panel"][0]["structure"]["values"])
    broken, item = _one_item(p, lambda it: _swap_in_line(it, "B", lambda l: not l.startswith("Option"),
                                                         d["flagged_true"], d["flagged_false"]))
    assert _rules(broken, item) == {"context_numbers"}


def test_b_of_the_risky_wording_type_must_quote_the_loss_frames_count(protocols):
    """B describes losses: quoting the saved count where the lost count belongs fails."""
    p = protocols["risky_choice_framing__wording__v0"]
    s = p["panel"][0]["structure"]
    sure = next(l for l, r in s["roles"].items() if r == "sure")
    lost, saved = s["values"]["total"] - s["values"]["sure"], s["values"]["sure"]
    broken, item = _one_item(p, lambda it: _replace_in_option(it, "B", sure, f"{lost:,}", f"{saved:,}"))
    assert _rules(broken, item) == {"option_numbers"}


def test_the_sunk_phrase_amount_in_a_is_a_stray_number_in_the_stop_option(protocols):
    p = protocols["sunk_cost_fallacy__wording__v0"]
    b_stop_line = next(l for l in p["panel"][0]["versions"]["B"].split("\n") if "already spent" in l)
    def put_phrase_into_a(it):
        lines = it["versions"]["A"].split("\n")
        label = b_stop_line[:len("Option A: ")]
        i = next(k for k, line in enumerate(lines) if line.startswith(label))
        lines[i] = b_stop_line
        it["versions"]["A"] = "\n".join(lines)
    broken, item = _one_item(p, put_phrase_into_a)
    assert "option_numbers" in _rules(broken, item)


def test_rates_as_frequencies_in_a_version_that_should_give_percentages_fails(protocols):
    """A's frame is percentages: A carrying B's frequency paragraph is not A."""
    p = protocols["base_rate_neglect__wording__v0"]
    broken, item = _one_item(p, lambda it: it["versions"].__setitem__("A", it["versions"]["B"]))
    assert _rules(broken, item) == {"context_numbers"}


def test_a_stray_repeat_of_the_amount_at_stake_is_allowed_but_another_number_is_not(protocols):
    p = protocols["risky_choice_framing__order__v0"]
    total = p["panel"][0]["structure"]["values"]["total"]
    ok, item_ok = _one_item(p, lambda it: it["versions"].__setitem__(
        "A", it["versions"]["A"].replace(". ", f". All {total:,} count. ", 1)))
    assert _rules(ok, item_ok) == set()
    broken, item = _one_item(p, lambda it: it["versions"].__setitem__(
        "A", it["versions"]["A"].replace(". ", f". All {total + 1:,} count. ", 1)))
    assert _rules(broken, item) == {"text_numbers"}


def test_version_frames_follow_the_type():
    assert invariants.version_frame("risky_choice_framing", "wording", "B") == "loss"
    assert invariants.version_frame("risky_choice_framing", "order", "B") == "gain"
    assert invariants.version_frame("risky_choice_framing", "wording", "C") == "gain"
    assert invariants.version_frame("base_rate_neglect", "wording", "B") == "freq"
    assert invariants.version_frame("base_rate_neglect", "wording", "A_prime") == "pct"
    assert invariants.version_frame("sunk_cost_fallacy", "wording", "B") == "sunk"
