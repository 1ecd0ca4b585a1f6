"""The decision grammars against their golden vectors, and the dispatcher."""
import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import measure
from measure import grammar, grammar_v2

VECTORS = Path(__file__).resolve().parent.parent / "measure" / "vectors"


def _cases(name):
    data = json.loads((VECTORS / name).read_text(encoding="utf-8"))
    return data["grammar_version"], data["cases"]


@pytest.mark.parametrize("filename", ["grammar_v1.json", "grammar_v2.json"])
def test_golden_vectors_have_at_least_forty_named_cases(filename):
    _, cases = _cases(filename)
    names = [c["name"] for c in cases]
    assert len(cases) >= 40
    assert len(names) == len(set(names))


@pytest.mark.parametrize("version,case", [(v, c) for f in ("grammar_v1.json", "grammar_v2.json")
                                          for v, cases in [_cases(f)] for c in cases],
                         ids=lambda x: x["name"] if isinstance(x, dict) else str(x))
def test_golden_vector(version, case):
    found = measure.extract(case["text"], case["options"], version)
    assert (found.outcome, found.token, found.reason) == (case["outcome"], case["token"], case["reason"])


def test_vectors_cover_the_required_situations():
    _, cases = _cases("grammar_v1.json")
    texts = [c["text"] for c in cases]
    assert any("**" in t for t in texts)                      # emphasis
    assert any(t.rstrip().endswith("B.") for t in texts)      # B.
    assert any(t.rstrip().endswith("B!") for t in texts)      # B!
    assert any("decision:" in t for t in texts)               # case
    assert any(unicodedata.normalize("NFC", t) != t for t in texts)  # NFD input
    assert any("\u0392" in t for t in texts)                  # Greek look-alike
    assert any("\r\n" in t for t in texts)                    # CRLF
    assert any(t == "" for t in texts)                        # empty text
    assert any(t.count("DECISION") >= 2 for t in texts)       # several lines


def test_v2_differs_from_v1_only_where_a_line_names_no_option():
    text = "DECISION: maybe\nDECISION: B"
    assert grammar.extract(text, ["A", "B"]).outcome == "unparseable"
    assert grammar_v2.extract(text, ["A", "B"]).token == "B"


def test_unknown_grammar_version_is_refused():
    with pytest.raises(ValueError, match="unknown grammar_version 3"):
        measure.extract("DECISION: A", ["A", "B"], 3)


def test_options_that_normalise_alike_are_refused():
    with pytest.raises(ValueError, match="normalise to the same token"):
        grammar.extract("DECISION: A", ["A", "**a**"])


def test_token_is_returned_as_the_protocol_spells_it():
    assert grammar.extract("decision: plan b", ["Plan A", "Plan B"]).token == "Plan B"


def test_only_decision_lines_are_read():
    # Changing everything except the decision line never changes the result.
    base = grammar.extract("DECISION: A", ["A", "B"])
    noisy = grammar.extract("B B B option B is best\nDECISION: A\nB!", ["A", "B"])
    assert base == grammar.Extraction("valid", "A", None, 1)
    assert (noisy.outcome, noisy.token) == ("valid", "A")


# Spellings of a decision line for option ``{}`` that grammar version 1 reads as that option: case,
# emphasis, spacing around the token and trailing punctuation all normalise away.
DECISION_SPELLINGS = ["DECISION: {}", "decision: {}", "Decision:{}", "**DECISION:** {}", "*DECISION: {}*",
                      "__Decision__: {}", "DECISION:   {}  ", "DECISION: {}.", "DECISION: {}!", "DECISION: {}).",
                      "* DECISION: **{}**", "DECISION:\t{}\u00a0"]
noise_line = st.text(max_size=60).filter(lambda line: not grammar.decision_tokens(line) and "\r" not in line
                                          and not any(c in line for c in "\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"))


@st.composite
def v1_valid_responses(draw):
    """A response that grammar version 1 reads as a valid decision: noise lines and 1–3 decision lines."""
    option = draw(st.sampled_from(["A", "B"]))
    spelled = draw(st.sampled_from([option, option.lower()]))
    decisions = [s.format(spelled) for s in draw(st.lists(st.sampled_from(DECISION_SPELLINGS), min_size=1, max_size=3))]
    lines = draw(st.permutations(draw(st.lists(noise_line, max_size=4)) + decisions))
    return option, draw(st.sampled_from(["\n", "\r\n"])).join(lines)


@given(v1_valid_responses())
def test_v1_valid_implies_v2_valid_with_the_same_token(case):
    option, text = case
    one = grammar.extract(text, ["A", "B"])
    two = grammar_v2.extract(text, ["A", "B"])
    assert (one.outcome, one.token) == ("valid", option), "the strategy builds only v1-valid responses"
    assert (two.outcome, two.token) == ("valid", one.token)


@given(st.text(max_size=200), st.sampled_from(["A", "B"]))
def test_appending_a_clean_decision_to_text_without_decision_lines_is_valid(text, token):
    if grammar.decision_tokens(text):
        return
    sep = "\n" if text else ""
    found = grammar.extract(text + sep + f"DECISION: {token}", ["A", "B"])
    assert (found.outcome, found.token) == ("valid", token)
