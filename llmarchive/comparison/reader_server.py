"""An OpenAI-compatible server that answers as the simulated readers: the outside route's positive control.

A comparison point is only as good as the route that made it: the prompts
as published, the client that sends them, the server, the grammar, the
estimator and the intake.  This server puts readers whose answers are known
in advance (:data:`panels.readers.KNOWN_ANSWER_READERS`) behind that route,
so a run through it must come back with the figures
:func:`panels.readers.known_answer` computes — and any client that speaks
OpenAI's chat completions can be pointed at it (``llmarchive comparison
run``, Inspect AI's ``openai-api`` provider, the ``openai`` package).

What it serves, on 127.0.0.1 only:

* ``GET /v1/models`` (and ``GET /v1/models/<id>``): one model per
  known-answer reader, ``simulated-reader-<name>``;
* ``POST /v1/chat/completions``: the request's one user message must be a
  prompt of a served panel file, exactly as published (it is found by its
  SHA-256 in the file's ``prompt_sha256`` map); the reply is the reader's
  whole response (:func:`panels.readers.response_text`), with the usual
  ``id``, ``object``, ``created``, ``model`` (the reader's id),
  ``system_fingerprint``, ``choices[0].message.content``,
  ``choices[0].finish_reason`` and ``usage``;
* ``POST /v1/completions``: the same for a bare ``prompt``.

Anything else gets a 4xx in OpenAI's error shape (``{"error": {"message",
"type", "param", "code"}}``): an unknown model (404 ``model_not_found``), a
prompt that is not a served panel's text, a system message or several
messages (the panels are sent alone), ``n`` other than 1, streaming, a body
that is not JSON or is too large, an unknown path or method.

**Which replicate a call is.**  A chat request carries the prompt and
nothing that names the replicate (each replicate of one scenario and
version is the same text), so the server counts: the *k*-th call (from 0)
of one prompt for one model gets the reader's answer for replicate
``k mod n_per_scenario`` (:func:`panels.readers.replicate_answers`).  A run
that sends each prompt ``n_per_scenario`` times to a freshly started server
therefore receives exactly the reader's answers, in whatever order its calls
arrive — and a measurement depends only on how many of each answer a
scenario's version received, never on their order.  A run resumed against a
*restarted* server starts the counts again, so its missing slots may not
complete the reader's split of a tie: start a known-answer run afresh rather
than resuming it across servers.

``usage`` counts whitespace-separated words (no tokenizer is involved);
``max_tokens`` (or ``max_completion_tokens``) cuts the response to that many
words with ``finish_reason`` ``length``, as a real server cuts tokens.

Run it by hand with ``python -m llmarchive.comparison.reader_server public/panels/*.json
--port 8080`` and point a client at ``http://127.0.0.1:8080/v1``.
"""
import argparse
import hashlib
import ipaddress
import json
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Union

from llmarchive.protocols import load_panel_file, protocol_from_panel_file
from measure.errors import ArchiveError
from measure.schema import VERSIONS
from panels import readers

MAX_BODY_BYTES = 1_000_000
SYSTEM_FINGERPRINT = "fp_llmarchive_simulated_readers_1"
OWNED_BY = "llm-archive (simulated reader, known answer)"


class ReaderServerError(ArchiveError, ValueError):
    """Panel files the server cannot serve (unreadable, or two panels that disagree on one prompt)."""


