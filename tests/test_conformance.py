"""Gate 1b (panels/conformance.py): each catalogue rule passes real items and rejects broken ones."""
import copy

from panels import conformance
from panels.template import words


def _lines(item, version):
    return item["versions"][version].split("\n")


def _set_line(item, version, index, text):
    lines = _lines(item, version)
    lines[index] = text
    item["versions"][version] = "\n".join(lines)


def _diff_line(item):
    a, b = _lines(item, "A"), _lines(item, "B")
    return next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)


def _rules(protocol, item):
    return [f.rule for f in conformance.check_item(protocol, item)]


def _broken(protocols, pid, mutate, index=0):
    p = protocols[pid]
    item = copy.deepcopy(p["panel"][index])
    mutate(item)
    return p, item


def test_every_built_protocol_passes_gate_1b(protocols):
    assert conformance.check_all(protocols.values()) == []


def test_the_self_test_breaks_every_rule_and_each_break_is_rejected(protocols):
    rows = conformance.self_test(protocols.values())
    assert sorted(set(r["rule"] for r in rows)) == sorted(conformance.CATALOGUE)
    breakages = {(r["rule"], r["breakage"]) for r in rows}
    assert ("wording_base_rate", "a stray word in the rates paragraph") in breakages
    assert ("gate1:option_numbers", "two numbers of one line swapped") in breakages
    assert ("gate1:context_numbers", "two numbers of one line swapped") in breakages
    # The option lines' own words (gate 1 reads only their numbers), C, and a needed count gone.
    assert ("wording_risky", "a word of an option line replaced by another of its words") in breakages
    assert ("wording_risky", "an option line keeps A's gain wording") in breakages
    assert ("c_numbers_only", "C changes a second number") in breakages
    assert ("c_numbers_only", "C changes a word") in breakages
    assert ("wording_base_rate", "a needed count written as another") in breakages
    assert all(r["rejected"] and r["accepted_original"] for r in rows), rows
    assert conformance.self_test_failures(protocols.values()) == []


def test_the_self_test_reports_an_untested_rule():
    assert {f.rule for f in conformance.self_test_failures([])} == {f"self_test:{r}" for r in conformance.CATALOGUE}


def test_the_self_test_would_catch_a_rule_that_accepts_everything(protocols, monkeypatch):
    monkeypatch.setattr(conformance, "_rule_order", lambda *args: None)
    failures = conformance.self_test_failures(protocols.values())
    assert [f.rule for f in failures] == ["self_test:order"]


def test_the_self_test_would_catch_a_risky_rule_that_reads_only_the_labels(protocols, monkeypatch):
    """The rule as it was (labels kept, words unread) lets the self-test's option-line breakages through."""
    monkeypatch.setattr(conformance, "_check_option_frames", lambda *args: None)
    failures = conformance.self_test_failures(protocols.values())
    assert {f.rule for f in failures} == {"self_test:wording_risky"}
    assert any("option line" in f.detail for f in failures)


def test_the_self_test_would_catch_a_c_rule_that_lets_any_number_change(protocols, monkeypatch):
    monkeypatch.setattr(conformance, "_c_changes", lambda item: _AnyPair())
    failures = conformance.self_test_failures(protocols.values())
    assert [f.rule for f in failures] == ["self_test:c_numbers_only"]
    assert "second number" in failures[0].detail


class _AnyPair:
    def __contains__(self, pair):
        return True

    def __iter__(self):
        return iter(())


def test_the_self_test_would_catch_a_frequency_rule_that_checks_only_the_set(protocols, monkeypatch):
    monkeypatch.setattr(conformance, "_check_frequency_places", lambda *args: None)
    failures = conformance.self_test_failures(protocols.values())
    assert [f.rule for f in failures] == ["self_test:wording_base_rate"]
    assert "needed count" in failures[0].detail


# ---------------------------------------------------------------- order
def test_order_rejects_a_b_that_also_changes_another_line(protocols):
    p, item = _broken(protocols, "sunk_cost_fallacy__order__v0",
                      lambda it: _set_line(it, "B", 0, _lines(it, "B")[0] + " Really."))
    assert _rules(p, item) == ["order"]


