"""A webhook receiver on 127.0.0.1 that can be up, down, failing, slow or hung — the faults an owner's pager has.

Real HTTP, a real socket: "down" closes the listening socket (a connection
is refused, as with a stopped service) and "up" opens it again on the same
port.  Every request that reached it is kept with the moved clock's instant,
its ``Idempotency-Key`` header, its JSON body and the status it was answered
with (None: no answer was sent — a hung receiver, whose reader gave up).
"""
import datetime as dt
import http.server
import json
import threading
from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class Received:
    at: dt.datetime
    key: Optional[str]
    body: dict
    answered: Optional[int] = None

    @property
    def taken(self) -> bool:
        """Answered with a 2xx: the sender counts the page delivered."""
        return self.answered is not None and 200 <= self.answered < 300


class Receiver:
    """The owner's webhook (see the module docstring).  ``mode``: ``ok`` | ``error`` | ``slow`` | ``hang``."""

    def __init__(self, status_error: int = 500, slow_s: float = 3.0) -> None:
        self.received: list[Received] = []
        self.mode = "ok"
        self.status_error = status_error
        self.slow_s = slow_s
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._server: Optional[http.server.ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None
        self.port = 0

    # -- what the owner's endpoint does --------------------------------------------------------------------
    def _handler(self) -> type:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) or b"{}"
                try:
                    body = json.loads(raw)      # one JSON document: an HTTP body
                except ValueError:
                    body = {"unreadable": True}
                seen = Received(dt.datetime.now(dt.timezone.utc), self.headers.get("Idempotency-Key"), body)
                with receiver._lock:
                    receiver.received.append(seen)
                    mode = receiver.mode
                if mode == "hang":
                    receiver._wake.wait(600)
                    return                       # the sender gave up long ago: no answer is sent
                if mode == "slow":
                    receiver._wake.wait(receiver.slow_s)
                status = receiver.status_error if mode == "error" else 204
                seen.answered = status
                try:
                    self.send_response(status)
                    self.end_headers()
                except OSError:
                    seen.answered = None         # the sender had gone: it never saw the answer

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    # -- up and down ----------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def up(self) -> None:
        """Listen (again, on the same port once one was chosen)."""
        if self._server is not None:
            return
        self._wake.clear()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="webhook-receiver")
        self._thread.start()

    def down(self) -> None:
        """Stop listening: a connection is refused until :meth:`up`."""
        if self._server is None:
            return
        self._wake.set()
        self._server.shutdown()
        self._server.server_close()
        self._server = None

    def set(self, mode: str) -> None:
        """``ok``, ``error``, ``slow`` or ``hang`` from now on (``down``/``up`` open and close the socket)."""
        if mode == "down":
            self.down()
            return
        self.up()
        with self._lock:
            self.mode = mode
        if mode == "ok":
            self._wake.set()
            self._wake = threading.Event()

    # -- what reached it -----------------------------------------------------------------------------------
    def bodies(self) -> list[dict]:
        return [r.body for r in self.received]

    def taken_keys(self) -> list[Optional[str]]:
        """The key of every request answered 2xx, in order (a page taken twice shows twice)."""
        return [r.key for r in self.received if r.taken]

    def __enter__(self) -> "Receiver":
        self.up()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.down()