class _Refused(Exception):
    """A request the server answers with a 4xx; carries OpenAI's error fields."""

    def __init__(self, status: int, message: str, code: str, param: Optional[str] = None,
                 kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param, self.kind = status, message, code, param, kind

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


@dataclass(frozen=True)
class Prompt:
    """One served prompt: where it sits in its panel, and each reader's answer per replicate."""

    protocol_id: str
    item_id: str
    version: str
    answers: Mapping[str, tuple[str, ...]]     # known-answer reader → letter per replicate


class ReaderBook:
    """Every served prompt by its SHA-256, and the per-prompt call counts that pick each replicate.

    Built from published open-panel files, each verified first (its hashes
    must recompute: :func:`llmarchive.protocols.open_panels.load_panel_file`).
    """

    def __init__(self, panel_files: Iterable[Union[str, Path]]) -> None:
        self.prompts: dict[str, Prompt] = {}
        self.protocol_ids: list[str] = []
        for file in panel_files:
            try:
                doc = load_panel_file(file)
            except ArchiveError as exc:
                raise ReaderServerError(str(exc)) from None
            protocol = protocol_from_panel_file(doc)
            self.protocol_ids.append(protocol["protocol_id"])
            for item in protocol["panel"]:
                for version in VERSIONS:
                    sha = doc["prompt_sha256"][item["item_id"]][version]
                    answers = {name: tuple(readers.replicate_answers(simulates, protocol, item, version))
                               for name, simulates in readers.KNOWN_ANSWER_READERS.items()}
                    self._add(sha, Prompt(protocol["protocol_id"], item["item_id"], version, answers), file)
        if not self.prompts:
            raise ReaderServerError("no panel file given: the server has no prompt to answer")
        self._counts: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def _add(self, sha: str, prompt: Prompt, file: Union[str, Path]) -> None:
        known = self.prompts.get(sha)
        if known is not None and known.answers != prompt.answers:
            raise ReaderServerError(f"{file}: the prompt of {prompt.protocol_id} {prompt.item_id} {prompt.version} "
                                    f"is also {known.protocol_id} {known.item_id} {known.version}'s text, where a "
                                    f"reader answers otherwise; serve the two panels from two servers")
        self.prompts.setdefault(sha, prompt)

    @property
    def model_ids(self) -> list[str]:
        return [readers.simulated_model_id(name) for name in readers.KNOWN_ANSWER_READERS]

    def reader_for(self, model: object) -> str:
        name = readers.simulated_reader(model)
        if name is None:
            raise _Refused(404, f"The model {model!r} does not exist here; this server answers as "
                                      f"{', '.join(self.model_ids)}", "model_not_found", "model")
        return name

    def answer(self, model: str, prompt_text: str) -> tuple[str, Prompt, int]:
        """(the response text, the prompt, its call number) for one call; refuses an unknown model or prompt."""
        name = self.reader_for(model)
        sha = hashlib.sha256(prompt_text.encode("utf-8")).hexdigest()
        prompt = self.prompts.get(sha)
        if prompt is None:
            raise _Refused(400, f"the prompt (sha256 {sha[:16]}…) is not the text of any scenario of the "
                                      f"served panels ({', '.join(self.protocol_ids)}): send a published prompt "
                                      f"exactly as it stands, alone", "unknown_prompt", "messages")
        with self._lock:
            call = self._counts.get((model, sha), 0)
            self._counts[(model, sha)] = call + 1
        replicates = prompt.answers[name]
        return readers.response_text(name, replicates[call % len(replicates)]), prompt, call


def _text_of(content: Any) -> str:
    """A message's text: a string, or the ``text`` parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        if any(p.get("type") != "text" for p in content):
            raise _Refused(400, "only text content parts are answered", "unsupported_content", "messages")
        return "".join(str(p.get("text", "")) for p in content)
    raise _Refused(400, "message content must be a string or a list of text parts", "invalid_content",
                         "messages")


def _chat_prompt(body: Mapping) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise _Refused(400, "'messages' must be a non-empty list of message objects", "invalid_messages",
                             "messages")
    if len(messages) != 1 or messages[0].get("role") != "user":
        roles = ", ".join(str(m.get("role")) for m in messages)
        raise _Refused(400, f"a panel's prompt is sent alone, as one user message with nothing added "
                                  f"(no system message, no history); got the roles {roles}", "not_a_panel_call",
                             "messages")
    return _text_of(messages[0].get("content"))


def _limit(body: Mapping) -> Optional[int]:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise _Refused(400, f"'{key}' must be a positive integer", "invalid_value", key)
        return value
    return None


def _check_common(body: Mapping) -> None:
    if body.get("stream"):
        raise _Refused(400, "streaming is not offered: send the request without 'stream'", "unsupported_value",
                             "stream")
    n = body.get("n", 1)
    if n != 1:
        raise _Refused(400, "'n' must be 1: one fresh call per replicate", "unsupported_value", "n")
    if not isinstance(body.get("model"), str):
        raise _Refused(400, "'model' is required (a simulated reader's id)", "missing_model", "model")


def _cut(text: str, limit: Optional[int]) -> tuple[str, str, int]:
    """(text, finish_reason, completion words) after ``limit`` words."""
    words = text.split()
    if limit is not None and len(words) > limit:
        return " ".join(words[:limit]), "length", limit
    return text, "stop", len(words)


def _usage(prompt_text: str, completion_words: int) -> dict:
    prompt_words = len(prompt_text.split())
    return {"prompt_tokens": prompt_words, "completion_tokens": completion_words,
            "total_tokens": prompt_words + completion_words}


def _completion_id(prefix: str, model: str, prompt_text: str, call: int) -> str:
    digest = hashlib.sha256(f"{model}\n{call}\n{prompt_text}".encode("utf-8")).hexdigest()[:24]
    return f"{prefix}-{digest}"


class _Handler(BaseHTTPRequestHandler):
    server_version = "llmarchive-reader-server/1"
    protocol_version = "HTTP/1.1"
    book: ReaderBook     # set on the subclass each server makes

    def log_message(self, format: str, *args: Any) -> None:   # the runner records every call; no access log
        return None

    def _send(self, status: int, payload: Mapping) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, refused: _Refused) -> None:
        self._send(refused.status, refused.body())

    def _body(self) -> Mapping:
        length_text = self.headers.get("Content-Length")
        if length_text is None or not length_text.isdigit():
            self.close_connection = True
            raise _Refused(411, "a Content-Length header is required", "length_required")
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise _Refused(413, f"the body is {length} bytes; at most {MAX_BODY_BYTES} are read",
                                 "body_too_large")
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw.decode("utf-8"))     # one JSON document: the HTTP request's body
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise _Refused(400, "the body is not JSON", "invalid_json") from None
        if not isinstance(body, dict):
            raise _Refused(400, "the body must be a JSON object", "invalid_json")
        return body

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        models = [{"id": m, "object": "model", "created": 0, "owned_by": OWNED_BY} for m in self.book.model_ids]
        if path == "/v1/models":
            self._send(200, {"object": "list", "data": models})
        elif path.startswith("/v1/models/"):
            wanted = path[len("/v1/models/"):]
            found = [m for m in models if m["id"] == wanted]
            if found:
                self._send(200, found[0])
            else:
                self._refuse(_Refused(404, f"The model {wanted!r} does not exist here", "model_not_found",
                                            "model"))
        elif path == "/health":
            self._send(200, {"status": "ok", "panels": self.book.protocol_ids})
        else:
            self._refuse(_Refused(404, f"no route GET {path or '/'}", "not_found", kind="not_found_error"))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            if path not in ("/v1/chat/completions", "/v1/completions"):
                self.close_connection = True
                raise _Refused(404, f"no route POST {path or '/'}", "not_found", kind="not_found_error")
            body = self._body()
            _check_common(body)
            chat = path == "/v1/chat/completions"
            if chat:
                prompt_text = _chat_prompt(body)
            else:
                prompt_text = body.get("prompt")
                if not isinstance(prompt_text, str):
                    raise _Refused(400, "'prompt' must be one string", "invalid_prompt", "prompt")
            limit = _limit(body)
            text, _, call = self.book.answer(body["model"], prompt_text)
        except _Refused as refused:
            self._refuse(refused)
            return
        text, finish, words = _cut(text, limit)
        model = body["model"]
        common = {"created": int(time.time()), "model": model, "system_fingerprint": SYSTEM_FINGERPRINT,
                  "usage": _usage(prompt_text, words)}
        if chat:
            self._send(200, {"id": _completion_id("chatcmpl", model, prompt_text, call), "object": "chat.completion",
                             **common, "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                                                    "message": {"role": "assistant", "content": text,
                                                                "refusal": None}}]})
        else:
            self._send(200, {"id": _completion_id("cmpl", model, prompt_text, call), "object": "text_completion",
                             **common, "choices": [{"index": 0, "text": text, "finish_reason": finish,
                                                    "logprobs": None}]})

    def _not_allowed(self) -> None:
        self.close_connection = True
        self._refuse(_Refused(405, f"{self.command} is not allowed here", "method_not_allowed"))

    do_PUT = do_DELETE = do_PATCH = _not_allowed


def _loopback(host: str) -> str:
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise ReaderServerError(f"the reader server listens on a loopback address only (127.0.0.1), not {host!r}")


class ReaderServer:
    """The server in a background thread: ``with ReaderServer(files) as server: … server.base_url …``."""

    def __init__(self, panel_files: Iterable[Union[str, Path]], host: str = "127.0.0.1", port: int = 0) -> None:
        self.book = ReaderBook(panel_files)
        handler = type("ReaderHandler", (_Handler,), {"book": self.book})
        self._httpd = ThreadingHTTPServer((_loopback(host), port), handler)
        self._httpd.daemon_threads = True
        self._thread: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (llmarchive's ``--base-url``; a trailing ``/v1`` is accepted there too)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        """``…/v1``, the form the ``openai`` package and Inspect AI's ``openai-api`` provider take."""
        return self.url + "/v1"

    def start(self) -> "ReaderServer":
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, name="reader-server", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> "ReaderServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmarchive.comparison.reader_server",
                                     description="Serve the simulated readers with known answers as an "
                                                 "OpenAI-compatible server on 127.0.0.1 for the given published "
                                                 "open-panel files (public/panels/<protocol_id>.json).")
    parser.add_argument("panels", nargs="+", metavar="PANEL_FILE")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    try:
        server = ReaderServer(args.panels, port=args.port)
    except (ArchiveError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"serving {', '.join(server.book.model_ids)} for {', '.join(server.book.protocol_ids)} at "
          f"{server.base_url} (Ctrl-C stops)", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