def test_order_rejects_a_b_identical_to_a(protocols):
    p, item = _broken(protocols, "sunk_cost_fallacy__order__v0",
                      lambda it: it["versions"].__setitem__("B", it["versions"]["A"]))
    assert _rules(p, item) == ["order"]


def test_order_rejects_option_lines_that_change_words(protocols):
    def mutate(it):
        i = _diff_line(it)
        _set_line(it, "B", i, _lines(it, "B")[i].replace(" the ", " a ", 1))
    p, item = _broken(protocols, "base_rate_neglect__order__v1", mutate)
    assert _rules(p, item) == ["order"]


# ---------------------------------------------------------------- default
def test_default_rejects_a_second_changed_line(protocols):
    p, item = _broken(protocols, "risky_choice_framing__default__v0",
                      lambda it: _set_line(it, "B", 0, _lines(it, "B")[0].replace(".", "!", 1)))
    assert _rules(p, item) == ["default"]


def test_default_rejects_a_changed_word_instead_of_the_letter(protocols):
    def mutate(it):
        i = _diff_line(it)
        a_line = _lines(it, "A")[i]
        _set_line(it, "B", i, a_line.replace(" Option ", " Choice ", 1))
    p, item = _broken(protocols, "risky_choice_framing__default__v0", mutate)
    assert _rules(p, item) == ["default"]


def test_default_rejects_a_c_that_switches_the_default(protocols):
    def mutate(it):
        i = _diff_line(it)
        _set_line(it, "C", i, _lines(it, "B")[i])
    p, item = _broken(protocols, "base_rate_neglect__default__v0", mutate)
    assert "default" in _rules(p, item)


def test_default_rejects_an_a_whose_default_is_cs_dominant_option(protocols):
    def mutate(it):
        a, b = it["versions"]["A"], it["versions"]["B"]
        it["versions"]["A"], it["versions"]["B"] = b, a
        i = _diff_line(it)
        _set_line(it, "C", i, _lines(it, "A")[i])
    p, item = _broken(protocols, "sunk_cost_fallacy__default__v0", mutate)
    assert "default" in _rules(p, item)


# ---------------------------------------------------------------- anchoring
def test_anchoring_rejects_an_anchor_that_appears_elsewhere_in_the_item(protocols):
    def mutate(it):
        i = _diff_line(it)
        b_line = _lines(it, "B")[i]
        anchor = next(t for t in conformance.tokens(b_line) if conformance.is_number(t))
        total = it["structure"]["values"]["spent"]
        _set_line(it, "B", i, b_line.replace(anchor, f"{total:,}"))
    p, item = _broken(protocols, "sunk_cost_fallacy__anchoring__v0", mutate)
    assert _rules(p, item) == ["anchoring"]


def test_anchoring_rejects_two_changed_tokens(protocols):
    def mutate(it):
        i = _diff_line(it)
        _set_line(it, "B", i, _lines(it, "B")[i].replace(",", ";", 1))
    p, item = _broken(protocols, "base_rate_neglect__anchoring__v0", mutate)
    assert _rules(p, item) == ["anchoring"]


def test_anchoring_rejects_a_changed_word_instead_of_a_number(protocols):
    def mutate(it):
        i = _diff_line(it)
        a_line = _lines(it, "A")[i]
        word = next(t for t in conformance.tokens(a_line) if t.isalpha() and len(t) > 3)
        _set_line(it, "B", i, a_line.replace(word, word.upper(), 1))
    p, item = _broken(protocols, "risky_choice_framing__anchoring__v0", mutate)
    assert _rules(p, item) == ["anchoring"]


def test_anchoring_rejects_an_anchor_line_carrying_another_number(protocols):
    def mutate(it):
        i = _diff_line(it)
        for version in ("A", "B", "C"):
            _set_line(it, version, i, _lines(it, version)[i] + " 7")
    p, item = _broken(protocols, "risky_choice_framing__anchoring__v1", mutate)
    assert "anchoring" in _rules(p, item)


def test_anchoring_rejects_a_c_with_another_anchor(protocols):
    def mutate(it):
        i = _diff_line(it)
        _set_line(it, "C", i, _lines(it, "B")[i])
    p, item = _broken(protocols, "sunk_cost_fallacy__anchoring__v1", mutate)
    assert "anchoring" in _rules(p, item)


