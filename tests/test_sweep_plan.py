"""The month's sweep is planned once a month, not once per partition (issue 45).

Each test runs real sweep passes of one partition each (``only=[pid]``, as a
Dagster commercial partition does) on the fake provider: the first pass of
the month writes ``private/sweep_plans/<month>.json``, every later pass reads
it back, and a changed input — the budget, a new manifest, a plan file edited
by hand — replans.  ``make_plan`` is counted where the sweep calls it (the real
function still runs), and the plan file's inode shows whether it was rewritten
(every write is an atomic replace: a new inode).
"""
import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import jsonio, record_logs as records, utc_today
from llmarchive.protocols import registry
from llmarchive.schedule import month_plan
from llmarchive.schedule.sweep import sweep
from llmarchive.subjects import make_subject
from llmarchive.succession import load_subject_models
from tests.instrument_helpers import preregister

CONFIG = load_subject_models()
FIRST, SECOND, UNLISTED = ("risky_choice_framing__wording__v0", "sunk_cost_fallacy__wording__v0",
                           "base_rate_neglect__wording__v0")


@pytest.fixture
def plans(monkeypatch) -> list[str]:
    """The months planned, one entry per plan made (the real make_plan runs)."""
    made: list[str] = []
    real = month_plan.make_plan

    def counted(paths, month, series, inputs):
        made.append(month)
        return real(paths, month, series, inputs)

    monkeypatch.setattr(month_plan, "make_plan", counted)
    return made


def partition(paths, fake, pid: str):
    factory = lambda model, max_tokens: make_subject("anthropic", max_tokens=max_tokens, model=model,
                                                     base_url=fake.base_url)
    return sweep(paths, utc_today(), CONFIG, subject_factory=factory, only=[pid])


def plan_inode(paths) -> int:
    return month_plan.plan_file(paths, utc_today()[:7]).stat().st_ino


def test_the_first_partition_plans_the_month_and_the_next_ones_read_its_plan(paid_paths, fake, plans, monkeypatch):
    preregister(paid_paths, [FIRST, SECOND])
    assert partition(paid_paths, fake, FIRST).ran == [FIRST]
    assert plans == [utc_today()[:7]]
    written = plan_inode(paid_paths)
    read: list[str] = []
    real_read = registry._read_protocol_file
    monkeypatch.setattr(registry, "_read_protocol_file", lambda file: read.append(file.name) or real_read(file))
    second = partition(paid_paths, fake, SECOND)
    assert read == [f"{SECOND}.json"], "a partition reading the month's plan reads its own protocol, once"
    refused = partition(paid_paths, fake, UNLISTED)
    assert plans == [utc_today()[:7]], "a later partition of the month planned the sweep again"
    assert plan_inode(paid_paths) == written, "the plan file was rewritten"
    # What the plan carries still decides: the second partition runs, the unlisted one is refused and recorded.
    assert second.ran == [SECOND]
    assert [(p, c) for p, c, _ in refused.skipped] == [(UNLISTED, "not_preregistered")] and refused.ran == []
    assert [s["protocol_id"] for s in records.read(paid_paths, "skip")] == [UNLISTED]


def test_a_changed_budget_or_a_new_manifest_replans_the_month(paid_paths, fake, plans):
    preregister(paid_paths, [FIRST])
    partition(paid_paths, fake, FIRST)
    first = jsonio.read_digested(month_plan.plan_file(paid_paths, utc_today()[:7]))
    budget_mod.write_budget(paid_paths, budget_mod.Budget(120.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001}))
    refused = partition(paid_paths, fake, SECOND)
    assert len(plans) == 2 and refused.skipped[0][1] == "not_preregistered"
    preregister(paid_paths, [SECOND], date="2026-10-02")     # SECOND listed now: the plan must learn it
    assert partition(paid_paths, fake, SECOND).ran == [SECOND]
    assert len(plans) == 3
    last = jsonio.read_digested(month_plan.plan_file(paid_paths, utc_today()[:7]))
    assert last["inputs"] != first["inputs"] and last["preregistration"][SECOND]["listed"] is True


def test_a_plan_file_edited_by_hand_is_read_as_no_plan_and_replanned(paid_paths, fake, plans):
    preregister(paid_paths, [FIRST, SECOND])
    partition(paid_paths, fake, FIRST)
    file = month_plan.plan_file(paid_paths, utc_today()[:7])
    file.write_bytes(file.read_bytes().replace(b'"listed":true', b'"listed":false'))
    assert partition(paid_paths, fake, SECOND).ran == [SECOND]
    assert len(plans) == 2
