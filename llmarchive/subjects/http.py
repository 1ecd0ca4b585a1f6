"""The HTTP machinery shared by the API subjects: retries, timing, secrets.

A remote call fails in ways that say nothing about the model: rate limits,
overload, a dropped connection, a proxy that cuts the body short.  Those are
retried with exponential back-off and jitter, honouring ``retry-after``, up
to a bounded number of attempts; a call that is still failing after that
never got an answer and is returned with ``failure`` set — not a trial (see
:mod:`llmarchive.subjects.base`): the runner stops and the slot stays open.
Only the provider blocking the content itself, in its own documented words,
is ``blocked_upstream``.  A failure no
retry can fix — a bad key, an unknown model, a request the provider calls
malformed — raises :class:`~llmarchive.subjects.base.SubjectError` instead,
so the run stops before it records a trial it should not have.

The jitter is drawn from :mod:`measure.rng` with a seed derived from the
recorded ``retry_seed`` and the call's key (the trial identity), so the
wait schedule of any call can be recomputed.  It affects only timing, never
what is recorded about the answer.  The wait itself goes through the
subject's ``sleep`` (``asyncio.sleep`` unless one is given), so tests can
record the waits instead of sleeping them.

Money.  Each attempt is one request the provider may bill.  An attempt
answered with an HTTP error status is not billed; an attempt whose request
left but whose answer never arrived intact (a read timeout, a connection
cut after sending, a malformed 200) may have been, and is counted in
``unknown_attempts`` so the ledger can charge it at its worst case.  A
``before_send`` hook given to :meth:`HttpSubject.acall` runs before every
attempt, so the runner can make a reservation durable before the request
leaves.

Secrets: the API key is read from the environment when the subject is
made, sent only in a request header, and never appears in
:meth:`HttpSubject.config`, ``explicitly_set``, ``detail`` or any error
message (any text from the provider is scrubbed of it before it is kept).
"""
import asyncio
import contextlib
import email.utils
import inspect
import os
import time
from dataclasses import asdict, dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping, Optional
from urllib.parse import urlsplit

import httpx

from llmarchive.subjects import registry
from llmarchive.archive import utc_now_millis
from llmarchive.subjects.base import CallResult, SubjectError, SubjectSettingsError
from llmarchive.subjects.registry import SubjectOptions
from measure.canonical import canonical_json, canonical_sha256
from measure.rng import Stream, seed_from_text
from measure.errors import ArchiveError

PROMPT_PLACEHOLDER = "<prompt>"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a failing call is retried.

    The wait before attempt ``k + 1`` is ``min(max_delay_s, base_delay_s ·
    2^(k−1))`` scaled by a jitter factor uniform on [0.5, 1), and never less
    than the provider's ``retry-after``.  A ``retry-after`` longer than
    ``max_retry_after_s`` ends the call at once (no answer: not a trial)
    rather than stalling the run.
    """

    max_attempts: int = 6
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    max_retry_after_s: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise SubjectError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise SubjectError("retry delays must not be negative")

    def delay(self, attempt: int, retry_after: Optional[float], stream: Stream) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        backoff = min(self.max_delay_s, self.base_delay_s * (2 ** (attempt - 1)))
        jittered = backoff * (0.5 + 0.5 * stream.uniform())
        return max(jittered, retry_after or 0.0)


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """``retry-after`` as seconds: either a number or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds)


class MalformedResponse(ArchiveError, ValueError):
    """A 200 response whose body is not the JSON shape the API documents."""


