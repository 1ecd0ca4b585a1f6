"""An open-weights generation interrupted one day resumes on a later day under its first date."""
import pytest

from llmarchive.archive import load_run, open_weights_run_id
from llmarchive.schedule import open_weights as ow
from llmarchive.run import RunHalted
from llmarchive.subjects import SubjectError
from tests.instrument_helpers import ScriptedSubject


class DyingSubject(ScriptedSubject):
    """A local subject that stops for good after ``limit`` calls (the machine went down)."""

    def __init__(self, limit: int, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.limit = limit

    def call(self, prompt: str, key: str = ""):
        if self.calls >= self.limit:
            raise SubjectError("the reference model process died")
        return super().call(prompt, key)


def test_an_interrupted_generation_resumes_on_a_later_day_under_its_first_date(admitted):
    dying = DyingSubject(150, lambda prompt: "DECISION: A", 1)
    with pytest.raises(RunHalted):
        ow.run_generation(admitted, "gen-x", lambda max_tokens: _sized(dying, max_tokens), run_date="2026-11-01")

    steady = ScriptedSubject(lambda prompt: "DECISION: A", 1)
    # No date given: the caller's "today" is a later day; the generation keeps its first one.
    result = ow.run_generation(admitted, "gen-x", lambda max_tokens: _sized(steady, max_tokens))
    assert result.complete
    dates = {load_run(r.run_dir).run["run_date"] for r in result.runs}
    assert dates == {"2026-11-01"}
    assert {r.measurement["run_date"] for r in result.runs} == {"2026-11-01"}
    assert dying.calls + steady.calls == sum(len(r.trials) for r in result.runs), "no slot called twice"
    assert ow.first_date(admitted, "gen-x") == "2026-11-01"

    with pytest.raises(ow.OpenWeightsError, match="started on 2026-11-01"):
        ow.run_generation(admitted, "gen-x", lambda max_tokens: _sized(steady, max_tokens), run_date="2026-11-02")


def test_a_new_generation_takes_the_date_it_is_given_or_today(admitted):
    assert ow.first_date(admitted, "gen-y") is None
    subject = ScriptedSubject(lambda prompt: "DECISION: A", 1)
    result = ow.run_generation(admitted, "gen-y", lambda max_tokens: _sized(subject, max_tokens), run_date="2026-11-07",
                               only=["risky_choice_framing__wording__v0"])
    assert result.complete and ow.first_date(admitted, "gen-y") == "2026-11-07"


def _sized(subject: ScriptedSubject, max_tokens: int) -> ScriptedSubject:
    subject.max_tokens = max_tokens
    return subject


def test_an_undeclared_model_of_the_tracked_family_run_as_open_weights_is_on_no_curve(admitted):
    """The open-weights path cannot put a model of the commercial family on a curve without a declaration."""
    outsider = ScriptedSubject(lambda prompt: "DECISION: A", 1, name="claude-sonnet-9")
    result = ow.run_generation(admitted, "gen-z", lambda max_tokens: _sized(outsider, max_tokens), run_date="2026-11-07",
                               only=["risky_choice_framing__wording__v0"])
    (run,) = result.runs
    assert run.measurement["on_curve"] is False and "exploratory" in run.measurement["flags"]
    assert "never declared" in run.measurement["flag_reasons"]["exploratory"]
    local = ScriptedSubject(lambda prompt: "DECISION: A", 1, name="qwen2.5-1.5b-instruct")
    result = ow.run_generation(admitted, "gen-q", lambda max_tokens: _sized(local, max_tokens), run_date="2026-11-07",
                               only=["risky_choice_framing__wording__v0"])
    assert "exploratory" not in result.runs[0].measurement["flags"]


# --------------------------------------------------------------------------
# issue 17 §2: a resumed generation is judged by the instrument of its own date
# --------------------------------------------------------------------------

OPEN = "risky_choice_framing__wording__v0"


def _interrupted_on_a_clean_day(paths) -> None:
    """A generation started on 2026-11-02, a day whose runtime fingerprint passed, and cut short."""
    from llmarchive.instrument import runtime_fingerprint
    from tests.test_instrument import PromptEngine

    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())          # establishes the expectation
    assert runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine()).status == "pass"
    dying = DyingSubject(50, lambda prompt: "DECISION: A", 1)
    with pytest.raises(RunHalted):
        ow.run_generation(paths, "gen-x", lambda max_tokens: _sized(dying, max_tokens), run_date="2026-11-02",
                          only=[OPEN])


def _resume_with_the_cli(paths, monkeypatch, capsys) -> None:
    from llmarchive.cli import main
    from llmarchive.cli import open_weights as cli

    monkeypatch.setattr(cli, "make_subject", lambda kind, max_tokens, **kw: ScriptedSubject(
        lambda prompt: "DECISION: A", max_tokens))
    assert main(["open-weights", "gen-x", "--protocol", OPEN, "--quiet"]) == 0
    capsys.readouterr()


def _resume_with_dagster(paths, monkeypatch, capsys) -> None:
    from dagster import DagsterInstance

    from assets import resources as resource_module
    from tests.dagster_helpers import resources, run

    monkeypatch.setattr(resource_module, "make_subject", lambda kind, max_tokens, **kw: ScriptedSubject(
        lambda prompt: "DECISION: A", max_tokens))
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("generation", ["gen-x"])
        run(["open_weights_trials"], resources(paths), instance, partition_key="gen-x",
            run_config={"ops": {"open_weights_trials": {"config": {"protocols": [OPEN]}}}})


@pytest.mark.parametrize("resume", [_resume_with_the_cli, _resume_with_dagster], ids=["cli", "dagster"])
def test_a_generation_resumed_on_a_later_day_is_judged_by_the_instrument_of_its_own_date(
        admitted, monkeypatch, capsys, resume):
    import time_machine

    _interrupted_on_a_clean_day(admitted)
    # Three days later no fingerprint has run (yet) today: that says nothing about the 2026-11-02 measurement.
    with time_machine.travel("2026-11-05T09:00:00Z", tick=True):
        resume(admitted, monkeypatch, capsys)
    folder = load_run(admitted.run_dir(open_weights_run_id("gen-x", OPEN)))
    assert folder.measurement is not None and folder.measurement["run_date"] == "2026-11-02"
    assert folder.run["instrument_suspect"] is False
    assert "instrument_suspect" not in folder.measurement["flags"], folder.measurement["flag_reasons"]
