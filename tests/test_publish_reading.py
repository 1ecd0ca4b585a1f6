"""The plain-words reading of a published measurement (publish/words/numbers.py): what its numbers can be read as.

Every measurement here is built by the real estimator from hand-made trials,
so the words are checked against the figures the archive would publish.
"""
import pytest

from measure.measurement import build
from publish.words import numbers
from tests import measure_helpers as mh

ITEMS = mh.ITEMS
VERSIONS = ("A", "A_prime", "B", "C")


def measured(plan, **protocol):
    return build(mh.protocol(**protocol), mh.trials_from(plan), mh.RUN)


def plan_of(answer):
    return {v: {i: list(answer) for i in ITEMS} for v in VERSIONS}


def healthy():
    """B moves in eight scenarios, A′ does not, C moves everywhere: on the curve."""
    plan = {"A": {i: ["A", "B"] for i in ITEMS}, "A_prime": {i: ["A", "B"] for i in ITEMS},
            "B": {i: ["A", "B"] for i in ITEMS}, "C": {i: ["B", "B"] for i in ITEMS}}
    for i in ITEMS[:8]:
        plan["B"][i] = ["B", "B"]
    return plan


def barely_readable():
    """The embedded model's kind of run: 3 of 30 answers readable in A and in B, none in A′ and C."""
    plan = plan_of(["unparseable", "unparseable"])
    for i in ITEMS[:3]:
        plan["A"][i] = ["A", "unparseable"]
        plan["B"][i] = ["A", "unparseable"]
    return plan


def test_a_run_with_few_readable_answers_is_not_measurable_whatever_its_stability():
    m = measured(barely_readable())
    assert (m["stability_pct"], m["ci_low_pct"], m["ci_high_pct"], m["drop_bound_pct_ab"]) == (100.0, 0.0, 100.0, 180.0)
    assert numbers.reading(m) == ("not measurable: 6 of 60 answers of A and B readable — the losses alone could "
                                  "explain any result; off the curve")
    assert numbers.readable(m) == {"readable": 6, "total": 60}


def test_on_the_curve_at_the_noise_floor_and_off_the_curve_with_its_reasons():
    on = measured(healthy())
    assert on["on_curve"] and not on["at_noise_floor"]
    assert numbers.reading(on) == "measurable; on the curve"
    assert numbers.flag_sentences(on) == {}

    same = healthy()
    same["B"] = same["A"]
    floor = measured(same)
    assert floor["at_noise_floor"] and not floor["on_curve"]
    assert numbers.reading(floor) == ("at the noise floor; off the curve: gap within what the losses allow, moved no "
                                      "more than a cosmetic change")

    candidate = measured(healthy(), status="candidate")
    assert numbers.reading(candidate) == "measurable; off the curve: the protocol is a candidate, not admitted"


def test_every_flag_is_a_sentence_with_its_figures_not_a_formula():
    collapsed = measured(plan_of(["A", "A"]))
    sentences = numbers.flag_sentences(collapsed)
    assert list(sentences) == collapsed["flags"]
    assert sentences["degenerate_candidate"] == (
        "Nearly always the same answer: entropy 0.00 in A and 0.00 in B (below 0.20) with stability 100.0 (above "
        "90), so the high stability says little about rewording.")
    assert "moved them by 0.0 points" in sentences["not_reading"] and "more than 15.0" in sentences["not_reading"]

    lossy = healthy()
    lossy["B"][ITEMS[0]] = ["A", "refused"]              # B loses one answer in 30, A none
    m = measured(lossy)
    sentences = numbers.flag_sentences(m)
    assert sentences["drop_confounded"] == ("Unreadable answers alone could move the gap between A and B by up to 3.3 "
                                            "points. The check allows at most 2.0 points per pair.")
    assert sentences["asymmetric_missingness"] == (
        "The versions lost different shares of answers: A lost 0.0% of its answers and B 3.3%, 3.3 points apart. "
        "The check allows at most 1.0 points of difference within a pair.")
    for text in list(sentences.values()) + list(numbers.flag_sentences(collapsed).values()):
        assert " = " not in text and "exceeds" not in text, text

    poor = numbers.flag_sentences(measured(barely_readable()))
    assert "between A and B by up to 180.0 points, between A and A′ by up to 190.0 points, between A and C by up to " \
           "190.0 points — more than the whole 0–100 scale, so the losses alone could explain any result" in \
           poor["drop_confounded"]
    assert poor["not_reading"] == "A or C has no readable answer, so this check could not be evaluated; it counts " \
                                  "as failed."


def test_the_instrument_and_exploratory_flags_are_said_from_public_fields_only():
    m = build(mh.protocol(), mh.trials_from(healthy()),
              dict(mh.RUN, instrument_suspect="no passing runtime fingerprint on 2026-11-29 (status: established)",
                   exploratory="a private note"))
    sentences = numbers.flag_sentences(m)
    assert sentences["instrument_suspect"].startswith("The instrument was in doubt on 2026-11-29 ")
    assert "established" not in sentences["instrument_suspect"] and "private" not in sentences["exploratory"]


@pytest.mark.parametrize("value, words", [(180.0, numbers.MORE_THAN_THE_SCALE), (100.01, numbers.MORE_THAN_THE_SCALE),
                                          (100.0, None), (2.0, None), (None, None), (True, None), ("180", None)])
def test_a_bound_is_beyond_the_scale_only_above_100(value, words):
    assert numbers.beyond_scale(value) == words


def test_a_change_row_reads_its_verdict_and_both_margins():
    called = {"label": "regressed", "delta_pct": -42.5, "bound_pct": 12.0, "cap_pct": 1.5}
    assert numbers.change_reading(called) == ("regressed: stability moved -42.5 points, clearing both margins "
                                              "(random-error bound 12.0, loss cap 1.5)")
    flat = dict(called, label="flat", delta_pct=3.0)
    assert numbers.change_reading(flat).startswith("flat: the move of +3.0 points does not clear both margins")


def test_a_points_label_comes_from_how_the_archive_filed_it_never_from_its_names():
    from llmarchive.succession.review import BRIDGE_SUBMITTER
    from panels import readers

    for name in readers.KNOWN_ANSWER_READERS:
        filed = {"model_id": readers.simulated_model_id(name), "source": "known_answer"}
        assert numbers.point_kind(filed) == numbers.KNOWN_ANSWER
        assert numbers.expected(filed) == readers.KNOWN_ANSWER_WORDS[name]
        # the same names with no source recorded: an outsider's point (issue 36 item 6)
        borrowed = {"model_id": readers.simulated_model_id(name), "submitted_by": "make demo"}
        assert numbers.point_kind(borrowed) == numbers.OUTSIDE_RUN and numbers.expected(borrowed) is None
    assert numbers.point_kind({"model_id": "simulated-reader-unknown", "source": "known_answer"}) == numbers.OUTSIDE_RUN
    assert numbers.point_kind({"model_id": "other-model-1"}) == numbers.OUTSIDE_RUN
    assert numbers.expected({"model_id": "other-model-1"}) is None
    assert numbers.point_kind({"model_id": "claude-sonnet-6", "submitted_by": BRIDGE_SUBMITTER}) == numbers.OUTSIDE_RUN
    assert numbers.point_kind({"model_id": "claude-sonnet-6", "submitted_by": BRIDGE_SUBMITTER,
                               "source": "generation_bridge"}) == numbers.BRIDGE_RUN
