"""A fake model provider: a real HTTP server on 127.0.0.1, in a thread.

It speaks the wire protocols our subjects speak — Anthropic Messages
(``POST /v1/messages``), OpenAI chat completions (``POST
/v1/chat/completions``) and both models lists (``GET /v1/models``; the
Anthropic shape when the request carries ``anthropic-version``, with
``limit``/``after_id`` paging, else the OpenAI shape) — so the code under
test goes through httpx, sockets, status codes and headers exactly as it
would against the real thing.  Nothing is mocked below HTTP.

Usage::

    from tests.fake_provider import FakeProvider, Reply, Fault

    with FakeProvider() as fake:                  # every call answers "DECISION: A"
        subject = AnthropicSubject("claude-x", 64, base_url=fake.base_url)
        fake.script(Fault.status(429, retry_after=0.05), Reply.text("DECISION: B"))
        fake.responder = lambda request: Reply.text(f"DECISION: {pick(request.prompt)}")
        fake.latency_s = 0.5                      # every chat answer waits this long
        fake.set_models(["claude-sonnet-5", "claude-sonnet-5-5"])
        fake.requests                             # every request seen (Request objects)
        fake.max_in_flight                        # most chat requests ever open at once

Answers, in order of precedence: the next scripted item (``script``; each
is used once), else ``responder(request)``.  A scripted item or a responder
result is a :class:`Reply` (rendered in the dialect of the endpoint that
was called) or a :class:`Fault`:

* ``Reply.text(text)``, ``Reply.refusal()``, ``Reply.max_tokens(text)``,
  ``Reply.non_text()`` (a tool call instead of text), ``Reply.empty()``;
  each takes ``model=`` to change the returned model id;
* ``Fault.status(code, retry_after=…)`` (429, 500, 529, 401, …),
  ``Fault.malformed()`` (200 with a body that is not JSON),
  ``Fault.drop()`` (the connection closes without a response),
  ``Fault.reset()`` (the connection is reset: TCP RST, no response),
  ``Fault.slow(seconds, then)`` (waits, then answers ``then``),
  ``Fault.content_filter()`` (the provider blocks the request: HTTP 400).

``FakeProvider(system_fingerprint="fp_…")`` puts that build identity into every
OpenAI-dialect answer as ``system_fingerprint`` (as OpenAI and llama.cpp's
server do); set ``fake.system_fingerprint`` to change the build between calls.
Without one the field is left out, as a server that reports no build does.

``FakeProvider(require_key="…")`` answers 401 unless the request carries
that key (``x-api-key`` or ``Authorization: Bearer``).  ``models_script``
takes faults for the models list the same way ``script`` does for chats.

:func:`decide_by_hash` is a responder that answers a decision derived from
the prompt's hash (deterministic, varied); :func:`embedded_model_responder`
answers with the embedded reference model.  ``python -m tests.fake_provider``
runs one in its own process (:func:`serve`), counters at ``GET /_fake/stats``.

Billing.  ``fake.billed`` counts what a real provider would bill: every chat
answer it produced with status 200 — whether or not the client was still
there to read it (a client that timed out is billed all the same) — with
the tokens it reported, and a malformed 200 at the prompt's words plus the
request's ``max_tokens`` (the provider generated something; nobody can read
how much).  Error statuses, drops and resets bill nothing.
"""
import hashlib
import json
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Optional, Sequence, Union
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Reply:
    """A model answer; rendered as an Anthropic or OpenAI response body."""

    kind: str = "text"          # text | refusal | max_tokens | non_text
    content: str = ""
    model: Optional[str] = None
    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None

    @classmethod
    def text(cls, text: str, **kw: Any) -> "Reply":
        return cls("text", text, **kw)

    @classmethod
    def refusal(cls, text: str = "I can't help with that.", **kw: Any) -> "Reply":
        return cls("refusal", text, **kw)

    @classmethod
    def max_tokens(cls, text: str = "Let me weigh the options carefully. First", **kw: Any) -> "Reply":
        return cls("max_tokens", text, **kw)

    @classmethod
    def non_text(cls, **kw: Any) -> "Reply":
        return cls("non_text", "", **kw)

    @classmethod
    def empty(cls, **kw: Any) -> "Reply":
        return cls("text", "", **kw)


