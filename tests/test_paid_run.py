"""One function starts every paid run: `llmarchive run` and the sweep refuse, record and mark alike.

Each rule of :mod:`llmarchive.schedule.paid_run` is exercised through both entry
points on the fake provider (real HTTP): the skip records they leave must be
the same record, field for field, and a refusal must cost no call.
"""
import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import load_run, record_logs as records, sweep_run_id, utc_today
from llmarchive.protocols import registry
from llmarchive.cli import main
from llmarchive.schedule.paid_run import PaidRun, PaidRunError, start_paid_run
from llmarchive.succession import load_subject_models
from llmarchive.subjects import make_subject
from llmarchive.schedule.sweep import sweep
from llmarchive.schedule.watch import watch
from tests.instrument_helpers import PAID_BUDGET, preregister

CONFIG = load_subject_models()
OLD, NEW = "claude-sonnet-5", "claude-sonnet-5-5"
OPEN = "risky_choice_framing__wording__v0"
# general pool = 100 - 6.5 - 1 = 92.5 €; a protocol is 120 calls × 0.01 € = 1.2 €
BUDGET = PAID_BUDGET   # what conftest's paid_paths is written with
# general pool 2.5 €; the only rung is out of reach, so the pool alone decides; the reserves hold 7.5 €
TIGHT = budget_mod.Budget(10.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001},
                          ladder=(budget_mod.Rung(99.9, 0, ()),))
SKIP_FIELDS = ("date", "job", "protocol_id", "reason", "cause", "condition")


@pytest.fixture
def day():
    # The ladder reads the ledger's current month, which the spend written below lands in.
    return utc_today()


def factory(fake):
    return lambda model, max_tokens: make_subject("anthropic", max_tokens=max_tokens, model=model,
                                                  base_url=fake.base_url)


def cli_run(fake, day, *extra: str, model: str = OLD, job: str = "sweep") -> int:
    return main(["run", OPEN, "--subject", "anthropic", "--model", model, "--base-url", fake.base_url,
                 "--job", job, "--run-date", day, "--quiet", *extra])


def skips(paths) -> list[dict]:
    return [{k: s.get(k) for k in SKIP_FIELDS} for s in records.read(paths, "skip")]


def spend_general(paths, euros: float) -> None:
    meter = budget_mod.SpendMeter(paths, budget_mod.Authorization("manual", "scenario", "general", 0.5),
                                  "filler", "anthropic", "m")
    for i in range(int(euros * 2)):
        meter.charge([(f"c{i}", {"answered": True})])


def test_an_unregistered_protocol_is_refused_and_recorded_alike_by_the_sweep_and_by_run_job_sweep(
        paid_paths, fake, day, capsys):
    out = sweep(paid_paths, day, CONFIG, subject_factory=factory(fake), only=[OPEN])
    assert [(p, c) for p, c, _ in out.skipped] == [(OPEN, "not_preregistered")] and out.ran == []
    assert cli_run(fake, day) == 1
    assert "protocol_confounded" in capsys.readouterr().err
    by_sweep, by_cli = skips(paid_paths)
    assert by_sweep == by_cli
    assert by_cli["cause"] == "protocol_confounded" and by_cli["reason"].startswith("not_preregistered: ")
    assert fake.chat_requests == [] and budget_mod.ledger_entries(paid_paths) == [], "a refusal spends nothing"


def test_a_hand_started_run_of_an_unregistered_protocol_runs_off_every_curve(paid_paths, fake, day):
    assert cli_run(fake, day, "--run-id", "by-hand", job="manual") == 0
    run = load_run(paid_paths.run_dir("by-hand"))
    assert run.run["exploratory"].startswith("not pre-registered") and run.run["job"] == "manual"
    assert run.measurement["on_curve"] is False
    assert skips(paid_paths) == []


def test_the_ladder_refuses_alike_through_the_sweep_and_through_run(paid_paths, fake, day, capsys):
    preregister(paid_paths, [OPEN])
    spend_general(paid_paths, 90)                       # 97 % of the general pool: only subject_fingerprint
    out = sweep(paid_paths, day, CONFIG, subject_factory=factory(fake), only=[OPEN])
    assert [(p, c) for p, c, _ in out.skipped] == [(OPEN, "budget_refused")]
    assert cli_run(fake, day) == 1
    assert "budget_halted" in capsys.readouterr().err
    by_sweep, by_cli = skips(paid_paths)
    assert by_sweep == by_cli and "from 95 % used: only subject_fingerprint" in by_cli["reason"]
    assert fake.chat_requests == []


