"""``metadata.yml``: Datasette's metadata, generated from the schema so it cannot drift.

:func:`build_metadata` derives every table, view and column description
from :mod:`publish.data.database` (whose ``measurements`` columns are
``measure.schema.MEASUREMENT_FIELDS`` with the schema's descriptions) and
adds the canned queries.  The committed ``metadata.yml`` at the repository
root must equal :func:`render` — a test compares them — and
``llmarchive publish --metadata metadata.yml`` rewrites it.

The serving settings live here too (:data:`SETTINGS`), so ``make serve``,
``llmarchive serve`` and the tests run Datasette the same way: read-only
(immutable), with an explicit SQL time limit and row cap, and without
suggested facets: each suggestion is one more query per table page, and
their list pushed the first row further down.  Every server loads the
plugins of :data:`PLUGINS_DIR` (read-only; one request bounded in time and
memory, ``archive_limits.py``; compact cells and parameter choices,
``archive_pages.py``) and the templates of :data:`TEMPLATES_DIR` (a table
page opens on its rows; a canned query lists the values it can be asked
and explains an empty answer; the index starts at ``start_here``).

Whole tables download as CSV: ``allow_csv_stream`` is on, so
``<table>.csv?_stream=on`` walks the table page by page (each page one query
under the SQL time limit) instead of stopping at the row cap, and each table
page links that download ("About: whole table as CSV").  ``max_csv_mb`` is
0 (no size cut) because a cut download ends in an error line rather than
the full table, and the database is immutable, so a download is bounded by
what the archive holds.
"""
from dataclasses import dataclass
from pathlib import Path

import yaml

from llmarchive.archive import REPO_ROOT
from panels.readers import KNOWN_ANSWER_READERS, simulated_model_id
from publish.data import database
from publish.words import numbers, wording

DATABASE, DB_FILE = database.DATABASE, database.DB_FILE    # named where the database is built, re-exported
SETTINGS = {
    "sql_time_limit_ms": 1000,
    "max_returned_rows": 1000,
    "facet_time_limit_ms": 200,
    "suggest_facets": False,
    "allow_csv_stream": True,
    "max_csv_mb": 0,
    "default_page_size": 100,
}
PLUGINS_DIR = Path(__file__).resolve().parent / "plugins"
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
REPO_METADATA = REPO_ROOT / "metadata.yml"

SIMULATED_READER_IDS = tuple(simulated_model_id(name) for name in KNOWN_ANSWER_READERS)
KNOWN_ANSWER_WORDS = (
    f"A point whose model_id is one of the archive's simulated readers ({', '.join(SIMULATED_READER_IDS)}) is "
    f"marked '{numbers.KNOWN_ANSWER}' in point_kind: a deterministic reader whose answer is known before the "
    "run, filed through the same outside route to show what the instrument sees when the answer is known; "
    "it is not a model, and its expected column says what it must come back with."
)

