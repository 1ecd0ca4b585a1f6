"""Datasette plugin: the archive is served read-only, and bad requests get clean 4xx answers.

Loaded with ``--plugins-dir`` by ``llmarchive serve`` / ``make serve`` and by
the tests, so both run the same server.

* Any request that is not ``GET``, ``HEAD`` or ``OPTIONS`` is refused with
  ``405`` before Datasette sees it.  The database is already opened
  immutable and no canned query writes, so this is a second, explicit
  wall: without it Datasette 0.65.5 answers a ``POST`` to a table with a
  500 (an ``AssertionError``), which reads like a server fault.
* Datasette 0.65.5 raises some client errors (``_sort`` on an unknown
  column, for one) as ``DatasetteError`` with status 500; they are
  re-labelled 400 before the default handler renders them.
* The default exception handler prints every handled error — 404s and
  400s included — with ``rich``'s full dump of local variables when
  ``rich`` is importable (it is: Dagster depends on it).  That is switched
  off here; real server errors still print their ordinary traceback.
"""
import json

import datasette.handle_exception as _default_handler
from datasette import hookimpl
from datasette.views.base import DatasetteError

_default_handler.rich = None

READ_METHODS = ("GET", "HEAD", "OPTIONS")


@hookimpl
def asgi_wrapper(datasette):
    def wrap(app):
        async def read_only(scope, receive, send):
            if scope.get("type") == "http" and scope.get("method") not in READ_METHODS:
                body = json.dumps({
                    "ok": False, "status": 405, "title": "Read-only",
                    "error": "This archive is read-only: only GET, HEAD and OPTIONS requests are answered.",
                }).encode("utf-8")
                await send({"type": "http.response.start", "status": 405,
                            "headers": [(b"content-type", b"application/json; charset=utf-8"),
                                        (b"allow", ", ".join(READ_METHODS).encode("ascii")),
                                        (b"content-length", str(len(body)).encode("ascii"))]})
                await send({"type": "http.response.body", "body": body})
                return
            await app(scope, receive, send)

        return read_only

    return wrap


@hookimpl
def handle_exception(datasette, request, exception):
    if isinstance(exception, DatasetteError) and exception.status == 500:
        exception.status = 400
    return None
