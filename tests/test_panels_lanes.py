"""Lanes and twins: SPEC's rule, the twin-pairing check, promotion, inheritance, the 12-word leak check."""
import copy

import pytest

from llmarchive.protocols import registry
from llmarchive.cli import main
from llmarchive.archive import read_jsonl
from llmarchive.protocols.panel_seed import ENV_VAR
from panels import leak
from panels.build import all_protocol_ids, build_protocols
from panels.lanes import PromotionError, admission_row, planned_lane, twin_failures
from panels.seeds import development_seed, public_seed
from tests.panels_helpers import built_paths

SECRET = "a secret guard seed used only by these tests"


@pytest.fixture
def paths(archive_home, monkeypatch):
    """Not the shared ``built``: the protocol files are built with this module's secret guard seed."""
    return built_paths(monkeypatch, SECRET)


def _promote(*args):
    return main(["panels", "promote", *args])


def test_the_lane_rule_is_specs():
    opened = {}
    for pid in all_protocol_ids():
        lane, twin = planned_lane(pid)
        opened[pid] = (lane, twin)
    for series in ("v0", "v1"):
        assert opened[f"risky_choice_framing__wording__{series}"] == ("open", f"risky_choice_framing__anchoring__{series}")
        assert opened[f"risky_choice_framing__anchoring__{series}"] == ("guard", f"risky_choice_framing__wording__{series}")
        assert opened[f"base_rate_neglect__wording__{series}"] == ("open", f"base_rate_neglect__anchoring__{series}")
        assert opened[f"base_rate_neglect__anchoring__{series}"] == ("guard", f"base_rate_neglect__wording__{series}")
    others = [v for k, v in opened.items() if v[1] is None]
    assert len(others) == 16 and all(lane == "guard" for lane, _ in others)


def _headers(assign):
    out = []
    for pid in all_protocol_ids():
        family, rewording_type, series = pid.split("__")
        lane, twin = assign.get(pid, (None, None))
        out.append({"protocol_id": pid, "family": family, "rewording_type": rewording_type, "series": series,
                    "lane": lane, "twin_id": twin})
    return out


def _rule_assignment():
    return {pid: planned_lane(pid) for pid in all_protocol_ids()}


def test_the_rules_full_assignment_passes_the_twin_check():
    assert twin_failures(_headers(_rule_assignment())) == []
    assert twin_failures(_headers({})) == []


@pytest.mark.parametrize("change, rule", [
    ({"risky_choice_framing__anchoring__v0": ("guard", None)}, "twin_one_sided"),
    ({"risky_choice_framing__wording__v0": ("open", "sunk_cost_fallacy__anchoring__v0"),
      "sunk_cost_fallacy__anchoring__v0": ("guard", "risky_choice_framing__wording__v0")}, "twin_cross_family"),
    ({"risky_choice_framing__wording__v0": ("open", "risky_choice_framing__anchoring__v1"),
      "risky_choice_framing__anchoring__v1": ("guard", "risky_choice_framing__wording__v0")}, "twin_cross_series"),
    ({"risky_choice_framing__anchoring__v0": ("open", "risky_choice_framing__wording__v0")}, "twin_lanes"),
    ({"base_rate_neglect__wording__v0": ("open", None)}, "open_without_twin"),
    ({"sunk_cost_fallacy__wording__v0": ("open", "sunk_cost_fallacy__anchoring__v0"),
      "sunk_cost_fallacy__anchoring__v0": ("guard", "sunk_cost_fallacy__wording__v0")}, "lane_rule"),
    ({"risky_choice_framing__wording__v0": ("open", "risky_choice_framing__nope__v0")}, "twin_unknown"),
])
def test_the_twin_check_names_each_broken_pairing(change, rule):
    assign = _rule_assignment()
    assign.update(change)
    failures = twin_failures(_headers(assign))
    assert rule in {f.rule for f in failures}, failures


def test_a_pair_repeating_its_rewording_type_fails():
    headers = [
        {"protocol_id": "x__wording__v0", "family": "x", "rewording_type": "wording", "series": "v0",
         "lane": "open", "twin_id": "y__wording__v0"},
        {"protocol_id": "y__wording__v0", "family": "x", "rewording_type": "wording", "series": "v0",
         "lane": "guard", "twin_id": "x__wording__v0"},
    ]
    assert {f.rule for f in twin_failures(headers)} == {"twin_same_type"}


def test_promotion_refuses_without_the_human_acknowledgement(paths, capsys):
    assert _promote("risky_choice_framing__wording__v0", "--lane", "open") == 2
    assert "--human-reviewed" in capsys.readouterr().err
    assert read_jsonl(paths.admissions) == []
    assert registry.load_protocol(paths, "risky_choice_framing__wording__v0")["status"] == "candidate"