# Each canned query: Datasette's keys (title, description, sql, params) and two of the archive's own, read by
# publish/datasette/plugins/archive_pages.py and publish/datasette/templates/query.html: choices_sql lists the
# parameter values this archive really holds (each shown as a link that fills the form) and empty_answer says
# what an answer with no row means.  start_here comes first: the index and database pages link it.
CANNED_QUERIES = {
    "start_here": {
        "title": "Start here: what this archive holds",
        "description": (
            "One row per kind of record: how many there are, their first and latest dates, and which query "
            "to open next. A measurement's reading column says first, in words, whether its numbers can be "
            "read at all; only measurements on the curve are part of a curve."
        ),
        "sql": (
            "select what, kind, count, on_the_curve, first_date, latest_date, look_next from (\n"
            "select 1 as step, 'measurements' as what, series || ' / ' || coalesce(model_family, '-') as kind, "
            "count(*) as count, sum(on_curve) as on_the_curve, min(run_date) as first_date, "
            "max(run_date) as latest_date, 'latest_scan, then stability_over_time' as look_next\n"
            "from measurements group by series, model_family\n"
            "union all\n"
            "select 2, 'comparison points', point_kind, count(*), null, min(run_date), max(run_date), "
            "'comparison_points_by_date'\nfrom comparison_points group by point_kind\n"
            "union all\n"
            "select 3, 'consecutive pairs judged by the change rule', label, count(*), null, min(to_run_date), "
            "max(to_run_date), 'what_changed'\nfrom changes group by label\n"
            "union all\n"
            "select 4, 'coverage gaps', series || ' / ' || cause, count(*), null, min(period), max(period), "
            "'coverage_gaps_by_cause'\nfrom coverage where status = 'gap' group by series, cause\n"
            "union all\n"
            "select 5, 'instrument checks', kind, count(*), null, min(date), max(date), 'the instrument table'\n"
            "from instrument group by kind\n"
            ")\norder by step, kind"
        ),
        "empty_answer": (
            "The archive has published nothing yet: no measurement, comparison point, coverage gap or "
            "instrument check. Run a measurement, then `llmarchive publish`."
        ),
    },
    "what_changed": {
        "title": "What changed, newest first",
        "description": (
            "Every change the frozen change rule called between two consecutive on-curve measurements of one "
            "curve (one protocol within one series and one model family), newest first. A change is called "
            "only when |delta_pct| >= bound_pct (random error) and |delta_pct| > cap_pct (systematic worst "
            "case); every other pair is flat and is listed in the changes table."
        ),
        "sql": (
            "select to_run_date, series, model_family, protocol_id, rewording_type, label, delta_pct, bound_pct, "
            "cap_pct, from_run_date, from_stability_pct, to_stability_pct, from_subject_model_id, "
            "to_subject_model_id, from_run_id, to_run_id\nfrom changes\nwhere label != 'flat'\n"
            "order by to_run_date desc, abs(delta_pct) desc, protocol_id"
        ),
        "empty_answer": (
            "The change rule has called no change: every pair of consecutive on-curve measurements of one curve "
            "is flat (the changes table lists them with their margins), or no curve has two on-curve "
            "measurements yet."
        ),
    },
    "stability_over_time": {
        "title": "Stability over time: one protocol, one model family, one series",
        "description": (
            "Every measurement of one protocol within one model family and one series, oldest first, with "
            "entropy beside stability. Rows with on_curve = 0 are shown with their flags but are not part of "
            "the curve. Parameters: protocol_id (for example risky_choice_framing__wording__v0), model_family, "
            "series (commercial or open_weights); the query's page lists the combinations this archive "
            "holds, each a link. A curve never crosses model families or mixes series."
        ),
        "sql": (
            "select run_date, series, model_family, subject_model_id, returned_model_id, reading, stability_pct, "
            "ci_low_pct, ci_high_pct, entropy_a, entropy_b, null_floor_pct, at_noise_floor, on_curve, flags, "
            "run_id\nfrom measurements\nwhere protocol_id = :protocol_id and model_family = :model_family "
            "and series = :series\norder by run_date, replicate_index"
        ),
        "params": ["protocol_id", "model_family", "series"],
        "choices_sql": (
            "select protocol_id, model_family, series, count(*) as measurements, sum(on_curve) as on_the_curve\n"
            "from measurements group by protocol_id, model_family, series\n"
            "order by series, model_family, protocol_id"
        ),
        "choices_intro": "The protocol, model family and series this archive holds measurements of (click one):",
        "empty_answer": (
            "No measurement of this protocol in this model family and series. An empty box matches nothing, "
            "and the three values must be one of the combinations listed above."
        ),
    },
    "latest_scan": {
        "title": "The latest scan",
        "description": (
            "The most recent measurement of every protocol, per series and model family, with its reading in "
            "words. A row that is off the curve says why in flags and flag_sentences."
        ),
        "sql": (
            "select m.series, m.model_family, m.protocol_id, m.rewording_type, m.lane, m.run_date, "
            "m.returned_model_id, m.reading, m.stability_pct, m.ci_low_pct, m.ci_high_pct, m.entropy_a, "
            "m.entropy_b, m.null_floor_pct, m.on_curve, m.flags, m.run_id\nfrom measurements m\n"
            "where m.run_date = (select max(x.run_date) from measurements x where x.protocol_id = m.protocol_id "
            "and x.series = m.series and x.model_family is m.model_family)\n"
            "order by m.series, m.model_family, m.protocol_id"
        ),
        "empty_answer": "The archive has no published measurement yet.",
    },
    "flagged_measurements": {
        "title": "Measurements off the main curve, with their reasons",
        "description": (
            "Every measurement that is not on the main curve, newest first. Nothing is deleted for failing a "
            "check: each one is published with its flags and, in flag_sentences, each reason as a sentence "
            "with its figures. A measurement of a protocol that is still a candidate is off the curve without "
            "a flag."
        ),
        "sql": (
            "select run_date, series, model_family, protocol_id, returned_model_id, reading, stability_pct, "
            "entropy_a, entropy_b, protocol_status, flags, flag_sentences, flag_reasons, run_id\nfrom measurements\n"
            "where on_curve = 0\norder by run_date desc, series, protocol_id"
        ),
        "empty_answer": "Every published measurement is on its curve: none was flagged.",
    },
    "open_vs_guard_twin": {
        "title": "Open protocol and its guard twin, side by side",
        "description": (
            "Each open-lane measurement next to its guard twin's measurement from the same month, series, "
            "model and replicate. If only the open number moves, the public wording may have been learned; "
            "if both move, the model changed."
        ),
        "sql": (
            "select o.run_date, o.series, o.model_family, o.returned_model_id, o.protocol_id as open_protocol_id, "
            "o.stability_pct as open_stability_pct, o.entropy_a as open_entropy_a, o.entropy_b as open_entropy_b, "
            "o.on_curve as open_on_curve, g.protocol_id as guard_protocol_id, g.run_date as guard_run_date, "
            "g.stability_pct as guard_stability_pct, g.entropy_a as guard_entropy_a, "
            "g.entropy_b as guard_entropy_b, g.on_curve as guard_on_curve\n"
            "from measurements o join measurements g on g.protocol_id = o.twin_id "
            "and g.model_family = o.model_family and g.series = o.series "
            "and g.run_date >= substr(o.run_date, 1, 7) || '-01' and g.run_date <= substr(o.run_date, 1, 7) || '-31' "
            "and g.subject_model_id = o.subject_model_id and g.replicate_index = o.replicate_index\n"
            "where o.lane = 'open'\norder by o.protocol_id, o.series, o.run_date"
        ),
        "empty_answer": (
            "No open-lane measurement has its guard twin measured in the same month, series, model and "
            "replicate yet (or no open protocol has a twin)."
        ),
    },
    "coverage_gaps_by_cause": {
        "title": "Coverage gaps by cause",
        "description": (
            "Scheduled jobs that did not run, counted by series and cause. Every gap carries exactly one "
            "cause from the closed list; the coverage bar on the site counts the commercial series only."
        ),
        "sql": (
            "select series, cause, count(*) as gaps, min(period) as first_period, max(period) as last_period\n"
            "from coverage\nwhere status = 'gap'\ngroup by series, cause\norder by series, gaps desc, cause"
        ),
        "empty_answer": "Every scheduled job ran: the coverage table has no gap.",
    },
    "comparison_points_by_date": {
        "title": "Comparison points (a separate context table)",
        "description": (
            "Runs on an open panel made outside the archive's schedule, recomputed with this project's "
            "estimator, each with its measurement date: outside parties' runs and the archive's simulated "
            "readers. Never on the main curve, never in an aggregate. " + KNOWN_ANSWER_WORDS + " "
            + wording.NO_ONE_MAY_CONCLUDE
        ),
        "sql": (
            "select run_date, point_kind, model_id, protocol_id, reading, expected, submitted_by, stability_pct, "
            "ci_low_pct, ci_high_pct, entropy_a, entropy_b, null_floor_pct, n, grammar_version, panel_sha256, "
            "flags\nfrom comparison_points\norder by run_date, protocol_id, model_id"
        ),
        "empty_answer": (
            "No comparison point has been filed: neither an outside party's run (`llmarchive comparison "
            "submit`) nor a simulated reader's."
        ),
    },
}


