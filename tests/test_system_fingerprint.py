"""The server's build on every trial (issue 27 §4), over real HTTP on 127.0.0.1.

An OpenAI-compatible server reports the build that answered in
``system_fingerprint`` (llama.cpp's server puts its own build there).  The
runner records it on every trial, the run lists the distinct builds it saw
(``system_fingerprints``, published beside the measurement), ``verify``
recomputes that list from the trials, and when two consecutive measurements
of one protocol on one model id were answered by different builds, the
``changes`` table and the site's drawer say so.  Trials recorded before the
field existed still read, publish and verify.

The servers are real: the fake provider (:mod:`tests.fake_provider`, a
configurable build) and the simulated readers' server the demo uses
(:mod:`llmarchive.comparison.reader_server`, a fixed build).
"""
import csv
import io
import json
import re
import sqlite3
import threading
from collections import Counter

import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import read_jsonl, write_json
from llmarchive.cli import main
from llmarchive.run import RunSettings, run_protocol
from llmarchive.subjects.anthropic import AnthropicSubject
from llmarchive.subjects.http import RetryPolicy
from llmarchive.subjects.openai_compat import OpenAICompatSubject
from measure.schema import TRIAL_DESCRIPTIONS, system_fingerprints
from publish import publish_all
from publish.site import render as site
from publish.data.changes import build_changed, change_row
from tests import publish_helpers as ph
from tests.fake_provider import FakeProvider, Reply

OPEN = "risky_choice_framing__wording__v0"
MODEL = "local-model-q4"
BUILD_1, BUILD_2 = "b4000-1a2b3c4", "b4100-5d6e7f8"
FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)


@pytest.fixture(autouse=True)
def no_openai_key(monkeypatch):
    """A local server needs no key; one from the developer's environment must not travel to it."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def plan_responder(protocol: dict, plan: dict):
    """Answers each prompt as ``plan`` says for its scenario and version, repeat by repeat (an on-curve run)."""
    where = {text: (item["item_id"], version) for item in protocol["panel"] for version, text in item["versions"].items()}
    counts: Counter = Counter()
    lock = threading.Lock()

    def respond(request) -> Reply:
        item, version = where[request.prompt]
        with lock:
            k = counts[(item, version)]
            counts[(item, version)] += 1
        answers = plan[version][item]
        return Reply.text(f"Weighing both options for {item}.\nDECISION: {answers[k % len(answers)]}")
    return respond


def run_local(paths, protocol: dict, fake: FakeProvider, run_id: str, run_date: str, concurrency: int = 4):
    """One run of ``protocol`` on the local model behind ``fake``, through the archive's own runner."""
    subject = OpenAICompatSubject(MODEL, protocol["generation"]["max_tokens"], base_url=fake.base_url + "/v1",
                                  retry=FAST)
    return run_protocol(paths, protocol, subject, RunSettings(run_id=run_id, run_date=run_date,
                                                              concurrency=concurrency),
                        authorization=budget_mod.unbudgeted("manual"))


def csv_rows(path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def drawer_of(document: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="drawer-data">(.*?)</script>', document,
                                re.S).group(1))


# --------------------------------------------------------------------------
# every trial, and the run's list
# --------------------------------------------------------------------------

def test_every_trial_records_the_build_that_answered_it_and_the_run_lists_each_build_once(archive):
    protocol = ph.protocol(archive, OPEN)
    with FakeProvider(plan_responder(protocol, ph.healthy_plan(list(protocol["item_ids"]))),
                      system_fingerprint=BUILD_1) as fake:
        result = run_local(archive, protocol, fake, "fp-one-build", "2026-11-01")
    assert result.complete and len(result.trials) == 120
    logged = read_jsonl(result.run_dir / "trials.jsonl")
    assert [t["system_fingerprint"] for t in logged] == [BUILD_1] * 120
    assert json.loads((result.run_dir / "run.json").read_text())["system_fingerprints"] == [BUILD_1]
    assert main(["--home", str(archive.home), "verify", str(result.run_dir)]) == 0