# ---------------------------------------------------------------- wording, per family
def test_risky_wording_rejects_a_changed_context_line(protocols):
    p, item = _broken(protocols, "risky_choice_framing__wording__v0",
                      lambda it: _set_line(it, "B", 2, _lines(it, "B")[2].replace(" the ", " a ", 1)))
    assert _rules(p, item) == ["wording_risky"]


def test_risky_wording_rejects_swapped_option_labels(protocols):
    def mutate(it):
        b = it["versions"]["B"]
        it["versions"]["B"] = b.replace("Option A: ", "Option X: ").replace("Option B: ", "Option A: ").replace(
            "Option X: ", "Option B: ")
    p, item = _broken(protocols, "risky_choice_framing__wording__v0", mutate)
    assert _rules(p, item) == ["wording_risky"]


def _option_line(item, version, letter):
    lines = _lines(item, version)
    return next(i for i, line in enumerate(lines) if line.startswith(f"Option {letter}: "))


def _edit_option(item, version, letter, edit):
    i = _option_line(item, version, letter)
    _set_line(item, version, i, edit(_lines(item, version)[i]))


def _risky_b_fails_gate_1b_only(protocols, pid, mutate, index=0):
    """The broken risky item, its gate 1b failures — and proof that gate 1 cannot see the change."""
    from measure import invariants

    p, item = _broken(protocols, pid, mutate, index)
    assert invariants.check_item(p, item) == [], "gate 1 rejects it too; the test must isolate gate 1b"
    return conformance.check_item(p, item)


def test_risky_wording_rejects_a_loss_line_that_says_saved_naming_the_word(protocols):
    failures = _risky_b_fails_gate_1b_only(protocols, "risky_choice_framing__wording__v0", lambda it: _edit_option(
        it, "B", "A", lambda line: line.replace(" will be lost", " will be saved", 1)))
    assert [f.rule for f in failures] == ["wording_risky"]
    assert failures[0].detail.startswith("B's option A line") and "'saved'" in failures[0].detail


def test_risky_wording_rejects_the_gambles_none_and_all_exchanged(protocols):
    def swap(line):
        return line.replace(" none ", " @@ ", 1).replace(" all ", " none ", 1).replace(" @@ ", " all ", 1)
    failures = _risky_b_fails_gate_1b_only(protocols, "risky_choice_framing__wording__v0",
                                           lambda it: _edit_option(it, "B", "B", swap))
    assert [f.rule for f in failures] == ["wording_risky"]
    assert "B's option B line" in failures[0].detail and "'all' where the template has 'none'" in failures[0].detail


def test_risky_wording_rejects_a_recommendation_appended_to_an_option_line(protocols):
    failures = _risky_b_fails_gate_1b_only(protocols, "risky_choice_framing__wording__v1", lambda it: _edit_option(
        it, "B", "B", lambda line: line + " Recommended by the experts."), index=4)
    assert [f.rule for f in failures] == ["wording_risky"]
    assert "a stray 'Recommended'" in failures[0].detail


def test_risky_wording_names_a_missing_word(protocols):
    failures = _risky_b_fails_gate_1b_only(protocols, "risky_choice_framing__wording__v0", lambda it: _edit_option(
        it, "B", "B", lambda line: line.replace(" of them", " them", 1)))
    assert [f.rule for f in failures] == ["wording_risky"] and "a missing 'of'" in failures[0].detail


def test_risky_wording_rejects_another_valid_loss_wording_than_as_choices(protocols):
    """B may not pick other loss phrasings than A's choices give: 'will die' for 'will be lost' is still a change."""
    p = protocols["risky_choice_framing__wording__v0"]
    item = p["panel"][0]
    line = _lines(item, "B")[_option_line(item, "B", "A")]
    assert " will be lost, " in line  # the loss template also offers "will die"
    failures = _risky_b_fails_gate_1b_only(protocols, "risky_choice_framing__wording__v0", lambda it: _edit_option(
        it, "B", "A", lambda text: text.replace(" will be lost, ", " will die, ", 1)))
    assert [f.rule for f in failures] == ["wording_risky"]


