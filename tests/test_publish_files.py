"""The published files: CSVs, open lane, Croissant, status and manifest, rebuild determinism."""
import csv
import io
import json
import shutil

import pytest

from llmarchive.archive import ArchivePaths
from measure import chain
from measure.canonical import sha256_hex
from measure.schema import (BESIDE_MEASUREMENT_FIELD_NAMES, MEASUREMENT_FIELD_NAMES, MEASUREMENT_FIELDS,
                            OUTCOME_FIELD_NAMES, OUTCOMES, VERSIONS)
from publish import PublishError, publish_all
from publish.words import numbers
from tests import publish_helpers as ph

BUILD_1 = "2026-12-03T00:00:00Z"
BUILD_2 = "2027-01-15T09:30:00Z"


@pytest.fixture(scope="module")
def published(publish_template, tmp_path_factory):
    """One populated archive, published once, shared by the read-only tests below."""
    paths = ph.fresh_archive(publish_template, tmp_path_factory.mktemp("pub") / "home")
    data = ph.populate(paths)
    manifest = publish_all(paths, build_time=BUILD_1)
    return paths, data, manifest


def read_csv(path):
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_stability_csv_header_is_the_reading_then_exactly_measurement_fields(published):
    paths, _, _ = published
    rows = read_csv(paths.public / "stability.csv")
    assert tuple(rows[0]) == ("reading", "flag_sentences") + MEASUREMENT_FIELD_NAMES + BESIDE_MEASUREMENT_FIELD_NAMES


def test_stability_csv_has_one_row_per_measurement_with_json_cells_for_non_scalars(published):
    paths, data, _ = published
    header, *rows = read_csv(paths.public / "stability.csv")
    assert len(rows) == len(data["measurements"])
    by_run = {m["run_id"]: m for m in data["measurements"]}
    labels = dict(MEASUREMENT_FIELDS)
    for row in rows:
        record = dict(zip(header, row))
        m = by_run[record["run_id"]]
        assert record["reading"] == numbers.reading(m)
        assert json.loads(record["flag_sentences"]) == numbers.flag_sentences(m)
        for name in MEASUREMENT_FIELD_NAMES:
            value, cell = m[name], record[name]
            if value is None:
                assert cell == ""
            elif labels[name] == "json":
                assert json.loads(cell) == value, name
            elif labels[name] == "bool":
                assert cell == ("true" if value else "false")
            elif isinstance(value, float):
                assert float(cell) == value
            else:
                assert cell == str(value)
    assert {r[header.index("series")] for r in rows} == {"commercial", "open_weights"}


def test_outcomes_csv_unpacks_every_outcome_of_every_version(published):
    paths, data, _ = published
    rows = read_csv(paths.public / "outcomes.csv")
    assert tuple(rows[0]) == OUTCOME_FIELD_NAMES
    body = rows[1:]
    assert len(body) == len(data["measurements"]) * len(VERSIONS) * len(OUTCOMES)
    m = data["measurements"][0]
    mine = {(v, o): int(c) for run_id, v, o, c in body if run_id == m["run_id"]}
    for version in VERSIONS:
        for outcome in OUTCOMES:
            assert mine[(version, outcome)] == m["outcomes"][version][outcome]
        assert sum(mine[(version, o)] for o in OUTCOMES) == m["n"]


def test_coverage_csv_lists_every_job_with_ran_or_one_cause(published):
    paths, _, _ = published
    rows = read_csv(paths.public / "coverage.csv")
    header, body = rows[0], rows[1:]
    assert header == ["period", "job", "series", "protocol_id", "status", "cause", "run_id", "detail", "recorded_at"]
    records = [dict(zip(header, r)) for r in body]
    assert [r["period"] for r in records] == ["2026-09", "2026-10", "2026-11", "2026-12"]
    gap = records[0]
    assert gap["status"] == "gap" and gap["cause"] == "before_archive_start"
    assert all(r["cause"] == "" for r in records[1:])


