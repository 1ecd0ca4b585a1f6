"""The public database as `llmarchive serve` serves it, over real HTTP on 127.0.0.1.

Issue 24 §4: one request is bounded — the hostile queries (a 300 MB blob, a
``printf`` that writes half a billion characters, a string doubled 29 times,
1,000 rows of 60 KB, quadratic ``ltrim``/``instr``, ...) are refused with a
clean 400 naming the limit, a normal query answers afterwards, and the
server's memory stays bounded; no answer shows a path of this machine.

Issue 25: a table page opens on its rows (column descriptions folded, long
cells on one line), the CSV and JSON are Datasette's own, each canned query
lists the parameter values this archive holds and explains an empty
answer, the index page points at ``start_here``, and comparison points of a
simulated reader are described as known answers.  One browser check
measures the measurements page at 1280 px.
"""
import csv
import html
import importlib.util
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
import urllib.parse
from pathlib import Path

import httpx
import pytest

from publish import publish_all
from publish.datasette import meta as datasette_meta
from publish.words import numbers
from tests import publish_helpers as ph
from tests.ports import free_port, stop, wait_for_http

ROOT = Path(__file__).resolve().parent.parent
BUILD = "2026-12-03T00:00:00Z"
SIMULATED = "simulated-reader-invariant"
CHROMIUM = "/usr/bin/chromium"
MEMORY_BOUND_MB = 400   # the server's peak resident memory after every hostile query (1,215 MB before the limits)

# (the SQL, words the refusal must contain)
HOSTILE = [
    ("select hex(randomblob(150000000))", "string or blob too big"),
    ("select length(zeroblob(1000000000))", "string or blob too big"),
    ("select length(printf('%.*c', 500000000, 'x'))", "width or precision of 500,000,000"),
    ("select length(printf('%.500000000c', 'x'))", "width or precision of 500,000,000"),
    ("with recursive c(x, s) as (select 1, 'x' union all select x + 1, s || s from c where x < 29) "
     "select length(s) from c order by x desc limit 1", "string or blob too big"),
    ("select length(replace(hex(zeroblob(10000000)), '0', '0000000000'))", "string or blob too big"),
    ("select length(group_concat(hex(randomblob(30000)))) from (with recursive c(x) as (select 1 union all "
     "select x + 1 from c where x < 300) select x from c)", "string or blob too big"),
    ("with recursive c(x) as (select 1 union all select x + 1 from c where x < 1000) select "
     + ", ".join(["randomblob(15000)"] * 5) + " from c", "the most one request may return"),
    ("select ltrim(printf('%.*c', 16000, 'a'), printf('%.*c', 16000, 'b') || 'a')", "more work than one step"),
    ("select instr(printf('%.*c', 16000, 'a'), printf('%.*c', 8000, 'a') || 'b')", "more work than one step"),
    ("select count(*) from measurements where flags like '%' || printf('%.*c', 200, 'a') || '%'",
     "pattern too complex"),
    ("select * from measurements a, measurements b, measurements c", "too many columns"),
    ("select " + "1 + " * 3000 + "1", "the SQL is longer than"),
    ("select fts3_tokenizer('simple')", "not available on this server"),
]