def test_risky_wording_rejects_an_a_option_line_that_is_not_its_gain_template(protocols):
    """A word added to A's and B's option line alike: B still 'replays' A, but A is off its template."""
    def mutate(it):
        for version in ("A", "B"):
            _edit_option(it, version, "B", lambda line: line.replace(": ", ": surely ", 1))
    p, item = _broken(protocols, "risky_choice_framing__wording__v0", mutate)
    failures = [f for f in conformance.check_item(p, item) if f.rule == "wording_risky"]
    assert len(failures) == 1 and failures[0].detail.startswith("A's option B line")
    assert "'surely'" in failures[0].detail


def test_the_risky_option_line_rule_alone_rejects_what_gate_1_cannot_see(protocols):
    """The catalogue check itself, called directly on lines (no gate 1, no check_item)."""
    import pytest

    name, rule = conformance.b_rule("risky_choice_framing", "wording")
    p = protocols["risky_choice_framing__wording__v1"]
    for item in p["panel"]:
        rule(_lines(item, "A"), _lines(item, "B"), item, p["options"])  # every real item passes
        broken = copy.deepcopy(item)
        gamble = next(letter for letter, role in item["structure"]["roles"].items() if role == "gamble")
        _edit_option(broken, "B", gamble, lambda line: line.replace(" chance ", " risk ", 1))
        assert _lines(broken, "B") != _lines(item, "B")
        with pytest.raises(Exception) as caught:
            rule(_lines(broken, "A"), _lines(broken, "B"), broken, p["options"])
        assert caught.value.rule == name == "wording_risky"


def test_every_risky_wording_b_line_is_the_loss_template_replaying_as_choices(protocols):
    from panels.families.risky_choice_framing import option_frames
    from panels.template import render_choices

    for series in ("v0", "v1"):
        p = protocols[f"risky_choice_framing__wording__{series}"]
        for item in p["panel"]:
            for letter, role in item["structure"]["roles"].items():
                frames, names = option_frames(item["item_id"], role)
                line_a = _lines(item, "A")[_option_line(item, "A", letter)]
                line_b = _lines(item, "B")[_option_line(item, "B", letter)]
                readings, _ = conformance.template_readings(frames["gain"], conformance.tokens(line_a)[3:], names)
                assert readings
                values = dict(item["structure"]["values"], q_pct=100 - item["structure"]["values"]["p_pct"],
                              sure_lost=item["structure"]["values"]["total"] - item["structure"]["values"]["sure"])
                choices, captured = readings[0]
                assert f"Option {letter}: " + render_choices(frames["loss"], dict(values, **captured), choices) \
                    == line_b


def test_the_builder_refuses_gain_and_loss_templates_that_are_not_parallel():
    import dataclasses

    import pytest

    from panels.families import risky_choice_framing
    from panels.scenario import ScenarioError

    scenario = risky_choice_framing.SCENARIOS[0]
    risky_choice_framing.check_frames(scenario)
    sure = dict(scenario.options["sure"])
    for loss in (sure["loss"].replace("{for certain|", "{for sure|for certain|", 1),   # another group size
                 sure["loss"].replace("${sure_lost}", "${sure}", 1),                    # the gain number
                 sure["loss"].replace("{exactly|precisely} ", "", 1)):                  # a group dropped
        bad = dataclasses.replace(scenario, options=dict(scenario.options, sure=dict(sure, loss=loss)))
        with pytest.raises(ScenarioError, match="s01 option sure"):
            risky_choice_framing.check_frames(bad)


def test_sunk_wording_rejects_another_amount_than_a_states(protocols):
    def mutate(it):
        i = _diff_line(it)
        spent = f"{it['structure']['values']['spent']:,}"
        _set_line(it, "B", i, _lines(it, "B")[i].replace(spent, "1,000", 1))
    p, item = _broken(protocols, "sunk_cost_fallacy__wording__v0", mutate)
    assert _rules(p, item) == ["wording_sunk"]


def test_sunk_wording_rejects_a_reworded_phrase(protocols):
    def mutate(it):
        i = _diff_line(it)
        _set_line(it, "B", i, _lines(it, "B")[i].replace("giving up", "throwing away", 1))
    p, item = _broken(protocols, "sunk_cost_fallacy__wording__v0", mutate, index=3)
    assert _rules(p, item) == ["wording_sunk"]