@dataclass(frozen=True)
class Fault:
    """A transport-level misbehaviour."""

    kind: str                               # status | malformed | drop | reset | slow | content_filter
    code: int = 500
    retry_after: Optional[float] = None
    seconds: float = 0.0
    then: Optional[Union[Reply, "Fault"]] = None
    error_type: Optional[str] = None

    @classmethod
    def status(cls, code: int, retry_after: Optional[float] = None, error_type: Optional[str] = None) -> "Fault":
        return cls("status", code=code, retry_after=retry_after, error_type=error_type)

    @classmethod
    def malformed(cls) -> "Fault":
        return cls("malformed", code=200)

    @classmethod
    def drop(cls) -> "Fault":
        return cls("drop")

    @classmethod
    def reset(cls) -> "Fault":
        return cls("reset")

    @classmethod
    def slow(cls, seconds: float, then: Optional[Union[Reply, "Fault"]] = None) -> "Fault":
        return cls("slow", seconds=seconds, then=then)

    @classmethod
    def content_filter(cls) -> "Fault":
        return cls("content_filter", code=400)

Answer = Union[Reply, Fault]


@dataclass
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict
    headers: dict
    body: Any
    dialect: str                 # anthropic | openai
    at: float = field(default_factory=time.monotonic)

    @property
    def prompt(self) -> Optional[str]:
        """The text of the first user message (None for a models list)."""
        try:
            content = self.body["messages"][0]["content"]
        except (TypeError, KeyError, IndexError):
            return None
        return content if isinstance(content, str) else None


STATS_PATH = "/_fake/stats"

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


class _Server(ThreadingHTTPServer):
    """The standard threading server with a listen queue a concurrent client cannot overflow.

    ``socketserver`` listens with a backlog of 5: at concurrency 64 the
    kernel then resets connections the fake never saw, and the client's
    retries make a run's request count depend on timing.
    """

    request_queue_size = 256


