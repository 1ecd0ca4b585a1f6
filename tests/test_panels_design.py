"""``llmarchive panels design`` and the design checks of ``llmarchive panels check`` on a real archive home."""
import json


from llmarchive.protocols import registry
from llmarchive.cli import main
from llmarchive.archive import read_json, write_json
from measure.canonical import canonical_sha256
from panels import checks
from panels.build import protocol_hash

OPEN = ("risky_choice_framing__wording__v0", "base_rate_neglect__wording__v0")


def test_design_json_gives_every_reader_and_figure_for_the_chosen_protocols(built, capsys):
    assert main(["panels", "design", "--json", *OPEN]) == 0
    table = json.loads(capsys.readouterr().out)
    assert sorted(table) == sorted(OPEN)
    for pid in OPEN:
        assert set(table[pid]) == {"normative", "biased"}
        for figures in table[pid].values():
            assert set(figures) == {"gap_ab_pct", "gap_aa_prime_pct", "gap_ac_pct", "stability_pct"}
        assert table[pid]["biased"]["gap_ab_pct"] >= 20
        assert table[pid] == registry.load_protocol(built, pid)["design_readers"]


def test_design_prints_a_table_and_the_reader_models(built, capsys):
    assert main(["panels", "design", "risky_choice_framing__wording__v0"]) == 0
    out = capsys.readouterr().out
    assert "gap_aa′" in out and "risky_choice_framing__wording__v0          biased" in out
    assert "Tversky & Kahneman (1992)" in out


def test_design_names_an_unknown_protocol(built, capsys):
    assert main(["panels", "design", "no_such__protocol__v0"]) == 2
    assert "unknown protocol 'no_such__protocol__v0'" in capsys.readouterr().err


def test_the_design_group_passes_on_a_fresh_build(built):
    assert checks.design_failures(registry.load_all(built)) == []


def _weaken_c(protocol: dict) -> None:
    """C lowered only 10 % below the equal-EV amount on every item: consistent with gate 1, weak for the readers."""
    for item in protocol["panel"]:
        s = item["structure"]
        v = s["values"]
        old = s["c_values"]["sure"]
        new = v["sure"] * 9 // 10
        s["c_values"] = dict(v, sure=new)
        sure = next(l for l, r in s["roles"].items() if r == "sure")
        s["c_lotteries"][sure] = [[1, 1, new]]
        s["c_expected_value"][sure] = str(new)
        lines = item["versions"]["C"].split("\n")
        i = next(k for k, line in enumerate(lines) if line.startswith(f"Option {sure}: "))
        lines[i] = lines[i].replace(f"{old:,}", f"{new:,}", 1)
        item["versions"]["C"] = "\n".join(lines)


def test_check_fails_on_a_deliberately_weak_c_naming_the_design_rules(built, capsys):
    file = built.protocol_file("risky_choice_framing__order__v0")
    protocol = read_json(file)
    _weaken_c(protocol)
    protocol["panel_sha256"] = canonical_sha256(protocol["panel"])
    protocol["protocol_sha256"] = protocol_hash(protocol)
    write_json(file, protocol)
    assert main(["panels", "check", "--json"]) == 1
    failures = json.loads(capsys.readouterr().out)
    rules = {(f["protocol_id"], f["rule"]) for f in failures}
    pid = "risky_choice_framing__order__v0"
    assert (pid, "design_positive_control") in rules and (pid, "design_c_reverses_biased") in rules
    assert (pid, "design_readers_stale") in rules
    # The weak C is still a valid C for gates 1 and 1b: only the readers see the problem.
    assert not {r for p, r in rules if p == pid} - {"design_positive_control", "design_c_reverses_biased",
                                                     "design_readers_stale"}


def test_check_fails_when_the_stored_design_figures_were_edited(built, capsys):
    file = built.protocol_file("base_rate_neglect__wording__v0")
    protocol = read_json(file)
    protocol["design_readers"]["biased"]["gap_ab_pct"] = 99.0
    write_json(file, protocol)  # outside protocol_sha256: the file still loads
    assert main(["panels", "check"]) == 1
    assert "FAIL base_rate_neglect__wording__v0 - [design_readers_stale]" in capsys.readouterr().out
