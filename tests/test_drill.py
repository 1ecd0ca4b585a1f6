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
"""
import datetime as dt

import pytest

from scripts.drill import run
from scripts.drill_script import SHORT

pytestmark = pytest.mark.slow


@pytest.fixture
def drill_root(tmp_path_factory, monkeypatch):
    """A root for the drill's home and instance, and the environment put back afterwards."""
    for name in ("LLMARCHIVE_HOME", "DAGSTER_HOME", "LLMARCHIVE_SUBJECT_BASE_URL", "LLMARCHIVE_WEBHOOK_URL",
                 "ANTHROPIC_API_KEY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path_factory.mktemp("drill")


def test_three_months_under_dagsters_scheduler_pass_every_verdict(drill_root):
    outcome = run(SHORT, drill_root, dt.timedelta(hours=12))
    report = outcome.table + "\n" + "\n".join(f"{'PASS' if ok else 'FAIL'} {name}: {detail}"
                                              for name, ok, detail in outcome.verdicts)
    assert outcome.verdicts, "the drill checked nothing"
    assert outcome.passed, report
    assert len(outcome.month_seconds) >= 3