class FakeProvider:
    """The server; use as a context manager (see the module docstring)."""

    def __init__(self, responder: Optional[Callable[[Request], Answer]] = None, *,
                 require_key: Optional[str] = None, latency_s: float = 0.0,
                 models: Iterable[Union[str, dict]] = ("claude-sonnet-5",),
                 system_fingerprint: Optional[str] = None, port: int = 0) -> None:
        self._lock = threading.Lock()
        self.port = port            # 0: any free port (the tests'); an owner's dry run names one
        self.system_fingerprint = system_fingerprint
        self.responder: Callable[[Request], Answer] = responder or (lambda request: Reply.text("DECISION: A"))
        self.require_key = require_key
        self.latency_s = latency_s
        self._script: deque = deque()
        self.models_script: deque = deque()
        self._models: list[dict] = []
        self.set_models(models)
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.billed = {"calls": 0, "input_tokens": 0, "output_tokens": 0}
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    # -- control --------------------------------------------------------
    def script(self, *answers: Answer) -> "FakeProvider":
        """Queue answers for the next chat calls, one each, in order."""
        with self._lock:
            self._script.extend(answers)
        return self

    def set_models(self, models: Iterable[Union[str, dict]]) -> None:
        """Replace the models list; strings become ``{"id": …}`` entries."""
        entries = []
        for index, model in enumerate(models):
            entry = {"id": model} if isinstance(model, str) else dict(model)
            entry.setdefault("created_at", f"2026-01-{index % 28 + 1:02d}T00:00:00Z")
            entry.setdefault("display_name", entry["id"])
            entries.append(entry)
        with self._lock:
            self._models = entries

    def stats(self) -> dict:
        """Counters, also served at ``GET /_fake/stats`` for a server in another process."""
        with self._lock:
            return {"requests": len(self.requests), "chat_requests": len(self.chat_requests_unlocked()),
                    "in_flight": self.in_flight, "max_in_flight": self.max_in_flight, "billed": dict(self.billed)}

    def bill(self, input_tokens: int, output_tokens: int) -> None:
        """Count one billed answer (see the module docstring)."""
        with self._lock:
            self.billed["calls"] += 1
            self.billed["input_tokens"] += input_tokens
            self.billed["output_tokens"] += output_tokens

    def chat_requests_unlocked(self) -> list[Request]:
        return [r for r in self.requests if r.method == "POST"]

    @property
    def chat_requests(self) -> list[Request]:
        return [r for r in self.requests if r.method == "POST"]

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake provider is not running (use it as a context manager)")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeProvider":
        provider = self

        class Handler(_Handler):
            fake = provider

        self._server = _Server(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-provider", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # -- used by the handler ---------------------------------------------
    def _next_answer(self, request: Request) -> Answer:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return self.responder(request)

    def _enter(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)
            if request.method == "POST":
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self, request: Request) -> None:
        if request.method == "POST":
            with self._lock:
                self.in_flight -= 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeProvider

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without NODELAY, Nagle's
        # algorithm and delayed ACKs would add ~40 ms to every answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    # -- plumbing ---------------------------------------------------------
    def _send(self, status: int, payload: Any = None, raw: Optional[bytes] = None,
              headers: Optional[dict] = None) -> None:
        body = raw if raw is not None else json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _reset(self) -> None:
        """Close with SO_LINGER 0: the client sees a connection reset (RST), not an orderly close."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass

    def _request(self) -> Request:
        split = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        dialect = "anthropic" if "anthropic-version" in headers or split.path == "/v1/messages" else "openai"
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        return Request(self.command, split.path, query, headers, body, dialect)

    def _authorised(self, request: Request) -> bool:
        want = self.fake.require_key
        if want is None:
            return True
        given = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        return given == want

    def _error(self, request: Request, status: int, error_type: Optional[str] = None,
               retry_after: Optional[float] = None, message: str = "fake provider error",
               code: Optional[str] = None) -> None:
        kind = error_type or _ERROR_TYPES.get(status, "api_error")
        if request.dialect == "anthropic":
            payload = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            payload = {"error": {"message": message, "type": kind, "code": code}}
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else None
        self._send(status, payload, headers=headers)

    # -- endpoints ------------------------------------------------------------
    def do_GET(self) -> None:
        request = self._request()
        if request.path == STATS_PATH:
            return self._send(200, self.fake.stats())
        self.fake._enter(request)
        try:
            if request.path != "/v1/models":
                return self._error(request, 404, message=f"no route {request.path}")
            if not self._authorised(request):
                return self._error(request, 401, message="invalid key")
            if self.fake.models_script:
                fault = self.fake.models_script.popleft()
                return self._fault(request, fault)
            models = list(self.fake._models)
            if request.dialect == "anthropic":
                limit = int(request.query.get("limit", 20))
                after = request.query.get("after_id")
                ids = [m["id"] for m in models]
                start = ids.index(after) + 1 if after in ids else 0
                page = models[start:start + limit]
                self._send(200, {
                    "data": [{"type": "model", **m} for m in page],
                    "has_more": start + limit < len(models),
                    "first_id": page[0]["id"] if page else None,
                    "last_id": page[-1]["id"] if page else None,
                })
            else:
                self._send(200, {"object": "list", "data": [
                    {"id": m["id"], "object": "model", "created": 1767225600 + i, "owned_by": "fake"}
                    for i, m in enumerate(models)]})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            self.fake._leave(request)

    def do_POST(self) -> None:
        request = self._request()
        self.fake._enter(request)
        try:
            if request.path not in ("/v1/messages", "/v1/chat/completions"):
                return self._error(request, 404, message=f"no route {request.path}")
            request.dialect = "anthropic" if request.path == "/v1/messages" else "openai"
            if not self._authorised(request):
                return self._error(request, 401, message="invalid key")
            if not isinstance(request.body, dict) or not request.prompt:
                return self._error(request, 400, message="messages[0].content must be a string")
            if self.fake.latency_s:
                time.sleep(self.fake.latency_s)
            self._answer(request, self.fake._next_answer(request))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            self.fake._leave(request)

    def _answer(self, request: Request, answer: Answer) -> None:
        if isinstance(answer, Fault):
            return self._fault(request, answer)
        model = answer.model or request.body.get("model")
        in_tokens = answer.input_tokens if answer.input_tokens is not None else len(request.prompt.split())
        out_tokens = answer.output_tokens if answer.output_tokens is not None else len(answer.content.split())
        limit = request.body.get("max_tokens")
        if isinstance(limit, int) and answer.output_tokens is None:
            out_tokens = min(out_tokens, limit)   # a provider never generates (or bills) past max_tokens
        self.fake.bill(in_tokens, out_tokens)     # billed once generated, read or not
        if request.dialect == "anthropic":
            self._send(200, _anthropic_body(answer, model, in_tokens, out_tokens))
        else:
            self._send(200, _openai_body(answer, model, in_tokens, out_tokens, self.fake.system_fingerprint))

    def _fault(self, request: Request, fault: Fault) -> None:
        if fault.kind == "status":
            self._error(request, fault.code, fault.error_type, fault.retry_after)
        elif fault.kind == "malformed":
            if request.method == "POST":
                self.fake.bill(len((request.prompt or "").split()), int(request.body.get("max_tokens") or 0))
            self._send(200, raw=b'{"id": "msg_truncated", "content": [{"type": "te')
        elif fault.kind == "drop":
            self._drop()
        elif fault.kind == "reset":
            self._reset()
        elif fault.kind == "slow":
            time.sleep(fault.seconds)
            self._answer(request, fault.then or Reply.text("DECISION: A"))
        elif fault.kind == "content_filter":
            self._error(request, 400, "invalid_request_error", message="blocked by content filter",
                        code="content_filter")
        else:
            raise ValueError(f"unknown fault {fault.kind!r}")


def _anthropic_body(answer: Reply, model: str, in_tokens: int, out_tokens: int) -> dict:
    stop = {"text": "end_turn", "refusal": "refusal", "max_tokens": "max_tokens", "non_text": "tool_use"}[answer.kind]
    if answer.kind == "non_text":
        content = [{"type": "tool_use", "id": "toolu_fake", "name": "decide", "input": {"choice": "A"}}]
    elif answer.kind == "text" and answer.content == "":
        content = []
    else:
        content = [{"type": "text", "text": answer.content}]
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": in_tokens, "output_tokens": out_tokens}}


def _openai_body(answer: Reply, model: str, in_tokens: int, out_tokens: int,
                 system_fingerprint: Optional[str] = None) -> dict:
    message: dict = {"role": "assistant", "content": answer.content, "refusal": None}
    finish = "stop"
    if answer.kind == "refusal":
        message.update(content=None, refusal=answer.content)
    elif answer.kind == "max_tokens":
        finish = "length"
    elif answer.kind == "non_text":
        message["content"] = None
        message["tool_calls"] = [{"id": "call_fake", "type": "function",
                                  "function": {"name": "decide", "arguments": "{\"choice\": \"A\"}"}}]
        finish = "tool_calls"
    body = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1767225600, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": in_tokens, "completion_tokens": out_tokens,
                      "total_tokens": in_tokens + out_tokens}}
    if system_fingerprint is not None:
        body["system_fingerprint"] = system_fingerprint
    return body


def decide_by_hash(options: Sequence[str] = ("A", "B")) -> Callable[[Request], Reply]:
    """A responder whose decision is a fixed function of the prompt's sha256."""
    def respond(request: Request) -> Reply:
        digest = hashlib.sha256((request.prompt or "").encode("utf-8")).digest()
        return Reply.text(f"Weighing the options.\nDECISION: {options[digest[0] % len(options)]}")
    return respond


