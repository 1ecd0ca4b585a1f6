"""Synthetic aged archives in the drill's shape, for ``bench/age_bench.py`` (a builder, not a benchmark).

Why a drill first: every record of an aged archive must be one the library
wrote, so the bench measures the archive production would hold, not a guess
at it.  The two-year drill is the closest thing to production this project
has (Dagster's own scheduler and sensors, the fake provider over HTTP, the
scripted reference engine), so the builder runs its loop for two *quiet*
months — no scripted event — and replicates the second:

1. **template** (:func:`make_template`, in a process of its own): the drill's
   loop from 2026-11-01 to 2027-01-01 12:00.  November is the archive's first
   month (admissions, pre-registration, the first watch); December is a month
   in steady state: 12 paid sweep partitions of 120 trials, each call's
   reservation and charge in the spend ledger, the daily instrument (runtime
   fingerprint, guard rotation and its run, revalidation), the daily subject
   fingerprint, the model watch, the lease sensor and the outside check, the
   month's coverage and publication on the 1st.
2. **build** (:func:`build`): November and December as the drill wrote
   them, then December again for every later month: every date moved to that
   month (ids move with them: run ids carry their date) and a record of a day
   the month does not have left out — except the guard rotation's records and
   runs, moved by whole days to the days whose due protocol is theirs
   (:class:`Rotation`).  Everything is written through the library's writers:
   each chained log's month as one batch (:func:`llmarchive.archive.jsonio.append_records`,
   which chains it again), each run folder through the store (its trial log
   chained again by :func:`llmarchive.archive.store.open_trial_log`, run.json
   with the log's new last hash, measurement.json rebuilt as
   :func:`measure.verify.recompute` rebuilds it — the bootstrap's seed follows
   the run id).  The spend ledger's checkpoint, earmarks and locks are not
   carried over: the code under test writes its own as it goes.
3. **homes** (:func:`home_at`): the home as it stood at 00:00 on the 1st after
   each of :data:`SNAPSHOTS` months is copied aside while the build goes.

The template is cached under ``/dev/shm/llmarchive-age/template-v1/`` (minutes
to make), the built archive and its homes under a folder named by the digest of
this file and of ``llmarchive/archive/`` (a new store may keep an index beside
what it writes, so another store builds them again).
Run ``python bench/aged_archive.py`` to build them and print their sizes.
"""
import argparse
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MONTHS = 120
START = "2026-11"            # the template's first month (the drill's start); month index 0
TEMPLATE = "2026-12"         # the month replicated (index 1)
CACHE_ROOT = Path(os.environ.get("LLMARCHIVE_AGE_CACHE", "/dev/shm/llmarchive-age"))
HASH_FIELDS = ("prev_sha256", "record_sha256")
_DATE = re.compile(r"(20[0-9]{2})-([01][0-9])(?:-([0-3][0-9]))?")


def cache_dir() -> Path:
    """Where the template is kept: it depends on the drill, not on this builder (a change here keeps it)."""
    return CACHE_ROOT / "template-v1"


# --------------------------------------------------------------------------
# months
# --------------------------------------------------------------------------

def month_of(index: int) -> str:
    """``YYYY-MM`` of month ``index`` (0 is :data:`START`)."""
    year, month = int(START[:4]), int(START[5:]) - 1 + index
    return f"{year + month // 12}-{month % 12 + 1:02d}"


def index_of(month: str) -> int:
    return (int(month[:4]) - int(START[:4])) * 12 + int(month[5:7]) - int(START[5:])


def month_days(month: str) -> int:
    first = dt.date(int(month[:4]), int(month[5:7]), 1)
    return ((first + dt.timedelta(days=32)).replace(day=1) - first).days


def first_instant(months: int) -> str:
    """The ISO instant at which an archive of ``months`` months is cut: 00:00 on the 1st of month ``months``."""
    return f"{month_of(months)}-01T00:00:00Z"


