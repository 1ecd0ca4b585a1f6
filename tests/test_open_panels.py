"""The published open-panel file: everything a run needs, both hashes recomputable from the file alone (method §3.9)."""
import copy
import json

import pytest

from llmarchive.protocols import open_panels as op
from llmarchive.run.runner import RunSettings, run_protocol, validate_protocol
from llmarchive.subjects.http import RetryPolicy
from llmarchive.subjects.openai_compat import OpenAICompatSubject
from llmarchive import budget as budget_mod
from measure.canonical import canonical_sha256
from measure.schema import VERSIONS
from panels.build import protocol_hash
from panels.lanes import apply_admission
from tests.fake_provider import FakeProvider, decide_by_hash

OPEN_ID = "risky_choice_framing__wording__v0"
TWIN_ID = "risky_choice_framing__anchoring__v0"


@pytest.fixture(scope="module")
def open_protocol(protocols):
    """The v0 risky-choice wording protocol as admitted to the open lane."""
    return apply_admission(protocols[OPEN_ID], {"lane": "open", "twin_id": TWIN_ID})


@pytest.fixture
def doc(open_protocol):
    return op.panel_file(open_protocol)


def written(tmp_path, doc, name="panel.json"):
    file = tmp_path / name
    file.write_text(op.panel_file_text(doc), encoding="utf-8")
    return file


def test_the_file_carries_every_scenario_exactly_as_sent_and_the_frozen_settings(open_protocol, doc):
    assert [item["versions"] for item in doc["panel"]] == [item["versions"] for item in open_protocol["panel"]]
    assert len(doc["panel"]) == 15 and all(set(item["versions"]) == set(VERSIONS) for item in doc["panel"])
    assert all(text.endswith(doc["instruction"]) for item in doc["panel"] for text in item["versions"].values())
    for key in ("options", "n", "n_per_scenario", "n_items", "grammar_version", "generation"):
        assert doc[key] == open_protocol[key]
    assert doc["how_to_send"]["max_tokens"] == open_protocol["generation"]["max_tokens"]
    assert doc["how_to_send"]["calls"] == 4 * open_protocol["n"]
    assert (doc["lane"], doc["twin_id"], doc["status"]) == ("open", TWIN_ID, "admitted")
    assert "design_readers" not in doc and "reader_models" not in doc


def test_both_hashes_are_the_protocol_files_and_recompute_from_the_file_alone(tmp_path, open_protocol, doc):
    assert doc["panel_sha256"] == open_protocol["panel_sha256"] == canonical_sha256(doc["panel"])
    assert doc["protocol_sha256"] == open_protocol["protocol_sha256"] == protocol_hash(open_protocol)
    again = op.read_panel_file(written(tmp_path, doc))
    assert again == doc and op.verify_panel_file(again) == []
    assert canonical_sha256(op.hashed_part(again)) == open_protocol["protocol_sha256"]


def test_a_run_from_the_file_sends_its_texts_and_records_its_prompt_hashes(tmp_path, paths, doc):
    protocol = op.protocol_from_panel_file(op.load_panel_file(written(tmp_path, doc)))
    validate_protocol(protocol)
    with FakeProvider(decide_by_hash()) as fake:
        subject = OpenAICompatSubject("outsider-model", protocol["generation"]["max_tokens"], base_url=fake.base_url,
                                      retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02),
                                      sleep=lambda s: None)
        result = run_protocol(paths, protocol, subject, RunSettings(run_id="outsider", run_date="2026-11-01",
                                                                    concurrency=8),
                              authorization=budget_mod.unbudgeted("manual"))
        sent = sorted(r.prompt for r in fake.chat_requests)
    assert result.complete and len(result.trials) == doc["how_to_send"]["calls"]
    assert sent == sorted(text for item in doc["panel"] for text in item["versions"].values()
                          for _ in range(doc["n_per_scenario"]))
    assert {(t["item_id"], t["version"], t["prompt_sha256"]) for t in result.trials} == {
        (item, version, digest) for item, by in doc["prompt_sha256"].items() for version, digest in by.items()}
    assert result.run["protocol_sha256"] == doc["protocol_sha256"]


@pytest.mark.parametrize("lane", ["guard", None])
def test_only_an_open_protocol_is_ever_made_into_a_file(protocols, lane):
    protocol = apply_admission(protocols[TWIN_ID], {"lane": lane} if lane else None)
    with pytest.raises(op.OpenPanelFileError, match="only an admitted open protocol"):
        op.panel_file(protocol)


def test_a_protocol_that_does_not_match_its_own_hashes_is_refused(open_protocol):
    edited = copy.deepcopy(open_protocol)
    edited["panel"][3]["versions"]["B"] += " "
    with pytest.raises(op.OpenPanelFileError, match="do not match"):
        op.panel_file(edited)


def test_an_edited_prompt_is_reported_under_every_hash_it_breaks(doc):
    doc["panel"][4]["versions"]["C"] = doc["panel"][4]["versions"]["C"].replace("Option", "option", 1)
    problems = op.verify_panel_file(doc)
    assert any(p.startswith("panel_sha256:") for p in problems)
    assert any(p.startswith("protocol_sha256:") for p in problems)
    assert any(p.startswith("prompt_sha256.s05.C:") for p in problems)