def full_csv_url(table: str) -> str:
    """The one-click download of a whole table: streamed CSV, every row, as a file.

    A table with a single-column primary key is walked in key order
    (``_sort=<key>``): Datasette 0.65.5 pages a stream by the table's
    default sort, and under ``sort_desc = run_date`` rows that share a date
    can come back in a different order from one page's query to the next,
    so a ten-year ``measurements`` download repeated some rows and skipped
    others (3,823 of 3,840 rows, measured with ``bench/publish_bench.py``).
    A compound key has no default sort here and is paged by the key itself.
    """
    pk = database.TABLE_BY_NAME[table].pk
    order = f"&_sort={pk}" if isinstance(pk, str) else ""
    return f"/{DATABASE}/{table}.csv?_stream=on&_size=max{order}&_dl=1"


def _description() -> str:
    data, prose, code = (wording.LICENCES[k] for k in ("data", "prose", "code"))
    return (
        f"{wording.ONE_SENTENCE} {wording.SCOPE} {wording.NOT_AN_EVALUATION} "
        f"Licences: data {data[0]}, prose {prose[0]}, code {code[0]}. "
        "This database is read-only; every table is regenerated from the archive's records by "
        "`llmarchive publish`."
    )


def build_metadata() -> dict:
    """The whole metadata document as a dict."""
    tables: dict = {}
    for table in database.TABLES:
        entry = {"description": table.description,
                 "columns": {c.name: c.description for c in table.columns}}
        if table.sort:
            entry["sort_desc"] = table.sort
        elif "run_date" in table.column_names:
            entry["sort_desc"] = "run_date"
        entry["about"] = "whole table as CSV"
        entry["about_url"] = full_csv_url(table.name)
        tables[table.name] = entry
    tables["comparison_points"]["description"] += " " + KNOWN_ANSWER_WORDS
    # The wording of the open protocols is published beside the database, not in it (publish.data.panels).
    tables["protocols"]["description"] += (" The open protocols' full wording is in the files "
                                           "panels/<protocol_id>.json beside this database (every scenario's four "
                                           "versions exactly as sent, with panel_sha256, protocol_sha256 and each "
                                           "prompt's prompt_sha256); `llmarchive panels verify FILE` checks one.")
    for view in database.VIEWS:
        measurement_columns = {c.name: c.description for c in database.TABLE_BY_NAME["measurements"].columns}
        tables[view.name] = {"description": view.description,
                             "columns": {c: measurement_columns[c] for c in view.columns}}
    data_licence = wording.LICENCES["data"]
    return {
        "title": wording.PROJECT,
        "description": _description(),
        "license": data_licence[0],
        "license_url": data_licence[1],
        "source": "The archive's own records, published by `llmarchive publish`",
        "about": "Measurement schema: measure/schema.py (MEASUREMENT_FIELDS)",
        "databases": {
            DATABASE: {
                "description": ("Measurements, outcomes, coverage, open-lane trials, protocols (headers only), "
                                "runs, comparison points, instrument checks and succession events. The open "
                                "panels in full are the files panels/<protocol_id>.json beside it."),
                "tables": tables,
                "queries": {name: dict(q) for name, q in CANNED_QUERIES.items()},
            }
        },
    }


