"""The instrument's rules: frozen texts, the fingerprint's outcomes, a day's verdict, suspect measurements.

The fingerprint's comparison logic is exercised here with a small in-test
engine (token ids and logprobs derived from the prompt), so every outcome
— established, pass, fail, unavailable, changed runtime — is quick to reach;
``test_instrument_reference.py`` proves the same paths on the real embedded
model.  The suspect-day tests run real runs through the runner against the
fake provider.
"""
import hashlib
import math


from llmarchive.archive import load_run, record_logs as records
from llmarchive.budget import unbudgeted
from llmarchive.instrument import Generated, day_verdict, mark_day_suspect
from llmarchive.instrument.fingerprint import RUNTIME_KEY_FIELDS, expectations_dir, runtime_fingerprint
from llmarchive.instrument.prompts import (FINGERPRINT_PROMPTS, PROMPTS_SHA256, SUBJECT_ITEMS, SUBJECT_ITEMS_SHA256,
                                           SUBJECT_OPTIONS, subject_prompt)
from llmarchive.run import RunSettings, run_protocol
from llmarchive.subjects.openai_compat import OpenAICompatSubject
from measure import extract
from measure.verify import recompute
from tests.fake_provider import FakeProvider, decide_by_hash
from tests.protocol_fixtures import make_protocol

RUNTIME = {"model_sha256": "m" * 64, "llama_cpp_version": "0.3.36", "template_sha256": "t" * 64,
           "runner_arch": "x86_64-linux", "n_threads": 1, "n_batch": 512, "n_ctx": 512, "seed": 0,
           "model_file": "model.gguf", "container_digest": None}


class PromptEngine:
    """Deterministic token ids and logprobs from each prompt's hash; ``tamper`` changes one step."""

    def __init__(self, runtime=None, tamper=None, fail=None):
        self._runtime = dict(RUNTIME, **(runtime or {}))
        self.tamper = tamper
        self.fail = fail

    def runtime(self):
        return dict(self._runtime)

    def generate(self, prompt_id, prompt, max_tokens, top=5):
        if self.fail:
            raise RuntimeError(self.fail)
        digest = hashlib.sha256(prompt.encode()).digest()
        steps = []
        for step in range(4):
            ids = [(digest[step] + k) % 97 for k in range(top)]
            logprobs = [-(k + 1) * 0.25 - step / 7 for k in range(top)]
            pairs = list(zip(ids, logprobs))
            if self.tamper and self.tamper[0] == prompt_id and self.tamper[1] == step:
                i, lp = pairs[2]
                pairs[2] = (i, math.nextafter(lp, 0.0))          # one last-bit change in one logprob
            steps.append((pairs[0][0], tuple(pairs)))
        return Generated(prompt_id, tuple(steps), "length", "text")


def test_the_fingerprint_prompts_and_subject_items_are_frozen():
    assert len(FINGERPRINT_PROMPTS) == 12 and len({p for p, _ in FINGERPRINT_PROMPTS}) == 12
    assert PROMPTS_SHA256 == "a8d5411b2ee37ee71e4e678a3347b082ac32c1ff3b02a7483567f0c35c41d88d"
    assert len(SUBJECT_ITEMS) == 24 and len({i for i, _, _ in SUBJECT_ITEMS}) == 24
    assert SUBJECT_ITEMS_SHA256 == "3bf51ec63b189cf415fea58bc815ebd6c51dc7eabce8ec35ee27d7bbd61a2057"


def test_exactly_half_of_the_subject_items_are_true_so_a_yes_habit_scores_half():
    answers = [truth for _, _, truth in SUBJECT_ITEMS]
    assert answers.count("yes") == 12 and answers.count("no") == 12
    assert all(len(q) < 120 and q.endswith("?") for _, q, _ in SUBJECT_ITEMS), "short single-fact questions"
    yes_habit = sum(truth == "yes" for truth in answers)
    assert yes_habit == 12
    # The archive's own grammar reads the answer.
    assert extract("I think so.\nDECISION: Yes", SUBJECT_OPTIONS, 1).token == "yes"
    assert subject_prompt("Is 13 a prime number?").endswith("DECISION: yes or DECISION: no")