def test_a_later_coverage_record_for_the_same_job_supersedes_the_earlier(archive):
    ph.add_record(archive, "coverage", period="2026-10", job="full_sweep", series="commercial", protocol_id=None,
                  status="gap", cause="provider_outage", run_id=None, detail="provider down")
    ph.add_record(archive, "coverage", period="2026-10", job="full_sweep", series="commercial", protocol_id=None,
                  status="ran", cause=None, run_id="r1", detail="ran after the outage",
                  recorded_at="2026-12-02T00:00:00Z")
    publish_all(archive, build_time=BUILD_1)
    rows = read_csv(archive.public / "coverage.csv")[1:]
    assert len(rows) == 1 and rows[0][4] == "ran"


def test_open_lane_copies_open_trials_byte_for_byte_and_never_a_guard_trial(published):
    paths, _, _ = published
    lane = (paths.public / "open-lane" / "2026.jsonl").read_bytes()
    expected = b""
    for run_id in sorted(["c-2026-10-rcf-wording", "c-2026-10-brn-wording", "c-2026-11-rcf-wording",
                          "c-2026-11-brn-wording", "c-2026-12-rcf-wording", "c-2026-12-brn-wording",
                          "ow-2026-11-rcf-wording"],
                         key=lambda r: (json.loads((paths.run_dir(r) / "run.json").read_text())["run_date"], r)):
        expected += (paths.run_dir(run_id) / "trials.jsonl").read_bytes()
    assert lane == expected
    trials = [json.loads(line) for line in lane.decode().splitlines()]
    assert {t["protocol_id"] for t in trials} == {"risky_choice_framing__wording__v0", "base_rate_neglect__wording__v0"}
    for run_id in {t["run_id"] for t in trials}:
        chain.verify([t for t in trials if t["run_id"] == run_id])
    assert all("prompt" not in t for t in trials)


def test_a_run_is_published_only_once_complete(archive):
    p = ph.protocol(archive, "risky_choice_framing__wording__v0")
    ph.write_run(archive, p, "done", "2026-10-02")
    ph.write_run(archive, p, "running", "2026-10-03")
    (archive.run_dir("running") / "measurement.json").unlink()
    publish_all(archive, build_time=BUILD_1)
    header, *rows = read_csv(archive.public / "stability.csv")
    assert {r[header.index("run_id")] for r in rows} == {"done"}
    lane = (archive.public / "open-lane" / "2026.jsonl").read_text()
    assert '"run_id":"running"' not in lane


def test_sealed_protocol_results_are_never_published_only_its_existence(archive):
    from llmarchive.protocols import registry

    registry.register_sealed(archive, "sealed_one__v0", "1" * 64, "2" * 64, reviewer="t", human_reviewed=True)
    guard = ph.protocol(archive, "sunk_cost_fallacy__default__v0")
    ph.write_run(archive, guard, "sealed-run", "2026-10-02")
    # make this run's measurement claim the sealed protocol's id and lane
    m = json.loads((archive.run_dir("sealed-run") / "measurement.json").read_text())
    m.update({"protocol_id": "sealed_one__v0", "lane": "sealed"})
    (archive.run_dir("sealed-run") / "measurement.json").write_text(json.dumps(m))
    publish_all(archive, build_time=BUILD_1)
    assert "sealed-run" not in (archive.public / "stability.csv").read_text()
    import sqlite3

    db = sqlite3.connect(archive.public / "archive.db")
    row = db.execute("select protocol_id, lane, status, panel_sha256, family from protocols "
                     "where lane = 'sealed'").fetchall()
    assert row == [("sealed_one__v0", "sealed", "admitted", None, None)]
    assert db.execute("select count(*) from runs where run_id = 'sealed-run'").fetchone()[0] == 0


