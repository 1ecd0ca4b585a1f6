"""``llmarchive panels build|list|show|check|init-seed`` on a real archive home."""
import json
import os
import stat

import pytest

from llmarchive.protocols import registry
from llmarchive.cli import main
from llmarchive.archive import ArchivePaths, read_json, write_json
from llmarchive.protocols.panel_seed import ENV_VAR
from measure.canonical import canonical_sha256
from panels.build import protocol_hash

LIST_KEYS = {"protocol_id", "series", "family", "rewording_type", "lane", "twin_id", "status", "panel_sha256",
             "protocol_sha256"}


def test_build_reports_every_protocol_and_warns_about_the_development_seed(archive_home, monkeypatch, capsys):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert main(["panels", "build"]) == 0
    out, err = capsys.readouterr()
    assert out.count("seed=") == 24 and "built 24 protocols" in out
    assert "DEVELOPMENT seed" in err


def test_list_json_gives_one_text_free_object_per_protocol(built, capsys):
    assert main(["panels", "list", "--json"]) == 0
    out = capsys.readouterr().out
    rows = json.loads(out)
    assert len(rows) == 24 and all(set(r) == LIST_KEYS for r in rows)
    assert "Option A" not in out and "DECISION" not in out
    assert {r["status"] for r in rows} == {"candidate"}


def test_list_on_an_unbuilt_home_names_the_build_command_and_builds_nothing(archive_home, capsys):
    """Reading never builds (issue 45): ``panels build`` is the one command that writes protocol files."""
    assert main(["panels", "list"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not built" in err and "`llmarchive panels build`" in err
    assert not list(ArchivePaths.from_env().protocols.glob("*.json"))
    assert main(["panels", "build"]) == 0
    capsys.readouterr()
    assert main(["panels", "list"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 24


def test_show_prints_the_whole_protocol_with_text(built, capsys):
    assert main(["panels", "show", "risky_choice_framing__wording__v0"]) == 0
    protocol = json.loads(capsys.readouterr().out)
    assert protocol["panel"][0]["versions"]["A"].startswith(protocol["panel"][0]["versions"]["A"][:20])
    assert protocol["protocol_sha256"] == protocol_hash(protocol)


def test_show_names_an_unknown_protocol_and_lists_the_known_ones(built, capsys):
    assert main(["panels", "show", "risky_choice_framing__synonyms__v0"]) == 2
    err = capsys.readouterr().err
    assert "unknown protocol 'risky_choice_framing__synonyms__v0'" in err and "base_rate_neglect__default__v1" in err
    with pytest.raises(registry.UnknownProtocol):
        registry.load_protocol(built, "nope")


def test_check_passes_on_a_fresh_build(built, capsys):
    assert main(["panels", "check"]) == 0
    assert capsys.readouterr().out.startswith("OK: 24 protocols, 360 items")


def test_check_fails_naming_protocol_item_and_rule_for_a_consistently_rehashed_bad_file(built, capsys):
    file = built.protocol_file("sunk_cost_fallacy__default__v1")
    protocol = read_json(file)
    item = protocol["panel"][6]
    item["versions"]["B"] = item["versions"]["B"].replace(" the ", " a ", 1)
    protocol["panel_sha256"] = canonical_sha256(protocol["panel"])
    protocol["protocol_sha256"] = protocol_hash(protocol)
    write_json(file, protocol)
    assert main(["panels", "check"]) == 1
    out, err = capsys.readouterr()
    assert "FAIL sunk_cost_fallacy__default__v1 s07 [default]" in out
    assert "1 protocol file(s) differ from what the builder makes now (sunk_cost_fallacy__default__v1)" in err
    assert main(["panels", "check", "--json"]) == 1
    failures = json.loads(capsys.readouterr().out)
    assert {(f["protocol_id"], f["item_id"], f["rule"]) for f in failures} >= {
        ("sunk_cost_fallacy__default__v1", "s07", "default")}


def test_check_fails_a_gate_1_violation(built, capsys):
    file = built.protocol_file("base_rate_neglect__wording__v0")
    protocol = read_json(file)
    item = protocol["panel"][2]
    item["structure"]["values"]["pay_case"] += 1
    item["structure"]["c_values"]["pay_case"] += 1
    protocol["panel_sha256"] = canonical_sha256(protocol["panel"])
    protocol["protocol_sha256"] = protocol_hash(protocol)
    write_json(file, protocol)
    assert main(["panels", "check"]) == 1
    assert "FAIL base_rate_neglect__wording__v0 s03 [lotteries_match]" in capsys.readouterr().out


def test_a_hand_edited_file_whose_hash_no_longer_matches_is_refused(built, capsys):
    file = built.protocol_file("risky_choice_framing__order__v0")
    file.write_text(file.read_text().replace("Option A: ", "Option A:  ", 1))
    assert main(["panels", "check"]) == 2
    assert "panel_sha256 does not match" in capsys.readouterr().err
    assert main(["panels", "build"]) == 0
    assert main(["panels", "check"]) == 0


def test_init_seed_writes_a_private_secret_once_and_builds_use_it(archive_home, monkeypatch, capsys):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert main(["panels", "init-seed"]) == 0
    paths = ArchivePaths.from_env()
    assert stat.S_IMODE(os.stat(paths.panel_seed_file).st_mode) == 0o600
    assert len(paths.panel_seed_file.read_text().strip()) == 64
    assert main(["panels", "init-seed"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["panels", "build"]) == 0
    labels = {p["wording_seed"] for p in registry.load_all(paths)}
    assert labels == {"public", "secret"}
    secret = paths.panel_seed_file.read_text().strip()
    for f in paths.protocols.glob("*.json"):
        assert secret not in f.read_text()
