"""The outbox: every page for the owner is recorded before it is sent, and sent by one sender (method §12).

A page that exists only in a process's hands — a sensor tick that posts
while the webhook is down, a cursor Dagster moves on anyway — is lost the
moment the post fails.  So a page goes through two steps:

1. **recorded** (:func:`record`): appended to ``private/outbox/pages.jsonl``
   (hash-chained, append-only) under a stable key that says what it is
   about, which partition and which transition (``run|<run id>``,
   ``check|<asset>:<check>[<partition>]|failed|<event id>``,
   ``lease|alert|deadman|<since>`` …).  A key already recorded is not recorded
   again, so a producer that looks twice at the same event (a tick retried,
   a cursor that was not saved) makes one page;
2. **delivered** (:func:`send`): the one sender posts what is owed, oldest
   first, and counts a page done on a 2xx answer only — never posted again
   after one.  An answer that never came after the request left (a read
   timeout) may have reached the receiver: the page is posted again later
   with the same key in its body and in an ``Idempotency-Key`` header, so a
   receiver can drop the repeat.  A receiver that is down, refuses (a 500)
   or cannot be reached is not hammered: the sender stops at the first such
   answer and waits, from five minutes doubling to an hour, before trying
   again.  One call sends what fits in :data:`SEND_BUDGET_S` seconds, well
   inside Dagster's 60-second limit for a sensor tick, however much is owed;
   the rest waits for the next call.  Two senders never post at once (the
   second finds the sender's lock taken and leaves the work to the first).

Anyone may call :func:`send`: the Dagster sensors after recording, the
hourly ``llmarchive lease`` from a systemd timer outside the daemon — so a
page recorded before the daemon died still goes out.

**Read from its end.**  ``private/outbox/state.json`` is what the log adds
up to — the pages still owed, the keys recorded in the last
:data:`KEEP_KEYS` (the memory that refuses a key twice), the checks whose
failure was told, the webhook's back-off and the last delivery — with the
byte offset and chain hash of the log it covers.  Each step reads the state,
checks that the log still ends where the state says (or folds only what
was appended after it), appends, and writes the state again: a step costs
the same on the first day and in the tenth year.  A state that is missing,
damaged or does not match its log is rebuilt from the whole log once.

**A broken lifeline is red.**  :func:`overdue` says why the lifeline is
broken — a page owed for more than :data:`OVERDUE_AFTER`, or a webhook
setting that is not a URL — and the ``archive_health`` check
``no_overdue_page`` turns red on it (``assets/health.py``), as does
``llmarchive status``; the hourly ``llmarchive lease`` exits 1.
"""
import io
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from llmarchive.archive import ArchivePaths, ChainedLog, file_lock, jsonio, lock_file, parse_time
from llmarchive.schedule import webhook
from measure import chain, jsonl
from measure.errors import ArchiveError

FORMAT = 1
SEND_BUDGET_S = 25.0
"""Seconds one :func:`send` may spend posting (a POST is started only when its whole limit still fits)."""
BACKOFF_FIRST = timedelta(minutes=5)
BACKOFF_CAP = timedelta(hours=1)
OVERDUE_AFTER = timedelta(hours=1)
"""A page owed longer than this is overdue: the lifeline is broken, and that is red (the module docstring)."""
KEEP_KEYS = timedelta(days=400)
"""How long a recorded key is remembered, to refuse it twice (a producer looks again within minutes, not years)."""

Post = Callable[[str, Mapping, str], webhook.Outcome]


class OutboxError(ArchiveError, RuntimeError):
    """The outbox's log cannot be read or written; the page was not recorded."""


@dataclass(frozen=True)
class Page:
    """One page for the owner: its stable ``key``, its ``kind``, its one-line ``text`` and the rest of its body."""

    key: str
    kind: str
    text: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    told: Optional[tuple[str, bool]] = None   # a check's transition: (its name, failing) — the memory it updates


def folder(paths: ArchivePaths) -> Path:
    """Private: a page may name a run, a path or an error; none of it is published."""
    return paths.private / "outbox"


def log_file(paths: ArchivePaths) -> Path:
    return folder(paths) / "pages.jsonl"


def state_file(paths: ArchivePaths) -> Path:
    return folder(paths) / "state.json"