def test_rebuilding_from_the_same_records_gives_identical_bytes_except_the_build_time(published, tmp_path):
    paths, _, _ = published
    first = {p.relative_to(paths.public).as_posix(): p.read_bytes() for p in paths.public.rglob("*") if p.is_file()}
    again = ArchivePaths(tmp_path / "copy")
    shutil.copytree(paths.home, again.home)
    manifest = publish_all(again, build_time=BUILD_2)
    second = {p.relative_to(again.public).as_posix(): p.read_bytes() for p in again.public.rglob("*") if p.is_file()}
    assert sorted(first) == sorted(second)
    differing = sorted(name for name in first if first[name] != second[name])
    assert differing == ["croissant.json", "index.html", "render_manifest.json", "status.json"]
    croissant_1, croissant_2 = (sha256_hex(f["croissant.json"]).encode() for f in (first, second))
    for name in ("index.html", "status.json"):  # the site lists croissant.json's hash, which holds the version
        assert (first[name].replace(BUILD_1.encode(), BUILD_2.encode()).replace(croissant_1, croissant_2)
                == second[name])
    c1, c2 = json.loads(first["croissant.json"]), json.loads(second["croissant.json"])
    assert (c1.pop("version"), c2.pop("version")) == ("2026.12.3", "2027.1.15")
    assert (c1.pop("dateModified"), c2.pop("dateModified")) == (BUILD_1[:10], BUILD_2[:10])
    assert c1 == c2
    m1 = json.loads(first["render_manifest.json"])
    m2 = json.loads(second["render_manifest.json"])
    for name in ("index.html", "status.json", "croissant.json"):
        m1["files"].pop(name), m2["files"].pop(name)
    assert {k: v for k, v in m1.items() if k != "build_time"} == {k: v for k, v in m2.items() if k != "build_time"}
    assert manifest["build_time"] == BUILD_2


def test_manifest_lists_the_sha256_of_every_published_file(published):
    paths, _, manifest = published
    on_disk = {p.relative_to(paths.public).as_posix() for p in paths.public.rglob("*") if p.is_file()}
    assert set(manifest["files"]) == on_disk - {"render_manifest.json"}
    for name, entry in manifest["files"].items():
        data = (paths.public / name).read_bytes()
        assert entry == {"sha256": sha256_hex(data), "bytes": len(data)}
    written = json.loads((paths.public / "render_manifest.json").read_text())
    assert written == manifest and written["record_type"] == "render_manifest"


def test_status_json_carries_schema_hash_absolute_build_time_and_commercial_coverage(published):
    from measure.schema import SCHEMA_SHA256

    paths, _, _ = published
    status = json.loads((paths.public / "status.json").read_text())
    assert status["record_type"] == "status"
    assert status["schema_sha256"] == SCHEMA_SHA256
    assert status["build_time"] == BUILD_1
    assert status["coverage_commercial"]["ran"] == 3 and status["coverage_commercial"]["gap"] == 1
    assert status["coverage_commercial"]["gaps_by_cause"] == {"before_archive_start": 1}
    assert status["measurements"]["commercial"]["latest_run_date"] == "2026-12-02"
    assert status["instrument"]["runtime_fingerprint"] == {"date": "2026-12-02", "status": "pass"}


def test_croissant_is_valid_for_mlcroissant_and_its_records_read_back(published):
    import mlcroissant as mlc

    paths, data, _ = published
    document = json.loads((paths.public / "croissant.json").read_text())
    dataset = mlc.Dataset(jsonld=paths.public / "croissant.json")
    fields = {rs["@id"]: [f["name"] for f in rs["field"]] for rs in document["recordSet"]}
    assert fields["stability"] == (["reading", "flag_sentences"] + list(MEASUREMENT_FIELD_NAMES)
                                   + list(BESIDE_MEASUREMENT_FIELD_NAMES))
    assert fields["changes"][0] == "reading"
    assert fields["outcomes"] == list(OUTCOME_FIELD_NAMES)
    types = {f["name"]: f["dataType"] for f in document["recordSet"][0]["field"]}
    assert types["stability_pct"] == "sc:Float" and types["entropy_a"] == "sc:Float"
    assert types["n"] == "sc:Integer" and types["schema_version"] == "sc:Integer"
    assert types["on_curve"] == "sc:Boolean" and types["flags"] == "sc:Text"
    assert types["reading"] == "sc:Text" and types["flag_sentences"] == "sc:Text"
    stability = list(dataset.records(record_set="stability"))
    assert len(stability) == len(data["measurements"])
    outcomes = list(dataset.records(record_set="outcomes"))
    assert len(outcomes) == len(data["measurements"]) * len(VERSIONS) * len(OUTCOMES)
    trials = list(dataset.records(record_set="open_lane_trials"))
    assert len(trials) == 7 * 120
    files = {d["@id"]: d for d in document["distribution"]}
    assert files["stability.csv"]["sha256"] == sha256_hex((paths.public / "stability.csv").read_bytes())
    assert files["changes.csv"]["sha256"] == sha256_hex((paths.public / "changes.csv").read_bytes())
    assert len(list(dataset.records(record_set="changes"))) == len(read_csv(paths.public / "changes.csv")) - 1