class _Retry(Exception):
    """One failed attempt: why (``failure`` label), and whether the provider may have billed it."""

    def __init__(self, detail: str, failure: str, retry_after: Optional[float] = None,
                 unknown: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.failure = failure
        self.retry_after = retry_after
        self.unknown = unknown


def _status_failure(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status == 529:
        return "overloaded"
    if status in (408, 425):
        return "timeout"
    return "server_error"


Sleep = Callable[[float], Any]
BeforeSend = Callable[[int], Awaitable[None]]


def _error_fields(response: httpx.Response) -> dict:
    try:
        payload = response.json()
    except ValueError:
        return {}
    error = payload.get("error") if isinstance(payload, dict) else None
    return error if isinstance(error, dict) else {}


def check_base_url(base_url: object, provider: str = "http", key_env: Optional[str] = None) -> str:
    """``base_url`` when it is an address a request can go to; else :class:`SubjectSettingsError`.

    ``http://`` or ``https://``, a host, and nothing after the path: no
    credentials (keys come from the environment only), no query, no
    fragment.  ``not-a-url``, ``http://`` or ``https://:8080`` is a typing
    mistake to report now, not a provider that cannot be reached later.
    """
    text = base_url if isinstance(base_url, str) else ""
    try:
        parts = urlsplit(text)
        parts.port    # a port that is not a number raises here
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise SubjectSettingsError(f"--base-url {base_url!r} is not a URL: give http:// or https:// and a host, "
                                   "e.g. http://127.0.0.1:8080")
    if parts.username is not None or parts.password is not None:
        raise SubjectSettingsError("the base URL carries credentials; keys come from the environment only "
                                   f"({key_env or 'no key variable'} for the {provider} subject)")
    if parts.query or parts.fragment or any(c.isspace() for c in text):
        raise SubjectSettingsError(f"--base-url {base_url!r} must be the server's address alone (no query, "
                                   "fragment or spaces)")
    return text


class HttpSubject:
    """Base of the API subjects: one POST per call, retried, timed, scrubbed.

    Subclasses name the endpoint and say how to build the body, which
    headers carry the key, and how to read a response.  ``max_tokens`` comes
    from the protocol's ``generation`` block; nothing else is sent that the
    subclass does not list in :meth:`request_body`.

    ``provider`` names the subject's row of the provider table
    (:mod:`llmarchive.subjects.providers`): its key variable, whether the
    key is required and the series a run joins are read from that row, not
    declared again here.
    """

    provider = "http"
    chat_path = ""
    models_path = "/v1/models"
    models_query: dict = {}
    is_async = True
    billed = True

    @classmethod
    def from_options(cls, options: SubjectOptions) -> "HttpSubject":
        """The subject ``make_subject`` builds for this provider: the reference model's options refused."""
        if options.model_path or options.model_sha256:
            raise SubjectSettingsError("--model-path/--model-sha256 apply to the reference model only")
        if options.workers != 1:
            raise SubjectSettingsError("--workers applies to the reference model only (API subjects: --concurrency)")
        if not options.model:
            raise SubjectSettingsError(f"the {cls.provider} subject needs --model (the provider's model id)")
        return cls(options.model, options.max_tokens, base_url=options.base_url, timeout_s=options.timeout_s,
                   retry=RetryPolicy(max_attempts=options.max_attempts), retry_seed=options.retry_seed,
                   sleep=options.sleep)

    @property
    def _row(self) -> Optional[registry.Provider]:
        return registry.by_record(self.provider)

    @property
    def key_env(self) -> Optional[str]:
        """The environment variable the key is read from (the provider table's), or None."""
        return self._row.key_env if self._row else None

    @property
    def key_required(self) -> bool:
        return bool(self._row and self._row.key_required)

    @property
    def default_series(self) -> str:
        return self._row.series if self._row else "open_weights"

    def __init__(self, model: str, max_tokens: int, base_url: str, *, timeout_s: float = 120.0,
                 retry: RetryPolicy = RetryPolicy(), retry_seed: int = 0, sleep: Optional[Sleep] = None) -> None:
        if not model or not isinstance(model, str):
            raise SubjectSettingsError("a model id is required (--model)")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise SubjectSettingsError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        check_base_url(base_url, self.provider, self.key_env)
        self.model = model
        self.max_tokens = max_tokens
        self.base_url = base_url.rstrip("/")
        self.timeout_s = float(timeout_s)
        self.retry = retry
        self.retry_seed = int(retry_seed)
        # The back-off wait: asyncio.sleep, or what a caller (a test) injects; may return an awaitable.
        self._sleep: Sleep = asyncio.sleep if sleep is None else sleep
        self._key = os.environ.get(self.key_env) if self.key_env else None
        if self.key_required and not self._key:
            raise SubjectSettingsError(f"{self.key_env} is not set: the {self.provider} subject reads its key "
                                       "from that environment variable and nowhere else")
        self._client: Optional[httpx.AsyncClient] = None
        self._clients: list[httpx.AsyncClient] = []   # the idle ones of connect()'s clients

    # -- what subclasses provide -------------------------------------------
    def request_body(self, prompt: str) -> dict:
        raise NotImplementedError

    def secret_headers(self) -> dict[str, str]:
        """Headers carrying the key: sent, never recorded."""
        return {}

    def public_headers(self) -> dict[str, str]:
        """Headers that are part of the API surface (recorded, hashed)."""
        return {}

    def parse(self, payload: Any) -> dict:
        """Read a 200 response into CallResult fields; raise MalformedResponse."""
        raise NotImplementedError

    def is_provider_block(self, status: int, error: Mapping) -> bool:
        """Whether a 4xx answer is the provider blocking the content itself."""
        words = f"{error.get('type', '')} {error.get('code', '')}".lower()
        return status in (400, 403) and ("content_filter" in words or "content_policy" in words)

    def parse_models(self, payload: Any) -> tuple[list[dict], Optional[dict]]:
        """One page of the models list and the query for the next page (or None)."""
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise MalformedResponse("models list without a 'data' array")
        return [m for m in data if isinstance(m, dict)], None

    # -- what the runner and the record see ----------------------------------
    @property
    def subject_model_id(self) -> str:
        return self.model

    @property
    def explicitly_set(self) -> dict:
        """Every parameter the request body sets, the prompt excepted."""
        body = self.request_body(PROMPT_PLACEHOLDER)
        body.pop("messages", None)
        return body

    def surface(self) -> dict:
        """The canonical request with the prompt replaced by a placeholder."""
        return {"method": "POST", "path": self.chat_path, "headers": self.public_headers(),
                "body": self.request_body(PROMPT_PLACEHOLDER)}

    @property
    def api_surface_sha(self) -> str:
        return canonical_sha256(self.surface())

    @property
    def condition_profile(self) -> str:
        params = ",".join(f"{k}={v if isinstance(v, (int, float, str)) else canonical_json(v)}"
                          for k, v in sorted(self.explicitly_set.items()) if k != "model")
        return f"{self.provider}:{params}" if params else self.provider

    def config(self) -> dict:
        """The subject configuration for the run record (never a secret)."""
        return {
            "kind": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "max_tokens": self.max_tokens,
            "timeout_s": self.timeout_s,
            "retry": asdict(self.retry),
            "retry_seed": self.retry_seed,
            "key_env": self.key_env,
            "key_present": bool(self._key),
            "public_headers": self.public_headers(),
        }

    def runtime(self) -> dict:
        return {"httpx_version": httpx.__version__}

    # -- calls -----------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def connect(self, max_connections: int = 8) -> AsyncIterator["HttpSubject"]:
        """Keep ``max_connections`` kept-alive connections open for many calls.

        One single-connection client per connection, lent to one call at a
        time, rather than one client whose pool holds them all: httpcore's
        pool rescans every connection for each connection on every request
        and release (quadratic in the pool size), which at 64 connections
        costs more than the calls themselves (bench/runner_bench.py part c:
        a bare ``httpx`` loop manages 150 calls/s at 64 connections, 970 at
        8).  The clients share one TLS context, so opening them is cheap.
        """
        tls = httpx.create_ssl_context()
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with contextlib.AsyncExitStack() as stack:
            self._clients = [await stack.enter_async_context(httpx.AsyncClient(limits=limits, verify=tls))
                             for _ in range(max(1, max_connections))]
            self._client = self._clients[0]
            try:
                yield self
            finally:
                self._client = None
                self._clients = []

    def _scrub(self, text: str) -> str:
        if self._key and self._key in text:
            text = text.replace(self._key, "[redacted]")
        return text

    def _timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s))

    async def acall(self, prompt: str, key: str = "", before_send: Optional[BeforeSend] = None) -> CallResult:
        """One fresh call with retries; returns a result (``failure`` set when unanswered) or raises SubjectError.

        ``before_send(attempt)`` is awaited before each attempt's request
        leaves (1-based); an exception from it ends the call before sending.
        """
        if self._client is None:
            async with httpx.AsyncClient() as client:
                return await self._call_with(client, prompt, key, before_send)
        if not self._clients:             # more calls at once than connections: they share the first client
            return await self._call_with(self._client, prompt, key, before_send)
        client = self._clients.pop(0)     # the longest idle one: calls take connections in turn
        try:
            return await self._call_with(client, prompt, key, before_send)
        finally:
            if self._client is not None:  # still connected: lend it again
                self._clients.append(client)

    async def _wait(self, seconds: float) -> None:
        waited = self._sleep(seconds)
        if inspect.isawaitable(waited):
            await waited

    async def _call_with(self, client: httpx.AsyncClient, prompt: str, key: str,
                         before_send: Optional[BeforeSend] = None) -> CallResult:
        body = self.request_body(prompt)
        headers = {"content-type": "application/json", **self.public_headers(), **self.secret_headers()}
        url = self.base_url + self.chat_path
        stream = Stream(seed_from_text(f"{self.retry_seed}:{key}"))
        started_at, t0 = utc_now_millis(), time.monotonic()
        attempts = 0
        unknown = 0
        failures: list[str] = []
        while True:
            attempts += 1
            if before_send is not None:
                await before_send(attempts)
            try:
                fields = await self._attempt(client, url, body, headers)
            except SubjectError as exc:
                # the provider answered with an error: this attempt is not billed, earlier unknown ones may be
                exc.attempts, exc.unknown_attempts = attempts, unknown
                raise
            except _Retry as failure:
                failures.append(failure.detail)
                unknown += failure.unknown
                waited_too_long = (failure.retry_after is not None
                                   and failure.retry_after > self.retry.max_retry_after_s)
                if attempts >= self.retry.max_attempts or waited_too_long:
                    why = (f"{failure.detail}; retry-after {failure.retry_after:g}s exceeds the limit"
                           if waited_too_long else f"still failing after {attempts} attempts: {failure.detail}")
                    return self._result(None, started_at, t0, attempts, answered=False, failure=failure.failure,
                                        detail=self._scrub(why), retry_causes=tuple(failures),
                                        unknown_attempts=unknown)
                await self._wait(self.retry.delay(attempts, failure.retry_after, stream))
                continue
            return self._result(fields, started_at, t0, attempts, retry_causes=tuple(failures),
                                unknown_attempts=unknown)

    def call(self, prompt: str, key: str = "", before_send: Optional[BeforeSend] = None) -> CallResult:
        """Synchronous convenience for one call outside an event loop."""
        return asyncio.run(self.acall(prompt, key, before_send))

    async def _attempt(self, client: httpx.AsyncClient, url: str, body: dict, headers: dict) -> dict:
        try:
            response = await client.post(url, json=body, headers=headers, timeout=self._timeout())
        except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise _Retry(f"timeout ({type(exc).__name__})", "timeout") from None      # never sent
        except httpx.TimeoutException as exc:
            raise _Retry(f"timeout ({type(exc).__name__})", "timeout", unknown=True) from None
        except httpx.ConnectError as exc:
            raise _Retry(f"connection failed ({type(exc).__name__})", "connection") from None   # never sent
        except httpx.TransportError as exc:
            raise _Retry(f"connection failed ({type(exc).__name__})", "connection", unknown=True) from None
        status = response.status_code
        if status == 200:
            try:
                return self.parse(response.json())
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise _Retry(f"malformed response body ({type(exc).__name__})", "malformed",
                             unknown=True) from None
        error = _error_fields(response)
        label = f"HTTP {status}" + (f" {error.get('type')}" if error.get("type") else "")
        if status in (408, 425, 429) or status >= 500:
            raise _Retry(label, _status_failure(status), parse_retry_after(response.headers.get("retry-after")))
        if self.is_provider_block(status, error):
            return {"blocked": True, "answered": False,
                    "detail": self._scrub(f"{label}: provider block ({error.get('code') or error.get('type')})")}
        message = self._scrub(str(error.get("message") or response.text[:300]))
        raise SubjectError(f"{self.provider} answered {label} at {url}: {message}", status=status)

    def _result(self, fields: Optional[dict], started_at: str, t0: float, attempts: int, **extra) -> CallResult:
        values = {"text": None, "stop_reason": None, "returned_model_id": None, "input_tokens": None,
                  "output_tokens": None}
        values.update(fields or {})
        values.update(extra)
        return CallResult(
            provider=self.provider,
            latency_ms=int(round((time.monotonic() - t0) * 1000)),
            attempts=attempts,
            explicitly_set=self.explicitly_set,
            started_at=started_at,
            finished_at=utc_now_millis(),
            **values,
        )

    # -- models list (for the model watch) ------------------------------------
    def list_models(self) -> list[dict]:
        """Every model the provider lists (all pages), as the provider describes them."""
        headers = {**self.public_headers(), **self.secret_headers()}
        stream = Stream(seed_from_text(f"{self.retry_seed}:models"))
        out: list[dict] = []
        params: Optional[dict] = dict(self.models_query)
        with httpx.Client(timeout=self._timeout()) as client:
            while params is not None:
                payload = self._get_json(client, self.base_url + self.models_path, params, headers, stream)
                page, params = self.parse_models(payload)
                out.extend(page)
        return out

    def _get_json(self, client: httpx.Client, url: str, params: dict, headers: dict, stream: Stream) -> Any:
        last = ""
        for attempt in range(1, self.retry.max_attempts + 1):
            retry_after = None
            try:
                response = client.get(url, params=params, headers=headers)
            except httpx.TransportError as exc:
                last = f"connection failed ({type(exc).__name__})"
            else:
                if response.status_code == 200:
                    try:
                        return response.json()
                    except ValueError:
                        last = "malformed models list"
                elif response.status_code in (408, 425, 429) or response.status_code >= 500:
                    last = f"HTTP {response.status_code}"
                    retry_after = parse_retry_after(response.headers.get("retry-after"))
                else:
                    message = self._scrub(str(_error_fields(response).get("message") or response.text[:300]))
                    raise SubjectError(f"{self.provider} models list answered HTTP {response.status_code}: {message}",
                                       status=response.status_code)
            if attempt < self.retry.max_attempts:
                seconds = self.retry.delay(attempt, retry_after, stream)
                if self._sleep is asyncio.sleep:
                    time.sleep(seconds)
                else:
                    waited = self._sleep(seconds)
                    if inspect.isawaitable(waited):
                        asyncio.run(waited)
        raise SubjectError(f"{self.provider} models list at {url} still failing: {last} "
                           f"after {self.retry.max_attempts} attempts")