class Dropped(Exception):
    """A record that names a day its target month does not have (the 29th–31st)."""


def shifter(index: int):
    """The text substitution moving the template month to month ``index`` (its neighbours move with it)."""
    offset = index - index_of(TEMPLATE)
    lengths: dict[str, int] = {}

    def move(match: re.Match) -> str:
        year, month, day = match.group(1), match.group(2), match.group(3)
        try:
            source = index_of(f"{year}-{month}")
        except ValueError:
            return match.group(0)
        if not 1 <= int(month) <= 12 or abs(source - index_of(TEMPLATE)) > 2:
            return match.group(0)          # not a date near the template's month: kept
        target = month_of(source + offset)
        if day is None:
            return target
        if int(day) > lengths.setdefault(target, month_days(target)):
            raise Dropped(target + "-" + day)
        return f"{target}-{day}"

    def apply(text: str) -> str:
        return _DATE.sub(move, text)
    return apply


def _day(text: str) -> dt.date:
    return dt.date.fromisoformat(text[:10])


def day_shifter(days: int, months: int):
    """The text substitution moving every date by ``days`` days and every bare month by ``months`` months."""
    def move(match: re.Match) -> str:
        year, month, day = match.group(1), match.group(2), match.group(3)
        if not 1 <= int(month) <= 12:
            return match.group(0)
        if day is None:
            return month_of(index_of(f"{year}-{month}") + months)
        return (_day(match.group(0)) + dt.timedelta(days=days)).isoformat()

    def apply(text: str) -> str:
        return _DATE.sub(move, text)
    return apply


class Rotation:
    """The guard rotation's days: a guard protocol is due on a day by its distance from the rotation's epoch
    (:func:`llmarchive.instrument.rotation.scheduled_protocol`), so a rotation record or run is not moved by
    whole months but to each target day whose due protocol is its own: from the source month's day of the same
    place in the cycle, nearest in the month."""

    def __init__(self, length: int) -> None:
        self.length = length

    def source_for(self, target: dt.date, source_month: str) -> dt.date:
        first = _day(f"{source_month}-01")
        days = [first + dt.timedelta(days=i) for i in range(month_days(source_month))]
        same = [d for d in days if (target - d).days % self.length == 0]
        return min(same, key=lambda d: abs(d.day - target.day))

    def targets(self, source: dt.date, k: int) -> list[dt.date]:
        """The days of the month ``k`` months after the template's that take the record of ``source``."""
        offset = k - index_of(TEMPLATE)
        month = month_of(index_of(source.isoformat()[:7]) + offset)
        first = _day(f"{month}-01")
        days = [first + dt.timedelta(days=i) for i in range(month_days(month))]
        return [t for t in days if self.source_for(t, source.isoformat()[:7]) == source]


def _rotation_day(record: dict) -> Optional[dt.date]:
    """The day a record belongs to in the guard rotation (None: not a rotation record)."""
    if record.get("record_type") == "guard_rotation" and record.get("date"):
        return _day(str(record["date"]))
    if record.get("job") == "guard_margin_rotation" and len(str(record.get("period") or "")) == 10:
        return _day(str(record["period"]))
    return None


# --------------------------------------------------------------------------
# 1. the template: two quiet months of the drill
# --------------------------------------------------------------------------

def make_template(root: Path) -> dict:
    """Run the drill's loop for two months with no scripted event under ``root`` (this process); its verdicts."""
    import contextlib

    from scripts.drill import run
    from scripts.drill_script import Expect, Script, at

    script = Script(name="two quiet months", start=at(f"{START}-01T00:00"), end=at("2027-01-01T12:00"),
                    events=(), expect=Expect())
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "drill.log", "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink), \
            contextlib.redirect_stderr(sink):
        outcome = run(script, root, dt.timedelta(hours=12))
    return {"seconds": round(outcome.seconds, 1), "verdicts": [[n, ok, d] for n, ok, d in outcome.verdicts],
            "month_seconds": outcome.month_seconds}