def _now(now: Optional[datetime]) -> datetime:
    return (now or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(microsecond=0)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


# -- the state: what the log adds up to ---------------------------------------------------------------------

def _empty() -> dict:
    return {"format": FORMAT, "offset": 0, "last_sha256": chain.GENESIS, "owed": [], "keys": {}, "told": {},
            "webhook": {"failures": 0, "next_at": None, "last_outcome": None, "last_attempt_at": None},
            "last_delivered": None, "delivered": 0, "recorded": 0}


def _fold(state: dict, entry: Mapping) -> None:
    """Add one log entry to ``state`` (the one rule for both a rebuild and a step)."""
    kind = entry.get("record_type")
    if kind == "page":
        key = entry["key"]
        state["keys"][key] = entry["recorded_at"]
        state["recorded"] += 1
        state["owed"].append({"key": key, "kind": entry["kind"], "payload": entry["payload"],
                              "recorded_at": entry["recorded_at"], "attempts": 0, "next_at": None,
                              "uncertain": False, "last_outcome": None})
        for name, told in (entry.get("told") or {}).items():
            if told is None:
                state["told"].pop(name, None)
            else:
                state["told"][name] = {"key": told, "since": entry["recorded_at"]}
    elif kind == "page_attempt":
        at, outcome = entry["at"], entry["outcome"]
        hook = state["webhook"]
        hook["last_outcome"], hook["last_attempt_at"] = outcome, at
        owed = next((p for p in state["owed"] if p["key"] == entry["key"]), None)
        if entry["delivered"]:
            state["owed"] = [p for p in state["owed"] if p["key"] != entry["key"]]
            state["delivered"] += 1
            state["last_delivered"] = {"key": entry["key"], "kind": entry.get("kind"), "at": at,
                                       "recorded_at": owed["recorded_at"] if owed else None}
            hook["failures"], hook["next_at"] = 0, None
            return
        if owed is not None:
            owed["attempts"] += 1
            owed["last_outcome"] = outcome
            owed["uncertain"] = owed["uncertain"] or entry["result"] == "uncertain"
            if entry["result"] == "uncertain":
                owed["next_at"] = _later(at, owed["attempts"])
        if entry["result"] != "uncertain":
            hook["failures"] += 1
            hook["next_at"] = _later(at, hook["failures"])


def _later(at: str, failures: int) -> str:
    """When to try again after ``failures`` failures in a row: five minutes, doubling, at most an hour."""
    wait = min(BACKOFF_FIRST * (2 ** max(failures - 1, 0)), BACKOFF_CAP)
    return _iso(parse_time(at) + wait)


def _prune(state: dict, now: datetime) -> None:
    """Forget keys (and told failures) older than :data:`KEEP_KEYS`: the memory stays the size of a year's pages."""
    horizon = _iso(now - KEEP_KEYS)
    state["keys"] = {k: at for k, at in state["keys"].items() if at >= horizon}
    state["told"] = {n: t for n, t in state["told"].items() if t["since"] >= horizon}


def _load_state(paths: ArchivePaths) -> Optional[dict]:
    state = jsonio.read_digested(state_file(paths))
    return state if state is not None and state.get("format") == FORMAT else None


def _save_state(paths: ArchivePaths, state: dict) -> None:
    jsonio.write_digested(state_file(paths), state)


def _read_entries(path: Path, fh: Any, start: int, end: int) -> list[dict]:
    fh.seek(start)
    try:
        return jsonl.JsonlReader(jsonl.STRICT, str(path)).read(io.BytesIO(fh.read(end - start)))
    except jsonl.JsonlError as exc:
        raise OutboxError(f"{path}: cannot be read ({exc})") from None


def _current(paths: ArchivePaths) -> dict:
    """The state matching the whole log (lock held): the saved one, caught up, or rebuilt once from the log."""
    path = log_file(paths)
    state = _load_state(paths)
    if not path.exists():
        return state if state is not None and state["offset"] == 0 else _empty()
    with open(path, "rb") as fh:          # a torn last line (a killed writer's) is not read; the next append cuts it
        size = jsonl.complete_size(fh)
        if state is not None and 0 <= state["offset"] <= size and (
                state["offset"] == 0 and state["last_sha256"] == chain.GENESIS
                or jsonio.record_hash_ending_at(path, fh, state["offset"]) == state["last_sha256"]):
            tail = _read_entries(path, fh, state["offset"], size)
            prev = state["last_sha256"]
        else:
            state, tail, prev = _empty(), _read_entries(path, fh, 0, size), chain.GENESIS
    for entry in tail:
        if entry.get("prev_sha256") != prev or entry.get("record_sha256") != chain.record_hash(entry):
            raise OutboxError(f"{path}: the hash chain is broken after byte {state['offset']} (the outbox was "
                              "edited); refusing to record or send pages through it")
        prev = entry["record_sha256"]
        _fold(state, entry)
    state["offset"], state["last_sha256"] = size, prev
    return state


def _append(paths: ArchivePaths, state: dict, entries: Sequence[Mapping]) -> None:
    """Chain ``entries`` onto the log, fold them into ``state`` and save it (lock held)."""
    if not entries:
        return
    log = ChainedLog.resume(log_file(paths), state["last_sha256"])
    try:
        written = log.extend(entries)
    except OSError as exc:
        raise OutboxError(f"the outbox could not be written ({exc}): the page was not recorded") from None
    for entry in written:
        _fold(state, entry)
    state["offset"] = log_file(paths).stat().st_size
    state["last_sha256"] = written[-1]["record_sha256"]
    _save_state(paths, state)


# -- recording ------------------------------------------------------------------------------------------------

def record(paths: ArchivePaths, pages: Sequence[Page], *, now: Optional[datetime] = None) -> list[Page]:
    """Record each page whose key is new, in one write; return the ones recorded (a known key is not again).

    A page that tells a check's transition (``Page.told``) updates the memory
    of which failures were told in the same entry, so the two never disagree.
    """
    moment = _now(now)
    with file_lock(log_file(paths)):
        state = _current(paths)
        _prune(state, moment)
        new, seen, entries = [], set(state["keys"]), []
        for page in pages:
            if page.key in seen:
                continue
            seen.add(page.key)
            new.append(page)
            payload = {**dict(page.fields), "text": page.text, "kind": page.kind, "page_key": page.key,
                       "recorded_at": _iso(moment)}
            entry = {"record_type": "page", "key": page.key, "kind": page.kind, "recorded_at": _iso(moment),
                     "payload": payload}
            if page.told is not None:
                name, failing = page.told
                entry["told"] = {name: page.key if failing else None}
            entries.append(entry)
        _append(paths, state, entries)
    return new


def told(paths: ArchivePaths) -> dict[str, str]:
    """The checks whose failure was told (or is owed): name → the key of that page."""
    with file_lock(log_file(paths)):
        return {name: t["key"] for name, t in _current(paths)["told"].items()}


# -- sending ----------------------------------------------------------------------------------------------------

@dataclass
class Delivery:
    """What one :func:`send` did: the keys it delivered, each attempt's line, what is still owed and why it stopped."""

    sent: list[str] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)
    owed: int = 0
    waiting: Optional[str] = None
    seconds: float = 0.0

    def of(self, key: str) -> str:
        """What became of ``key`` in this call, in one line (``sent (HTTP 204)``, why not, or that it waits)."""
        if key in self.outcomes:
            return self.outcomes[key]
        return f"owed: {self.waiting}" if self.waiting else "owed: not tried in this call"

    def delivered(self, key: str) -> bool:
        return key in self.sent

    def said(self) -> str:
        parts = [f"{len(self.sent)} page(s) delivered"]
        failed = [line for key, line in self.outcomes.items() if key not in self.sent]
        if failed:
            parts.append(f"not taken: {failed[-1]}")
        if self.owed:
            parts.append(f"{self.owed} owed" + (f" ({self.waiting})" if self.waiting else ""))
        return "; ".join(parts)


