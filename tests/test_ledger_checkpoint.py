"""A paid run's start reads only what the spend ledger gained since its checkpoint, and still refuses a broken one.

The ledger grows by thousands of entries a month; reading and verifying all
of it at every run start made each month of the two-year drill slower than
the last.  The checkpoint (llmarchive/budget/checkpoint.py) keeps the running
totals of a verified prefix: a start parses the entries after it, checks the
seam, and reads the whole ledger again only when something disagrees; the
deep verification reads the rest.  Lines parsed are counted on the real JSONL reader, so the
tests count work, not time.
"""
import pytest

from llmarchive import budget as B
from llmarchive.archive import jsonio, log_checkpoints
from llmarchive.budget import SpendMeter, earmarks
from llmarchive.instrument import SUBJECT_ITEMS, SUBJECT_MAX_TOKENS, subject_fingerprint
from llmarchive.subjects.anthropic import AnthropicSubject
from measure import chain, jsonl
from measure.rng import Stream
from measure.schema import SCHEMA_VERSION
from tests.fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.time_machine("2026-11-10T12:00:00Z")

MONTH = "2026-11"
BUDGET = B.Budget(100.0, 5.0, 5.0, {"scenario": 0.01, "fingerprint": 0.001})
AUTH = B.Authorization("sweep", "scenario", "general", 0.01)
OLD = 4000          # entries the ledger holds before the run start under test
TAIL = 10           # entries appended after the last run start


def entry(kind: str, run: str, n: int, month: str = MONTH, pool: str = "general", **fields) -> dict:
    base = {"record_type": kind, "schema_version": SCHEMA_VERSION, "recorded_at": f"{month}-05T00:00:00Z",
            "month": month, "job": "full_sweep", "category": "scenario", "pool": pool, "run_id": run,
            "call_key": f"{run}/c{n}"}
    if kind == B.RESERVATION:
        base.update(reservation_id=f"{run}/c{n}/s1/1", attempt=1, worst_case_eur=0.002)
    else:
        base.update(charge_id=f"{run}/c{n}@s1", trial=True, cost_eur=0.001, settles=[f"{run}/c{n}/s1/1"])
    base.update(fields)
    return base