def template(log=print) -> Path:
    """The template home (built once, in a subprocess: the drill moves this process's clock)."""
    root = cache_dir() / "template"
    done = root / "template.json"
    if not done.exists():
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        log(f"building the template: two quiet months of the drill under {root} (a few minutes)")
        started = time.monotonic()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--template", str(root)], check=True, env=env,
                       cwd=ROOT)
        log(f"  template built in {time.monotonic() - started:.0f} s")
    return root / "archive"


# --------------------------------------------------------------------------
# 2. the full archive
# --------------------------------------------------------------------------

def _records(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _when(record: dict) -> str:
    return str(record.get("recorded_at") or record.get("started_at") or record.get("finished_at") or "")


def _chained(records: list[dict]) -> bool:
    return bool(records) and all("record_sha256" in r for r in records)


def _split(records: list[dict], first: str, after: str) -> tuple[int, int]:
    """Index of the first record of the template month and of the first after it (prefix cuts, in log order)."""
    begin = next((i for i, r in enumerate(records) if _when(r) >= first), len(records))
    end = next((i for i in range(begin, len(records)) if _when(records[i]) >= after), len(records))
    return begin, end


def _unchained(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in HASH_FIELDS}


def _shifted(record: dict, shift) -> dict:
    return json.loads(shift(json.dumps(record, ensure_ascii=False)))


def _log_files(home: Path) -> list[Path]:
    """Every chained log outside the run folders (record logs, the spend ledger, the admissions, …)."""
    out = []
    for path in sorted(home.rglob("*.jsonl")):
        if (path.parent / "run.json").exists():
            continue
        try:
            if _chained(_records(path)):
                out.append(path)
        except (OSError, ValueError):
            continue
    return out


def _run_folders(home: Path) -> list[Path]:
    return sorted(p.parent for p in home.rglob("run.json"))


def _run_time(folder: Path) -> str:
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    return str(run.get("started_at") or run.get("run_date") or "")


def _write_run(source: Path, home: Path, relative: Path, shift) -> Optional[Path]:
    """One run folder moved by ``shift``, written through the store: its trial log chained again
    (:func:`store.open_trial_log`), run.json and measurement.json brought to it."""
    from llmarchive.archive import store
    from measure.measurement import build as build_measurement
    from measure.verify import run_from_measurement

    try:
        name = shift(relative.name)
        run = _shifted(json.loads((source / "run.json").read_text(encoding="utf-8")), shift)
        trials_in = _records(source / "trials.jsonl") if (source / "trials.jsonl").exists() else []
        trials_in = [_shifted(_unchained(t), shift) for t in trials_in]
    except Dropped:
        return None
    folder = home / relative.parent / name
    folder.mkdir(parents=True, exist_ok=True)
    trials = store.open_trial_log(folder).extend(trials_in) if trials_in else []
    if trials and "trials_last_sha256" in run:
        run["trials_last_sha256"] = trials[-1]["record_sha256"]
    store.write_run(folder, run)
    measurement_path = source / "measurement.json"
    if measurement_path.exists():
        measurement = _shifted(json.loads(measurement_path.read_text(encoding="utf-8")), shift)
        # What measure.verify.recompute rebuilds, rebuilt the same way: the bootstrap's seed follows the run id.
        header = dict(run.get("protocol_header") or {})
        header.update(lane=measurement.get("lane"), twin_id=measurement.get("twin_id"),
                      status=measurement.get("protocol_status"))
        measurement.update(build_measurement(header, [t for t in trials if t.get("record_type") == "trial"],
                                             run_from_measurement(measurement)))
        store.write_measurement(folder, measurement)
    return folder


# What the builder does not carry over from the template: published files (each bench builds its own), the
# ledger's checkpoint, earmarks and locks (state the code under test writes as it goes).
NOT_COPIED = ("public", "*.jsonl", "run.json", "trials.jsonl", "measurement.json", "*.lock", ".lock",
              "spend_checkpoint*", "spend.checkpoint*", "earmarks")


def writer_sources() -> str:
    """A digest of the library's writers: an archive built by other writers is built again (a new store may
    keep an index or checkpoints beside what it writes)."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for path in sorted((ROOT / "llmarchive" / "archive").glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build(months: int, snapshots: tuple[int, ...], out: Path, log=print) -> dict:
    """Write a ``months``-month archive month by month through the library's writers, copying the home as it
    stands at 00:00 on the 1st after each of ``snapshots`` months to ``out/home-<n>m``; what it took."""
    from llmarchive.archive import jsonio

    source = template(log)
    started = time.monotonic()
    work = out / "building"
    if work.exists():
        shutil.rmtree(work)
    home = work / "archive"
    shutil.copytree(source, home, ignore=shutil.ignore_patterns(*NOT_COPIED))
    first, after = f"{TEMPLATE}-01T00:00:00Z", f"{month_of(index_of(TEMPLATE) + 1)}-01T00:00:00Z"
    logs = []
    chained = _log_files(source)
    for path in chained:
        records = _records(path)
        begin, end = _split(records, first, after)
        logs.append((path.relative_to(source), records[:begin], records[begin:end]))
    for path in source.rglob("*.jsonl"):        # a JSONL file that is no chain (none today) is kept as it is
        if path not in chained and not (path.parent / "run.json").exists():
            (home / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, home / path.relative_to(source))
    runs: dict[int, list[tuple[Path, Path]]] = {0: [], 1: []}
    for folder in _run_folders(source):
        when = _run_time(folder)
        if when < after:
            runs[0 if when < first else 1].append((folder, folder.relative_to(source)))
    made = {}
    from llmarchive.archive import ArchivePaths
    from llmarchive.instrument.rotation import rotation_order
    from llmarchive.protocols import registry
    from publish import workers

    length = len(rotation_order(registry.list_protocols(ArchivePaths(source))))
    rotation = Rotation(length)

    with workers.pool(2) as pool:
        for k in range(months + 1):
            if k in snapshots:
                made[k] = _snapshot(home, out / f"home-{k}m", k)
            if k == months:
                break
            for relative, base, month in logs:
                batch = _moved(base if k == 0 else month, k, rotation)
                if batch:
                    jsonio.append_records(home / relative, batch)
            # the month's run folders in the two workers (a folder is independent of every other)
            jobs = [(str(folder), str(home), str(relative), k, length) for folder, relative in runs[0 if k == 0 else 1]]
            list(pool.map(_write_run_job, jobs, chunksize=4))
    shutil.rmtree(work)
    return {"seconds": round(time.monotonic() - started, 1), "homes": made}


def _moved(records: list[dict], k: int, rotation: Rotation) -> list[dict]:
    """``records`` moved to month ``k`` (month 0, the template's first, as it is), without their chain fields;
    a record of a day month ``k`` does not have is left out, a rotation record goes to the days that take it
    (:class:`Rotation`), in order."""
    if k <= index_of(TEMPLATE):
        return [_unchained(r) for r in records]
    shift = shifter(k)
    out = []
    for r in records:
        day = _rotation_day(r)
        if day is not None:
            for target in rotation.targets(day, k):
                out.append(_shifted(_unchained(r), day_shifter((target - day).days, k - index_of(TEMPLATE))))
            continue
        try:
            moved = _shifted(_unchained(r), shift)
        except Dropped:
            continue
        out.append(moved)
        out += _last_days(r, moved)
    if any(r.get("record_type") == "guard_rotation" for r in out):
        out.sort(key=lambda r: str(r.get("recorded_at")))
    return out


def _last_days(source: dict, moved: dict) -> list[dict]:
    """The coverage rows of the days a longer month has after the source month's last (the 31st after a
    November): copies of the last day's row, their period moved (the 1st writes last month's rows, and the
    template's 1st wrote November's)."""
    period = str(source.get("period") or "")
    if source.get("record_type") not in ("coverage", "coverage_gap") or len(period) != 10:
        return []
    if int(period[8:]) != month_days(period[:7]):
        return []
    target = str(moved["period"])
    extra = []
    for day in range(int(target[8:]) + 1, month_days(target[:7]) + 1):
        text = json.dumps({k: v for k, v in moved.items() if k != "recorded_at"}, ensure_ascii=False)
        copy = json.loads(text.replace(target, f"{target[:8]}{day:02d}"))
        extra.append({**copy, "recorded_at": moved["recorded_at"]})
    return extra


def _write_run_job(job: tuple) -> list[str]:
    """One template run folder written for month ``k``: once, or for a rotation run once per day that takes it."""
    folder, home, relative, k, length = job
    if k <= index_of(TEMPLATE):
        shifts = [lambda text: text]
    elif Path(relative).name.startswith("rotation_"):
        run = json.loads((Path(folder) / "run.json").read_text(encoding="utf-8"))
        day = _day(str(run["run_date"]))
        shifts = [day_shifter((t - day).days, k - index_of(TEMPLATE)) for t in Rotation(length).targets(day, k)]
    else:
        shifts = [shifter(k)]
    made = [_write_run(Path(folder), Path(home), Path(relative), shift) for shift in shifts]
    return [str(m) for m in made if m is not None]


def _snapshot(home: Path, target: Path, k: int) -> dict:
    """The home as it stands, copied to ``target/archive``; its size."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(home, target / "archive", symlinks=True)
    files, mb = size_of(target / "archive")
    (target / ".age-cut").write_text(first_instant(k) + "\n", encoding="utf-8")
    return {"files": files, "mb": round(mb, 1), "at": first_instant(k)}