def test_croissant_marks_the_dataset_live_and_versions_it_by_publication_date(published):
    import mlcroissant as mlc

    paths, _, _ = published
    document = json.loads((paths.public / "croissant.json").read_text())
    assert document["isLiveDataset"] is True
    assert document["version"] == "2026.12.3" and document["dateModified"] == BUILD_1[:10]
    metadata = mlc.Dataset(jsonld=paths.public / "croissant.json").metadata
    assert metadata.version == "2026.12.3"
    assert not [w for w in metadata.ctx.issues.warnings if "version" in w.lower()]


def test_changes_csv_holds_every_consecutive_on_curve_pair_labelled_by_compare(published):
    from measure.stats import compare
    from publish.data.changes import CHANGE_FIELDS

    paths, data, _ = published
    rows = read_csv(paths.public / "changes.csv")
    assert tuple(rows[0]) == ("reading",) + CHANGE_FIELDS
    by_run = {m["run_id"]: m for m in data["measurements"]}
    on_curve = [m for m in data["measurements"] if m["on_curve"]]
    curves = {(m["protocol_id"], m["series"], m["model_family"]) for m in on_curve}
    expected_pairs = sum(max(0, sum(1 for m in on_curve if (m["protocol_id"], m["series"], m["model_family"]) == c) - 1)
                         for c in curves)
    assert len(rows) - 1 == expected_pairs > 0
    for row in rows[1:]:
        record = dict(zip(rows[0], row))
        x, y = by_run[record["from_run_id"]], by_run[record["to_run_id"]]
        assert x["on_curve"] and y["on_curve"] and x["run_date"] < y["run_date"]
        assert record["label"] == compare(x, y)
        assert record["reading"].startswith(f"{record['label']}: ") and "random-error bound" in record["reading"]
        assert float(record["delta_pct"]) == pytest.approx(y["stability_pct"] - x["stability_pct"])


def test_a_measurement_that_is_not_of_this_schema_is_refused_naming_the_file(archive):
    p = ph.protocol(archive, "risky_choice_framing__wording__v0")
    ph.write_run(archive, p, "bad", "2026-10-02")
    file = archive.run_dir("bad") / "measurement.json"
    m = json.loads(file.read_text())
    del m["entropy_a"]
    file.write_text(json.dumps(m))
    with pytest.raises(PublishError, match=r"bad/measurement.json.*missing entropy_a"):
        publish_all(archive, build_time=BUILD_1)
    assert not (archive.public / "stability.csv").exists()


def test_an_edited_open_trial_log_is_refused_and_public_is_left_as_it_was(archive):
    p = ph.protocol(archive, "risky_choice_framing__wording__v0")
    ph.write_run(archive, p, "open-run", "2026-10-02")
    publish_all(archive, build_time=BUILD_1)
    before = (archive.public / "stability.csv").read_bytes()
    log = archive.run_dir("open-run") / "trials.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace('"token":"A"', '"token":"B"').replace('"token":"B"', '"token":"A"', 0)
    edited = json.loads(lines[3])
    edited["response_text"] = "edited after the fact"
    lines[3] = json.dumps(edited, sort_keys=True, separators=(",", ":")) + "\n"
    log.write_text("".join(lines))
    with pytest.raises(PublishError, match=r"refusing to publish: trial_log_chains: .*open-run/trials.jsonl: "
                                           r"record #3: record_sha256 .* does not match its content"):
        publish_all(archive, build_time=BUILD_2)
    assert (archive.public / "stability.csv").read_bytes() == before