def test_sunk_wording_rejects_the_phrase_plus_any_other_change(protocols):
    p, item = _broken(protocols, "sunk_cost_fallacy__wording__v1",
                      lambda it: _set_line(it, "B", 0, _lines(it, "B")[0][:-1]))
    assert _rules(p, item) == ["wording_sunk"]


def test_base_rate_wording_rejects_frequencies_that_do_not_equal_the_percentages(protocols):
    def mutate(it):
        i = _diff_line(it)
        v = it["structure"]["values"]
        population = f"{v['population']:,}"
        _set_line(it, "B", i, _lines(it, "B")[i].replace(population, f"{v['population'] * 2:,}", 1))
    p, item = _broken(protocols, "base_rate_neglect__wording__v0", mutate)
    assert _rules(p, item) == ["wording_base_rate"]


def test_base_rate_wording_rejects_a_changed_option_line(protocols):
    def mutate(it):
        b = _lines(it, "B")
        i = next(k for k, line in enumerate(b) if line.startswith("Option A: "))
        _set_line(it, "B", i, b[i].replace(" the ", " that ", 1))
    p, item = _broken(protocols, "base_rate_neglect__wording__v0", mutate)
    assert _rules(p, item) == ["wording_base_rate"]


def test_base_rate_wording_rejects_a_stray_word_in_the_rates_paragraph_by_name(protocols):
    def mutate(it):
        i = _diff_line(it)
        _set_line(it, "B", i, _lines(it, "B")[i].replace(", ", ", in fact, ", 1))
    p, item = _broken(protocols, "base_rate_neglect__wording__v0", mutate)
    failures = conformance.check_item(p, item)
    assert [f.rule for f in failures] == ["wording_base_rate"]
    assert "catalogue" in failures[0].detail and "in fact" not in failures[0].detail


def test_base_rate_wording_rejects_an_a_whose_rates_paragraph_is_not_the_catalogue_form(protocols):
    """A reworded A paragraph (and B to match, the numbers right) still fails: A too must be the catalogue."""
    def mutate(it):
        i = _diff_line(it)
        for version in ("A", "B"):
            lines = _lines(it, version)
            first = conformance.tokens(lines[i])[0]
            _set_line(it, version, i, lines[i].replace(first, "Indeed " + first, 1))
    p, item = _broken(protocols, "base_rate_neglect__wording__v0", mutate)
    failures = [f for f in conformance.check_item(p, item) if f.rule == "wording_base_rate"]
    assert len(failures) == 1 and failures[0].detail.startswith("A's rates paragraph")


def test_base_rate_wording_a_and_b_differ_only_in_the_rates_paragraph_and_its_format_words(protocols):
    from panels.render import catalogue_rates
    p = protocols["base_rate_neglect__wording__v0"]
    for item in p["panel"]:
        a, b = _lines(item, "A"), _lines(item, "B")
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        assert len(a) == len(b) and len(diff) == 1
        v = item["structure"]["values"]
        assert a[diff[0]] == catalogue_rates("base_rate_neglect", item["item_id"], "pct", v)
        assert b[diff[0]] == catalogue_rates("base_rate_neglect", item["item_id"], "freq", v)


def _others_as_population(item):
    """The others' count in B's rates paragraph written as the population: the number set still fits."""
    i = _diff_line(item)
    v = item["structure"]["values"]
    others = v["population"] - v["population"] * v["base_pct"] // 100
    line = _lines(item, "B")[i]
    assert f"{others:,}" in line
    _set_line(item, "B", i, line.replace(f"{others:,}", f"{v['population']:,}", 1))


def test_base_rate_wording_rejects_a_missing_needed_count_in_gate_1b_itself(protocols):
    """Gate 1 rejects this B too; gate 1b must reject it on its own, naming the count's place."""
    p, item = _broken(protocols, "base_rate_neglect__wording__v0", _others_as_population)
    failures = conformance.check_item(p, item)
    assert [f.rule for f in failures] == ["wording_base_rate"]
    assert "others" in failures[0].detail


