"""Benchmark: how soon Datasette stops a query that would never end, and what a hostile query costs.

The public database is served with an explicit SQL time limit
(``publish.datasette.meta.SETTINGS["sql_time_limit_ms"]``) and the limits of
``publish/datasette/plugins/archive_limits.py``.  The test suite proves the
behaviour — a runaway query gets a 400 saying it took too long, never a hang
or a 500 (``tests/test_datasette.py``); each hostile query of
``tests/test_datasette_server.py`` gets a clean 400 and the server's memory
stays bounded — this script measures the times, which a test must not assert
on a shared machine.

The archive is the publication tests' one (``tests/publish_helpers.py``:
the built v0 protocols, admitted, populated with runs and records) published
into a throw-away folder; Datasette is configured as ``make serve`` runs it
and queried through its in-process client.  Printed: the time from request
to the error answer for ``--rounds`` runaway queries (median and worst),
against the configured limit.  Target: worst ≤ 2 × the limit.

Then the same archive is served by ``llmarchive serve`` (a real server over
HTTP on 127.0.0.1) and each hostile query is sent once: its status, time,
answer size and the server's resident memory (current and peak) after it,
then a normal query.  Target: every hostile query answered within 2 × the
limit, the peak under 400 MB.  Before the limits, ``select
hex(randomblob(150000000))`` answered 200 with 300 MB in 4.7 s and the
server's peak was 1,215 MB (idle: 70 MB).

Run: ``.venv/bin/python bench/datasette_limit_bench.py [--rounds N]`` (about a minute).
"""
import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUNAWAY = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"
# Rows whose one expression calls a costly function many times, each call within the limits: SQLite asks the
# time limit only between loop steps, so these measure how far past the limit one row can run (or whether the
# guards stop it on time).  Distinct terms: SQLite computes a repeated identical call once.
_WITH = ("with x(s, t, g, u) as (select printf('%.*c', 16000, 'a') || random(), '%' || printf('%.*c', 97, 'a') "
         "|| 'b', '*' || printf('%.*c', 97, 'a') || 'b', printf('%.*c', 120, 'b') || 'a') ")
BOUNDED = [
    _WITH + "select " + " + ".join(f"(substr(s, {i}) like t)" for i in range(1, 150)) + " from x",
    _WITH + "select " + " + ".join(f"(substr(s, {i}) glob g)" for i in range(1, 150)) + " from x",
    _WITH + "select " + " + ".join(f"length(ltrim(substr(s, {i}), u))" for i in range(1, 100)) + " from x",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="runaway queries to time (default 10)")
    args = parser.parse_args()

    import yaml
    from datasette.app import Datasette

    from publish import publish_all
    from publish.datasette import meta as datasette_meta
    from tests import publish_helpers as ph

    limit_s = datasette_meta.SETTINGS["sql_time_limit_ms"] / 1000
    with tempfile.TemporaryDirectory(prefix="datasette_limit_bench_") as tmp:
        template = ph.template_archive(Path(tmp) / "template")
        paths = ph.fresh_archive(template, Path(tmp) / "home")
        ph.populate(paths)
        publish_all(paths, build_time="2026-12-03T00:00:00Z")
        metadata = yaml.safe_load(datasette_meta.REPO_METADATA.read_text(encoding="utf-8"))
        ds = Datasette(immutables=[str(paths.public / datasette_meta.DB_FILE)], metadata=metadata,
                       settings=dict(datasette_meta.SETTINGS), plugins_dir=str(datasette_meta.PLUGINS_DIR),
                       template_dir=str(datasette_meta.TEMPLATES_DIR))
        url = "/archive.json?sql=" + urllib.parse.quote(RUNAWAY)
        times = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            response = asyncio.run(ds.client.get(url))
            times.append(time.perf_counter() - started)
            assert response.status_code == 400 and "too long" in response.json()["error"], response.text[:300]

        worst = max(times)
        print(f"runaway query stopped by the SQL time limit ({limit_s * 1000:.0f} ms), {args.rounds} rounds:")
        print(f"  median {statistics.median(times) * 1000:8.0f} ms")
        print(f"  worst  {worst * 1000:8.0f} ms   target ≤ {2 * limit_s * 1000:.0f} ms (2 × the limit)")
        ok = worst <= 2 * limit_s
        ok = hostile(paths, limit_s) and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _memory_mb(pid: int) -> tuple[float, float]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def hostile(paths, limit_s: float) -> bool:
    """Each hostile query of the test suite, sent once to `llmarchive serve`: status, time, size, memory."""
    import httpx

    from tests.ports import free_port, stop, wait_for_http
    from tests.test_datasette_server import HOSTILE, MEMORY_BOUND_MB

    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "llmarchive", "--home", str(paths.home), "serve", "--port",
                                str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    ok = True
    try:
        wait_for_http(base + "/-/versions.json", process)
        rss, peak = _memory_mb(process.pid)
        print(f"\nllmarchive serve, idle: resident {rss:.0f} MB, peak {peak:.0f} MB")
        print(f"  {'status':>6} {'time':>8} {'bytes':>11} {'rss MB':>7} {'peak MB':>7}  query")
        for sql, _ in HOSTILE + [(q, "") for q in BOUNDED] + [("select count(*) from measurements", "")]:
            started = time.perf_counter()
            response = httpx.get(f"{base}/archive.json?" + urllib.parse.urlencode({"sql": sql}), timeout=300)
            elapsed = time.perf_counter() - started
            rss, peak = _memory_mb(process.pid)
            shown = sql[:70] if not sql.startswith("with x(") else "one row: " + sql.split(") select ", 1)[1][:60]
            print(f"  {response.status_code:>6} {elapsed * 1000:6.0f} ms {len(response.content):>11,} {rss:7.0f} "
                  f"{peak:7.0f}  {shown}")
            ok = ok and elapsed <= 2 * limit_s
        ok = ok and peak < MEMORY_BOUND_MB
        print(f"  target: every answer ≤ {2 * limit_s * 1000:.0f} ms, peak < {MEMORY_BOUND_MB} MB")
    finally:
        stop(process)
    return ok


if __name__ == "__main__":
    sys.exit(main())
