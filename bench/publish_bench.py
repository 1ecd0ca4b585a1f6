"""Benchmark: publishing a synthetic ten-year archive, and the canned queries through Datasette.

The archive: the 12 real v0 protocols (built by the panels registry with a
secret guard seed and promoted to method §3's lanes) run every month for 120
months in both series.  The two open protocols are run three times a month
per series (replicates 0–2) so the open lane holds about 170,000 trial rows
(2 × 120 × 2 × 3 × 120 = 172,800); the ten guard protocols once.  Every run
folder is complete and real: a hash-chained trials.jsonl with synthetic
one-or-two-sentence responses, run.json, and measurement.json from
``measure.measurement.build``.  Ten years of daily instrument records and
coverage rows (with a few gaps) go through the record logs.

Reported:

* the full build, ``publish.publish_all`` (target ≤ 60 s), against a
  baseline measured in the same run: reading the inputs alone
  (``publish.data.sources.gather``, target build ≤ 3× it), best of two each, with
  the build's split by stage (``publish.pipeline.build.STAGE_SECONDS``; ``--profile N``
  adds one build under cProfile);
* the p95 latency of every canned query through Datasette's ASGI app
  (in-process client, the serving settings of ``make serve``; target ≤ 100 ms),
  each against the same SQL run directly on sqlite3;
* the whole-table CSV download (``<table>.csv?_stream=on``) of ``measurements``
  and ``open_lane_trials`` through the same app, every row checked, against
  writing the same rows to CSV straight from sqlite3;
* the blocking checks :func:`publish.publish_all` runs first, on their own.

Run: ``.venv/bin/python bench/publish_bench.py [--keep DIR [--reuse]]`` (``--reuse`` publishes the
archive an earlier ``--keep DIR`` generated, without generating it again).
"""
import argparse
import asyncio
import hashlib
import os
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmarchive.archive.jsonio import write_json  # noqa: E402
from llmarchive.archive.paths import ArchivePaths  # noqa: E402
from llmarchive.archive.store import measurement_run  # noqa: E402
from measure import chain  # noqa: E402
from measure.measurement import build  # noqa: E402
from measure.rng import Stream, seed_from_text  # noqa: E402
from measure.schema import SCHEMA_VERSION, VERSIONS  # noqa: E402
from publish import workers  # noqa: E402

MONTHS = 120
OPEN_REPLICATES = 3
SERIES = (("commercial", "claude-sonnet", "claude-sonnet-5"), ("open_weights", "qwen2.5", "qwen2.5-1.5b"))
QUERY_REPEATS = 60
BUILD_TARGET_S = 60.0
RATIO_TARGET = 3.0
QUERY_TARGET_MS = 100.0
WORDS = ("the first option keeps the outcome certain while the second one is a gamble with the same expected "
         "value so on balance I would rather take the sure result given how the question frames the choice and "
         "what is at stake for everyone involved here a careful reader weighs both the chance and the size of "
         "each payoff before deciding which plan to follow").split()

_PROTOCOLS: dict = {}


def month_date(index: int) -> str:
    year, month = divmod(index, 12)
    return f"{2027 + year}-{month + 1:02d}-03"


LONG = WORDS * 3


def response(stream: Stream, token: str) -> str:
    """25 to 64 words cut from the filler text at a random place: one or two sentences and the decision."""
    n, start = 25 + stream.below(40), stream.below(len(WORDS))
    body = " ".join(LONG[start:start + n])
    return f"{body[0].upper()}{body[1:]}.\nDECISION: {token}"


def plan_tokens(stream: Stream, version: str, drift: int) -> str:
    """A plausible answer: C mostly B, B drifting with the month, A and A′ balanced."""
    if version == "C":
        return "B" if stream.below(100) < 85 else "A"
    if version == "B":
        return "B" if stream.below(100) < 50 + drift else "A"
    return "B" if stream.below(100) < 50 else "A"


