"""The three-month drill: Dagster's own scheduler and sensors drive a fresh archive on a moved clock.

``make drill`` runs the two-year script (scripts/drill_script.py ``FULL``);
this test runs the three-month one (``SHORT``) with the same machinery —
an instance of its own, every schedule and sensor on, the fake provider
over real HTTP, the scripted reference engine — and its scripted events: an
instrument alarm acknowledged a week later, a new model id, a partition
launched twice at once, a write that fails once for lack of space, the
daemon down over the 1st and the 2nd, the provider overloaded for eight
hours during the sweep, the successor declared and the old id withdrawn, a
backfill of a past month from the UI.  Every verdict must pass: the table
and the verdicts are printed when one does not.

The suite's drill executes its runs in threads of its own process and
samples no day hourly (``runs="thread", hourly=""``): it proves the
verdicts, and a process per run with hourly days costs about twice the
CPU (the suite's longest test would double); what a month costs an owner is
``make drill``'s to measure.
"""
import datetime as dt
import os

import pytest

from scripts.drill import run
from scripts.drill_script import FULL, SHORT, Refusal

pytestmark = pytest.mark.slow


@pytest.fixture
def drill_root(tmp_path_factory, monkeypatch):
    """A root for the drill's home and instance, and the environment put back afterwards."""
    for name in ("LLMARCHIVE_HOME", "DAGSTER_HOME", "LLMARCHIVE_SUBJECT_BASE_URL", "LLMARCHIVE_WEBHOOK_URL",
                 "ANTHROPIC_API_KEY", "NO_PROXY"):
        # set, then removed: monkeypatch records a variable's absence only when it sets it, so the drill's own
        # values (its webhook, its home) are taken out again after the test instead of leaking into the next one
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return tmp_path_factory.mktemp("drill")


def test_three_months_under_dagsters_scheduler_pass_every_verdict(drill_root):
    outcome = run(SHORT, drill_root, dt.timedelta(hours=12), runs="thread", hourly="")
    report = outcome.table + "\n" + "\n".join(f"{'PASS' if ok else 'FAIL'} {name}: {detail}"
                                              for name, ok, detail in outcome.verdicts)
    assert outcome.verdicts, "the drill checked nothing"
    assert outcome.passed, report
    assert len(outcome.month_seconds) >= 3


def test_each_step_of_the_drill_runs_in_a_process_of_its_own_forked_cold_on_the_moved_clock(tmp_path, monkeypatch):
    """``make drill``'s ``--runs process``: a step (here ``llmarchive lease`` as the crontab runs it) is a new
    process forked by the zygote, never the drill's nor the previous step's, and sees the drill's moved clock."""
    import json
    import time_machine

    from llmarchive.archive import ArchivePaths
    from scripts.drill_child import Zygote, clock_offset, spec_for

    monkeypatch.setenv("LLMARCHIVE_HOME", str(tmp_path / "home"))
    ArchivePaths.from_env().ensure()
    moved = dt.datetime(2027, 5, 31, 7, 17, tzinfo=dt.timezone.utc)
    with Zygote(tmp_path / "steps.log") as zygote:
        with time_machine.travel(moved, tick=True):
            offset = clock_offset()
        seen = [zygote.run(spec_for("command", offset, [], None, argv=["lease", "--json"])) for _ in range(2)]
    assert [out.get("error") for out in seen] == [None, None], (tmp_path / "steps.log").read_text()
    pids = {out["pid"] for out in seen}
    assert len(pids) == 2 and zygote.pid not in pids and os.getpid() not in pids
    for out in seen:
        now = dt.datetime.fromisoformat(json.loads(out["said"])["now"].replace("Z", "+00:00"))
        assert moved <= now < moved + dt.timedelta(minutes=5), "the step reads the drill's moved clock"
        assert out["cpu"] > 0, "and reports its own CPU seconds (the zygote's child, not the drill's)"


def test_a_drill_cut_short_expects_only_what_its_months_can_show():
    """``make drill --months 8`` ends in July 2027: the alarm of May 2028, the backfill's refusals of March 2028 and
    the webhook's faults of November 2027 and May 2028 are not due, the bridge raised in January and left in April
    is, and so are June's outage and the webhook's 500s over March's dead-man."""
    cut = FULL.cut(8)
    assert cut.end == dt.datetime(2027, 7, 1, 12, tzinfo=dt.timezone.utc)
    assert all(event.when < cut.end for event in cut.events) and len(cut.events) < len(FULL.events)
    assert cut.expect.refusals == (Refusal("provider_outage", 1, "2027-06-02"),)     # June's outage is in the cut
    assert cut.expect.instrument_alarm_days == ()
    assert cut.expect.bridge == ("2027-01-12", "2027-04-20")
    assert not any(gap.period == "2027-06" for gap in cut.expect.gaps), "June's outage is re-executed: no gap"
    assert [e.args["mode"] for e in cut.events if e.kind == "webhook"] == ["error", "ok"]
    assert not any(gap.period >= "2027-09" for gap in cut.expect.gaps)
    spanning = FULL.cut(4)          # the daemon is down on 2027-03-01: the cut ends when it is back, noon of 03-03
    assert spanning.end == dt.datetime(2027, 3, 3, 12, tzinfo=dt.timezone.utc)
    assert spanning.expect.bridge == ("2027-01-12", None)
    assert (spanning.expect.deadman_day, spanning.expect.deadman_over) == ("2027-03-01", "2027-03-03")
    assert not any(gap.period >= "2027-03" for gap in spanning.expect.gaps)
    assert SHORT.cut(2).end == dt.datetime(2027, 1, 3, 12, tzinfo=dt.timezone.utc)
    assert FULL.cut(None) is FULL and FULL.cut(len(FULL.months())) is FULL