def test_promotion_records_who_and_when_and_merges_at_load_without_touching_the_file(paths, capsys):
    file = paths.protocol_file("base_rate_neglect__wording__v0")
    before = file.read_bytes()
    assert _promote("base_rate_neglect__wording__v0", "--lane", "open", "--human-reviewed", "--reviewer", "Ada") == 0
    (row,) = read_jsonl(paths.admissions)
    assert row["reviewer"] == "Ada" and row["review"] == "human" and row["reviewed_at"].endswith("Z")
    assert row["lane"] == "open" and row["twin_id"] == "base_rate_neglect__anchoring__v0"
    assert "record_sha256" in row and "versions" not in str(row)
    p = registry.load_protocol(paths, "base_rate_neglect__wording__v0")
    assert (p["status"], p["lane"], p["twin_id"]) == ("admitted", "open", "base_rate_neglect__anchoring__v0")
    assert file.read_bytes() == before
    assert "one-sided" in capsys.readouterr().err
    assert registry.open_protocol_ids(paths) == ["base_rate_neglect__wording__v0"]
    assert registry.guard_protocol_ids(paths) == []


def test_promotion_refuses_a_lane_or_twin_against_the_rule(paths, capsys):
    assert _promote("sunk_cost_fallacy__wording__v0", "--lane", "open", "--human-reviewed") == 2
    assert "lane rule" in capsys.readouterr().err
    assert _promote("risky_choice_framing__wording__v0", "--lane", "open", "--twin",
                    "risky_choice_framing__order__v0", "--human-reviewed") == 2
    assert "pairs this protocol with risky_choice_framing__anchoring__v0" in capsys.readouterr().err
    assert read_jsonl(paths.admissions) == []


def test_v1_inherits_v0s_review_through_the_identical_panel_and_nothing_else_does(paths, capsys):
    assert _promote("sunk_cost_fallacy__order__v1", "--lane", "guard") == 2
    assert _promote("sunk_cost_fallacy__order__v0", "--lane", "guard", "--human-reviewed", "--reviewer", "Bo") == 0
    assert _promote("sunk_cost_fallacy__order__v1", "--lane", "guard") == 0
    rows = read_jsonl(paths.admissions)
    assert rows[-1]["review"] == "inherited" and rows[-1]["inherited_from"] == "sunk_cost_fallacy__order__v0"
    # Another protocol of the same family shares the structure, not the panel: no inheritance.
    assert _promote("sunk_cost_fallacy__default__v0", "--lane", "guard") == 2
    assert _promote("sunk_cost_fallacy__default__v1", "--lane", "guard") == 2
    assert "no review to inherit" in capsys.readouterr().err.replace("there is no", "no")
    assert sorted(registry.guard_protocol_ids(paths)) == ["sunk_cost_fallacy__order__v0", "sunk_cost_fallacy__order__v1"]


def test_a_rebuilt_protocol_with_new_content_falls_back_to_candidate(paths, monkeypatch):
    assert _promote("base_rate_neglect__order__v0", "--lane", "guard", "--human-reviewed") == 0
    assert registry.load_protocol(paths, "base_rate_neglect__order__v0")["status"] == "admitted"
    monkeypatch.setenv(ENV_VAR, SECRET + " rotated")
    registry.build_all(paths)
    p = registry.load_protocol(paths, "base_rate_neglect__order__v0")
    assert (p["status"], p["lane"]) == ("candidate", None)
    # …and its new panel inherits nothing.
    assert _promote("base_rate_neglect__order__v0", "--lane", "guard") == 2


def test_a_guard_built_from_the_development_seed_is_refused_unless_allowed(archive_home, monkeypatch, capsys):
    paths = built_paths(monkeypatch, None)
    assert _promote("sunk_cost_fallacy__anchoring__v0", "--lane", "guard", "--human-reviewed") == 2
    assert "development" in capsys.readouterr().err
    assert _promote("sunk_cost_fallacy__anchoring__v0", "--lane", "guard", "--human-reviewed",
                    "--allow-development-seed") == 0
    assert read_jsonl(paths.admissions)[-1]["wording_seed"] == "development"


def test_promoting_both_twins_makes_the_check_pass_and_one_sided_fails(paths, capsys):
    assert _promote("risky_choice_framing__wording__v0", "--lane", "open", "--human-reviewed") == 0
    assert main(["panels", "check"]) == 1
    out = capsys.readouterr().out
    assert "FAIL risky_choice_framing__wording__v0 - [twin_one_sided]" in out
    assert _promote("risky_choice_framing__anchoring__v0", "--lane", "guard", "--human-reviewed") == 0
    assert main(["panels", "check"]) == 0