def old_ledger(paths, count: int = OLD) -> None:
    """``count`` entries of past runs (a reservation and the charge settling it), written in one go."""
    prev, lines = chain.GENESIS, []
    for i in range(count):
        record = chain.link(entry(B.RESERVATION if i % 2 == 0 else B.CHARGE, f"old-{i // 200}", i // 2), prev)
        prev = record["record_sha256"]
        lines.append(chain.to_line(record))
    paths.spend_ledger.parent.mkdir(parents=True, exist_ok=True)
    paths.spend_ledger.write_text("".join(lines), encoding="utf-8")


def ledger_lines_parsed(monkeypatch) -> list:
    """Every ledger entry the real JSONL reader parses from now on (reservations and charges)."""
    parsed, real = [], jsonl.JsonlReader._parse

    def counting(self, raw, number, start):
        found = real(self, raw, number, start)
        if isinstance(found, dict) and found.get("record_type") in (B.CHARGE, B.RESERVATION):
            parsed.append(found)
        return found

    monkeypatch.setattr(jsonl.JsonlReader, "_parse", counting)
    return parsed


def neighbour_appends(paths, count: int = TAIL) -> None:
    meter = SpendMeter(paths, AUTH, "neighbour", "anthropic", "m", BUDGET)
    for i in range(count):
        meter.reserve(f"s01/N/{i}", "s1", 1, 10, 50)


def commercial_start(paths, run_id: str) -> SpendMeter:
    """What a sweep partition does before its first call: the permission with its earmark, then the meter."""
    header = {"protocol_id": "p_wording", "rewording_type": "wording", "lane": "guard", "n": 2}
    auth, held, ledger = B.earmark_run(paths, BUDGET, header, "full_sweep", 8, run_id=run_id)
    try:
        return SpendMeter(paths, auth, run_id, "anthropic", "m", BUDGET, ledger=ledger)
    finally:
        if held is not None:
            held.release()


# -- (1) a run start costs what was appended, not the ledger's age ---------------------------------------

@pytest.mark.parametrize("old", [OLD, 4 * OLD])
def test_a_commercial_run_start_parses_only_the_entries_appended_since_the_last_start(paths, monkeypatch, old):
    B.write_budget(paths, BUDGET)
    old_ledger(paths, old)
    commercial_start(paths, "earlier-run")          # an earlier start (the checkpoint is taken here)
    neighbour_appends(paths)
    parsed = ledger_lines_parsed(monkeypatch)
    meter = commercial_start(paths, "new-run")
    assert len(parsed) <= TAIL + 2, f"a run start parsed {len(parsed)} entries of a {old + TAIL}-entry ledger"
    assert meter.committed(MONTH, "general") == pytest.approx(old / 2 * 0.001 + TAIL * 0.01)


def test_a_subject_fingerprint_start_reads_the_ledger_once_and_only_past_its_checkpoint(paths, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-checkpoint")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    B.write_budget(paths, BUDGET)
    old_ledger(paths)
    B.ladder_state(paths, BUDGET)                    # an earlier start (the checkpoint is taken here)
    neighbour_appends(paths)
    parsed = ledger_lines_parsed(monkeypatch)
    truth = {question: value for _, question, value in SUBJECT_ITEMS}

    def knows(request):
        question = next(q for q in truth if request.prompt.startswith(q))
        return Reply.text(f"DECISION: {truth[question]}", model="claude-sonnet-5-20260101")

    with FakeProvider(knows) as fake:
        outcome = subject_fingerprint(paths, "2026-11-10",
                                      AnthropicSubject("claude-sonnet-5", SUBJECT_MAX_TOKENS, base_url=fake.base_url))
    assert outcome.record is not None and outcome.record["correct"] == 24
    assert len(parsed) <= TAIL + 2, f"the day's start and calls parsed {len(parsed)} ledger entries"


def test_a_commercial_start_through_start_paid_run_reads_the_ledger_once(paid_paths, monkeypatch):
    """The permission's reading (ladder, earmark) is the meter's: one ``read_ledger`` from authorisation to the end."""
    from llmarchive.budget import checkpoint, ladder, meter
    from llmarchive.protocols import registry
    from llmarchive.schedule.paid_run import PaidRun, start_paid_run
    from llmarchive.subjects import make_subject
    from tests.fake_provider import decide_by_hash

    old_ledger(paid_paths, 400)
    neighbour_appends(paid_paths)
    readings, real = [], checkpoint.read_ledger

    def counting(paths, since=None):
        readings.append(since)
        return real(paths, since)

    for module in (checkpoint, ladder, meter):      # everywhere the name is looked up
        monkeypatch.setattr(module, "read_ledger", counting)
    protocol = registry.load_protocol(paid_paths, "risky_choice_framing__wording__v0")
    with FakeProvider(decide_by_hash()) as fake:
        subject = AnthropicSubject("claude-sonnet-5", protocol["generation"]["max_tokens"], base_url=fake.base_url)
        result = start_paid_run(paid_paths, protocol, subject,
                                PaidRun(job="manual", run_id="read-once", day=f"{MONTH}-10", concurrency=4))
    assert result.complete
    assert len(readings) == 1, f"one commercial start read the ledger {len(readings)} times"


# -- (2) a broken ledger is still refused with a checkpoint beside it -------------------------------------

def checkpointed(paths) -> list[bytes]:
    """A ledger of 40 entries with a checkpoint after all of them; its lines."""
    B.write_budget(paths, BUDGET)
    old_ledger(paths, 40)
    assert B.read_ledger(paths).tally.count == 40
    return paths.spend_ledger.read_bytes().splitlines(keepends=True)


def test_a_torn_line_inside_the_checkpointed_prefix_is_refused(paths):
    lines = checkpointed(paths)
    lines[17] = lines[17][: len(lines[17]) // 2]            # half a record, in the middle of the ledger
    paths.spend_ledger.write_bytes(b"".join(lines))
    with pytest.raises(jsonio.RecordFileError, match="line 18"):
        SpendMeter(paths, AUTH, "r", "anthropic", "m", BUDGET)
    with pytest.raises(B.BudgetError, match="line 18"):
        B.ladder_state(paths, BUDGET)


@pytest.mark.parametrize("line, cost", [(39, b'"cost_eur":0.000'),     # the last checkpointed entry, same length
                                        (3, b'"cost_eur":0.0001')])    # early on, one byte longer: the seam moves
def test_an_edit_at_the_checkpoints_seam_or_moving_it_is_refused(paths, line, cost):
    lines = checkpointed(paths)
    lines[line] = lines[line].replace(b'"cost_eur":0.001', cost)
    paths.spend_ledger.write_bytes(b"".join(lines))
    with pytest.raises(chain.ChainError, match=f"record #{line}: record_sha256"):
        SpendMeter(paths, AUTH, "r", "anthropic", "m", BUDGET)
    with pytest.raises(B.BudgetError, match=f"record #{line}"):
        B.ladder_state(paths, BUDGET)


def test_an_in_place_edit_deep_in_the_prefix_moves_no_money_and_is_caught_by_the_deep_verification(paths,
                                                                                                  time_machine):
    lines = checkpointed(paths)
    before = B.ladder_state(paths, BUDGET).spent_eur["general"]
    lines[5] = lines[5].replace(b'"cost_eur":0.001', b'"cost_eur":0.009')   # same length, chain left broken
    paths.spend_ledger.write_bytes(b"".join(lines))
    # The start trusts the figures it verified, never the edited bytes it does not read, in a new month too
    # (closed months are verified once, not at every month's first start) …
    assert B.ladder_state(paths, BUDGET).spent_eur["general"] == before
    time_machine.move_to("2026-12-01T00:05:00Z")
    B.ladder_state(paths, BUDGET)                      # no whole reading: nothing raised at December's first start
    assert B.read_ledger(paths).tally.month_totals(MONTH).spent_eur["general"] == before
    # … and the deep verification, which reads every byte of the ledger, finds the break.
    found = log_checkpoints.verify_all(paths, "2026-12-01")
    assert [log for log, _ in found.broken] == ["private/spend.jsonl"]
    assert "hash chain broken at the record starting at byte" in found.broken[0][1]


def test_a_damaged_checkpoint_is_ignored_and_the_ledger_read_whole(paths, monkeypatch):
    checkpointed(paths)
    cp = B.checkpoint.checkpoint_file(paths)
    cp.write_bytes(cp.read_bytes().replace(b'"count":40', b'"count":41'))
    parsed = ledger_lines_parsed(monkeypatch)
    assert B.read_ledger(paths).tally.count == 40 and len(parsed) == 40


# -- (3) the checkpoint plus the tail says what a full reading says ---------------------------------------

def random_appends(paths, seed: int, batches: int = 30) -> None:
    """Random sequences of reservations and charges (settling some, none or unknown cost), several runs,
    months and pools, appended in random batches; after each batch, a start from the checkpoint must agree
    with a full reading of the ledger."""
    rng = Stream(seed)
    months, pools, runs = ["2026-10", MONTH], ["general", "bridge", "heartbeat"], [f"run-{i}" for i in range(5)]
    open_ids: list[str] = []
    n = 0
    for _ in range(batches):
        batch = []
        for _ in range(1 + rng.below(12)):
            n += 1
            run, month, pool = rng.choice(runs), rng.choice(months), rng.choice(pools)
            roll = rng.below(10)
            if roll < 5:
                worst = None if rng.below(8) == 0 else round(rng.uniform(), 4)
                e = entry(B.RESERVATION, run, n, month, pool, worst_case_eur=worst)
                open_ids.append(e["reservation_id"])
            else:
                settles = [open_ids.pop(rng.below(len(open_ids))) for _ in range(min(len(open_ids), rng.below(3)))]
                cost = None if rng.below(10) == 0 else round(rng.uniform(), 4)
                e = entry(B.CHARGE, run, n, month, pool, cost_eur=cost, settles=settles,
                          basis=rng.choice(["usage", "flat"]), answered=rng.below(3) > 0,
                          category=rng.choice(["scenario", "fingerprint"]))
            batch.append(e)
        jsonio.append_records(paths.spend_ledger, batch)
        if rng.below(4) == 0:
            neighbour = SpendMeter(paths, AUTH, rng.choice(runs), "anthropic", "m", BUDGET)
            neighbour.reserve(f"k{n}", "s1", 1, 10, 50)       # a meter's own appends, its tally kept in step
            assert_agrees(paths, neighbour.tally)
        assert_agrees(paths, B.read_ledger(paths).tally)


def assert_agrees(paths, tally) -> None:
    entries = B.ledger_entries(paths)
    full = earmarks.commitments(entries)
    assert tally.count == len(entries)
    for month in ("2026-10", MONTH):
        want = B.month_totals(paths, month, entries)
        got = tally.month_totals(month)
        assert got.charged_eur == pytest.approx(want.charged_eur, abs=1e-9)
        assert got.worst_case_eur == pytest.approx(want.worst_case_eur, abs=1e-9)
        # the figures publication's value check keeps out of public/ are the same sums (pools with an entry)
        pools = tally.pool_totals().get(month, {})
        for pool in want.charged_eur:
            charged, worst = pools.get(pool, (0.0, 0.0))   # a pool with no priced entry has no figure but zero
            assert (charged, worst) == pytest.approx((want.charged_eur[pool], want.worst_case_eur[pool]), abs=1e-9)
        for run in {e["run_id"] for e in entries}:
            for pool in ("general", "bridge", "heartbeat"):
                assert tally.committed(run, month, pool) == pytest.approx(full(run, month, pool), abs=1e-9)
    assert sorted(tally.run_ids) == sorted({e["run_id"] for e in entries})
    for category in ("scenario", "fingerprint"):      # the degradation's measured rate (method §9.2)
        costs = [e["cost_eur"] for e in entries if e["record_type"] == B.CHARGE and e.get("category") == category
                 and e.get("basis") == "usage" and e.get("answered") and isinstance(e.get("cost_eur"), float)]
        euros, calls = tally.measured(category, ["2026-10", MONTH])
        assert calls == len(costs) and euros == pytest.approx(sum(costs), abs=1e-9)


@pytest.mark.parametrize("seed", [1, 2, 3, 20261110])
def test_totals_from_the_checkpoint_and_the_tail_equal_a_full_reading(paths, seed):
    B.write_budget(paths, BUDGET)
    random_appends(paths, seed)


def test_the_programmes_review_reads_the_measured_rate_from_the_checkpoint_not_the_whole_ledger(paths, monkeypatch):
    """Every paid partition reviews the programme's level; its three months' rate is the tally's, so the
    review parses only what was appended since the checkpoint — and finds the rate a full reading finds."""
    usage = [entry(B.CHARGE, f"r{i % 7}", i, month, basis="usage", answered=True, cost_eur=0.002 + i / 1e6,
                   settles=[]) for i in range(300) for month in ("2026-09", "2026-10", MONTH)]
    jsonio.append_records(paths.spend_ledger, usage)
    B.read_ledger(paths)                                # the checkpoint an earlier start left
    neighbour_appends(paths)
    parsed = ledger_lines_parsed(monkeypatch)
    euros_per_call, calls = B.measured_rate(paths, "scenario", MONTH)
    assert len(parsed) <= TAIL + 2, f"the review parsed {len(parsed)} of {len(usage) + TAIL} ledger entries"
    assert calls == len(usage) and euros_per_call == pytest.approx(sum(e["cost_eur"] for e in usage) / calls)


# -- the meter's own tallies ------------------------------------------------------------------------------

def test_a_batch_of_reservations_is_counted_once_in_what_the_run_has_committed(paths):
    B.write_budget(paths, BUDGET)
    meter = SpendMeter(paths, AUTH, "run-b", "anthropic", "m", BUDGET)
    meter.reserve_many([(f"s01/A/{i}", "s1", 1, 10, 50) for i in range(4)])
    month = B.ledger_entries(paths)[0]["month"]
    assert meter.tally.committed("run-b", month, "general") == pytest.approx(4 * 0.01)
    assert meter.tally.committed("run-b", month, "general") == pytest.approx(
        earmarks.commitments(B.ledger_entries(paths))("run-b", month, "general"))
