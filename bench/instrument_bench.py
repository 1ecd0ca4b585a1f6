"""Benchmark: the daily instrument on this machine — what one day of self-checks costs.

The daily instrument is (method §7) the runtime fingerprint (12 fixed prompts,
greedy, top-5 logprobs per generated token) plus one guard protocol on the
reference model (4 versions × n = 120 calls at the protocol's frozen
``max_tokens``).  This script runs both for real, on the embedded reference
model, in a throw-away archive home, and prints:

* the fingerprint's wall time, against a baseline measured in the same run:
  the same 12 prompts as plain greedy completions (``create_completion``,
  no logprobs) on the reference subject — the ratio is what recording every
  step's top-5 logprobs costs;
* the guard protocol's wall time through the guard rotation (runner, trial
  log, measurement, comparison), per call;
* the daily total, and what a month of it is against a 2,000-minute monthly
  CI allowance (method §7 sizes the rotation for that reason).

Run: ``.venv/bin/python bench/instrument_bench.py`` (about 4–6 minutes on
two cores).  ``--protocol`` picks the guard protocol (default: the first in
rotation order); ``--threads`` / ``--batch`` set llama.cpp's (recorded) values.
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from llmarchive.protocols import registry
from llmarchive.cli import main as cli  # noqa: E402
from llmarchive.instrument.fingerprint import default_engine_factory, runtime_fingerprint  # noqa: E402
from llmarchive.instrument.prompts import FINGERPRINT_MAX_TOKENS, FINGERPRINT_PROMPTS  # noqa: E402
from llmarchive.instrument.rotation import guard_rotation, rotation_order  # noqa: E402
from llmarchive.archive.paths import ArchivePaths  # noqa: E402
from panels.build import all_protocol_ids  # noqa: E402
from panels.lanes import planned_lane  # noqa: E402

FREE_MINUTES = 2000


def admit_v0(paths: ArchivePaths) -> None:
    import contextlib
    import io

    for pid in all_protocol_ids():
        if pid.endswith("__v0"):
            lane, _ = planned_lane(pid)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                code = cli(["panels", "promote", pid, "--lane", lane, "--human-reviewed", "--reviewer", "bench"])
            if code != 0:
                raise SystemExit(f"could not admit {pid} (gate 1/1b with this seed); set LLMARCHIVE_PANEL_SEED")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--protocol", help="guard protocol to run (default: first in rotation order)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="instrument-bench-"))
    os.environ["LLMARCHIVE_HOME"] = str(home)
    os.environ.setdefault("LLMARCHIVE_PANEL_SEED", "instrument bench guard seed, not a secret")
    paths = ArchivePaths.from_env().ensure()
    registry.build_all(paths)
    admit_v0(paths)
    order = rotation_order(registry.list_protocols(paths), "v0")
    pid = args.protocol or order[0]

    # Baseline: the same 12 prompts as plain greedy completions on the reference subject.
    from llmarchive.subjects import ReferenceSettings, ReferenceSubject

    plain = ReferenceSubject(FINGERPRINT_MAX_TOKENS, settings=ReferenceSettings(n_threads=args.threads,
                                                                                 n_batch=args.batch, n_ctx=512))
    t0 = time.monotonic()
    plain_tokens = sum(plain.call(prompt).output_tokens or 0 for _, prompt in FINGERPRINT_PROMPTS)
    baseline_s = time.monotonic() - t0
    del plain

    factory = default_engine_factory(n_threads=args.threads, n_batch=args.batch)
    t0 = time.monotonic()
    first = runtime_fingerprint(paths, "2026-11-01", factory)
    fp_s = time.monotonic() - t0
    t0 = time.monotonic()
    second = runtime_fingerprint(paths, "2026-11-02", factory)
    fp2_s = time.monotonic() - t0
    assert (first.status, second.status) == ("established", "pass"), (first.status, second.status)

    t0 = time.monotonic()
    record = guard_rotation(paths, "2026-11-02", protocol_id=pid,
                            reference_options={"n_threads": args.threads, "n_batch": args.batch})
    guard_s = time.monotonic() - t0
    assert record["verdict"] == "baseline", record
    protocol = registry.load_protocol(paths, pid)
    calls = 4 * protocol["n"]

    day_s = fp2_s + guard_s
    month_min = 30 * day_s / 60
    print(f"machine: {os.cpu_count()} cores; threads {args.threads}, batch {args.batch}; archive {home}")
    print(f"runtime fingerprint, 12 prompts, top-5 logprobs per token: {fp_s:.1f} s (first, establishes), "
          f"{fp2_s:.1f} s (second, passes: identical digest)")
    print(f"  baseline, same 12 prompts as plain greedy completions: {baseline_s:.1f} s "
          f"({plain_tokens} tokens) -> ratio {fp2_s / baseline_s:.2f}x")
    print(f"guard protocol {pid} on the reference model: {calls} calls at max_tokens "
          f"{protocol['generation']['max_tokens']}, {guard_s:.1f} s ({guard_s / calls:.2f} s per call); "
          f"stability_pct {record['stability_pct']}")
    print(f"daily instrument (fingerprint + one guard protocol): {day_s:.1f} s = {day_s / 60:.1f} min; "
          f"30 days: {month_min:.0f} min = {100 * month_min / FREE_MINUTES:.0f} % of a {FREE_MINUTES}-minute "
          "monthly CI allowance")


if __name__ == "__main__":
    main()