def test_a_server_that_changes_build_during_a_run_is_seen_on_the_trials_and_in_the_run_list(archive):
    protocol = ph.protocol(archive, OPEN)
    answer = plan_responder(protocol, ph.healthy_plan(list(protocol["item_ids"])))

    def respond(request):
        if len(fake.chat_requests) > 50:     # the server is upgraded after its 50th answer
            fake.system_fingerprint = BUILD_2
        return answer(request)

    with FakeProvider(respond, system_fingerprint=BUILD_1) as fake:
        result = run_local(archive, protocol, fake, "fp-upgraded", "2026-11-01", concurrency=1)
    logged = read_jsonl(result.run_dir / "trials.jsonl")
    assert Counter(t["system_fingerprint"] for t in logged) == {BUILD_1: 50, BUILD_2: 70}
    assert json.loads((result.run_dir / "run.json").read_text())["system_fingerprints"] == [BUILD_1, BUILD_2]


def test_an_api_that_reports_no_build_records_null_and_an_empty_list(archive, monkeypatch):
    """Anthropic's Messages API documents no build identity; neither does a server that leaves the field out."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-fingerprint")
    protocol = ph.protocol(archive, OPEN)
    with FakeProvider(plan_responder(protocol, ph.healthy_plan(list(protocol["item_ids"]))),
                      system_fingerprint=BUILD_1) as fake:
        subject = AnthropicSubject("claude-sonnet-5", protocol["generation"]["max_tokens"], base_url=fake.base_url,
                                   retry=FAST)
        anthropic = run_protocol(archive, protocol, subject, RunSettings(run_id="fp-anthropic", run_date="2026-11-01",
                                                                         concurrency=4),
                                 authorization=budget_mod.unbudgeted("manual"))
        fake.system_fingerprint = None
        silent = run_local(archive, protocol, fake, "fp-silent-server", "2026-11-01")
    for result in (anthropic, silent):
        logged = read_jsonl(result.run_dir / "trials.jsonl")
        assert all("system_fingerprint" in t and t["system_fingerprint"] is None for t in logged)
        assert json.loads((result.run_dir / "run.json").read_text())["system_fingerprints"] == []


def test_a_value_that_is_not_a_build_is_recorded_as_none_reported(archive):
    """A server sending a number or an empty string in the field says nothing about its build; the answer still counts."""
    protocol = ph.protocol(archive, OPEN)
    with FakeProvider(plan_responder(protocol, ph.healthy_plan(list(protocol["item_ids"]))),
                      system_fingerprint="") as fake:
        result = run_local(archive, protocol, fake, "fp-empty", "2026-11-01")
    assert result.complete
    assert {t["system_fingerprint"] for t in read_jsonl(result.run_dir / "trials.jsonl")} == {None}


def test_the_simulated_readers_server_build_is_on_every_trial_of_an_outsiders_run(archive, tmp_path):
    """The demo's reader server, as an outsider runs it (``comparison run``), then filed (``comparison submit``)."""
    from llmarchive.archive import record_logs
    from llmarchive.comparison.reader_server import SYSTEM_FINGERPRINT, ReaderServer
    from llmarchive.protocols import registry
    from panels import readers
    from publish.data.panels import file_name, files

    panel = tmp_path / file_name(OPEN)
    panel.parent.mkdir(parents=True, exist_ok=True)
    panel.write_bytes(files(archive, registry.list_protocols(archive))[file_name(OPEN)])
    model = readers.simulated_model_id(readers.FRAMING_SENSITIVE)
    out = tmp_path / "submission.jsonl"
    with ReaderServer([panel]) as server:
        assert main(["--home", str(tmp_path / "outsider"), "comparison", "run", "--panel", str(panel),
                     "--base-url", server.url, "--model", model, "--out", str(out), "--submitted-by", "test",
                     "--quiet"]) == 0
    trials = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    assert len(trials) == 120 and {t["system_fingerprint"] for t in trials} == {SYSTEM_FINGERPRINT}
    [run_json] = (tmp_path / "outsider").rglob("run.json")
    assert json.loads(run_json.read_text())["system_fingerprints"] == [SYSTEM_FINGERPRINT]
    assert main(["--home", str(archive.home), "comparison", "submit", str(out), "--known-answer"]) == 0
    assert [p["model_id"] for p in record_logs.read(archive, "comparison_point")] == [model]


# --------------------------------------------------------------------------
# two measurements, two builds: the changes table, the drawer, verify
# --------------------------------------------------------------------------

