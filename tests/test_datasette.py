"""The public database served read-only by Datasette 0.65.5, through its in-process client.

The server is configured exactly as ``make serve`` runs it: the database
opened immutable, ``metadata.yml`` from the repository root, the
archive's plugins and templates, and the explicit time limit and row cap of
``publish.datasette.meta.SETTINGS``.  The same server over real HTTP, started
by ``llmarchive serve``: tests/test_datasette_server.py.
"""
import asyncio
import csv
import io
import sqlite3
import urllib.parse

import pytest
import yaml

from publish import publish_all
from publish.data import database
from publish.datasette import meta as datasette_meta
from tests import publish_helpers as ph

BUILD = "2026-12-03T00:00:00Z"
PARAMS = {"stability_over_time": {"protocol_id": "risky_choice_framing__wording__v0",
                                  "model_family": "claude-sonnet", "series": "commercial"}}


@pytest.fixture(scope="module")
def db_path(publish_template, tmp_path_factory):
    paths = ph.fresh_archive(publish_template, tmp_path_factory.mktemp("ds") / "home")
    ph.populate(paths)
    publish_all(paths, build_time=BUILD)
    return paths.public / datasette_meta.DB_FILE


@pytest.fixture(scope="module")
def ds(db_path):
    from datasette.app import Datasette

    metadata = yaml.safe_load(datasette_meta.REPO_METADATA.read_text(encoding="utf-8"))
    instance = Datasette(immutables=[str(db_path)], metadata=metadata, settings=dict(datasette_meta.SETTINGS),
                         plugins_dir=str(datasette_meta.PLUGINS_DIR), template_dir=str(datasette_meta.TEMPLATES_DIR))
    return instance


def request(ds, method, path, **kwargs):
    return asyncio.run(ds.client.request(method, path, **kwargs))


def get(ds, path):
    return request(ds, "GET", path)


def test_metadata_yml_is_exactly_what_the_generator_produces():
    assert datasette_meta.REPO_METADATA.read_text(encoding="utf-8") == datasette_meta.render()


def test_every_table_view_and_column_of_the_database_is_described(db_path):
    metadata = yaml.safe_load(datasette_meta.REPO_METADATA.read_text(encoding="utf-8"))
    tables = metadata["databases"]["archive"]["tables"]
    con = sqlite3.connect(db_path)
    names = [r[0] for r in con.execute("select name from sqlite_master where type in ('table', 'view')")]
    assert sorted(names) == sorted(tables)
    for name in names:
        columns = [r[1] for r in con.execute(f'pragma table_info("{name}")')]
        assert tables[name]["description"]
        assert list(tables[name]["columns"]) == columns, name
        assert all(tables[name]["columns"][c] for c in columns)


def test_measurement_column_descriptions_come_from_the_schema():
    from measure.schema import MEASUREMENT_FIELD_NAMES
    from publish.words import PUBLISHED_DESCRIPTIONS
    from publish.words import READING_COLUMNS

    metadata = datasette_meta.build_metadata()
    columns = metadata["databases"]["archive"]["tables"]["measurements"]["columns"]
    assert list(columns) == ([name for name, _, _ in READING_COLUMNS] + list(MEASUREMENT_FIELD_NAMES)
                             + ["system_fingerprints", "min_detectable_change_pct"])
    # the schema's words, but for the one publication corrects (publish.words.fields)
    assert {n: columns[n] for n in MEASUREMENT_FIELD_NAMES} == \
        {n: PUBLISHED_DESCRIPTIONS[n] for n in MEASUREMENT_FIELD_NAMES}


def test_licences_and_the_comparison_sentence_are_in_the_metadata():
    from publish.words import wording

    metadata = datasette_meta.build_metadata()
    assert metadata["license"] == "CC-BY-4.0"
    for name in ("CC-BY-4.0", "CC-BY-SA-4.0", "AGPL-3.0"):
        assert name in metadata["description"]
    queries = metadata["databases"]["archive"]["queries"]
    assert set(queries) == {"start_here", "what_changed", "stability_over_time", "latest_scan", "flagged_measurements",
                            "open_vs_guard_twin", "coverage_gaps_by_cause", "comparison_points_by_date"}
    assert list(queries)[0] == "start_here"
    assert wording.NO_ONE_MAY_CONCLUDE in queries["comparison_points_by_date"]["description"]
    tables = metadata["databases"]["archive"]["tables"]
    assert not set(queries) & set(tables), "a canned query must not shadow a table"