def test_the_first_run_establishes_the_expectation_says_so_and_is_not_a_passing_day(paths):
    outcome = runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    assert outcome.status == "established" and outcome.alarm is None
    assert "first fingerprint of this archive" in outcome.record["reason"]
    assert outcome.record["established"] is True and outcome.record["expected_digest"] is None
    for field in RUNTIME_KEY_FIELDS:
        assert outcome.record[field] == RUNTIME[field]
    assert len(list(expectations_dir(paths).glob("*.json"))) == 1
    verdict = day_verdict(paths, "2026-11-01")
    assert verdict.suspect and "status: established" in verdict.reason
    # the owner is told what turns the day to passing; the published words stay the record's own
    assert "run `llmarchive instrument fingerprint` again" in verdict.reason
    assert "again" not in verdict.instrument_suspect()


def test_an_identical_fingerprint_passes(paths):
    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    outcome = runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine())
    assert outcome.status == "pass" and outcome.record["digest"] == outcome.record["expected_digest"]
    assert day_verdict(paths, "2026-11-02").passing


def test_a_flipped_logprob_is_a_failure_and_an_alarm_naming_where(paths):
    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    outcome = runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine(tamper=("fp07", 3)))
    assert outcome.status == "fail" and outcome.alarm is not None
    assert "prompt fp07, token 3, top-3" in outcome.record["first_difference"]
    alarms = records.read(paths, "instrument_alarm")
    assert [(a["date"], a["source"]) for a in alarms] == [("2026-11-02", "runtime_fingerprint")]
    verdict = day_verdict(paths, "2026-11-02")
    assert verdict.suspect and "fp07" in verdict.reason


def test_a_fingerprint_that_cannot_run_counts_as_a_failure(paths):
    outcome = runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(fail="llama_decode returned -1"))
    assert outcome.status == "unavailable" and outcome.record["digest"] is None
    assert "could not run" in outcome.alarm["reason"] and "llama_decode" in outcome.alarm["reason"]
    assert day_verdict(paths, "2026-11-03").suspect


def test_a_changed_runtime_is_an_alarm_and_writes_no_expectation_of_its_own(paths):
    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    outcome = runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine(runtime={"llama_cpp_version": "0.3.40"}))
    assert outcome.status == "fail" and outcome.alarm is not None and outcome.record["established"] is False
    assert "new runtime key" in outcome.alarm["reason"] and "llama_cpp_version" in outcome.alarm["reason"]
    assert len(list(expectations_dir(paths).glob("*.json"))) == 1, "only a human core_change adds an expectation"
    # the next day on the new runtime is compared with nothing accepted: a failure again, not a pass
    again = runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(runtime={"llama_cpp_version": "0.3.40"}))
    assert again.status == "fail" and again.alarm is not None
    # the old runtime's expectation is untouched: going back passes the fingerprint (the latch stays)
    assert runtime_fingerprint(paths, "2026-11-04", lambda: PromptEngine()).status == "pass"
    assert day_verdict(paths, "2026-11-04").suspect


def test_a_missing_fingerprint_makes_the_day_suspect(paths):
    verdict = day_verdict(paths, "2026-11-05")
    assert verdict.suspect and "no runtime fingerprint ran on 2026-11-05" in verdict.reason
    assert verdict.instrument_suspect().startswith("instrument: no runtime fingerprint")


def test_a_passing_fingerprint_with_an_alarm_from_elsewhere_is_still_suspect(paths):
    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine())
    records.append(paths, "instrument_alarm", {"date": "2026-11-02", "source": "guard_rotation",
                                               "reason": "x regressed"})
    verdict = day_verdict(paths, "2026-11-02")
    assert verdict.suspect and "guard_rotation: x regressed" in verdict.reason


# --------------------------------------------------------------------------
# a suspect day's measurements, through the real runner
# --------------------------------------------------------------------------