def test_a_relative_or_local_build_time_is_refused(archive):
    for bad in ("2026-12-03", "2026-12-03T00:00:00+01:00", "3 days ago"):
        with pytest.raises(PublishError, match="absolute UTC"):
            publish_all(archive, build_time=bad)


def test_two_builds_of_one_home_never_run_at_once(archive):
    import fcntl

    archive.ensure()
    with open(archive.home / ".publish.lock", "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        with pytest.raises(PublishError, match="another publication"):
            publish_all(archive, build_time=BUILD_1)
    publish_all(archive, build_time=BUILD_1)


def test_publish_refuses_a_flagged_measurement_on_the_curve_under_the_assets_rule(archive):
    from publish.pipeline import checks

    p = ph.protocol(archive, "risky_choice_framing__wording__v0")
    ph.write_run(archive, p, "edited", "2026-10-02")
    file = archive.run_dir("edited") / "measurement.json"
    m = json.loads(file.read_text())
    m["on_curve"], m["flags"] = True, ["drop_confounded"]
    file.write_text(json.dumps(m))
    assert checks.blocking_problems(archive)["no_flagged_measurement_on_curve"]
    with pytest.raises(PublishError, match=r"refusing to publish: no_flagged_measurement_on_curve: .*edited"):
        publish_all(archive, build_time=BUILD_1)
    assert not archive.public.exists() or not (archive.public / "stability.csv").exists()


def test_protocols_table_carries_design_readers_as_json_when_a_protocol_has_them(archive, monkeypatch):
    import sqlite3

    from publish.data import protocols as publish_protocols

    real = publish_protocols.registry.load_protocol
    stripped = "base_rate_neglect__wording__v0"

    def without_one(paths, protocol_id):
        protocol = real(paths, protocol_id)
        if protocol_id == stripped:
            protocol = {k: v for k, v in protocol.items() if k != "design_readers"}
        return protocol

    monkeypatch.setattr(publish_protocols.registry, "load_protocol", without_one)
    publish_all(archive, build_time=BUILD_1)
    db = sqlite3.connect(archive.public / "archive.db")
    rows = dict(db.execute("select protocol_id, design_readers from protocols"))
    assert rows[stripped] is None
    carried = 0
    for protocol_id, cell in rows.items():
        design = real(archive, protocol_id).get("design_readers") if protocol_id != stripped else None
        if design is None:
            assert cell is None, protocol_id
            continue
        carried += 1
        decoded = json.loads(cell)
        assert decoded == design
        for figures in decoded.values():
            assert set(figures) >= {"gap_ab_pct", "gap_aa_prime_pct", "gap_ac_pct", "stability_pct"}
    assert carried > 0


NEW_MEASUREMENT_FIELDS = ("replicate_agreement_pct", "ci_stratified_low_pct", "ci_stratified_high_pct",
                          "gap_role_ab_pct")


def test_repeats_and_the_role_gap_reach_stability_csv_archive_db_and_croissant(published):
    import sqlite3

    paths, data, _ = published
    by_run = {m["run_id"]: m for m in data["measurements"]}
    rows = read_csv(paths.public / "stability.csv")
    header = rows[0]
    db = sqlite3.connect(paths.public / "archive.db")
    columns = ", ".join(NEW_MEASUREMENT_FIELDS)
    stored = {r[0]: r[1:] for r in db.execute(f"select run_id, {columns} from measurements")}
    for row in rows[1:]:
        record = dict(zip(header, row))
        m = by_run[record["run_id"]]
        # Every run of the published archive recorded its protocol's roles and has repeats.
        assert m["gap_role_ab_pct"] is not None and m["replicate_agreement_pct"] is not None
        for i, name in enumerate(NEW_MEASUREMENT_FIELDS):
            assert float(record[name]) == m[name] == stored[m["run_id"]][i], name
    document = json.loads((paths.public / "croissant.json").read_text())
    stability = next(rs for rs in document["recordSet"] if rs["@id"] == "stability")
    described = {f["name"]: f for f in stability["field"]}
    for name in NEW_MEASUREMENT_FIELDS:
        assert described[name]["dataType"] == "sc:Float" and described[name]["description"]


def test_the_protocols_table_carries_option_roles_and_the_human_row_is_read_against_the_role_gap(published):
    import sqlite3

    paths, _, _ = published
    db = sqlite3.connect(paths.public / "archive.db")
    rows = dict(db.execute("select protocol_id, option_roles from protocols"))
    roles = json.loads(rows["risky_choice_framing__wording__v0"])
    protocol = ph.protocol(paths, "risky_choice_framing__wording__v0")
    assert roles == {item["item_id"]: item["structure"]["roles"] for item in protocol["panel"]}
    assert sorted(set(roles["s01"].values())) == ["gamble", "sure"]
    human = db.execute("select read_against, effect_pct from human_model_gap").fetchall()
    assert human == [("gap_role_ab_pct", 28.68)]


def test_a_measurement_written_before_the_new_fields_publishes_with_them_empty(archive):
    rcf = ph.protocol(archive, "risky_choice_framing__wording__v0")
    ph.write_run(archive, rcf, "c-2026-10-rcf-wording", "2026-10-02")
    file = archive.run_dir("c-2026-10-rcf-wording") / "measurement.json"
    old = {k: v for k, v in json.loads(file.read_text()).items() if k not in NEW_MEASUREMENT_FIELDS}
    file.write_text(json.dumps(old), encoding="utf-8")
    publish_all(archive, build_time=BUILD_1)
    rows = read_csv(archive.public / "stability.csv")
    record = dict(zip(rows[0], rows[1]))
    assert all(record[name] == "" for name in NEW_MEASUREMENT_FIELDS)
    assert record["stability_pct"] != ""


# --- the open panels, published in full (issue 20) -------------------------------------------------

OPEN_V0 = ("base_rate_neglect__wording__v0", "risky_choice_framing__wording__v0")
PANEL_FILE_KINDS = (".json", ".py", ".lm_eval.yaml", ".lm_eval.jsonl")
"""Published per open protocol: the panel, its Inspect AI task, its lm-evaluation-harness task and documents."""


def test_every_open_protocol_is_published_in_full_and_verifies_against_the_registry(published):
    from llmarchive.protocols import open_panels
    from llmarchive.protocols import registry

    paths, _, manifest = published
    names = sorted(p.name for p in (paths.public / "panels").iterdir())
    assert names == sorted(f"{pid}{ext}" for pid in OPEN_V0 for ext in PANEL_FILE_KINDS)
    for pid in OPEN_V0:
        file = paths.public / "panels" / f"{pid}.json"
        doc = open_panels.read_panel_file(file)
        assert open_panels.verify_panel_file(doc) == []
        protocol = registry.load_protocol(paths, pid)
        assert (doc["panel_sha256"], doc["protocol_sha256"]) == (protocol["panel_sha256"], protocol["protocol_sha256"])
        assert [i["versions"] for i in doc["panel"]] == [i["versions"] for i in protocol["panel"]]
        assert manifest["files"][f"panels/{pid}.json"] == {"sha256": sha256_hex(file.read_bytes()),
                                                           "bytes": file.stat().st_size}


def test_croissant_describes_the_panels_file_set_and_its_scenarios_read_back(published):
    import mlcroissant as mlc

    paths, _, _ = published
    document = json.loads((paths.public / "croissant.json").read_text())
    files = {d["@id"]: d for d in document["distribution"]}
    assert files["panels"]["@type"] == "cr:FileSet" and files["panels"]["includes"] == "panels/*.json"
    for pid in OPEN_V0:
        assert sha256_hex((paths.public / "panels" / f"{pid}.json").read_bytes()) in files["panels"]["description"]
    records = list(mlc.Dataset(jsonld=paths.public / "croissant.json").records(record_set="open_panel_scenarios"))
    assert len(records) == 2 * 15
    by_protocol = {}
    for r in records:
        by_protocol.setdefault(r["open_panel_scenarios/protocol_id"].decode(), []).append(r)
    assert sorted(by_protocol) == list(OPEN_V0)
    first = ph.protocol(paths, OPEN_V0[1])["panel"][0]
    row = next(r for r in by_protocol[OPEN_V0[1]] if r["open_panel_scenarios/item_id"] == b"s01")
    assert row["open_panel_scenarios/versions_A_prime"].decode() == first["versions"]["A_prime"]


def test_a_v1_protocol_admitted_to_the_open_lane_gets_its_own_panel_file(archive):
    from llmarchive.protocols import admissions as lanes
    from llmarchive.protocols import open_panels
    from llmarchive.protocols import registry

    known = registry.known_ids(archive)
    for pid in ("risky_choice_framing__wording__v1", "risky_choice_framing__anchoring__v1"):
        lane, twin = lanes.planned_lane(pid)
        lanes.promote(archive, registry.load_protocol(archive, pid), lane, twin, known_ids=known)  # inherits v0's review
    publish_all(archive, build_time=BUILD_1)
    names = sorted(p.name for p in (archive.public / "panels").iterdir())
    assert names == sorted(f"{pid}{ext}" for pid in (*OPEN_V0, "risky_choice_framing__wording__v1")
                           for ext in PANEL_FILE_KINDS)
    v0, v1 = (open_panels.load_panel_file(archive.public / "panels" / f"risky_choice_framing__wording__{s}.json")
              for s in ("v0", "v1"))
    assert v1["panel_sha256"] == v0["panel_sha256"] and v1["protocol_sha256"] != v0["protocol_sha256"]
    assert (v1["n"], v1["grammar_version"]) == (120, 2) and v1["how_to_send"]["calls"] == 480


def test_publish_check_reports_a_panel_file_of_a_guard_protocol_and_an_edited_one(archive):
    from publish.pipeline import checks

    publish_all(archive, build_time=BUILD_1)
    assert checks.leak_problems(archive) == []
    folder = archive.public / "panels"
    edited = folder / f"{OPEN_V0[0]}.json"
    edited.write_text(edited.read_text(encoding="utf-8").replace('"n_per_scenario": 2', '"n_per_scenario": 3'),
                      encoding="utf-8")
    (folder / "sunk_cost_fallacy__order__v0.json").write_text("{}", encoding="utf-8")
    problems = checks.leak_problems(archive)
    assert any("sunk_cost_fallacy__order__v0 is not in the open lane" in p for p in problems)
    assert any(p.startswith(f"panels/{OPEN_V0[0]}.json: protocol_sha256") for p in problems)
    (folder / f"{OPEN_V0[1]}.json").unlink()
    assert any(f"panels/{OPEN_V0[1]}.json: missing" in p for p in checks.leak_problems(archive))


# --- what the files say a row means (issue 25) ---------------------------------------------------

def unreadable_plan(items):
    """A model that rarely answers in the format: 3 of 30 answers readable in A and in B, none in A′ and C."""
    plan = {v: {i: ["unparseable", "unparseable"] for i in items} for v in VERSIONS}
    for i in items[:3]:
        plan["A"][i] = ["A", "unparseable"]
        plan["B"][i] = ["B", "unparseable"]
    return plan


def test_a_run_with_few_readable_answers_reads_not_measurable_first_in_the_csv_and_the_database(archive, tmp_path):
    import sqlite3

    from tests import known_answer_helpers as kh

    p = ph.protocol(archive, "risky_choice_framing__wording__v0")
    m = ph.write_run(archive, p, "ow-poor", "2026-12-02", series="open_weights", model_family="smollm2",
                     subject_model_id="smollm2-135m", plan=unreadable_plan(list(p["item_ids"])))
    ph.write_run(archive, p, "c-ok", "2026-12-02")
    points = kh.file_known_answer_points(archive, tmp_path / "submissions")
    publish_all(archive, build_time=BUILD_1)
    assert m["drop_bound_pct_ab"] == 180.0 and m["stability_pct"] is not None

    header, *rows = read_csv(archive.public / "stability.csv")
    row = dict(zip(header, next(r for r in rows if r[header.index("run_id")] == "ow-poor")))
    assert row["reading"] == ("not measurable: 6 of 60 answers of A and B readable — the losses alone could "
                              "explain any result; off the curve")
    assert row["stability_pct"] == repr(m["stability_pct"]) and row["drop_bound_pct_ab"] == "180.0", \
        "the schema's fields stay exactly as computed"
    sentences = json.loads(row["flag_sentences"])
    assert sorted(sentences) == sorted(m["flags"])
    assert "by up to 180.0 points" in sentences["drop_confounded"]
    assert "more than the whole 0–100 scale, so the losses alone could explain any result" in \
        sentences["drop_confounded"]

    db = sqlite3.connect(archive.public / "archive.db")
    try:
        columns = [c[1] for c in db.execute("pragma table_info(measurements)")]
        assert columns[:3] == ["reading", "flag_sentences", "record_type"]
        got, mdc = db.execute("select reading, min_detectable_change_pct from measurements where run_id = ?",
                              ("ow-poor",)).fetchone()
        assert got == row["reading"] and mdc == 360.0
        assert [c[1] for c in db.execute("pragma table_info(changes)")][0] == "reading"
        kinds = dict(db.execute("select model_id, point_kind from comparison_points"))
        assert kinds == {point["model_id"]: numbers.KNOWN_ANSWER for point in points.values()}
        expected = db.execute("select expected, reading from comparison_points where model_id = ?",
                              (points["framing-sensitive"]["model_id"],)).fetchone()
        assert expected[0] and expected[1] == numbers.reading(points["framing-sensitive"]["measurement"])
    finally:
        db.close()


def test_the_public_reader_takes_stability_csv_with_or_without_its_reading_columns(published, tmp_path):
    from publish.readback.files import public_inputs

    paths, data, _ = published
    folder = tmp_path / "public"
    shutil.copytree(paths.public, folder)
    run_id = "c-2026-11-rcf-wording"
    expected = next(m for m in data["measurements"] if m["run_id"] == run_id)
    assert public_inputs(folder, run_id).measurement == expected
    header, *rows = read_csv(folder / "stability.csv")

    def rewrite(head, body):
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([head, *body])
        (folder / "stability.csv").write_text(out.getvalue(), encoding="utf-8")

    rewrite(header[2:], [r[2:] for r in rows])           # a copy published before the words were added
    assert public_inputs(folder, run_id).measurement == expected
    rewrite(["remarks"] + header[2:], [["x"] + r[2:] for r in rows])
    with pytest.raises(PublishError, match="header is not the measurement schema's fields"):
        public_inputs(folder, run_id)


def test_the_open_lane_type_labels_see_a_type_first_met_on_a_later_trial():
    from measure.jsonl import Line
    from publish.data.sources import open_run_read

    trials = [{"record_type": "trial", "item_id": "s01", "version": "A", "outcome": "valid", "latency_ms": 10, "token": None},
              {"record_type": "trial", "item_id": "s01", "version": "A", "outcome": "valid", "latency_ms": 10, "token": None},
              {"record_type": "trial", "item_id": "s01", "version": "A", "outcome": "valid", "latency_ms": 10.5, "token": "A"},
              {"record_type": "trial", "item_id": "s01", "version": "A", "outcome": "valid", "latency_ms": 11, "token": "B",
               "system_fingerprint": "b1"}]
    lines = [Line(n, t, (json.dumps(t) + "\n").encode()) for n, t in enumerate(trials, start=1)]
    kept, labels, cells = open_run_read(lines)
    assert len(kept) == 4
    assert labels["latency_ms"] == {"int", "number"}
    assert labels["token"] == {"text"} and labels["system_fingerprint"] == {"text"}
    assert cells == {("s01", "A"): ("A", "B")}
