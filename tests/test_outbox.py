"""The outbox: a page is recorded before it is sent, sent by one sender, counted done on a 2xx only.

Every delivery goes over real HTTP to a receiver on 127.0.0.1 that can be
down, failing, slow or hung (:mod:`tests.webhook_receiver`).  Timeouts are
made short (a second) so a slow receiver costs seconds, not minutes; the
rules do not depend on their size.
"""
import datetime as dt
import json
import threading
import time

import pytest
import time_machine

from llmarchive.archive import ArchivePaths
from llmarchive.schedule import outbox, webhook
from tests.webhook_receiver import Receiver

T0 = dt.datetime(2027, 1, 10, 9, 0, tzinfo=dt.timezone.utc)


@pytest.fixture(autouse=True)
def short_timeouts(monkeypatch):
    monkeypatch.setattr(webhook, "READ_TIMEOUT_S", 1.0)
    monkeypatch.setattr(webhook, "CONNECT_TIMEOUT_S", 0.5)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


@pytest.fixture
def home(tmp_path) -> ArchivePaths:
    return ArchivePaths.from_env(tmp_path / "home").ensure()


def page(n: int, kind: str = "run_failure") -> outbox.Page:
    return outbox.Page(f"run|r{n}", kind, f"FAILED RUN r{n} needs a person", {"run_id": f"r{n}"})


def delivered(home: ArchivePaths) -> list[str]:
    """Every key the outbox's log counts delivered (a 2xx the sender saw), once per delivery."""
    entries = [json.loads(line) for line in outbox.log_file(home).read_text().splitlines()]
    return [e["key"] for e in entries if e["record_type"] == "page_attempt" and e["delivered"]]