@pytest.fixture
def two_builds(archive):
    """Two on-curve measurements of one open protocol on one model id, answered by two builds, published."""
    protocol = ph.protocol(archive, OPEN)
    items = list(protocol["item_ids"])
    results = []
    for run_id, date, build, plan in (("fp-2026-11-01", "2026-11-01", BUILD_1, ph.healthy_plan(items)),
                                      ("fp-2026-11-02", "2026-11-02", BUILD_2, ph.shifted_plan(items, 6))):
        with FakeProvider(plan_responder(protocol, plan), system_fingerprint=build) as fake:
            results.append(run_local(archive, protocol, fake, run_id, date))
    assert all(r.complete and r.measurement["on_curve"] for r in results), [r.measurement["flags"] for r in results]
    publish_all(archive, build_time="2026-11-03T00:00:00Z")
    return archive, results


def test_a_change_of_build_under_one_model_id_is_in_the_changes_table_and_the_measurements(two_builds):
    archive, (first, second) = two_builds
    public = archive.public
    stability = {r["run_id"]: r for r in csv_rows(public / "stability.csv")}
    assert json.loads(stability[first.run_dir.name]["system_fingerprints"]) == [BUILD_1]
    assert json.loads(stability[second.run_dir.name]["system_fingerprints"]) == [BUILD_2]
    [row] = [r for r in csv_rows(public / "changes.csv") if r["to_run_id"] == second.run_dir.name]
    assert row["from_run_id"] == first.run_dir.name and row["to_subject_model_id"] == MODEL
    assert json.loads(row["from_system_fingerprints"]) == [BUILD_1]
    assert json.loads(row["to_system_fingerprints"]) == [BUILD_2]
    assert row["build_changed"] == "true"

    db = sqlite3.connect(public / "archive.db")
    assert db.execute("select build_changed, to_system_fingerprints from changes where to_run_id = ?",
                      (second.run_dir.name,)).fetchone() == (1, json.dumps([BUILD_2]))
    assert db.execute("select system_fingerprints from measurements where run_id = ?",
                      (first.run_dir.name,)).fetchone() == (json.dumps([BUILD_1]),)
    assert {r[0] for r in db.execute("select system_fingerprint from open_lane_trials where run_id = ?",
                                     (second.run_dir.name,))} == {BUILD_2}
    assert not [t for (t,) in db.execute("select transport from open_lane_trials") if "system_fingerprint" in t]


def test_the_drawer_says_which_builds_answered_and_that_the_build_changed(two_builds):
    archive, (first, second) = two_builds
    drawer = drawer_of((archive.public / "index.html").read_text(encoding="utf-8"))
    entry = drawer[second.run_dir.name]
    assert entry["system_fingerprints"] == [BUILD_2]
    words = entry["build_change"]
    assert words.startswith(f"Server build changed under the same model id {MODEL}")
    assert BUILD_1 in words and BUILD_2 in words and first.run_dir.name in words
    assert "build_change" in (archive.public / "index.html").read_text(encoding="utf-8")   # the script shows it


def test_croissant_declares_the_trial_field_and_the_measurements_list(two_builds):
    archive, _ = two_builds
    document = json.loads((archive.public / "croissant.json").read_text(encoding="utf-8"))
    fields = {rs["@id"]: {f["name"]: f for f in rs["field"]} for rs in document["recordSet"]}
    trial_field = fields["open_lane_trials"]["system_fingerprint"]
    assert trial_field["description"] == TRIAL_DESCRIPTIONS["system_fingerprint"]
    assert trial_field["dataType"] == "sc:Text"
    assert "system_fingerprints" in fields["stability"]
    assert fields["changes"]["build_changed"]["dataType"] == "sc:Boolean"


def test_verify_recomputes_the_list_of_builds_and_names_a_list_that_is_not_the_trials(two_builds, capsys):
    archive, (_, second) = two_builds
    public = archive.public
    assert main(["verify", "--public", str(public), second.run_dir.name]) == 0
    assert main(["--home", str(archive.home), "verify", str(second.run_dir)]) == 0
    capsys.readouterr()

    rows = csv_rows(public / "stability.csv")
    for row in rows:
        if row["run_id"] == second.run_dir.name:
            row["system_fingerprints"] = json.dumps([BUILD_1])          # claims the old build answered
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (public / "stability.csv").write_text(buffer.getvalue(), encoding="utf-8")
    assert main(["verify", "--public", str(public), second.run_dir.name]) == 1
    assert f"DIFFERS system_fingerprints: recorded ['{BUILD_1}'], recomputed ['{BUILD_2}']" in capsys.readouterr().out

    run_file = second.run_dir / "run.json"
    write_json(run_file, {**json.loads(run_file.read_text()), "system_fingerprints": []})
    assert main(["--home", str(archive.home), "verify", str(second.run_dir)]) == 1
    assert "DIFFERS system_fingerprints: recorded [], recomputed" in capsys.readouterr().out