def write_run(job: tuple) -> int:
    home, protocol_id, run_id, run_date, series, family, model, replicate, drift = job
    paths = ArchivePaths(Path(home))
    protocol = _PROTOCOLS[protocol_id]
    stream = Stream(seed_from_text(run_id))
    prompts = {item["item_id"]: item["versions"] for item in protocol["panel"]}
    lines, trials, prev, index = [], [], chain.GENESIS, 0
    for r in range(protocol["n_per_scenario"]):
        for item in protocol["item_ids"]:
            for version in VERSIONS:
                roll = stream.below(1000)
                outcome = "valid" if roll >= 4 else ("refused" if roll < 2 else "truncated")
                token = plan_tokens(stream, version, drift) if outcome == "valid" else None
                trial = chain.link({
                    "record_type": "trial", "schema_version": SCHEMA_VERSION, "run_id": run_id,
                    "protocol_id": protocol_id, "item_id": item, "n_items": protocol["n_items"], "version": version,
                    "replicate_index": r, "trial_index": index,
                    "prompt_sha256": hashlib.sha256(prompts[item][version].encode("utf-8")).hexdigest(),
                    "outcome": outcome, "token": token, "reason": outcome,
                    "response_text": response(stream, token or "A") if outcome != "refused" else "",
                    "stop_reason": "end_turn" if outcome == "valid" else outcome, "returned_model_id": model,
                    "input_tokens": 420, "output_tokens": 60, "latency_ms": 1500, "attempts": 1,
                    "started_at": f"{run_date}T10:00:00Z", "finished_at": f"{run_date}T10:00:02Z",
                }, prev)
                prev = trial["record_sha256"]
                lines.append(chain.to_line(trial))
                trials.append(trial)
                index += 1
    folder = paths.run_dir(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trials.jsonl").write_text("".join(lines), encoding="utf-8")
    header = {k: protocol.get(k) for k in ("protocol_id", "series", "family", "rewording_type", "options", "n",
                                           "n_per_scenario", "n_items", "item_ids", "grammar_version",
                                           "theta_positive_pct", "scenario_dominated_share_pct", "generation",
                                           "panel_sha256", "protocol_sha256", "status", "lane", "twin_id")}
    run = {"record_type": "experiment_run", "schema_version": SCHEMA_VERSION, "run_id": run_id,
           "run_date": run_date, "protocol_id": protocol_id, "protocol_header": header, "series": series,
           "model_family": family, "subject_model_id": model, "returned_model_id": model,
           "api_surface_sha": "d" * 64, "condition_profile": "thinking-disabled",
           "explicitly_set": {"max_tokens": 256}, "replicate_index": replicate, "status": "complete",
           "started_at": f"{run_date}T10:00:00Z", "finished_at": f"{run_date}T10:30:00Z"}
    write_json(folder / "run.json", run)
    write_json(folder / "measurement.json", build(header, trials, measurement_run(run)))
    return len(trials)


def _init(protocols: dict) -> None:
    _PROTOCOLS.update(protocols)


def write_log(paths: ArchivePaths, kind: str, records: list[dict]) -> None:
    prev, lines = chain.GENESIS, []
    for fields in records:
        record = chain.link({"record_type": kind, "schema_version": SCHEMA_VERSION,
                             "recorded_at": f"{fields.get('date') or fields.get('period')}T23:00:00Z"
                             if len(str(fields.get('date') or fields.get('period'))) == 10
                             else f"{fields.get('period')}-28T23:00:00Z", **fields}, prev)
        prev = record["record_sha256"]
        lines.append(chain.to_line(record))
    paths.record_log(kind).parent.mkdir(parents=True, exist_ok=True)
    paths.record_log(kind).write_text("".join(lines), encoding="utf-8")


def bookkeeping(paths: ArchivePaths) -> None:
    from datetime import date, timedelta

    days = [date(2027, 1, 1) + timedelta(days=i) for i in range((date(2037, 1, 1) - date(2027, 1, 1)).days)]
    gaps = {7: "provider_outage", 31: "budget_halted", 58: "human_absent", 90: "generation_bridge"}
    coverage = []
    for m in range(MONTHS):
        period = month_date(m)[:7]
        cause = gaps.get(m)
        coverage.append({"period": period, "job": "full_sweep", "series": "commercial", "protocol_id": None,
                         "status": "gap" if cause else "ran", "cause": cause, "run_id": None,
                         "detail": f"sweep of {period}"})
    for d in days:
        coverage.append({"period": d.isoformat(), "job": "runtime_fingerprint", "series": "open_weights",
                         "protocol_id": None, "status": "ran", "cause": None, "run_id": None, "detail": "daily"})
    write_log(paths, "coverage", coverage)
    write_log(paths, "runtime_fingerprint", [
        {"date": d.isoformat(), "status": "pass", "digest": "e" * 64, "expected_digest": "e" * 64,
         "model_sha256": "f" * 64, "template_sha256": "a" * 64, "llama_cpp_version": "0.3.36",
         "runner_arch": "x86_64", "n_threads": 2, "n_batch": 512, "seed": 0} for d in days])
    guards = sorted(pid for pid, p in _PROTOCOLS.items() if p["lane"] == "guard")
    write_log(paths, "guard_rotation", [
        {"date": d.isoformat(), "protocol_id": guards[i % len(guards)], "run_id": None, "previous_run_id": None,
         "verdict": "flat"} for i, d in enumerate(days)])
    write_log(paths, "subject_fingerprint", [
        {"date": d.isoformat(), "subject_model_id": "claude-sonnet-5", "returned_model_id": "claude-sonnet-5",
         "correct": 24, "total": 24, "items": []} for d in days])
    write_log(paths, "instrument_alarm", [{"date": "2029-03-04", "source": "runtime_fingerprint",
                                          "reason": "digest differed"}])


def generate(home: Path) -> tuple[ArchivePaths, int, int]:
    from llmarchive.protocols import admissions as lanes
    from llmarchive.protocols import registry

    paths = ArchivePaths(home).ensure()
    paths.panel_seed_file.write_text("bench-guard-seed-0123456789abcdef", encoding="utf-8")
    protocols = registry.build_all(paths)
    known = [p["protocol_id"] for p in protocols]
    for p in protocols:
        if p["series"] == "v0":
            lane, twin = lanes.planned_lane(p["protocol_id"])
            lanes.promote(paths, p, lane, twin, human_reviewed=True, reviewer="bench", known_ids=known)
    full = {p["protocol_id"]: registry.load_protocol(paths, p["protocol_id"]) for p in protocols if p["series"] == "v0"}
    _PROTOCOLS.update(full)
    jobs = []
    for m in range(MONTHS):
        run_date = month_date(m)
        for series, family, model in SERIES:
            for pid, p in sorted(full.items()):
                replicates = OPEN_REPLICATES if p["lane"] == "open" else 1
                for r in range(replicates):
                    jobs.append((str(home), pid, f"{series[:2]}-{run_date[:7]}-{pid}-r{r}", run_date, series, family,
                                 model, r, (m // 12) % 4))
    # A clean forkserver pool (publish.workers), never a fork of this process: the guide's rule holds in bench/ too.
    with workers.pool(2, initializer=_init, initargs=(full,)) as pool:
        trials = sum(pool.map(write_run, jobs, chunksize=16))
    bookkeeping(paths)
    return paths, len(jobs), trials


def _cpu() -> float:
    """CPU seconds of this process, its reaped children, and the pool workers the forkserver has reaped (a
    worker is the forkserver's child, not ours: its time reaches the forkserver's ``cutime``/``cstime`` in
    /proc when the pool ends, and ours only when the forkserver exits)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
    from multiprocessing import forkserver

    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[13]) + int(fields[14]) + int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(round(0.95 * len(ordered))) - 1)]


def bench_queries(db_path: Path) -> list[tuple[str, float, float]]:
    import yaml
    from datasette.app import Datasette

    from publish.datasette import meta as datasette_meta

    metadata = yaml.safe_load(datasette_meta.REPO_METADATA.read_text(encoding="utf-8"))
    ds = Datasette(immutables=[str(db_path)], metadata=metadata, settings=dict(datasette_meta.SETTINGS),
                   plugins_dir=str(datasette_meta.PLUGINS_DIR))
    params = {"stability_over_time": {"protocol_id": "risky_choice_framing__wording__v0",
                                      "model_family": "claude-sonnet", "series": "commercial"}}
    con = sqlite3.connect(f"file:{db_path}?mode=ro&immutable=1", uri=True)
    out = []

    async def run() -> None:
        for name, query in datasette_meta.CANNED_QUERIES.items():
            args = params.get(name, {})
            url = f"/archive/{name}.json?_shape=objects&" + urllib.parse.urlencode(args)
            for _ in range(5):
                response = await ds.client.get(url)
                assert response.status_code == 200, (name, response.text[:300])
            through, direct = [], []
            for _ in range(QUERY_REPEATS):
                started = time.perf_counter()
                response = await ds.client.get(url)
                through.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200
                started = time.perf_counter()
                con.execute(query["sql"], args).fetchmany(datasette_meta.SETTINGS["max_returned_rows"] + 1)
                direct.append((time.perf_counter() - started) * 1000)
            out.append((name, p95(through), p95(direct)))

    asyncio.run(run())
    return out


def bench_downloads(db_path: Path) -> list[tuple[str, int, float, float, int]]:
    """(table, rows, seconds through Datasette, seconds straight from sqlite3, bytes) per whole-table CSV."""
    import csv
    import io

    import yaml
    from datasette.app import Datasette

    from publish.datasette import meta as datasette_meta

    metadata = yaml.safe_load(datasette_meta.REPO_METADATA.read_text(encoding="utf-8"))
    ds = Datasette(immutables=[str(db_path)], metadata=metadata, settings=dict(datasette_meta.SETTINGS),
                   plugins_dir=str(datasette_meta.PLUGINS_DIR))
    con = sqlite3.connect(f"file:{db_path}?mode=ro&immutable=1", uri=True)
    out = []
    for table in ("measurements", "open_lane_trials"):
        count = con.execute(f'select count(*) from "{table}"').fetchone()[0]
        started = time.perf_counter()
        response = asyncio.run(ds.client.get(datasette_meta.full_csv_url(table)))
        through = time.perf_counter() - started
        assert response.status_code == 200, (table, response.status_code)
        rows = list(csv.reader(io.StringIO(response.text)))[1:]
        assert len(rows) == count == len({tuple(r) for r in rows}), \
            f"{table}: downloaded {len(rows)} rows ({len({tuple(r) for r in rows})} distinct) of {count}"
        started = time.perf_counter()
        buffer = io.StringIO()
        cursor = con.execute(f'select * from "{table}"')
        writer = csv.writer(buffer)
        writer.writerow([d[0] for d in cursor.description])
        writer.writerows(cursor)
        direct = time.perf_counter() - started
        out.append((table, count, through, direct, len(response.content)))
    return out


def _verify_seconds(paths: ArchivePaths) -> float:
    """Reading and verifying every trial log and record log, as the build's blocking check must (every run
    folder, not only the open lane's: 460,800 trial records where the open lane holds 172,800)."""
    from publish.pipeline import checks

    started = time.perf_counter()
    problems = checks.chain_problems(paths)
    assert not problems, problems[:3]
    return time.perf_counter() - started


def _gather_seconds(paths: ArchivePaths) -> tuple[float, object]:
    from publish.data import sources

    started = time.perf_counter()
    inputs = sources.gather(paths)
    return time.perf_counter() - started, inputs


def _print_stages(label: str) -> None:
    from publish.pipeline import build as build_mod

    stages = dict(build_mod.STAGE_SECONDS)
    total = sum(stages.values()) or 1.0
    print(f"  split of {label}: " + ", ".join(f"{name} {s:.1f} s ({100 * s / total:.0f} %)"
                                               for name, s in stages.items()))


def _profile_build(paths: ArchivePaths, top: int) -> None:
    """One more build under cProfile (this process only: the workers' own time shows as waiting on them)."""
    import cProfile
    import pstats

    from publish import publish_all

    profiler = cProfile.Profile()
    profiler.runcall(publish_all, paths)
    _print_stages("the profiled build")
    for order in ("cumulative", "tottime"):
        print(f"cProfile of one build, by {order}:")
        pstats.Stats(profiler, stream=sys.stdout).sort_stats(order).print_stats(top)


def bench_build(paths: ArchivePaths, profile: int = 0) -> tuple[float, float]:
    """Reading the inputs and the full build, each twice in this run (best of each); the build's stage split."""
    from publish import publish_all

    gather_first, inputs = _gather_seconds(paths)
    open_rows = sum(len(r.lines) for r in inputs.open_runs)
    print(f"inputs: {len(inputs.measurements):,} measurements, {open_rows:,} open-lane trial rows")
    del inputs
    timings, cpu = [], []
    for attempt in (1, 2):
        before = _cpu()
        started = time.perf_counter()
        manifest = publish_all(paths)
        timings.append(time.perf_counter() - started)
        cpu.append(_cpu() - before)
        _print_stages(f"build {attempt}")
    gather_second, _ = _gather_seconds(paths)
    verify_s = min(_verify_seconds(paths), _verify_seconds(paths))
    gather_s, build_s = min(gather_first, gather_second), min(timings)
    sizes = {name: entry["bytes"] for name, entry in manifest["files"].items()}
    print(f"published bytes: {sum(sizes.values()) / 1e6:.1f} MB "
          f"(archive.db {sizes['archive.db'] / 1e6:.1f} MB, index.html {sizes['index.html'] / 1e6:.2f} MB, "
          f"open lane {sum(v for k, v in sizes.items() if k.startswith('open-lane/')) / 1e6:.1f} MB)")
    print(f"full build (publish_all): {timings[0]:.1f} s and {timings[1]:.1f} s wall; best {build_s:.1f} s "
          f"(target <= {BUILD_TARGET_S:.0f} s) -> {'OK' if build_s <= BUILD_TARGET_S else 'OVER TARGET'}")
    print(f"  CPU time of the build (this process and its pool workers): {cpu[0]:.1f} s and {cpu[1]:.1f} s; "
          f"load average while it ran {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores "
          "(other work on the machine slows the wall time)")
    print(f"  baseline, reading the inputs alone (sources.gather): {gather_first:.1f} s before the builds and "
          f"{gather_second:.1f} s after; build / baseline = {build_s / gather_s:.1f}x (best of each; target <= "
          f"{RATIO_TARGET:.0f}x)")
    print(f"  for scale: reading and verifying every log the build must verify ("
          "publish.pipeline.checks.chain_problems, "
          f"all run folders) takes {verify_s:.1f} s on its own, {verify_s / gather_s:.1f}x the baseline; the build is "
          f"{build_s / (gather_s + verify_s):.1f}x both together")
    if profile:
        _profile_build(paths, profile)
    return gather_s, build_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", help="generate into this folder and keep it (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: reuse the archive a previous run generated there (skips ~3 minutes)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="run one more build under cProfile and print its N costliest functions")
    parser.add_argument("--build-only", action="store_true", help="stop after the build (no Datasette queries)")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="publish-bench-"))
    home = root / "home"
    marker = home / ".bench-generated"
    reuse = args.reuse and args.keep and marker.exists()
    if home.exists() and not reuse:
        shutil.rmtree(home)
    try:
        if reuse:
            paths = ArchivePaths(home)
            print(f"synthetic archive: reused from {home} ({marker.read_text(encoding='utf-8').strip()})")
        else:
            started = time.perf_counter()
            paths, runs, trials = generate(home)
            summary = (f"{runs:,} runs ({MONTHS} months, 12 protocols, 2 series), {trials:,} private trial rows")
            marker.write_text(summary + "\n", encoding="utf-8")
            print(f"synthetic archive: {summary}, generated in {time.perf_counter() - started:.1f} s")

        gather_s, build_s = bench_build(paths, args.profile)
        if args.build_only:
            return 0 if build_s <= BUILD_TARGET_S else 1
        results = bench_queries(paths.public / "archive.db")
        worst = max(r[1] for r in results)
        print(f"canned queries through Datasette, p95 of {QUERY_REPEATS} (target <= {QUERY_TARGET_MS:.0f} ms):")
        for name, through, direct in results:
            print(f"  {name:<28} {through:7.1f} ms   sqlite3 direct {direct:7.2f} ms   ratio "
                  f"{through / max(direct, 1e-6):6.1f}x")
        print(f"worst p95 {worst:.1f} ms -> {'OK' if worst <= QUERY_TARGET_MS else 'OVER TARGET'}")

        print("whole-table CSV downloads through Datasette (streamed, every row):")
        for table, count, through, direct, size in bench_downloads(paths.public / "archive.db"):
            print(f"  {table:<20} {count:>9,} rows {size / 1e6:7.1f} MB in {through:6.1f} s   sqlite3 -> csv "
                  f"{direct:5.2f} s   ratio {through / max(direct, 1e-6):5.1f}x")
        from publish.pipeline import checks

        started = time.perf_counter()
        blocking = checks.blocking_problems(paths)
        print(f"blocking checks inside publish_all: {time.perf_counter() - started:.1f} s "
              f"({'none failing' if not blocking else blocking})")
        changes_rows = sqlite3.connect(paths.public / "archive.db").execute("select count(*), "
                                                                            "sum(label != 'flat') from changes").fetchone()
        print(f"changes table: {changes_rows[0]:,} consecutive on-curve pairs, {changes_rows[1] or 0:,} called changes")
        return 0 if build_s <= BUILD_TARGET_S and worst <= QUERY_TARGET_MS else 1
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