def test_sealed_protocols_are_hash_only_records(paths, capsys):
    h1, h2 = "a" * 64, "b" * 64
    assert main(["panels", "seal", "sealed_01", "--panel-sha256", h1, "--protocol-sha256", h2]) == 2
    assert main(["panels", "seal", "sealed_01", "--panel-sha256", h1, "--protocol-sha256", h2,
                 "--human-reviewed"]) == 0
    assert main(["panels", "seal", "sealed_02", "--panel-sha256", "xyz", "--protocol-sha256", h2,
                 "--human-reviewed"]) == 2
    assert main(["panels", "seal", "sealed_01", "--panel-sha256", h2, "--protocol-sha256", h2,
                 "--human-reviewed"]) == 2
    headers = registry.list_protocols(paths)
    sealed = [h for h in headers if h["protocol_id"] == "sealed_01"]
    assert sealed == [registry.header({**sealed[0]})]
    assert (sealed[0]["lane"], sealed[0]["status"], sealed[0]["panel_sha256"]) == ("sealed", "admitted", h1)
    record = registry.load_protocol(paths, "sealed_01")
    assert "panel" not in record and "instruction" not in record
    assert twin_failures(headers) == []


# ---------------------------------------------------------------- the 12-word leak check
@pytest.fixture(scope="module")
def protocol_list(protocols):
    """The shared built protocols (conftest), as the list the leak check takes."""
    return list(protocols.values())


def test_no_guard_item_shares_twelve_words_with_an_open_item(protocol_list):
    assert leak.check(protocol_list) == []


def _inject(protocol_list, length):
    protocols = copy.deepcopy(protocol_list)
    open_p = next(p for p in protocols if p["protocol_id"] == "base_rate_neglect__wording__v0")
    guard = next(p for p in protocols if p["protocol_id"] == "sunk_cost_fallacy__order__v0")
    sentence = " ".join(open_p["panel"][4]["versions"]["A"].split()[:length])
    item = guard["panel"][7]
    item["versions"]["B"] = sentence + " " + item["versions"]["B"]
    return protocols


def test_a_guard_item_with_a_twelve_word_run_of_an_open_item_fails_naming_both(protocol_list):
    failures = leak.check(_inject(protocol_list, 12))
    assert [(f.protocol_id, f.item_id, f.rule) for f in failures] == [
        ("sunk_cost_fallacy__order__v0", "s08", "leak_12_words")]
    assert "base_rate_neglect__wording__v0 item s05" in failures[0].detail
    assert leak.check(_inject(protocol_list, 11)) == []


def test_the_shared_instruction_does_not_count_as_a_leak(protocol_list):
    # Every item shares the instruction, which is longer than twelve words.
    assert len(protocol_list[0]["instruction"].split()) > 12
    assert leak.check(protocol_list) == []


def test_a_promotion_is_decided_from_values_alone_and_inherits_only_an_identical_reviewed_panel():
    protocols = {p["protocol_id"]: p for p in build_protocols(public_seed(), development_seed())}
    v0, v1 = protocols["sunk_cost_fallacy__order__v0"], protocols["sunk_cost_fallacy__order__v1"]
    when = {"reviewer": "Ada", "reviewed_at": "2026-11-30T12:00:00Z", "allow_development_seed": True}
    with pytest.raises(PromotionError, match="no review to inherit"):
        admission_row(v1, "guard", [], **when)
    first = admission_row(v0, "guard", [], human_reviewed=True, **when)
    assert (first["review"], first["reviewer"], first["reviewed_at"]) == ("human", "Ada", "2026-11-30T12:00:00Z")
    second = admission_row(v1, "guard", [first], **when)
    assert (second["review"], second["inherited_from"]) == ("inherited", "sunk_cost_fallacy__order__v0")
    other = protocols["sunk_cost_fallacy__default__v0"]
    with pytest.raises(PromotionError, match="no review to inherit"):
        admission_row(other, "guard", [first, second], **when)
    with pytest.raises(PromotionError, match="development"):
        admission_row(v0, "guard", [], human_reviewed=True, reviewer="Ada", reviewed_at="2026-11-30T12:00:00Z")


def test_sealing_with_a_blank_reviewer_is_refused_and_records_nothing(paths, capsys):
    h1, h2 = "c" * 64, "d" * 64
    assert main(["panels", "seal", "sealed_03", "--panel-sha256", h1, "--protocol-sha256", h2,
                 "--human-reviewed", "--reviewer", "  "]) == 2
    assert "--reviewer must name the person" in capsys.readouterr().err
    assert not (paths.sealed / "sealed_03.json").exists()