def test_the_reserves_are_never_spent_by_the_sweep_or_a_manual_run(paid_paths, fake, day, capsys):
    budget_mod.write_budget(paid_paths, TIGHT)
    preregister(paid_paths, [OPEN])
    spend_general(paid_paths, 2)                        # 0.50 € left in the general pool, 7.50 € in the reserves
    sweep(paid_paths, day, CONFIG, subject_factory=factory(fake), only=[OPEN])
    assert cli_run(fake, day) == 1
    assert cli_run(fake, day, job="manual") == 1
    by_sweep, by_cli, by_hand = skips(paid_paths)
    assert by_sweep == by_cli and by_hand == {**by_cli, "job": "manual"}
    assert by_cli["reason"] == f"a run of 120 calls costs about €1.20; €0.50 left in the general pool for {day[:7]}"
    assert fake.chat_requests == []


def test_only_a_bridge_may_ask_for_the_bridge_reserve_and_no_run_for_the_heartbeat_reserve(paid_paths, fake, day,
                                                                                          capsys):
    preregister(paid_paths, [OPEN])
    with pytest.raises(SystemExit) as refused:      # not even offered: only `llmarchive bridge run` spends it
        cli_run(fake, day, job="bridge")
    assert refused.value.code == 2 and "invalid choice: 'bridge'" in capsys.readouterr().err
    protocol = registry.load_protocol(paid_paths, OPEN)
    subject = factory(fake)(OLD, protocol["generation"]["max_tokens"])
    for job in ("bridge", "subject_fingerprint"):
        with pytest.raises(PaidRunError):
            start_paid_run(paid_paths, protocol, subject, PaidRun(job=job, run_id=f"x-{job}", day=day))
    assert fake.chat_requests == [] and skips(paid_paths) == []


def test_both_paths_run_from_the_general_pool_and_flag_the_same_instrument_verdict(paid_paths, fake, day):
    preregister(paid_paths, [OPEN])
    out = sweep(paid_paths, day, CONFIG, subject_factory=factory(fake), only=[OPEN], concurrency=8)
    assert out.ran == [OPEN]
    assert cli_run(fake, day, "--run-id", "by-cli", "--concurrency", "8") == 0
    swept = load_run(paid_paths.run_dir(sweep_run_id(day, OPEN, OLD))).run
    by_cli = load_run(paid_paths.run_dir("by-cli")).run
    for run in (swept, by_cli):
        assert run["job"] == "full_sweep" and run["budget"]["pool"] == "general"
        assert run["preregistration"]["listed"] is True and run["exploratory"] is False
    assert swept["instrument_suspect"] == by_cli["instrument_suspect"]
    assert "no runtime fingerprint ran on" in by_cli["instrument_suspect"]


def test_a_manual_run_of_a_model_under_review_is_held_off_the_familys_curve(paid_paths, fake, day):
    preregister(paid_paths, [OPEN])
    watch(paid_paths, "2026-11-01", CONFIG, base_url=fake.base_url)
    fake.set_models([OLD, NEW])
    watch(paid_paths, "2026-11-02", CONFIG, base_url=fake.base_url)    # NEW appears undeclared: needs_review
    assert cli_run(fake, day, "--run-id", "new-by-hand", model=NEW, job="manual") == 0
    held = load_run(paid_paths.run_dir("new-by-hand"))
    assert "needs_review" in held.run["exploratory"] and held.run["model_family"] == "claude-sonnet"
    assert held.measurement["on_curve"] is False and "exploratory" in held.measurement["flags"]
    assert cli_run(fake, day, "--run-id", "old-by-hand", job="manual") == 0
    assert load_run(paid_paths.run_dir("old-by-hand")).run["exploratory"] is False, "the declared model is not held"


def test_a_free_subject_spends_nothing_and_is_marked_not_refused(paid_paths, day):
    from tests.instrument_helpers import ScriptedSubject

    protocol = registry.load_protocol(paid_paths, OPEN)
    subject = ScriptedSubject(lambda prompt: "DECISION: A", protocol["generation"]["max_tokens"])
    result = start_paid_run(paid_paths, protocol, subject, PaidRun(job="sweep", run_id="free", day=day))
    assert result.complete and subject.calls == 120
    assert result.run["exploratory"].startswith("not pre-registered") and result.run["budget"] is None
    assert skips(paid_paths) == [] and budget_mod.ledger_entries(paid_paths) == []