def test_the_natural_frequency_rule_alone_rejects_a_missing_needed_count(protocols):
    """The catalogue check itself, called directly (no gate 1): every item, the others written as the population."""
    import pytest

    name, rule = conformance.b_rule("base_rate_neglect", "wording")
    p = protocols["base_rate_neglect__wording__v1"]
    for item in p["panel"]:
        rule(_lines(item, "A"), _lines(item, "B"), item, p["options"])
        broken = copy.deepcopy(item)
        _others_as_population(broken)
        with pytest.raises(Exception) as caught:
            rule(_lines(broken, "A"), _lines(broken, "B"), broken, p["options"])
        assert caught.value.rule == name == "wording_base_rate"


def test_frequencies_match_the_percentages_exactly_or_not_at_all():
    # 2 % of 1,000 are 20; 90 % of them 18 flagged; 5 % of the other 980 are 49.
    assert conformance.frequencies_match([2, 90, 5], [1000, 20, 18, 20, 49, 980])
    assert conformance.frequencies_match([5, 2, 90], [1000, 20, 18, 49])
    assert not conformance.frequencies_match([2, 90, 5], [1000, 20, 18, 50, 980])
    assert not conformance.frequencies_match([2, 90, 5], [1000, 20, 18, 49, 7])
    assert not conformance.frequencies_match([3, 90, 5], [1000, 20, 18, 49, 980])


# ---------------------------------------------------------------- A′ and C
def test_a_prime_must_not_change_a_letter_or_digit(protocols):
    p, item = _broken(protocols, "base_rate_neglect__wording__v0",
                      lambda it: it["versions"].__setitem__("A_prime", it["versions"]["A_prime"].replace("e", "a", 1)))
    assert _rules(p, item) == ["a_prime"]
    p, item = _broken(protocols, "base_rate_neglect__wording__v0",
                      lambda it: it["versions"].__setitem__("A_prime", it["versions"]["A"]))
    assert _rules(p, item) == ["a_prime"]


def test_c_may_differ_from_a_only_in_numbers(protocols):
    p, item = _broken(protocols, "risky_choice_framing__order__v0",
                      lambda it: it["versions"].__setitem__("C", it["versions"]["C"].replace(" the ", " a ", 1)))
    assert _rules(p, item) == ["c_numbers_only"]
    p, item = _broken(protocols, "risky_choice_framing__order__v0",
                      lambda it: it["versions"].__setitem__("C", it["versions"]["A"]))
    assert _rules(p, item) == ["c_numbers_only"]


def test_c_may_change_only_the_number_its_structure_changes(protocols):
    """A second changed number in C fails gate 1b's C rule itself, not only gate 1."""
    def mutate(it):
        total = it["structure"]["values"]["total"]
        it["versions"]["C"] = it["versions"]["C"].replace(f"{total:,}", f"{total + 10:,}", 1)
    p, item = _broken(protocols, "risky_choice_framing__wording__v0", mutate)
    failures = conformance.check_item(p, item)
    assert [f.rule for f in failures] == ["c_numbers_only"]
    assert "does not change" in failures[0].detail


def test_gate_1b_messages_name_protocol_item_rule_and_never_scenario_text(protocols):
    rows = []
    for pid in ("risky_choice_framing__wording__v0", "sunk_cost_fallacy__wording__v0", "base_rate_neglect__order__v0"):
        p, item = _broken(protocols, pid, lambda it: [
            it["versions"].__setitem__(v, it["versions"][v].replace(" the ", " a ", 2)) for v in ("B", "C", "A_prime")])
        failures = conformance.check_item(p, item)
        assert failures and all(f.protocol_id == pid and f.item_id == "s01" and f.rule for f in failures)
        text = " ".join(item["versions"].values())
        w = words(text)
        runs = {tuple(w[i:i + 4]) for i in range(len(w) - 3)}
        for f in failures:
            fw = words(str(f))
            assert not {tuple(fw[i:i + 4]) for i in range(len(fw) - 3)} & runs
        rows.extend(failures)
    assert len(rows) >= 6


def test_an_item_for_an_unknown_type_is_reported_not_crashed(protocols):
    p = dict(protocols["risky_choice_framing__wording__v0"], rewording_type="synonyms")
    assert [f.rule for f in conformance.check_item(p, p["panel"][0])] == ["catalogue"]