class _Busy(Exception):
    pass


def _due(state: dict, now: str) -> tuple[Optional[dict], Optional[str]]:
    """The oldest page to post now, or why none is: the webhook backed off, or every owed page waits its turn."""
    hook = state["webhook"]
    if not state["owed"]:
        return None, None
    if hook["next_at"] and hook["next_at"] > now:
        return None, (f"the webhook failed {hook['failures']} time(s) in a row ({hook['last_outcome']}); tried "
                      f"again after {hook['next_at']}")
    for page in state["owed"]:
        if not page["next_at"] or page["next_at"] <= now:
            return page, None
    return None, "each owed page waits its turn after an answer that never came"


def send(paths: ArchivePaths, url: Optional[str], *, now: Optional[datetime] = None,
         budget_s: Optional[float] = None, post: Optional[Post] = None) -> Delivery:
    """Post what is owed, oldest first, within ``budget_s`` seconds (see the module docstring).

    Never raises for the webhook's sake: every answer is recorded and said
    in the returned :class:`Delivery`; only an outbox that cannot be read or
    written raises (:class:`OutboxError`).
    """
    started = time.monotonic()
    budget_s = SEND_BUDGET_S if budget_s is None else budget_s
    post = post or webhook.post
    out = Delivery()
    if not url:
        out.waiting = f"no webhook is configured ({webhook.WEBHOOK_ENV})"
    elif (problem := webhook.url_problem(url)) is not None:
        out.waiting = problem
    if out.waiting is not None:
        out.owed = len(summary(paths).owed)
        return out
    try:
        with lock_file(folder(paths) / "sender.lock", busy=_Busy()):
            _deliver(paths, url, out, now, budget_s, post, started)
    except _Busy:
        out.waiting = "another sender is delivering now"
        out.owed = len(summary(paths).owed)
    out.seconds = round(time.monotonic() - started, 3)
    return out