def test_an_edited_setting_breaks_protocol_sha256_and_a_wrong_send_setting_is_named(doc):
    doc["generation"]["max_tokens"] = 4096
    problems = op.verify_panel_file(doc)
    assert any(p.startswith("protocol_sha256:") for p in problems)
    assert any(p.startswith("how_to_send.max_tokens:") for p in problems)
    assert not any(p.startswith("panel_sha256:") for p in problems)


def test_a_missing_prompt_hash_and_an_extra_key_are_reported(doc):
    del doc["prompt_sha256"]["s02"]["A_prime"]
    doc["note"] = "added by hand"
    problems = op.verify_panel_file(doc)
    assert any(p.startswith("prompt_sha256.s02.A_prime:") for p in problems)
    assert any(p.startswith("protocol_sha256:") for p in problems)


def test_load_panel_file_refuses_a_file_that_does_not_verify_in_one_line(tmp_path, doc):
    doc["n_per_scenario"] = 8
    with pytest.raises(op.OpenPanelFileError) as info:
        op.load_panel_file(written(tmp_path, doc))
    message = str(info.value)
    assert "\n" not in message and "panel.json" in message and "protocol_sha256" in message and "n:" in message


@pytest.mark.parametrize("change, field", [
    (lambda d: d.pop("panel"), "'panel' is missing"),
    (lambda d: d.update(n="30"), "'n' must be a positive integer"),
    (lambda d: d.update(format="something-else"), "'format'"),
    (lambda d: d["generation"].pop("max_tokens"), "'generation.max_tokens'"),
    (lambda d: d["panel"][2]["versions"].pop("A_prime"), "'panel[2].versions.A_prime'"),
    (lambda d: d.update(protocol_sha256="XYZ"), "'protocol_sha256' must be 64"),
])
def test_a_malformed_file_is_refused_naming_file_and_field(tmp_path, doc, change, field):
    change(doc)
    file = written(tmp_path, doc)
    with pytest.raises(op.OpenPanelFileError) as info:
        op.read_panel_file(file)
    assert str(file) in str(info.value) and field in str(info.value) and "\n" not in str(info.value)


def test_a_file_that_is_not_json_or_absent_is_refused_naming_it(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(op.OpenPanelFileError, match=r"bad\.json: not JSON \(line 1"):
        op.read_panel_file(bad)
    with pytest.raises(op.OpenPanelFileError, match="no such open-panel file"):
        op.read_panel_file(tmp_path / "absent.json")
    (tmp_path / "list.json").write_text(json.dumps([1]), encoding="utf-8")
    with pytest.raises(op.OpenPanelFileError, match="top level must be a JSON object"):
        op.read_panel_file(tmp_path / "list.json")


# --- the commands -----------------------------------------------------------------------------------

def test_panels_verify_prints_ok_with_both_hashes_from_the_file_alone(tmp_path, doc, capsys, monkeypatch):
    from llmarchive.cli import main

    monkeypatch.setenv("LLMARCHIVE_HOME", str(tmp_path / "no-archive-here"))
    file = written(tmp_path, doc)
    assert main(["panels", "verify", str(file)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"OK {OPEN_ID}: panel_sha256 {doc['panel_sha256']} protocol_sha256 {doc['protocol_sha256']}")
    assert "60 prompt_sha256" in out
    assert not (tmp_path / "no-archive-here").exists()


def test_panels_verify_lists_every_problem_and_exits_2(tmp_path, doc, capsys):
    from llmarchive.cli import main

    doc["panel"][0]["versions"]["B"] = doc["panel"][0]["versions"]["B"].replace("Option A", "Option  A", 1)
    doc["grammar_version"] = 2
    assert main(["panels", "verify", str(written(tmp_path, doc))]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert [l.split(":")[0] for l in lines[:-1]] == ["FAIL panel_sha256", "FAIL protocol_sha256",
                                                     "FAIL prompt_sha256.s01.B"]
    assert lines[-1].startswith("FAILED: ") and "3 problem(s)" in lines[-1]
    assert main(["panels", "verify", "--json", str(written(tmp_path, doc))]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and len(report["problems"]) == 3


def test_panels_verify_names_the_file_and_field_of_a_malformed_file_in_one_line(tmp_path, doc, capsys):
    from llmarchive.cli import main

    del doc["options"]
    file = written(tmp_path, doc)
    assert main(["panels", "verify", str(file)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(file) in err and "'options' is missing" in err


def test_promote_to_the_open_lane_says_it_publishes_the_panel_in_full(built, capsys):
    from llmarchive.cli import main

    assert main(["panels", "promote", OPEN_ID, "--lane", "open"]) == 2
    assert "publishes the panel in full" in capsys.readouterr().err
    assert main(["panels", "promote", OPEN_ID, "--lane", "open", "--human-reviewed", "--reviewer", "T"]) == 0
    assert f"published in full — every scenario's four versions, exactly as sent — as public/panels/{OPEN_ID}.json" \
        in capsys.readouterr().out
    assert main(["panels", "promote", TWIN_ID, "--lane", "guard", "--human-reviewed", "--reviewer", "T",
                 "--allow-development-seed"]) == 0
    assert "published in full" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["panels", "promote", "--help"])
    assert "open lane publishes the panel in full" in " ".join(capsys.readouterr().out.split())