def _plugin(name: str):
    spec = importlib.util.spec_from_file_location(f"plugin_{name}", datasette_meta.PLUGINS_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def served(publish_template, tmp_path_factory):
    """The populated test archive plus a simulated reader's comparison point, served by `llmarchive serve`."""
    paths = ph.fresh_archive(publish_template, tmp_path_factory.mktemp("served") / "home")
    out = ph.populate(paths)
    point = dict(out["measurements"][0])
    point.update({"run_id": "cp-sim", "subject_model_id": SIMULATED, "returned_model_id": SIMULATED,
                  "model_family": "simulated", "run_date": "2026-11-11"})
    ph.add_record(paths, "comparison_point", date="2026-11-12", protocol_id="risky_choice_framing__wording__v0",
                  model_id=SIMULATED, submitted_by="llmarchive demo", measurement=point, source="known_answer")
    publish_all(paths, build_time=BUILD)
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "llmarchive", "--home", str(paths.home), "serve",
                                "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(base + "/-/versions.json", process)
        yield base, paths, process
    finally:
        stop(process)


def _sql(base: str, sql: str, **extra) -> httpx.Response:
    query = urllib.parse.urlencode({"sql": sql, **extra})
    return httpx.get(f"{base}/archive.json?{query}", timeout=120)


def _peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM line")


# --------------------------------------------------------------------------- issue 24 §4

def test_hostile_queries_are_refused_with_a_clean_400_and_a_normal_query_still_answers(served):
    base, paths, process = served
    wrong = []
    for sql, words in HOSTILE:
        response = _sql(base, sql)
        body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
        if response.status_code != 400 or body.get("ok") is not False or words not in (body.get("error") or ""):
            wrong.append((sql[:60], response.status_code, (body.get("error") or response.text)[:200]))
    assert wrong == []
    normal = _sql(base, "select count(*) as n from measurements", _shape="objects")
    assert normal.status_code == 200 and normal.json()["rows"] == [{"n": 13}]
    assert _peak_memory_mb(process.pid) < MEMORY_BOUND_MB


def test_no_answer_shows_a_path_of_this_machine(served):
    base, paths, _ = served
    private = {str(paths.home), str(paths.home.resolve()), str(ROOT), os.path.expanduser("~") + "/"}
    urls = ["/-/databases.json", "/-/databases", "/-/metadata.json", "/-/settings.json", "/-/plugins.json",
            "/-/versions.json", "/-/threads.json", "/archive.json", "/archive", "/", "/archive/measurements",
            "/site/no-such-file", "/archive/no_such_table", "/_internal.json?sql=select+path+from+databases"]
    for sql in ("select * from pragma_database_list()", "select * from pragma_database_list",
                "select file as f from main.pragma_database_list", "select * from sqlite_master",
                "select * from sqlite_temp_master", "select * from no_such_table",
                "attach database 'x.db' as x", "select load_extension('/no/such/lib')"):
        urls.append("/archive.json?" + urllib.parse.urlencode({"sql": sql}))
    for url in urls:
        response = httpx.get(base + url, timeout=30)
        assert response.status_code < 500, (url, response.status_code)
        assert not [p for p in private if p in response.text], url
    databases = httpx.get(base + "/-/databases.json", timeout=30).json()
    assert [d["path"] for d in databases] == ["public/archive.db"]
    listed = _sql(base, "select seq, name, file from pragma_database_list()", _shape="objects").json()["rows"]
    assert {"seq": 0, "name": "main", "file": None} in listed and all(r["file"] is None for r in listed)


# --------------------------------------------------------------------------- issue 25: the pages

def test_a_table_page_opens_on_its_rows_with_long_cells_folded(served):
    base, _, _ = served
    page = httpx.get(base + "/archive/measurements", timeout=30).text
    assert 'class="column-descriptions"' not in page
    folded = page.index('<details class="archive-columns">')
    assert folded < page.index('<table class="rows-and-columns">')
    assert re.search(r"<summary>What the \d+ columns mean</summary>", page)
    cells = re.findall(r'<td class="col-(\w+) type-\w+">(.*?)</td>', page, re.S)
    by_column: dict[str, list[str]] = {}
    for column, cell in cells:
        by_column.setdefault(column, []).append(cell)
    for column in ("gates", "outcomes", "flag_sentences", "panel_sha256"):
        folded_cells = ['<details class="archive-cell">' in c for c in by_column[column]]
        assert any(folded_cells), column
        assert all(f or len(html.unescape(c)) <= 40 for f, c in zip(folded_cells, by_column[column])), column
    assert by_column["reading"] and not any("<details" in c for c in by_column["reading"])
    summaries = re.findall(r'<details class="archive-cell"><summary[^>]*>(.*?)</summary>', page, re.S)
    assert summaries and max(len(html.unescape(s)) for s in summaries) <= 80


def test_csv_and_json_are_datasettes_own(served):
    """The same bytes as Datasette without the archive's templates and plugin directory."""
    import asyncio

    import yaml
    from datasette.app import Datasette

    base, paths, _ = served
    metadata = yaml.safe_load(datasette_meta.REPO_METADATA.read_text(encoding="utf-8"))
    plain = Datasette(immutables=[str(paths.public / "archive.db")], metadata=metadata,
                      settings=dict(datasette_meta.SETTINGS))
    for path in ("/archive/measurements.csv?_size=max", "/archive/comparison_points.csv?_size=max",
                 "/archive/open_lane_trials.json?_shape=array&_size=max"):
        served_bytes = httpx.get(base + path, timeout=60).content
        own = asyncio.run(plain.client.get(path)).content
        assert served_bytes == own, path
    rows = json.loads(httpx.get(base + "/archive/measurements.json?_shape=array&_size=max", timeout=60).text)
    con = sqlite3.connect(paths.public / "archive.db")
    con.row_factory = sqlite3.Row
    stored = {r["run_id"]: dict(r) for r in con.execute("select * from measurements")}
    assert {r["run_id"]: r for r in rows} == stored
    table = list(csv.reader(io.StringIO(httpx.get(base + "/archive/measurements.csv?_size=max", timeout=60).text)))
    assert len(table) - 1 == len(stored)


def test_the_parameter_query_lists_the_values_this_archive_holds_and_explains_an_empty_answer(served):
    base, paths, _ = served
    page = httpx.get(base + "/archive/stability_over_time", timeout=30).text
    links = re.findall(r'<li><a href="\?([^"]+)">', page.split('class="archive-hint archive-choices"')[1])
    offered = {tuple(dict(urllib.parse.parse_qsl(q.replace("&amp;", "&"))).values()) for q in links}
    con = sqlite3.connect(paths.public / "archive.db")
    held = set(con.execute("select distinct protocol_id, model_family, series from measurements"))
    assert offered == held
    empty = datasette_meta.CANNED_QUERIES["stability_over_time"]["empty_answer"]
    assert "No row." in page and empty.split(".")[0] in page
    first = links[0].replace("&amp;", "&")
    answer = httpx.get(f"{base}/archive/stability_over_time.json?_shape=objects&{first}", timeout=30).json()
    assert answer["ok"] and answer["rows"]
    filled = httpx.get(f"{base}/archive/stability_over_time?{first}", timeout=30).text
    assert "No row." not in filled


def test_every_canned_query_explains_an_empty_answer(served):
    base, _, _ = served
    for name, query in datasette_meta.CANNED_QUERIES.items():
        assert query.get("empty_answer"), name
    page = httpx.get(base + "/archive/what_changed", timeout=30).text   # every pair of the test archive is flat
    assert "No row. " + datasette_meta.CANNED_QUERIES["what_changed"]["empty_answer"].split(":")[0] in page
    page = httpx.get(base + "/archive/latest_scan", timeout=30).text
    assert "No row." not in page


def test_the_index_and_database_pages_start_a_newcomer_at_start_here(served):
    base, _, _ = served
    for path in ("/", "/archive"):
        page = httpx.get(base + path, timeout=30).text
        assert 'href="/archive/start_here"' in page, path
    rows = httpx.get(base + "/archive/start_here.json?_shape=objects", timeout=30).json()["rows"]
    kinds = {(r["what"], r["kind"]) for r in rows}
    assert ("measurements", "commercial / claude-sonnet") in kinds
    assert ("comparison points", numbers.KNOWN_ANSWER) in kinds
    assert all(r["look_next"] for r in rows)


def test_simulated_reader_points_are_described_as_known_answers(served):
    base, _, _ = served
    metadata = httpx.get(base + "/-/metadata.json", timeout=30).json()["databases"]["archive"]
    for text in (metadata["tables"]["comparison_points"]["description"],
                 metadata["queries"]["comparison_points_by_date"]["description"]):
        assert numbers.KNOWN_ANSWER in text and SIMULATED in text
    rows = httpx.get(base + "/archive/comparison_points_by_date.json?_shape=objects", timeout=30).json()["rows"]
    kinds = {r["model_id"]: r["point_kind"] for r in rows}
    assert kinds == {SIMULATED: numbers.KNOWN_ANSWER, "other-model-1": numbers.OUTSIDE_RUN}


@pytest.mark.slow
def test_the_measurements_page_opens_on_its_rows_in_a_browser(served):
    """At 1280 × 900 the first row starts on the first screen and no row is taller than a few lines."""
    from playwright.sync_api import sync_playwright

    base, _, _ = served
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(base + "/archive/measurements", wait_until="load")
            first_top, heights = page.evaluate("""() => {
                const rows = [...document.querySelectorAll('table.rows-and-columns tbody tr')];
                return [rows[0].getBoundingClientRect().top + window.scrollY,
                        rows.map(r => r.getBoundingClientRect().height)];
            }""")
            assert first_top < 900       # was 3,226 px: the column descriptions came first
            assert max(heights) < 150    # was 465 px: JSON cells in full
            page.click("details.archive-columns > summary")
            assert page.evaluate("document.querySelector('details.archive-columns').open")
            cell = page.locator("td.col-gates details.archive-cell").first
            cell.locator("summary").click()
            assert cell.locator("pre").is_visible()
        finally:
            browser.close()


# --------------------------------------------------------------------------- the limits, without a server

def test_the_value_cap_is_twice_the_widest_stored_row_above_a_floor(tmp_path):
    limits = _plugin("archive_limits")
    small, wide = tmp_path / "small.db", tmp_path / "wide.db"
    for path, width in ((small, 5_000), (wide, 100_000)):
        con = sqlite3.connect(path)
        con.execute("create table t (a text, b text)")
        con.execute("insert into t values (?, ?)", ("x" * width, "y" * 10))
        con.commit()
        con.close()
    assert limits.value_cap(sqlite3.connect(small), str(small)) == limits.VALUE_BYTES_FLOOR
    assert limits.value_cap(sqlite3.connect(wide), str(wide)) == 2 * 100_010

    class Archive:
        databases = {"wide": type("Db", (), {"is_memory": False, "path": str(wide)})()}

    con = sqlite3.connect(f"file:{wide}?immutable=1", uri=True)
    limits.prepare_connection(con, "wide", Archive())
    assert len(con.execute("select a from t order by b").fetchone()[0]) == 100_000
    with pytest.raises(sqlite3.DataError):
        con.execute("select randomblob(?)", (2 * 100_010 + 1,)).fetchone()


def test_the_guarded_functions_answer_as_sqlite_does():
    limits = _plugin("archive_limits")

    class NoDatabases:
        databases: dict = {}

    guarded, plain = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    limits.prepare_connection(guarded, "x", NoDatabases())
    for sql in ("select printf('%d items, %5.2f%%, %s', 3, 2.345, 'abc')",
                "select format('%-8s|%08.3f|%x|%q|%,d', 'ab', 3.14159, 255, 'it''s', 1234567)",
                "select printf('%*d|%.*f|%.3c|%5%', 6, 42, 2, 1.23456, 'ab')", "select printf(NULL), printf()",
                "select printf('%.*c', 4294967295, 'x')", "select printf('%!.20g', 0.1)",
                "select instr('hello', 'll'), instr(x'0102', x'02'), instr(12345, 34), instr(NULL, 'a')",
                "select replace('aXbXc', 'X', '--'), replace(1.5, '.', ','), replace('a', '', 'b')",
                "select trim('xxaxx', 'x'), ltrim('  a '), rtrim('abc', 'c'), trim(12.50, '0'), trim(NULL, 'a')"):
        assert [tuple(r) for r in guarded.execute(sql)] == plain.execute(sql).fetchall(), sql


def test_a_row_of_guarded_calls_stops_at_the_time_limit():
    """SQLite asks the progress handler only at loop jumps: a row's expression is one stretch, so the guards
    themselves refuse once the statement's time is up."""
    limits = _plugin("archive_limits")

    class NoDatabases:
        databases: dict = {}

    con = sqlite3.connect(":memory:")
    limits.prepare_connection(con, "x", NoDatabases())
    terms = " + ".join(f"length(ltrim(substr(s, {i}), u))" for i in range(1, 101))    # about 10 ms each
    sql = (f"with x(s, u) as (select printf('%.*c', 16000, 'a') || random(), printf('%.*c', 120, 'b') || 'a') "
           f"select {terms} from x")
    with pytest.raises(sqlite3.OperationalError, match="took too long: the time limit is 25 ms"):
        with limits.sqlite_timelimit(con, 25):
            con.execute(sql).fetchall()
    assert con.execute("select 1").fetchone()[0] == 1


def test_the_limits_leave_room_for_the_archive_itself():
    from publish.data import database

    limits = _plugin("archive_limits")
    widest = max(len(t.columns) for t in database.TABLES)
    assert limits.COLUMNS >= 2 * widest            # a select * of two joined tables still works
    longest_sql = max(len(q["sql"]) for q in datasette_meta.CANNED_QUERIES.values())
    assert limits.SQL_BYTES >= 3 * longest_sql
    from datasette.utils import detect_fts_sql

    for name in [t.name for t in database.TABLES] + [v.name for v in database.VIEWS]:
        patterns = [v for k, v in detect_fts_sql(name)[1].items() if k.startswith("fts_")]
        assert max(len(p.encode()) for p in patterns) <= limits.LIKE_PATTERN_BYTES, name
    import datasette.database

    assert datasette.database.sqlite_timelimit is limits.sqlite_timelimit   # the plugin's time limit is in place
