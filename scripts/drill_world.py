"""The world around the archive during a drill: the provider, the owner's webhook, the disk, the clock.

* :class:`Provider` — the fake Anthropic provider of the tests
  (:class:`tests.fake_provider.FakeProvider`, real HTTP on 127.0.0.1, which
  counts the calls a real provider would bill), answering a decision derived
  from each prompt, with a scripted *fault window*: from the ``after_calls``-th
  chat call after the window opens, for ``hours`` of the moved clock, chats
  and the models list answer 529/429 in turn;
* :class:`Webhook` — the owner's webhook: the tests' receiver
  (:class:`tests.webhook_receiver.Receiver`, real HTTP on 127.0.0.1), which
  keeps every request with the moved clock's instant, its ``Idempotency-Key``,
  its body and the status it answered, and which the script puts ``down``
  (connection refused), ``error`` (500), ``hang`` (reads the page, never
  answers) or ``ok`` again on the same port; it remembers each change;
* :class:`FullDisk` — a write of one protocol's trial log that fails once
  with ``ENOSPC`` before a byte is written, as a full disk fails it
  (:func:`llmarchive.archive.jsonio._write_all` is where every log write goes);
* :func:`no_real_backoff` — the subjects' retry back-off waits are counted,
  not slept: a drill of two years cannot sleep through them.  Each wait is
  added to :attr:`Provider.backoff_s` so the table can say how much there was.
"""
import datetime as dt
import errno
import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Union

from tests.fake_provider import Fault, FakeProvider, Reply
from tests.webhook_receiver import Received, Receiver


def now() -> dt.datetime:
    """The moved clock's instant (time-machine patches this process, its threads included)."""
    return dt.datetime.now(dt.timezone.utc)


def decide(prompt: str) -> str:
    return "AB"[hashlib.sha256(prompt.encode("utf-8")).digest()[0] % 2]


@dataclass
class FaultWindow:
    """529/429 answers for ``hours`` of the moved clock, from the ``after_calls``-th chat call on."""

    codes: tuple[int, ...]
    hours: float
    after_calls: int = 0
    seen: int = 0
    opened: Optional[dt.datetime] = None
    answered: int = 0

    def active(self, chat: bool) -> bool:
        if self.opened is None:
            if chat:
                self.seen += 1
            if self.seen <= self.after_calls:
                return False
            self.opened = now()
        return now() < self.opened + dt.timedelta(hours=self.hours)

    def fault(self) -> Fault:
        self.answered += 1
        return Fault.status(self.codes[self.answered % len(self.codes)], retry_after=1)


class _TimedModelsFaults:
    """Stands in for the fake's ``models_script``: a fault while the window is open (for the models list)."""

    def __init__(self, provider: "Provider") -> None:
        self.provider = provider

    def __bool__(self) -> bool:
        window = self.provider.window
        return window is not None and window.active(chat=False)

    def popleft(self) -> Fault:
        assert self.provider.window is not None
        return self.provider.window.fault()


class Provider:
    """The fake provider with the drill's fault window (see the module docstring)."""

    def __init__(self, models: Iterable[Union[str, dict]]) -> None:
        self.window: Optional[FaultWindow] = None
        self.windows: list[FaultWindow] = []
        self.backoff_s = 0.0
        self.billed_by_month: dict[str, int] = {}       # calls billed, by the moved clock's month when billed
        self._billing = threading.Lock()
        self.fake = FakeProvider(self._respond, models=list(models))
        self.fake.models_script = _TimedModelsFaults(self)   # type: ignore[assignment]
        bill = self.fake.bill

        def bill_in_month(input_tokens: int, output_tokens: int) -> None:
            """The fake's own count, and the call counted in the moved clock's month when it was billed."""
            with self._billing:
                month = now().strftime("%Y-%m")
                self.billed_by_month[month] = self.billed_by_month.get(month, 0) + 1
            bill(input_tokens, output_tokens)

        self.fake.bill = bill_in_month     # type: ignore[method-assign]

    def _respond(self, request: Any) -> Any:
        window = self.window
        if window is not None and window.active(chat=True):
            return window.fault()
        return Reply.text(f"Weighing the options.\nDECISION: {decide(request.prompt or '')}")

    def open_window(self, codes: Iterable[int], hours: float, after_calls: int) -> None:
        self.window = FaultWindow(tuple(codes), hours, after_calls)
        self.windows.append(self.window)

    def set_models(self, models: Iterable[Union[str, dict]]) -> None:
        self.fake.set_models(list(models))

    @property
    def billed_calls(self) -> int:
        return int(self.fake.billed["calls"])

    def __enter__(self) -> "Provider":
        self.fake.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.fake.__exit__(*exc)


class Webhook(Receiver):
    """The owner's webhook (see the module docstring); :attr:`modes` is every scripted change, ``(instant, mode)``.

    A page posted while it hangs is read and never answered: the sender
    gives up after its read timeout (10 s) and the handler waits until the
    webhook is set ``ok`` or ``down`` (or ten minutes), so a hung day never
    keeps the drill waiting; :meth:`close` releases whatever still waits.
    """

    def __init__(self) -> None:
        super().__init__()
        self.modes: list[tuple[dt.datetime, str]] = []

    def set(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"a webhook mode is one of {', '.join(MODES)}, not {mode!r}")
        super().set(mode)
        self.modes.append((now(), mode))

    def taken(self) -> list[Received]:
        """The requests answered 2xx (each a page the sender counted delivered), in order."""
        return [r for r in self.received if r.taken]

    def faulty(self, moment: dt.datetime) -> bool:
        """Whether the script had the webhook out of order at ``moment``."""
        mode = "ok"
        for when, changed in self.modes:
            if when > moment:
                break
            mode = changed
        return mode != "ok"


MODES = {"ok": "answers 204", "error": "answers 500", "hang": "reads each page and never answers",
         "down": "refuses connections (its socket closed)"}


@dataclass
class FullDisk:
    """The next write of a trial log whose path names ``protocol`` fails once with ENOSPC (see the docstring)."""

    armed: Optional[str] = None
    failed: list[str] = field(default_factory=list)

    def install(self) -> Callable[[], None]:
        """Put the failing write in place; returns what puts the real one back."""
        from llmarchive.archive import jsonio

        real = jsonio._write_all

        def write_all(fh: Any, data: bytes, size: int) -> None:
            name = str(getattr(fh, "name", ""))
            if self.armed and name.endswith("trials.jsonl") and "experiments" in name and self.armed in name:
                self.failed.append(name)
                self.armed = None
                raise OSError(errno.ENOSPC, "No space left on device")
            real(fh, data, size)

        jsonio._write_all = write_all     # type: ignore[assignment]

        def undo() -> None:
            jsonio._write_all = real      # type: ignore[assignment]
        return undo


def no_real_backoff(provider: Provider) -> Callable[[], None]:
    """Every API subject made from now on counts its back-off waits instead of sleeping them; returns the undo."""
    from llmarchive.subjects import http as subjects_http

    made = subjects_http.HttpSubject.__init__

    def wait(seconds: float) -> None:
        provider.backoff_s += seconds

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        self._sleep = wait

    subjects_http.HttpSubject.__init__ = init    # type: ignore[method-assign]

    def undo() -> None:
        subjects_http.HttpSubject.__init__ = made    # type: ignore[method-assign]
    return undo