def at(minutes: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


def test_a_page_recorded_while_the_webhook_is_down_is_delivered_once_when_it_is_back(home):
    with Receiver() as hook:
        hook.set("down")
        assert outbox.record(home, [page(1)], now=at(0)) == [page(1)]
        first = outbox.send(home, hook.url, now=at(0))
        assert first.sent == [] and first.owed == 1 and "ConnectError" in first.of("run|r1")
        hook.set("up")
        hook.set("ok")
        early = outbox.send(home, hook.url, now=at(2))
        assert early.sent == [] and "tried again after" in early.waiting, "backed off: not every tick"
        later = outbox.send(home, hook.url, now=at(6))
        again = outbox.send(home, hook.url, now=at(60))
    assert later.sent == ["run|r1"] and again.sent == [] and again.owed == 0
    assert hook.taken_keys() == ["run|r1"], "delivered exactly once"
    [body] = hook.bodies()
    assert body["page_key"] == "run|r1" and body["text"] == "FAILED RUN r1 needs a person"
    assert body["recorded_at"] == "2027-01-10T09:00:00Z"


def test_a_key_recorded_twice_is_one_page(home):
    assert outbox.record(home, [page(1), page(1)], now=at(0)) == [page(1)]
    assert outbox.record(home, [page(1), page(2)], now=at(5)) == [page(2)]
    assert [p["key"] for p in outbox.summary(home).owed] == ["run|r1", "run|r2"]


def test_an_answer_that_never_came_is_sent_again_with_the_same_key_and_the_tick_stays_bounded(home):
    """The issue's slow webhook: it reads the body and answers after the sender gave up."""
    pages = [page(n) for n in range(6)]
    outbox.record(home, pages, now=at(0))
    with Receiver(slow_s=3.0) as hook:
        hook.set("slow")
        started = time.monotonic()
        first = outbox.send(home, hook.url, now=at(0), budget_s=4.0)
        took = time.monotonic() - started
        assert took < 4.0 + 0.5, f"one call stays inside its budget whatever is owed ({took:.1f} s)"
        assert first.sent == [] and first.owed == 6
        tried = [r.key for r in hook.received]
        assert tried and len(tried) < 6, "only what fits in the budget was tried"
        assert all("the receiver may have it" in first.of(k) for k in tried)
        hook.set("ok")
        for minute in (6, 12, 30, 60, 120):
            outbox.send(home, hook.url, now=at(minute), budget_s=30.0)
    keys = [r.key for r in hook.received]
    assert sorted(set(keys)) == sorted(p.key for p in pages)
    assert sorted(delivered(home)) == sorted(p.key for p in pages), "each page counted delivered exactly once"
    repeats = [k for k in set(keys) if keys.count(k) > 1]
    assert repeats and all(k in tried for k in repeats), "only an unanswered post is repeated, with its key"
    assert all(r.body["page_key"] == r.key for r in hook.received), "the key is in the body and the header"
    assert outbox.summary(home).owed == []


def test_a_failing_webhook_is_not_hammered_and_the_rest_is_not_tried_behind_a_500(home):
    outbox.record(home, [page(n) for n in range(5)], now=at(0))
    with Receiver() as hook:
        hook.set("error")
        for minute in range(0, 60, 10):                  # a sensor's ticks, every ten minutes for an hour
            outbox.send(home, hook.url, now=at(minute))
    minutes = [round((r.at - hook.received[0].at).total_seconds()) for r in hook.received]
    assert len(hook.received) == 4, "five minutes, then ten, twenty: not every tick, not every page"
    assert {r.key for r in hook.received} == {"run|r0"}, "the oldest page first; the rest wait behind it"
    assert all(r.answered == 500 for r in hook.received) and minutes == sorted(minutes)
    found = outbox.summary(home)
    assert len(found.owed) == 5 and found.webhook["failures"] == 4 and found.webhook["last_outcome"] == "failed: HTTP 500"


@pytest.mark.parametrize("setting", ["http://127.0.0.1:notaport/hook?token=T0KEN", "127.0.0.1/hook?token=T0KEN",
                                     "ftp://127.0.0.1/hook?token=T0KEN"])
def test_a_malformed_webhook_setting_is_one_line_the_pages_are_kept_and_the_lifeline_is_red(home, setting):
    outbox.record(home, [page(1)], now=at(0))
    delivery = outbox.send(home, setting, now=at(0))
    assert delivery.sent == [] and delivery.owed == 1
    assert "not a usable http(s) URL" in delivery.waiting and "T0KEN" not in delivery.waiting
    state, line = outbox.overdue(home, setting, now=at(0))
    assert state == "unusable" and "LLMARCHIVE_WEBHOOK_URL" in line and "T0KEN" not in line
    with pytest.raises(webhook.WebhookError) as refused:
        webhook.check_url(setting)
    assert "T0KEN" not in str(refused.value) and "\n" not in str(refused.value)


def test_a_page_owed_longer_than_an_hour_is_overdue_and_delivery_clears_it(home):
    with Receiver() as hook:
        hook.set("down")
        outbox.record(home, [page(1)], now=at(0))
        outbox.send(home, hook.url, now=at(0))
        assert outbox.overdue(home, hook.url, now=at(59)) is None
        state, line = outbox.overdue(home, hook.url, now=at(61))
        assert state == "overdue:run|r1" and "1 page(s) owed" in line and "ConnectError" in line
        hook.set("ok")
        outbox.send(home, hook.url, now=at(61))
    assert outbox.overdue(home, hook.url, now=at(61)) is None
    assert outbox.summary(home).last_delivered["key"] == "run|r1"


def test_two_senders_at_once_post_each_page_once(home):
    outbox.record(home, [page(n) for n in range(4)], now=at(0))
    with Receiver(slow_s=0.3) as hook:
        hook.set("slow")
        results = []
        threads = [threading.Thread(target=lambda: results.append(outbox.send(home, hook.url, now=at(0))))
                   for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(hook.taken_keys()) == [f"run|r{n}" for n in range(4)]
    assert any(r.waiting == "another sender is delivering now" for r in results)


def test_the_state_is_read_not_the_log_and_is_rebuilt_from_the_log_when_lost(home, monkeypatch):
    outbox.record(home, [page(n) for n in range(3)], now=at(0))
    with Receiver() as hook:
        outbox.send(home, hook.url, now=at(0))
        outbox.record(home, [page(3)], now=at(1))
        read = []
        real = outbox._read_entries
        monkeypatch.setattr(outbox, "_read_entries", lambda path, fh, start, end: read.append((start, end))
                            or real(path, fh, start, end))
        outbox.summary(home)
        assert all(end - start == 0 for start, end in read), "a step reads the state, not the log"
        outbox.state_file(home).unlink()
        rebuilt = outbox.summary(home)
    assert [p["key"] for p in rebuilt.owed] == ["run|r3"] and rebuilt.delivered == 3
    assert outbox.record(home, [page(0)], now=at(2)) == [], "the rebuilt memory still refuses a known key"


def test_a_state_older_than_its_log_catches_up_on_the_entries_after_it(home):
    outbox.record(home, [page(1)], now=at(0))
    saved = outbox.state_file(home).read_bytes()
    outbox.record(home, [page(2)], now=at(1))
    outbox.state_file(home).write_bytes(saved)       # a crash between the log's write and the state's
    assert [p["key"] for p in outbox.summary(home).owed] == ["run|r1", "run|r2"]


def test_an_edited_outbox_is_refused_not_sent(home):
    outbox.record(home, [page(1)], now=at(0))
    outbox.state_file(home).unlink()
    log = outbox.log_file(home)
    entry = json.loads(log.read_text().splitlines()[0])
    entry["payload"]["text"] = "something else"
    log.write_text(json.dumps(entry) + "\n")
    with pytest.raises(outbox.OutboxError, match="hash chain is broken"):
        outbox.summary(home)


def test_keys_are_forgotten_after_a_year_so_the_memory_does_not_grow_with_age(home):
    with Receiver() as hook:
        for month in range(30):
            moment = T0 + dt.timedelta(days=30 * month)
            outbox.record(home, [outbox.Page(f"run|m{month}", "run_failure", "x")], now=moment)
            outbox.send(home, hook.url, now=moment)
    state = json.loads(outbox.state_file(home).read_bytes().partition(b"\n")[2])
    assert len(state["keys"]) <= 14 and state["owed"] == []


@time_machine.travel(T0, tick=False)
def test_the_lifeline_check_names_no_webhook_when_pages_are_owed_and_none_is_set(home):
    outbox.record(home, [page(1)])
    state, line = outbox.overdue(home, None)
    assert state.startswith("no-webhook:") and "no webhook is configured" in line