SNAPSHOTS = (11, 12, 23, 24, 59, 60, 119, 120)   # each age and the month before it (last month's publication)


def home_at(months: int, log=print) -> Path:
    """The archive as it stood at 00:00 on the 1st after ``months`` months (one of :data:`SNAPSHOTS`; cached)."""
    if months not in SNAPSHOTS:
        raise ValueError(f"homes are cut at {SNAPSHOTS} months, not {months}")
    out = CACHE_ROOT / writer_sources()
    done = out / "built.json"
    if not done.exists():
        log(f"building the {MONTHS}-month archive through the library's writers under {out}")
        found = build(MONTHS, SNAPSHOTS, out, log)
        done.write_text(json.dumps(found, indent=1), encoding="utf-8")
        log(f"  built in {found['seconds']:.0f} s")
    return out / f"home-{months}m" / "archive"


def built_facts() -> dict:
    """What the cached build took (seconds) and each home's size."""
    done = CACHE_ROOT / writer_sources() / "built.json"
    return json.loads(done.read_text(encoding="utf-8")) if done.exists() else {}


def size_of(home: Path) -> tuple[int, float]:
    """(files, MB) under ``home``."""
    files, size = 0, 0
    for path in home.rglob("*"):
        if path.is_file():
            files += 1
            size += path.stat().st_size
    return files, size / 1e6


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--template", help=argparse.SUPPRESS)
    parser.add_argument("--months", default="12,60,120", help="cut homes at these ages in months (default 12,60,120)")
    args = parser.parse_args(argv)
    if args.template:
        import time_machine  # noqa: F401  (the drill needs it; fail here, early, when it is missing)

        found = make_template(Path(args.template))
        (Path(args.template) / "template.json").write_text(json.dumps(found, indent=1), encoding="utf-8")
        print(json.dumps(found["verdicts"]))
        return 0
    for months in (int(m) for m in args.months.split(",")):
        started = time.monotonic()
        home = home_at(months)
        files, mb = size_of(home)
        print(f"{months:>4} months: {home} — {files:,} files, {mb:,.0f} MB (cut in {time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
