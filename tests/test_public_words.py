"""What is published comes from a public vocabulary (issue 24 §1).

Private reasons — a budget refusal's amounts, a stop's error text, an
instrument's exception, a pre-registration miss naming the home — stay in
the private logs; the published coverage ``detail``, flag reasons and
``status.json`` say the same in public facts (names, dates, ids, counts).
"""
import csv
import io
import json
import sqlite3

from llmarchive import budget as budget_mod
from llmarchive.archive import CONDITIONS, dates, record_logs as records, write_json
from llmarchive.cli import main
from llmarchive.schedule.coverage import compute, gather
from llmarchive.schedule.coverage_wording import CONDITION_WORDS, public_detail
from publish import publish_all
from publish.data import sources, status
from publish.data.csvs import coverage_rows
from tests import publish_helpers as ph
from tests.fake_provider import FakeProvider, decide_by_hash
from tests.test_coverage import NOW, PROTOCOLS, P_GUARD, P_OPEN, beat_days, open_run

PRIVATE = ("€", "No space left", "/home/owner", "would not load", "HTTP 529", "OSError", "kept_protocols")


def test_every_condition_has_public_words():
    assert set(CONDITION_WORDS) == set(CONDITIONS)
    assert not [w for w in CONDITION_WORDS.values() if any(p in w for p in PRIVATE)]


def test_no_private_reason_reaches_a_coverage_detail(paths):
    """Each condition whose observation used to copy a private record's text, observed at once."""
    beat_days(paths, "2026-10-01", "2026-12-01")
    home_path = "/home/owner/llm-archive/private"
    # the budget ladder refuses the sweep: its skip's reason names euros
    tight = budget_mod.Budget(12.0, 1.0, 1.0, {"scenario": 1.0, "fingerprint": 0.01})
    budget_mod.allowed_protocols(paths, PROTOCOLS, job="sweep", date="2026-10-02", budget=tight)
    # a sweep run stopped by a failed write, its detail an error with a path
    open_run(paths, "sweep_2026-11_open", "2026-11-02", "interrupted", condition="storage_write_failed")
    run = json.loads((paths.run_dir("sweep_2026-11_open") / "run.json").read_text())
    run["interruption"]["detail"] = f"OSError: [Errno 28] No space left on device: '{home_path}/x'"
    write_json(paths.run_dir("sweep_2026-11_open") / "run.json", run)
    # an instrument job that could not run, and a budget cut with the measured costs in its reason
    records.append(paths, "guard_rotation", {"date": "2026-11-03", "protocol_id": P_GUARD, "run_id": None,
                                             "previous_run_id": None, "verdict": "unavailable",
                                             "reason": f"OSError: the model would not load from {home_path}"})
    records.append(paths, "budget_cut", {"date": "2026-12-01", "month": "2026-12", "from_level": 2, "to_level": 3,
                                         "step": "frequency", "reason": "at the measured €0.01234 a call, 12 "
                                         "protocols cost about €31.20 a month against a general pool of €17.50"})
    result = compute(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS), now=NOW)
    gaps = [r for r in result.rows if r["status"] == "gap"]
    found = {r["detail"].split(":")[0] for r in gaps}
    assert {"budget_refused", "storage_write_failed", "instrument_unavailable", "budget_cut"} <= found
    leaked = [r["detail"] for r in result.rows if any(p in r["detail"] for p in PRIVATE)]
    assert leaked == []
    refused = next(r for r in gaps if r["detail"].startswith("budget_refused"))
    assert "the general pool had no room for it in 2026-10" in refused["detail"]
    assert all(r["condition"] == r["detail"].split(":")[0] for r in gaps) and all(
        r["condition"] is None for r in result.rows if r["status"] == "ran")
    assert any("€" in s["reason"] for s in records.read(paths, "skip")), "the owner's log keeps the full reason"


def test_a_row_written_before_the_public_words_is_published_recomposed(paths):
    old = {"period": "2026-11", "job": "full_sweep", "series": "commercial", "protocol_id": P_OPEN,
           "status": "gap", "cause": "budget_halted", "run_id": None,
           "detail": "budget_refused: full_sweep on 2026-11-02: a run of 120 calls costs about €1.12; €0.16 left"}
    records.append(paths, "coverage", old)
    [row] = coverage_rows(records.read(paths, "coverage"))
    assert row["detail"] == "budget_refused: the budget refused the work"
    assert public_detail({**old, "status": "ran", "cause": None, "run_id": "r1"}) == "ran: run r1"
    # the next coverage run writes it again in the public words, once
    from llmarchive.schedule.coverage import write_rows

    new = {**old, "detail": "budget_refused: full_sweep on 2026-11-02: the general pool had no room for it",
           "condition": "budget_refused"}
    assert len(write_rows(paths, [new])) == 1 and write_rows(paths, [new]) == []


def test_a_budget_refusal_names_the_rung_never_a_share_or_an_amount(paths):
    beat_days(paths, "2026-11-01", "2026-12-01")
    budget = budget_mod.Budget(110.0, 5.0, 5.0, {"scenario": 0.001, "fingerprint": 0.0001})
    budget_mod.write_budget(paths, budget)
    meter = budget_mod.SpendMeter(paths, budget_mod.Authorization("manual", "scenario", "general", 1.0),
                                  "filler", "anthropic", "m")
    meter.charge([(f"c{i}", {"answered": True}) for i in range(96)])      # past the last rung
    plan = budget_mod.allowed_protocols(paths, PROTOCOLS, job="sweep", month=dates.utc_month(),
                                        date=f"{dates.utc_month()}-02", budget=budget)
    assert plan.allowed == [] and {s["rung"] for s in records.read(paths, "skip")} == {"only subject_fingerprint"}
    from llmarchive.schedule.coverage_wording import skip_words

    words = skip_words(records.read(paths, "skip")[0], "budget_refused")
    assert words.endswith("the budget ladder's rung that keeps only subject_fingerprint left it out")
    assert "%" not in words and "€" not in words


