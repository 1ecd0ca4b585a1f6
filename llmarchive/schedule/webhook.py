"""The owner's one webhook: where it is set, whether it can be posted to, and what one POST came to.

Every page — a failed check, a failed run, a failed schedule tick, the
dead-man, the bridge alarm — goes to one URL, ``LLMARCHIVE_WEBHOOK_URL``,
read from the environment when it is needed (never a configuration value a
UI could show: it may carry a token).  Pages are not posted from here by
their producers: they are recorded in the outbox first and posted by its one
sender (:mod:`llmarchive.schedule.outbox`); this module is the wire.

A POST comes to one of five outcomes, because each asks for something
different of the sender (:func:`post`):

* ``sent`` — a 2xx: the page is delivered and never posted again;
* ``refused`` — the receiver answered, but not with a 2xx (a 500, a 404): it
  did not take the page; it is owed, and the webhook is backed off;
* ``unreachable`` — nothing reached the receiver (connection refused, no
  route, a connect timeout): owed, backed off;
* ``uncertain`` — the request left and no answer came back (a read timeout
  after the body was sent, a connection dropped mid-answer): the receiver
  may have it.  It is posted again later with the same key, so a receiver
  can drop the repeat;
* ``unusable`` — the setting is not a URL one can POST to: nothing is tried
  until a person corrects it (said in one line that never repeats the URL).
"""
from dataclasses import dataclass
from typing import Mapping, Optional
from urllib.parse import urlsplit

from measure.errors import ArchiveError

WEBHOOK_ENV = "LLMARCHIVE_WEBHOOK_URL"
"""The owner's one webhook: the model watch, the lease and Dagster's alert sensors all page it."""
OLDER_WEBHOOK_ENV = ("LLMARCHIVE_WATCH_WEBHOOK",)
"""Names the watch's webhook had before it became the one webhook, still read so that an owner who set one
of them is not left unpaged by an upgrade."""

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 10.0


def post_limit_s() -> float:
    """The longest one POST may take: connecting, then waiting for the answer (what a sender must have left)."""
    return CONNECT_TIMEOUT_S + READ_TIMEOUT_S

UNUSABLE = ("the webhook setting ({variable}) is not a usable http(s) URL: nothing is posted until it is "
            "corrected (pages are kept and sent then)")


class WebhookError(ArchiveError, ValueError):
    """A webhook setting that cannot be a URL to POST to (it is never repeated: it may carry a token)."""


def webhook_from(environ: Mapping[str, str]) -> Optional[str]:
    """The webhook ``environ`` names (:data:`WEBHOOK_ENV`, else an older name of it), or None."""
    for name in (WEBHOOK_ENV, *OLDER_WEBHOOK_ENV):
        if environ.get(name):
            return environ[name]
    return None


def url_problem(url: str, variable: str = WEBHOOK_ENV) -> Optional[str]:
    """Why ``url`` cannot be posted to, in one line that does not repeat it; None when it can."""
    import httpx    # here, not above: only a caller with a webhook pays for loading httpx

    try:
        parts = urlsplit(url)
        parts.port                  # noqa: B018 (a port that is not a number raises here)
        httpx.URL(url)              # the parser that will send it
        usable = parts.scheme in ("http", "https") and bool(parts.hostname) and url.isprintable() and " " not in url
    except (ValueError, httpx.InvalidURL):
        usable = False
    return None if usable else UNUSABLE.format(variable=variable)


def check_url(url: str, variable: str = WEBHOOK_ENV) -> str:
    """``url`` when it can be posted to; else :class:`WebhookError` in one line (the URL is not repeated)."""
    problem = url_problem(url, variable)
    if problem is not None:
        raise WebhookError(problem)
    return url


@dataclass(frozen=True)
class Outcome:
    """What one POST came to (the module docstring's five kinds) and its one line."""

    kind: str            # sent | refused | unreachable | uncertain | unusable
    line: str

    @property
    def sent(self) -> bool:
        return self.kind == "sent"

    @property
    def endpoint_down(self) -> bool:
        """The receiver is not taking pages now: the sender stops and backs off, rather than try the rest."""
        return self.kind in ("refused", "unreachable", "unusable")


def post(url: str, payload: Mapping, key: Optional[str] = None, timeout_s: Optional[float] = None) -> Outcome:
    """POST ``payload`` as JSON to ``url`` once; never raises.

    ``key`` goes out as the ``Idempotency-Key`` header (it is also in the
    payload), so a receiver that saw the page before can drop it.
    """
    import httpx

    problem = url_problem(url)
    if problem is not None:
        return Outcome("unusable", problem)
    headers = {"Idempotency-Key": key} if key else {}
    read = READ_TIMEOUT_S if timeout_s is None else timeout_s
    timeout = httpx.Timeout(read, connect=min(CONNECT_TIMEOUT_S, read))
    try:
        response = httpx.post(url, json=dict(payload), headers=headers, timeout=timeout)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.ProxyError) as exc:
        return Outcome("unreachable", f"failed: {type(exc).__name__}")
    except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
        return Outcome("uncertain", f"no answer: {type(exc).__name__} (the receiver may have it)")
    except (httpx.InvalidURL, httpx.UnsupportedProtocol):
        return Outcome("unusable", UNUSABLE.format(variable=WEBHOOK_ENV))
    except httpx.HTTPError as exc:
        return Outcome("unreachable", f"failed: {type(exc).__name__}")
    if 200 <= response.status_code < 300:
        return Outcome("sent", f"sent (HTTP {response.status_code})")
    return Outcome("refused", f"failed: HTTP {response.status_code}")
