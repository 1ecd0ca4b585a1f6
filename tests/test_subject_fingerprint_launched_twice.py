"""The subject fingerprint of one day is asked once, however often it is launched (method §9.4).

A double click, the schedule's tick beside a manual launch: two launches of
the same day and model at the same moment.  Each is a process of its own
(the CLI here; Dagster runs each step in a process), against the fake
provider over real HTTP.  The provider holds every answer until the test
lets it go, so the first launch is still asking when the second starts; it
lets go as soon as more calls arrive than one launch sends at once (a second
launch asking too), so code that lets both ask ends and is counted.  What
must hold: the provider billed exactly the calls the ledger holds, 24; one
fingerprint is recorded; the other launch is refused as busy before any
call, in one line, with nothing recorded.
"""
import os
import subprocess
import sys
import threading
import time
from pathlib import Path


from llmarchive import budget as budget_mod
from llmarchive.archive import record_logs as records
from llmarchive.budget import earmarks
from tests.fake_provider import FakeProvider, Reply
from tests.test_instrument_subject import TRUTH, paths  # noqa: F401 — the archive with its budget and key, a fixture

ROOT = Path(__file__).resolve().parent.parent
AT_ONCE = 4     # the calls one launch has in flight (subject_fingerprint's default concurrency)


class HeldProvider:
    """A fake provider that answers nothing until :meth:`let_go`, or until a second launch is asking too."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.fake = FakeProvider(self.respond)

    def respond(self, request):
        if len(self.fake.chat_requests) > AT_ONCE:
            self.gate.set()
        self.gate.wait(120)
        question = next(q for q in TRUTH if request.prompt.startswith(q))
        return Reply.text(f"DECISION: {TRUTH[question]}", model="claude-sonnet-5-20260101")

    def let_go(self) -> None:
        self.gate.set()

    def __enter__(self) -> "HeldProvider":
        self.fake.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.gate.set()
        self.fake.__exit__(*exc)


def launch(provider: HeldProvider, day: str) -> subprocess.Popen:
    """``llmarchive instrument subject-fingerprint`` for ``day``, in a process of its own."""
    return subprocess.Popen([sys.executable, "-m", "llmarchive", "instrument", "subject-fingerprint",
                             "--base-url", provider.fake.base_url, "--date", day], cwd=ROOT, env=os.environ.copy(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def until(condition, child: subprocess.Popen, what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def first_launch_asking(provider: HeldProvider, day: str) -> subprocess.Popen:
    """A launch of ``day`` holding its calls at the provider (it has taken the day's lock, if there is one)."""
    first = launch(provider, day)
    until(lambda: len(provider.fake.chat_requests) >= 1 or first.poll() is not None, first,
          "the first launch never called")
    assert first.poll() is None, first.communicate()
    return first


def ledger_calls(paths) -> int:
    """Calls the ledger accounts for: answered charges + attempts of unknown fate + reservations never settled."""
    entries = budget_mod.ledger_entries(paths)
    charges = [e for e in entries if e.get("record_type", "spend") == "spend"]
    return (sum(1 for e in charges if e.get("answered")) + sum(int(e.get("unknown_attempts") or 0) for e in charges)
            + len(budget_mod.open_reservations(entries)))


def test_two_launches_of_one_day_at_once_bill_24_calls_record_one_fingerprint_and_refuse_the_other(paths):
    from tests.dagster_helpers import today

    day = today()            # the launches are processes of their own, on the machine's clock: today is asked
    with HeldProvider() as provider:
        launches = [launch(provider, day), launch(provider, day)]      # at the same moment: either may win
        until(lambda: any(c.poll() is not None for c in launches) or provider.gate.is_set(), launches[0],
              "neither launch ended or called")
        provider.let_go()
        outputs = [c.communicate(timeout=300) for c in launches]
        ended = [(c.returncode, out, err) for c, (out, err) in zip(launches, outputs)]
        billed = provider.fake.billed["calls"]
    fingerprints = records.read(paths, "subject_fingerprint")
    assert (billed, ledger_calls(paths), len(fingerprints)) == (24, 24, 1), [err[-600:] for _, _, err in ended]
    (won, out, _), (refused, out_2, err_2) = sorted(ended)
    assert won == 0 and "24/24 correct" in out
    assert refused == 2 and out_2 == "", "the refusal is an ArchiveError: one line, exit 2"
    assert err_2.count("\n") == 1 and "being worked on by another process" in err_2 and "Nothing was spent" in err_2
    assert records.read(paths, "skip") == [], "the refused launch recorded nothing"
    assert {e["run_id"] for e in budget_mod.ledger_entries(paths)} == {f"subject_fingerprint_{day}_claude-sonnet-5@1"}
    assert earmarks.live(paths) == [], "the day's earmark is released when the day ends"


def test_the_dagster_asset_launched_while_the_day_is_being_asked_is_a_run_busy_refusal(paths, instance):
    """Through the real asset graph: a ``Failure`` with refusal metadata, nothing spent, never a traceback."""
    from tests.dagster_helpers import refusals, resources, run, today

    day = today()
    with HeldProvider() as provider:
        first = first_launch_asking(provider, day)
        result = run(["subject_fingerprint"], resources(paths, provider.fake.base_url), instance, partition_key=day,
                     raise_on_error=False)
        provider.let_go()
        out, err = first.communicate(timeout=300)
        billed = provider.fake.billed["calls"]
    assert first.returncode == 0, err[-800:]
    found = refusals(result)
    assert [m.get("refusal") for _, m in found] == ["run_busy"], (billed, result.success)
    (description, metadata), = found
    assert metadata["spent_eur"] == 0.0 and metadata["day"] == day
    assert "being worked on by another process" in description and "\n" not in description
    assert billed == 24 == ledger_calls(paths) and len(records.read(paths, "subject_fingerprint")) == 1
