"""A whole table larger than the row cap downloads in full as CSV from a real Datasette server over HTTP."""
import csv
import io
import sqlite3
import subprocess
import sys
import time

import httpx
import pytest

from publish import publish_all
from publish.datasette import meta as datasette_meta
from tests import publish_helpers as ph
from tests.ports import free_port, stop

BUILD = "2026-12-03T00:00:00Z"



@pytest.fixture(scope="module")
def server(publish_template, tmp_path_factory):
    paths = ph.fresh_archive(publish_template, tmp_path_factory.mktemp("dl") / "home")
    ph.populate(paths)
    rcf_open = ph.protocol(paths, "risky_choice_framing__wording__v0")
    for day in ("2026-12-10", "2026-12-11"):  # two more open runs: 9 x 120 trials, past the 1,000-row cap
        ph.write_run(paths, rcf_open, f"extra-{day}", day, series="open_weights", model_family="smollm2",
                     subject_model_id="smollm2-135m")
    publish_all(paths, build_time=BUILD)
    db = paths.public / datasette_meta.DB_FILE
    port = free_port()
    serve = datasette_meta.serve_command(db.parent, datasette_meta.REPO_METADATA, port=port, static=False)
    process = subprocess.Popen([sys.executable, "-m"] + serve.argv, cwd=serve.cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stdout.read().decode(errors="replace")[-3000:]
            try:
                if httpx.get(f"{base}/-/versions.json", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "datasette did not start"
            time.sleep(0.3)
        yield base, db
    finally:
        stop(process)


@pytest.mark.slow
def test_the_whole_table_link_downloads_every_row_over_http(server):
    base, db = server
    con = sqlite3.connect(db)
    count = con.execute("select count(*) from open_lane_trials").fetchone()[0]
    assert count > datasette_meta.SETTINGS["max_returned_rows"]
    expected = {r[0] for r in con.execute("select record_sha256 from open_lane_trials")}
    page = httpx.get(f"{base}/archive/open_lane_trials", timeout=30)
    assert page.status_code == 200
    link = datasette_meta.full_csv_url("open_lane_trials")
    assert link.replace("&", "&amp;") in page.text
    with httpx.stream("GET", base + link, timeout=120) as response:
        assert response.status_code == 200
        assert "attachment" in response.headers.get("content-disposition", "")
        body = b"".join(response.iter_bytes()).decode("utf-8")
    rows = list(csv.reader(io.StringIO(body)))
    columns = [r[1] for r in con.execute('pragma table_info("open_lane_trials")')]
    assert rows[0] == columns
    assert len(rows) - 1 == count
    assert {r[0] for r in rows[1:]} == expected
    capped = httpx.get(f"{base}/archive/open_lane_trials.csv?_size=max", timeout=30)
    assert len(list(csv.reader(io.StringIO(capped.text)))) - 1 == datasette_meta.SETTINGS["max_returned_rows"]


@pytest.mark.slow
def test_bad_download_requests_over_http_are_clean_4xx(server):
    base, _ = server
    for path in ("/archive/open_lane_trials.csv?_stream=on&_next=abc",
                 "/archive/open_lane_trials.csv?_stream=on&_sort=no_such_column",
                 "/archive/no_such_table.csv?_stream=on"):
        response = httpx.get(base + path, timeout=30)
        assert 400 <= response.status_code < 500, (path, response.status_code)


@pytest.mark.slow
def test_every_table_downloads_whole_with_each_row_once(server):
    from publish.data import database

    base, db = server
    con = sqlite3.connect(db)
    for table in database.TABLES:
        count = con.execute(f'select count(*) from "{table.name}"').fetchone()[0]
        response = httpx.get(base + datasette_meta.full_csv_url(table.name), timeout=120)
        assert response.status_code == 200, table.name
        rows = list(csv.reader(io.StringIO(response.text)))
        assert len(rows) - 1 == count == len({tuple(r) for r in rows[1:]}), table.name
