"""Publication redoes only what changed, and a changed byte is still caught (issue 45, item 5).

A run whose trial log, ``run.json`` and ``measurement.json`` hash to the
digests recorded when it last verified clean is not parsed again; one byte
changed at the same size and it is read from its first record, and the
build refuses a chain that no longer holds.  The publication job's checks
report what the build just checked while ``public/`` is what it published,
and run again over a public file changed since.
"""
import traceback

import pytest

from llmarchive.protocols import registry
from publish import PublishError, publish_all
from publish.data import verified
from publish.pipeline import checks, report
from tests import publish_helpers as ph

BUILD_1 = "2026-12-03T00:00:00Z"
BUILD_2 = "2026-12-04T00:00:00Z"


@pytest.fixture
def published(archive):
    ph.populate(archive)
    publish_all(archive, build_time=BUILD_1)
    return archive


def _runs(paths) -> set[str]:
    return {folder.name for folder in paths.experiments.iterdir() if folder.is_dir()}


def _same_size_edit(path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert len(old) == len(new) and old in data
    path.write_bytes(data.replace(old, new, 1))


def test_a_run_whose_files_did_not_change_is_not_verified_again_and_publishes_the_same_rows(published):
    assert set(checks.REVERIFIED) == _runs(published)          # the first build read every log whole
    assert set(report.read(published)["reverified"]) == _runs(published)
    before = {name: (published.public / name).read_bytes() for name in ("stability.csv", "outcomes.csv",
                                                                         "changes.csv", "open-lane/2026.jsonl")}
    publish_all(published, build_time=BUILD_2)
    assert checks.REVERIFIED == [] and report.read(published)["reverified"] == []
    assert {name: (published.public / name).read_bytes() for name in before} == before


def test_one_byte_changed_at_the_same_size_is_verified_again_and_the_build_refuses(published):
    log = published.run_dir("c-2026-11-rcf-anchoring") / "trials.jsonl"
    size = log.stat().st_size
    _same_size_edit(log, b'"trial_index":3,', b'"trial_index":4,')
    assert log.stat().st_size == size
    with pytest.raises(PublishError, match="c-2026-11-rcf-anchoring"):
        publish_all(published, build_time=BUILD_2)
    assert checks.REVERIFIED == ["c-2026-11-rcf-anchoring"]      # the one run whose bytes changed, and no other
    assert any("c-2026-11-rcf-anchoring" in p for p in checks.chain_problems(published))


def test_a_changed_measurement_file_is_verified_again(published):
    measurement = published.run_dir("c-2026-10-sunk-order") / "measurement.json"
    measurement.write_bytes(measurement.read_bytes() + b"\n")
    publish_all(published, build_time=BUILD_2)
    assert checks.REVERIFIED == ["c-2026-10-sunk-order"]


def test_an_edited_record_of_verified_runs_is_no_record(published):
    file = verified.record_file(published)
    file.write_bytes(file.read_bytes().replace(b'"count":', b'"count": ', 1))
    assert verified.load(published) == {}
    publish_all(published, build_time=BUILD_2)
    assert set(checks.REVERIFIED) == _runs(published)


def test_the_publication_checks_report_the_build_and_equal_a_fresh_run_of_them(published):
    results, build_time = checks.after_build(published)
    assert build_time == BUILD_1
    assert results == checks.run_all(published) == {name: [] for name in checks.CHECKS}


def test_a_public_file_changed_after_publishing_is_checked_again_and_fails(published):
    guard = registry.load_protocol(published, "risky_choice_framing__anchoring__v0")
    secret = guard["panel"][0]["versions"]["A"]
    with open(published.public / "stability.csv", "a", encoding="utf-8") as fh:
        fh.write(f'"{secret}"\n')
    results, build_time = checks.after_build(published)
    assert build_time is None
    assert results["leak_guard"] and results == checks.run_all(published)


def test_a_publication_reads_each_protocol_file_once(published, monkeypatch):
    """Publication's own reads (its check, its inputs, its texts, its panel files) share one read of each
    file; the coverage computation it asks to judge the periods reads the registry for itself, and is not
    publication's to count."""
    reads: list[str] = []
    real = registry._read_protocol_file

    def counted(file):
        if not any("llmarchive/schedule/coverage" in frame.filename for frame in traceback.extract_stack()):
            reads.append(file.name)
        return real(file)

    monkeypatch.setattr(registry, "_read_protocol_file", counted)
    publish_all(published, build_time=BUILD_2)
    assert reads and len(reads) == len(set(reads))


def test_a_file_whose_bytes_did_not_change_is_not_searched_again_and_a_changed_one_is(published):
    from publish.pipeline import build

    ph.add_record(published, "coverage", period="2026-12", job="full_sweep", series="commercial", protocol_id=None,
                  status="gap", cause="provider_outage", run_id=None, detail="the provider was down")
    publish_all(published, build_time=BUILD_2)
    skipped = set(build.SKIPPED)
    assert "panels/risky_choice_framing__wording__v0.json" in skipped and "open-lane/2026.jsonl" in skipped
    assert "coverage.csv" not in skipped and "index.html" not in skipped     # new bytes: searched
    assert "archive.db" not in skipped                                        # the database: searched whole


def test_a_changed_check_searches_every_file_again(published, monkeypatch):
    from publish.boundary import memo
    from publish.pipeline import build

    publish_all(published, build_time=BUILD_2)
    assert build.SKIPPED
    monkeypatch.setattr(memo, "VERSION", memo.VERSION + 1)     # as a change to the checks' code does
    publish_all(published, build_time=BUILD_2)
    assert build.SKIPPED == []


def test_a_measurement_put_on_the_curve_with_a_flag_after_a_build_is_refused_by_the_next(published):
    import json

    file = published.run_dir("c-2026-10-sunk-order") / "measurement.json"
    m = json.loads(file.read_text())
    m["on_curve"], m["flags"] = True, ["drop_confounded"]
    file.write_text(json.dumps(m, indent=1, sort_keys=True) + "\n")
    with pytest.raises(PublishError, match=r"no_flagged_measurement_on_curve: .*c-2026-10-sunk-order"):
        publish_all(published, build_time=BUILD_2)
    assert checks.REVERIFIED == ["c-2026-10-sunk-order"]


def _record_log_with_records(paths):
    from llmarchive.archive import record_logs

    for kind in record_logs.KINDS:
        log = paths.record_log(kind)
        if log.is_file() and log.read_bytes().count(b"\n") >= 2:
            return kind, log
    raise AssertionError("the populated archive has a record log of two records")


def test_a_record_log_the_last_build_verified_has_only_its_new_records_chained(published, monkeypatch):
    from llmarchive.archive import record_logs
    from measure import chain

    kind, log = _record_log_with_records(published)
    assert verified.load_logs(published)[kind]["offset"] == log.stat().st_size
    record_logs.append(published, "coverage", {"period": "2026-11", "job": "full_sweep", "series": "commercial",
                                                "protocol_id": None, "status": "gap", "cause": "budget_halted",
                                                "run_id": None, "detail": "", "condition": "budget_refused"})
    hashed, real = [], chain.record_hash
    monkeypatch.setattr(chain, "record_hash", lambda record: hashed.append(record) or real(record))
    assert checks._verify_record_logs(published, None) == []
    assert [r["status"] for r in hashed] == ["gap"], "the one record appended since, and no other"


def test_an_old_record_edited_at_the_same_size_is_still_refused_by_the_next_build(published):
    _, log = _record_log_with_records(published)
    first = log.read_bytes().split(b"\n", 1)[0]
    at = first.index(b'"recorded_at":"') + len(b'"recorded_at":"')
    digit = first[at:at + 1]
    _same_size_edit(log, first, first[:at] + (b"1" if digit != b"1" else b"2") + first[at + 1:])
    with pytest.raises(PublishError, match=log.name):
        publish_all(published, build_time=BUILD_2)