def _run(paths, fake, run_id, day, suspect):
    protocol = make_protocol(n_items=3, n_per_scenario=1, max_tokens=32, status="admitted", lane="open")
    subject = OpenAICompatSubject("local-model", 32, base_url=fake.base_url)
    return run_protocol(paths, protocol, subject, RunSettings(run_id=run_id, run_date=day, concurrency=2,
                                                                 instrument_suspect=suspect),
                        authorization=unbudgeted())


def test_a_day_without_a_fingerprint_gives_its_measurement_instrument_suspect(paths, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with FakeProvider(decide_by_hash()) as fake:
        result = _run(paths, fake, "no-fp", "2026-11-05", day_verdict(paths, "2026-11-05").instrument_suspect())
    m = result.measurement
    assert "instrument_suspect" in m["flags"] and m["on_curve"] is False
    assert "no runtime fingerprint ran on 2026-11-05" in m["flag_reasons"]["instrument_suspect"]


def test_an_alarm_raised_after_a_run_marks_that_days_measurement_and_it_still_verifies(paths, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine())
    with FakeProvider(decide_by_hash()) as fake:
        before = _run(paths, fake, "early-in-the-day", "2026-11-02",
                      day_verdict(paths, "2026-11-02").instrument_suspect())
        _run(paths, fake, "other-day", "2026-11-01", False)
    assert "instrument_suspect" not in before.measurement["flags"]
    outcome = runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine(tamper=("fp01", 0)))
    assert outcome.status == "fail"
    folder = load_run(paths.run_dir("early-in-the-day"))
    assert "instrument_suspect" in folder.measurement["flags"]
    assert "instrument_alarm from runtime_fingerprint on 2026-11-02" in folder.measurement["flag_reasons"]["instrument_suspect"]
    assert folder.run["instrument_suspect"].startswith("instrument: instrument_alarm")
    assert recompute(folder.measurement, folder.trials, folder.protocol_header) == []
    assert "instrument_suspect" not in load_run(paths.run_dir("other-day")).measurement["flags"]
    assert mark_day_suspect(paths, "2026-11-02", "again") == [], "the flag is added once and never removed"


def test_a_resumed_run_is_judged_on_its_own_date(paths, monkeypatch):
    from llmarchive.instrument import suspect_value
    from llmarchive.archive import write_json

    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine())
    write_json(paths.run_dir("started-on-the-2nd") / "run.json", {"run_date": "2026-11-02"})
    assert suspect_value(paths, "2026-11-03", "started-on-the-2nd") is False
    assert suspect_value(paths, "2026-11-03", "a-new-run").startswith("instrument: no runtime fingerprint")


def test_the_status_command_exits_1_on_a_suspect_day(paths, capsys):
    from llmarchive.cli import main

    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine())
    assert main(["instrument", "status", "--date", "2026-11-02"]) == 0
    assert "passing" in capsys.readouterr().out
    assert main(["instrument", "status", "--date", "2026-11-03"]) == 1
    out = capsys.readouterr().out
    assert "instrument_suspect" in out and "no runtime fingerprint ran on 2026-11-03" in out


def test_llmarchive_run_flags_a_day_without_a_passing_fingerprint(archive_home, monkeypatch, capsys):
    from llmarchive.cli import main
    from tests.panels_helpers import built_paths

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    paths = built_paths(monkeypatch, None)
    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine())
    with FakeProvider(decide_by_hash()) as fake:
        for day in ("2026-11-02", "2026-11-03"):
            assert main(["run", "base_rate_neglect__wording__v0", "--subject", "openai", "--model", "local",
                         "--base-url", fake.base_url, "--unbudgeted", "--run-id", f"run-{day}", "--run-date", day,
                         "--quiet", "--concurrency", "8"]) == 0
    capsys.readouterr()
    passing = load_run(paths.run_dir("run-2026-11-02")).measurement
    suspect = load_run(paths.run_dir("run-2026-11-03")).measurement
    assert "instrument_suspect" not in passing["flags"]
    assert "instrument_suspect" in suspect["flags"] and suspect["on_curve"] is False
    assert "no runtime fingerprint ran on 2026-11-03" in suspect["flag_reasons"]["instrument_suspect"]
