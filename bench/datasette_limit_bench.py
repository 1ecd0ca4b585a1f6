"""Benchmark: how soon Datasette stops a query that would never end.

The public database is served with an explicit SQL time limit
(``publish.datasette_meta.SETTINGS["sql_time_limit_ms"]``).  The test suite
proves the behaviour — a runaway query gets a 400 saying it took too long,
never a hang or a 500 (``tests/test_datasette.py``); this script measures
the time it takes, which a test must not assert on a shared machine.

The archive is the publication tests' one (``tests/publish_helpers.py``:
the built v0 protocols, admitted, populated with runs and records) published
into a throw-away folder; Datasette is configured as ``make serve`` runs it
and queried through its in-process client.  Printed: the time from request
to the error answer for ``--rounds`` runaway queries (median and worst),
against the configured limit.  Target: worst ≤ 2 × the limit.

Run: ``.venv/bin/python bench/datasette_limit_bench.py [--rounds N]`` (about half a minute).
"""
import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUNAWAY = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="runaway queries to time (default 10)")
    args = parser.parse_args()

    import yaml
    from datasette.app import Datasette

    from publish import datasette_meta, publish_all
    from tests import publish_helpers as ph

    limit_s = datasette_meta.SETTINGS["sql_time_limit_ms"] / 1000
    with tempfile.TemporaryDirectory(prefix="datasette_limit_bench_") as tmp:
        template = ph.template_archive(Path(tmp) / "template")
        paths = ph.fresh_archive(template, Path(tmp) / "home")
        ph.populate(paths)
        publish_all(paths, build_time="2026-12-03T00:00:00Z")
        metadata = yaml.safe_load(datasette_meta.REPO_METADATA.read_text(encoding="utf-8"))
        ds = Datasette(immutables=[str(paths.public / datasette_meta.DB_FILE)], metadata=metadata,
                       settings=dict(datasette_meta.SETTINGS), plugins_dir=str(datasette_meta.PLUGINS_DIR))
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
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