def test_primary_keys_foreign_keys_and_indexes_exist(db_path):
    con = sqlite3.connect(db_path)
    pk = {r[1] for r in con.execute('pragma table_info("measurements")') if r[5]}
    assert pk == {"run_id"}
    fks = {(r[3], r[2]) for r in con.execute('pragma foreign_key_list("measurements")')}
    assert ("run_id", "runs") in fks and ("protocol_id", "protocols") in fks
    indexed = {tuple(c[2] for c in con.execute(f'pragma index_info("{r[1]}")'))
               for r in con.execute('pragma index_list("measurements")')}
    assert ("protocol_id", "model_family", "series", "run_date") in indexed
    assert ("on_curve",) in indexed


def test_every_table_and_view_answers_in_json_and_csv(ds, db_path):
    con = sqlite3.connect(db_path)
    for name in [t.name for t in database.TABLES] + [v.name for v in database.VIEWS]:
        columns = [r[1] for r in con.execute(f'pragma table_info("{name}")')]
        count = con.execute(f'select count(*) from "{name}"').fetchone()[0]
        response = get(ds, f"/archive/{name}.json")
        assert response.status_code == 200, (name, response.text[:200])
        body = response.json()
        assert body["columns"] == columns and len(body["rows"]) == min(count, 100), name
        as_csv = get(ds, f"/archive/{name}.csv")
        assert as_csv.status_code == 200, name
        rows = list(csv.reader(io.StringIO(as_csv.text)))
        assert rows[0] == columns and len(rows) - 1 == min(count, 100), name
    assert con.execute("select count(*) from measurements").fetchone()[0] == 13
    assert con.execute("select count(*) from open_lane_trials").fetchone()[0] == 7 * 120


def test_every_canned_query_answers_in_html_json_and_csv(ds):
    for name in datasette_meta.CANNED_QUERIES:
        query = urllib.parse.urlencode(PARAMS.get(name, {}))
        page = get(ds, f"/archive/{name}?{query}")
        assert page.status_code == 200, (name, page.text[:300])
        data = get(ds, f"/archive/{name}.json?_shape=objects&{query}")
        assert data.status_code == 200 and data.json()["ok"], name
        assert get(ds, f"/archive/{name}.csv?{query}").status_code == 200
    over_time = get(ds, "/archive/stability_over_time.json?_shape=objects&"
                    + urllib.parse.urlencode(PARAMS["stability_over_time"])).json()["rows"]
    assert [r["run_date"] for r in over_time] == ["2026-10-02", "2026-11-02", "2026-12-02"]
    assert all("entropy_a" in r and "entropy_b" in r for r in over_time)
    twins = get(ds, "/archive/open_vs_guard_twin.json?_shape=objects").json()["rows"]
    assert {(r["open_protocol_id"], r["guard_protocol_id"]) for r in twins} == {
        ("risky_choice_framing__wording__v0", "risky_choice_framing__anchoring__v0")}
    gaps = get(ds, "/archive/coverage_gaps_by_cause.json?_shape=objects").json()["rows"]
    assert gaps == [{"series": "commercial", "cause": "before_archive_start", "gaps": 1,
                     "first_period": "2026-09", "last_period": "2026-09"}]
    flagged = get(ds, "/archive/flagged_measurements.json?_shape=objects").json()["rows"]
    assert flagged and all(r["flags"] != "[]" and r["flag_reasons"] != "{}" for r in flagged)


@pytest.mark.parametrize("method,path,kwargs", [
    ("POST", "/archive/measurements", {"data": {"run_id": "x"}}),
    ("POST", "/archive/measurements.json", {"json": {"run_id": "x"}}),
    ("POST", "/archive/latest_scan", {"data": {}}),
    ("POST", "/archive", {"data": {"sql": "delete from measurements"}}),
    ("PUT", "/archive/measurements", {}),
    ("PATCH", "/archive/measurements", {}),
    ("DELETE", "/archive/measurements", {}),
    ("POST", "/archive/measurements/-/insert", {"json": {"row": {"run_id": "x"}}}),
    ("GET", "/archive.json?sql=" + urllib.parse.quote("insert into measurements (run_id) values ('x')"), {}),
    ("GET", "/archive.json?sql=" + urllib.parse.quote("delete from measurements"), {}),
    ("GET", "/archive.json?sql=" + urllib.parse.quote("drop table measurements"), {}),
    ("GET", "/archive.json?sql=" + urllib.parse.quote("select 1; delete from measurements"), {}),
    ("GET", "/archive.json?sql=" + urllib.parse.quote("pragma writable_schema = 1"), {}),
    ("GET", "/archive.json?sql=" + urllib.parse.quote("attach database 'x.db' as x"), {}),
])
def test_any_write_is_refused_with_a_clean_4xx(ds, db_path, method, path, kwargs):
    before = db_path.read_bytes()
    response = request(ds, method, path, **kwargs)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:200])
    assert db_path.read_bytes() == before
    count = get(ds, "/archive.json?sql=" + urllib.parse.quote("select count(*) as n from measurements")
                + "&_shape=objects").json()["rows"][0]["n"]
    assert count == 13