def test_status_json_words_an_alarm_from_its_fields_not_its_reason(archive):
    ph.add_record(archive, "runtime_fingerprint", date="2026-11-15", status="unavailable", digest=None,
                  expected_digest=None, model_sha256=None, template_sha256=None, llama_cpp_version=None,
                  runner_arch=None, n_threads=None, n_batch=None, seed=None,
                  reason="the runtime fingerprint could not run: OSError: /home/owner/models/x.gguf")
    ph.add_record(archive, "instrument_alarm", date="2026-11-15", source="runtime_fingerprint",
                  reason="the runtime fingerprint could not run: OSError: /home/owner/models/x.gguf")
    inputs = sources.gather(archive)
    built = status.status(inputs, [], "2026-12-03T00:00:00Z")
    assert built["instrument_alarm"]["reason"] == "runtime_fingerprint on 2026-11-15: status unavailable"
    assert built["instrument"]["latest_alarm"]["reason"] == "runtime_fingerprint on 2026-11-15: status unavailable"
    assert "/home/owner" not in json.dumps(built)


def test_an_unregistered_runs_flag_reason_names_no_path_of_the_home(archive, capsys):
    """A run of a protocol no stamped manifest lists is exploratory; its published reason says so in public words."""
    pid = "risky_choice_framing__wording__v0"
    with FakeProvider(decide_by_hash()) as fake:
        assert main(["--home", str(archive.home), "run", pid, "--subject", "openai", "--model", "local",
                     "--base-url", fake.base_url, "--unbudgeted", "--run-id", "by-hand", "--run-date", "2026-11-02",
                     "--quiet", "--concurrency", "8"]) == 0
    capsys.readouterr()
    publish_all(archive, build_time="2026-12-03T00:00:00Z")
    [row] = [r for r in csv.DictReader(io.StringIO((archive.public / "stability.csv").read_text(encoding="utf-8")))
             if r["run_id"] == "by-hand"]
    reasons = json.loads(row["flag_reasons"])
    assert reasons["exploratory"] == f"not pre-registered: no pre-registration manifest lists {pid}"
    db = sqlite3.connect(archive.public / "archive.db")
    try:
        [(cell,)] = db.execute("select flag_reasons from measurements where run_id = 'by-hand'").fetchall()
    finally:
        db.close()
    assert str(archive.home) not in cell and "timestamps" not in cell
    assert str(archive.home) not in (archive.public / "index.html").read_text(encoding="utf-8")


def test_a_run_marked_by_an_alarm_carries_public_words_never_the_alarms_own_reason(archive):
    """An instrument that could not run writes the error's text into its alarm; the marked runs never carry it."""
    from llmarchive.run.alarms import alarm_since
    from llmarchive.instrument import day_verdict, raise_alarm

    private = "the runtime fingerprint could not run: OSError: /home/owner/models/x.gguf"
    raise_alarm(archive, "2026-11-15", "runtime_fingerprint", private)
    suspect = day_verdict(archive, "2026-11-15").instrument_suspect()
    assert suspect and "instrument_alarm from runtime_fingerprint on 2026-11-15" in suspect
    assert "/home/owner" not in suspect and "OSError" not in suspect
    since = alarm_since(archive, "2026-01-01T00:00:00Z")
    assert since and "/home/owner" not in since and "OSError" not in since
    assert private in day_verdict(archive, "2026-11-15").reason      # the owner's screens keep the whole reason


def test_the_succession_table_never_publishes_a_records_reason_or_a_reviewers_note(archive):
    ph.populate(archive)
    ph.add_record(archive, "needs_review", date="2026-12-01", model_family="claude-sonnet",
                  model_id="claude-sonnet-6", resolves="r1", resolution="not_successor", reviewer="A. Person",
                  note="private: spoke with the vendor's rep", reason="resolved by A. Person: …")
    ph.add_record(archive, "bridge_incomplete", date="2026-12-01", model_family="claude-sonnet",
                  old_model_id="claude-sonnet-5", new_model_id="claude-sonnet-6",
                  reason="claude-sonnet-5 left the provider's list during the bridge (HTTP 529 from /home/owner)")
    publish_all(archive, build_time="2026-12-03T00:00:00Z")
    db = sqlite3.connect(archive.public / "archive.db")
    try:
        rows = db.execute("select kind, reason, detail from succession").fetchall()
    finally:
        db.close()
    text = json.dumps(rows) + (archive.public / "index.html").read_text(encoding="utf-8")
    assert "vendor's rep" not in text and "HTTP 529" not in text and "/home/owner" not in text
    reasons = {kind: reason for kind, reason, _ in rows}
    assert reasons["needs_review"] == ("claude-sonnet-6 was decided not to be the successor in claude-sonnet; "
                                       "its bridge runs stay comparison points")
    assert "permanent discontinuity" in reasons["bridge_incomplete"]