HEADER = ("# Generated by publish/datasette/meta.py from measure/schema.py and publish/data/database.py.\n"
          "# Do not edit by hand: run `llmarchive publish --metadata metadata.yml` (a test compares them).\n")


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (the SQL) as literal blocks, so the file reads like the queries."""


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def render() -> str:
    """The YAML text of ``metadata.yml``."""
    return HEADER + yaml.dump(build_metadata(), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def write(path: Path) -> None:
    path.write_text(render(), encoding="utf-8")


@dataclass(frozen=True)
class ServeCommand:
    """The ``datasette serve`` arguments and the folder to run them in (the archive home)."""
    argv: list[str]
    cwd: Path


def serve_command(public: Path, metadata_path: Path = REPO_METADATA, host: str = "127.0.0.1", port: int = 8001,
                  static: bool = True) -> ServeCommand:
    """``datasette serve`` over ``public/archive.db``: immutable, time limit and row cap set explicitly.

    It runs in the folder that holds ``public/`` (the archive home) and names the database and the site by
    paths relative to it, so Datasette never learns where the archive lives on this machine:
    ``/-/databases.json`` shows ``public/archive.db`` (with an absolute path it showed the owner's home
    folder), and the plugin hides the one path SQLite itself reports (``pragma_database_list``).  A
    republished ``public/`` is found again by name, as before.
    """
    public = Path(public)
    argv = ["datasette", "serve", "-i", f"{public.name}/{DB_FILE}", "--metadata", str(metadata_path),
            "--plugins-dir", str(PLUGINS_DIR), "--template-dir", str(TEMPLATES_DIR), "--host", host,
            "--port", str(port)]
    for name, value in SETTINGS.items():
        argv += ["--setting", name, ("on" if value else "off") if isinstance(value, bool) else str(value)]
    if static:
        argv += ["--static", f"site:{public.name}"]
    return ServeCommand(argv, public.parent)