def test_bad_requests_are_4xx_not_500(ds):
    assert get(ds, "/archive/measurements.json?_sort=no_such_column").status_code == 400
    assert get(ds, "/archive/no_such_table").status_code == 404
    assert get(ds, "/archive.json?sql=" + urllib.parse.quote("select * from no_such_table")).status_code == 400


def test_a_pathological_query_stops_at_the_time_limit_with_an_error(ds):
    sql = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"
    # The query never ends on its own, so an answer at all is the limit stopping it (how soon: bench/).
    response = get(ds, "/archive.json?sql=" + urllib.parse.quote(sql))
    assert response.status_code == 400
    assert "too long" in response.json()["error"]


def test_the_row_cap_is_applied(ds):
    sql = "with recursive c(x) as (select 1 union all select x + 1 from c where x < 5000) select x from c"
    body = get(ds, "/archive.json?_shape=objects&sql=" + urllib.parse.quote(sql)).json()
    assert len(body["rows"]) == datasette_meta.SETTINGS["max_returned_rows"]
    assert body["truncated"] is True


def test_serve_command_is_immutable_with_explicit_limits_and_relative_paths(db_path):
    command = datasette_meta.serve_command(db_path.parent, datasette_meta.REPO_METADATA)
    assert command.argv[:4] == ["datasette", "serve", "-i", "public/archive.db"]
    assert command.cwd == db_path.parent.parent
    joined = " ".join(command.argv)
    assert "--setting sql_time_limit_ms 1000" in joined and "--setting max_returned_rows 1000" in joined
    assert "--host 127.0.0.1" in joined and f"--plugins-dir {datasette_meta.PLUGINS_DIR}" in joined
    assert f"--template-dir {datasette_meta.TEMPLATES_DIR}" in joined and "--static site:public" in joined
    assert str(db_path) not in joined and str(command.cwd) not in joined


def test_what_changed_lists_the_called_changes_of_the_changes_table_newest_first(ds, db_path):
    from measure.stats import compare

    con = sqlite3.connect(db_path)
    con.row_factory = sqlite3.Row
    measurements = {r["run_id"]: dict(r) for r in con.execute("select * from measurements")}
    table = [dict(r) for r in con.execute("select * from changes")]
    assert table, "the populated archive has consecutive on-curve measurements"
    for row in table:
        x, y = measurements[row["from_run_id"]], measurements[row["to_run_id"]]
        assert row["label"] == compare(x, y)
    rows = get(ds, "/archive/what_changed.json?_shape=objects").json()["rows"]
    assert [r["to_run_id"] for r in rows] == [r["to_run_id"] for r in sorted(
        (r for r in table if r["label"] != "flat"), key=lambda r: (r["to_run_date"], abs(r["delta_pct"])),
        reverse=True)]


def test_min_detectable_change_is_a_column_of_the_measurements_table(db_path):
    from publish.data.changes import min_detectable_change_pct

    con = sqlite3.connect(db_path)
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("select * from measurements")]
    assert any(r["min_detectable_change_pct"] is not None for r in rows)
    for r in rows:
        assert r["min_detectable_change_pct"] == min_detectable_change_pct(r)


def test_each_table_page_links_its_whole_table_as_csv(ds):
    page = get(ds, "/archive/open_lane_trials")
    assert page.status_code == 200
    assert datasette_meta.full_csv_url("open_lane_trials").replace("&", "&amp;") in page.text


@pytest.mark.parametrize("path", [
    "/archive/open_lane_trials.csv?_stream=on&_next=abc",
    "/archive/open_lane_trials.csv?_stream=on&_sort=no_such_column",
    "/archive/no_such_table.csv?_stream=on",
    "/archive/open_lane_trials.csv?_stream=on&_size=lots",
])
def test_bad_streamed_csv_requests_are_clean_4xx(ds, path):
    response = get(ds, path)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:200])
    assert "Traceback" not in response.text