def embedded_model_responder(max_tokens: int = 128) -> Callable[[Request], Reply]:
    """A responder that answers with the embedded reference model (loaded once)."""
    from llmarchive.subjects import ReferenceSubject

    subject = ReferenceSubject(max_tokens=max_tokens)
    lock = threading.Lock()

    def respond(request: Request) -> Reply:
        with lock:
            result = subject.call(request.prompt or "")
        kind = "max_tokens" if result.stop_reason == "length" else "text"
        return Reply(kind, result.text or "", model="smollm2-135m-fake",
                     input_tokens=result.input_tokens, output_tokens=result.output_tokens)
    return respond


def serve(argv: Optional[Sequence[str]] = None) -> None:
    """Run a fake provider in its own process: until stdin closes, or with ``--port`` until it is stopped.

    ``python -m tests.fake_provider --latency 0.5`` prints its base URL on
    the first line of stdout; its counters are at ``GET /_fake/stats``.
    Answers come from :func:`decide_by_hash`.  Used where the server must not
    share a CPU-bound interpreter with the code under test (benchmarks), and
    by an owner's dry run: ``--port 8089`` serves on that port until Ctrl-C or
    SIGTERM, whatever its stdin (a background job's is closed or not its own).
    """
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(description="a fake model provider on 127.0.0.1")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every chat answer")
    parser.add_argument("--require-key", help="answer 401 unless this key is sent")
    parser.add_argument("--port", type=int, help="serve on this port until interrupted (Ctrl-C, SIGTERM), not "
                                                 "until stdin closes: an owner's dry run")
    args = parser.parse_args(argv)
    try:
        fake = FakeProvider(decide_by_hash(), latency_s=args.latency, require_key=args.require_key,
                            port=args.port or 0).__enter__()
    except OSError as exc:
        raise SystemExit(f"the fake provider cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}")
    try:
        print(fake.base_url, flush=True)
        if args.port is None:
            sys.stdin.read()
        else:
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
            try:
                threading.Event().wait()
            except KeyboardInterrupt:
                pass
    finally:
        fake.__exit__(None, None, None)


if __name__ == "__main__":
    serve()
