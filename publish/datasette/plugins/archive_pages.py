"""Datasette plugin: the archive's pages show the data first and say what to ask.

Loaded with ``--plugins-dir`` beside the templates of ``--template-dir``
(``publish/datasette/templates``); ``llmarchive serve``, ``make serve`` and
the tests run the same server.

* **Compact cells** (``render_cell``): a JSON cell longer than
  :data:`JSON_CHARS` or a text longer than :data:`TEXT_CHARS` is shown on
  one line, cut at :data:`SHORT_CHARS` characters, and opens on a click to
  the whole value (JSON indented); a SHA-256 shows its first
  :data:`HASH_CHARS` characters the same way.  Before, a measurement row was about
  465 px tall from its JSON cells.  Only the HTML pages change: the CSV and
  JSON of every table and query are Datasette's own, byte for byte.  The
  ``reading`` column is always shown whole: it is the sentence to read first.
* **Parameter choices** (``extra_template_vars``): a canned query whose
  metadata has a ``choices_sql`` lists, above its form, the parameter values
  this archive really holds (each a link that fills the form), so nobody
  has to guess a protocol id or a model family; the template explains an
  empty answer with the query's ``empty_answer``.
* **Start here**: the index and database pages link the ``start_here``
  canned query.
"""
import json
import re
import urllib.parse

from datasette import hookimpl
from datasette.utils import tilde_decode
from markupsafe import Markup

JSON_CHARS = 40
TEXT_CHARS = 160
SHORT_CHARS = 72
HASH_CHARS = 12
WHOLE_COLUMNS = frozenset({"reading"})
_SHA256 = re.compile(r"[0-9a-f]{64}")
START_HERE = "start_here"


def compact(value: object) -> tuple[str, str, str] | None:
    """``(short, whole, kind)`` for a value too long for one line of a table, else None."""
    if not isinstance(value, str):
        return None
    stripped = value.lstrip()
    if stripped[:1] in ("{", "[") and len(value) > JSON_CHARS:
        try:
            parsed = json.loads(value)         # one JSON document: a table cell (the plugin runs in Datasette)
        except ValueError:
            parsed = None
        if isinstance(parsed, (dict, list)):
            one_line = json.dumps(parsed, ensure_ascii=False, separators=(", ", ": "))
            size = f"{len(parsed)} key{'s' if len(parsed) != 1 else ''}" if isinstance(parsed, dict) \
                else f"{len(parsed)} item{'s' if len(parsed) != 1 else ''}"
            short = one_line if len(one_line) <= SHORT_CHARS else one_line[:SHORT_CHARS] + "…"
            return short, json.dumps(parsed, ensure_ascii=False, indent=1), f"JSON, {size}"
    if len(value) > TEXT_CHARS:
        return value[:SHORT_CHARS] + "…", value, f"{len(value):,} characters"
    if _SHA256.fullmatch(value):
        return value[:HASH_CHARS] + "…", value, "SHA-256"
    return None


@hookimpl
def render_cell(value, column, table, database, datasette):
    if column in WHOLE_COLUMNS:
        return None
    shown = compact(value)
    if shown is None:
        return None
    short, whole, kind = shown
    return Markup('<details class="archive-cell"><summary title="{kind}: click to see it whole">{short}</summary>'
                  '<pre>{whole}</pre></details>').format(kind=kind, short=short, whole=whole)


async def _choices(datasette, database: str, name: str, request) -> dict | None:
    query = await datasette.get_canned_query(database, name, request.actor if request else None)
    if not query or not query.get("choices_sql"):
        return None
    params = [p for p in query.get("params", [])]
    results = await datasette.get_database(database).execute(query["choices_sql"])
    rows = []
    for row in results.rows:
        values = dict(zip(results.columns, row))
        chosen = {p: values[p] for p in params if values.get(p) is not None}
        extra = [f"{k} {values[k]}" for k in results.columns if k not in params and values[k] is not None]
        label = " · ".join(str(chosen[p]) for p in params if p in chosen)
        rows.append({"href": "?" + urllib.parse.urlencode(chosen), "label": label,
                     "note": ", ".join(extra)})
    return {"params": params, "rows": rows, "intro": query.get("choices_intro", "")}


async def _start_here(datasette, request) -> dict | None:
    for name in datasette.databases:
        queries = await datasette.get_canned_queries(name, request.actor if request else None)
        if START_HERE in queries:
            query = queries[START_HERE]
            return {"href": datasette.urls.query(name, START_HERE), "title": query.get("title") or START_HERE,
                    "description": query.get("description", "")}
    return None


@hookimpl
def extra_template_vars(template, database, table, columns, view_name, request, datasette):
    async def inner():
        found = {}
        if template in ("index.html", "database.html") or template.startswith("database-"):
            found["archive_start_here"] = await _start_here(datasette, request)
        elif template.startswith("query") and request is not None and database and "table" in request.url_vars:
            found["archive_choices"] = await _choices(datasette, database,
                                                      tilde_decode(request.url_vars["table"]), request)
        return found

    return inner