def _deliver(paths: ArchivePaths, url: str, out: Delivery, now: Optional[datetime], budget_s: float, post: Post,
             started: float) -> None:
    while True:
        moment = _iso(_now(now))
        with file_lock(log_file(paths)):
            state = _current(paths)
            page, why = _due(state, moment)
        out.owed = len(state["owed"])
        if page is None:
            out.waiting = why
            return
        if time.monotonic() - started + webhook.post_limit_s() > budget_s:
            out.waiting = "this call's time for posting is spent; the rest goes at the next"
            return
        outcome = post(url, page["payload"], page["key"])
        attempt = {"record_type": "page_attempt", "key": page["key"], "kind": page["kind"], "at": _iso(_now(now)),
                   "result": outcome.kind, "outcome": outcome.line, "delivered": outcome.sent}
        with file_lock(log_file(paths)):
            state = _current(paths)
            _append(paths, state, [attempt])
        out.outcomes[page["key"]] = outcome.line
        if outcome.sent:
            out.sent.append(page["key"])
        out.owed = len(state["owed"])
        if outcome.endpoint_down:
            out.waiting = f"the webhook is not taking pages ({outcome.line}); tried again after {state['webhook']['next_at']}"
            return


# -- reading -------------------------------------------------------------------------------------------------------

@dataclass
class Summary:
    """What ``llmarchive status`` and the health check read of the outbox (nothing is written)."""

    owed: list[dict]
    last_delivered: Optional[dict]
    webhook: dict
    delivered: int
    recorded: int


def summary(paths: ArchivePaths) -> Summary:
    """The outbox now: pages owed (oldest first), the last delivery, the webhook's back-off, the counts."""
    if not log_file(paths).exists():
        state = _empty()
    else:
        with file_lock(log_file(paths)):
            state = _current(paths)
    owed = [{k: p[k] for k in ("key", "kind", "recorded_at", "attempts", "last_outcome", "uncertain")}
            for p in state["owed"]]
    return Summary(owed, state["last_delivered"], dict(state["webhook"]), state["delivered"], state["recorded"])


def overdue(paths: ArchivePaths, url: Optional[str], now: Optional[datetime] = None,
            found: Optional[Summary] = None) -> Optional[tuple[str, str]]:
    """Why the lifeline is broken, as ``(state, one line)``; None when it holds (the module docstring).

    ``state`` names the condition, not the clock: ``unusable``, or the key of
    the oldest overdue page.
    """
    if url and (problem := webhook.url_problem(url)) is not None:
        return "unusable", problem
    found = found or summary(paths)
    if not found.owed:
        return None
    oldest = found.owed[0]
    since = parse_time(oldest["recorded_at"])
    moment = _now(now)
    if not url:
        return (f"no-webhook:{oldest['key']}", f"{len(found.owed)} page(s) owed and no webhook is configured "
                                                f"({webhook.WEBHOOK_ENV}) to send them to")
    if since is None or moment - since < OVERDUE_AFTER:
        return None
    hours = (moment - since).total_seconds() / 3600
    last = found.webhook.get("last_outcome") or "not tried yet"
    return (f"overdue:{oldest['key']}",
            f"{len(found.owed)} page(s) owed to the webhook, the oldest for {hours:.1f} h (a {oldest['kind']} page "
            f"recorded {oldest['recorded_at']}); the webhook's last answer: {last} — they go out once it takes them")