def test_trials_recorded_before_the_field_still_publish_and_verify(archive, capsys):
    """A run written as the runner wrote it before: no field on its trials, none in its run record."""
    protocol = ph.protocol(archive, OPEN)
    ph.write_run(archive, protocol, "old-run", "2026-11-01")
    folder = archive.run_dir("old-run")
    assert not [t for t in read_jsonl(folder / "trials.jsonl") if "system_fingerprint" in t]
    assert main(["--home", str(archive.home), "verify", str(folder)]) == 0
    publish_all(archive, build_time="2026-11-03T00:00:00Z")
    [row] = [r for r in csv_rows(archive.public / "stability.csv") if r["run_id"] == "old-run"]
    assert row["system_fingerprints"] == ""                      # unknown, not "none reported"
    assert main(["verify", "--public", str(archive.public), "old-run"]) == 0
    assert "every field recomputes exactly" in capsys.readouterr().out


# --------------------------------------------------------------------------
# the rule, pair by pair
# --------------------------------------------------------------------------

def point(run_id: str, date: str, builds, model: str = MODEL, returned: str = MODEL) -> dict:
    return {"run_id": run_id, "run_date": date, "protocol_id": OPEN, "series": "open_weights", "model_family": "local",
            "rewording_type": "wording", "subject_model_id": model, "returned_model_id": returned,
            "stability_pct": 80.0, "ci_low_pct": 70.0, "ci_high_pct": 90.0, "drop_bound_pct_ab": 0.0,
            "on_curve": True, "replicate_index": 0, "system_fingerprints": builds}


@pytest.mark.parametrize("before, after, model, changed", [
    ([BUILD_1], [BUILD_2], MODEL, True),
    ([BUILD_1], [BUILD_1], MODEL, False),
    ([BUILD_1, BUILD_2], [BUILD_2], MODEL, True),          # the earlier run saw an upgrade; the later only the new
    ([BUILD_1], [BUILD_2], "another-model", None),         # a new model id is its own change, already shown
    (None, [BUILD_2], MODEL, None),                        # recorded before the field: nothing to compare
    ([], [BUILD_2], MODEL, None),                          # the earlier server reported no build
], ids=["changed", "same", "upgraded-during-the-earlier-run", "model-changed", "not-recorded", "none-reported"])
def test_a_build_change_is_said_only_under_one_model_id_with_builds_on_both_sides(before, after, model, changed):
    x, y = point("x", "2026-11-01", before), point("y", "2026-11-02", after, model=model, returned=model)
    row = change_row(x, y)
    assert build_changed(x, y) is changed and row["build_changed"] is changed
    assert row["from_system_fingerprints"] == before and row["to_system_fingerprints"] == after
    words = site.build_words(row)
    assert (words is None) == (changed is None)
    if changed is not None:
        assert words.startswith("Server build changed" if changed else "Same server build")


def test_a_different_returned_model_id_is_not_an_unchanged_model_id():
    x = point("x", "2026-11-01", [BUILD_1])
    y = point("y", "2026-11-02", [BUILD_2], returned=MODEL + "-2026-11")
    assert build_changed(x, y) is None


def test_the_list_is_the_distinct_builds_sorted_and_unknown_only_when_no_trial_carries_the_field():
    assert system_fingerprints([{"system_fingerprint": BUILD_2}, {"system_fingerprint": BUILD_1},
                                {"system_fingerprint": BUILD_2}, {"system_fingerprint": None}]) == [BUILD_1, BUILD_2]
    assert system_fingerprints([{"system_fingerprint": None}]) == []
    assert system_fingerprints([{"outcome": "valid"}]) is None
    assert system_fingerprints([{"outcome": "valid"}, {"system_fingerprint": BUILD_1}]) == [BUILD_1]
