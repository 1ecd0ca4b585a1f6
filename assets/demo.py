"""``make demo``: the main pipeline on the embedded model, through Dagster, in process.

A fresh clone has no key, no network and no admitted protocol.  The demo

1. builds and checks the 24 protocols (the ``protocols`` asset and its checks);
2. admits the twelve ``v0`` protocols by SPEC's lane rule as a *demonstration*
   (:mod:`llmarchive.demo`: every admission names the demo, not a reviewer)
   and writes the pre-registration manifest;
3. runs today's instrument: the runtime fingerprint and the guard rotation
   on the reference model, and the revalidation;
4. adds the reference model's generation partition and materialises the
   open-weights series — both open ``v0`` protocols, 240 calls — on it;
5. computes this month's coverage and publishes everything;

then prints where the database, the CSV files and the site are, and how to
browse them.  State goes to ``$LLMARCHIVE_HOME`` (default ``var/``) and Dagster's
to ``$DAGSTER_HOME`` (default ``$LLMARCHIVE_HOME/dagster``), so the UI started
by ``make serve`` shows these runs.  Running it again resumes: finished runs
are not repeated.
"""
import os
import sys
import time
from typing import Optional

from dagster import DagsterInstance, materialize

from assets.dagster_home import ensure_dagster_home
from assets.definitions_builder import ASSETS, CHECKS, default_resources
from llmarchive import open_weights as ow
from llmarchive import progress
from llmarchive.demo import DEMO_REVIEWER, admit_demo_protocols
from llmarchive.models import EMBEDDED_SHA256
from llmarchive.paths import ArchivePaths
from llmarchive.records import utc_today

def dagster_instance(paths: ArchivePaths) -> DagsterInstance:
    """The persistent instance ``make serve`` shows (see :mod:`assets.dagster_home`)."""
    ensure_dagster_home(paths)
    return DagsterInstance.get()


def _step(title: str, instance: DagsterInstance, selection: list[str], resources: dict,
          partition_key: Optional[str] = None, run_config: Optional[dict] = None,
          log_level: str = "INFO") -> float:
    print(f"\n== {title}", flush=True)
    started = time.monotonic()
    # INFO, not Dagster's DEBUG event stream: the steps' own progress lines stay readable.
    config = {**(run_config or {}), "loggers": {"console": {"config": {"log_level": log_level}}}}
    result = materialize(ASSETS + CHECKS, selection=selection, partition_key=partition_key, resources=resources,
                         instance=instance, run_config=config, raise_on_error=True)
    for evaluation in result.get_asset_check_evaluations():
        print(f"   check {evaluation.asset_key.to_user_string()}:{evaluation.check_name} "
              f"{'passed' if evaluation.passed else 'FAILED'}")
    elapsed = time.monotonic() - started
    print(f"   done in {elapsed:.0f} s", flush=True)
    return elapsed


def run_demo(home: Optional[str] = None, protocols: Optional[list[str]] = None,
             max_tokens: Optional[int] = None) -> dict:
    """Run the demo pipeline; return the timings per step (seconds)."""
    paths = ArchivePaths.from_env(home).ensure()
    os.environ["LLMARCHIVE_HOME"] = str(paths.home)
    instance = dagster_instance(paths)
    resources = default_resources()
    timings: dict[str, float] = {}
    today = utc_today()

    timings["protocols"] = _step("protocols: build the 24 protocols and run gates 1, 1b, twins, leak",
                                 instance, ["protocols"], resources)
    admitted = admit_demo_protocols(paths)
    if admitted:
        print(f"   admitted {len(admitted)} v0 protocols as a demonstration (reviewer: {DEMO_REVIEWER!r})")
    else:
        print("   the v0 protocols were already admitted (an earlier demo run)")
    timings["manifest"] = _step("pre-registration manifest", instance, ["preregistration_manifest"], resources)

    timings["instrument"] = _step(f"instrument for {today}: runtime fingerprint, guard rotation, revalidation",
                                  instance, ["runtime_fingerprint", "guard_rotation", "revalidation"], resources,
                                  partition_key=today)

    reference = resources["reference_model"]
    generation = ow.generation_id_for_model(reference.model, reference.model_sha256 or EMBEDDED_SHA256)
    instance.add_dynamic_partitions("generation", [generation])
    config = {"protocols": protocols, "max_tokens": max_tokens}
    # The open-weights step runs in this process: when the demo's stderr is a terminal it
    # draws a progress bar there (llmarchive.progress, asked for through the environment),
    # and Dagster's own INFO lines, which would write through the bar, wait for warnings.
    if sys.stderr.isatty():
        os.environ.setdefault(progress.ENV_VAR, "terminal")
    bar = sys.stderr.isatty() and os.environ.get(progress.ENV_VAR) == "terminal"
    timings["open_weights"] = _step(
        f"open-weights series, generation {generation}: the open v0 protocols on the reference model",
        instance, ["open_weights_trials", "open_weights_measurements"], resources, partition_key=generation,
        run_config={"ops": {"open_weights_trials": {"config": config},
                            "open_weights_measurements": {"config": {"protocols": protocols}}}},
        log_level="WARNING" if bar else "INFO")

    timings["coverage"] = _step("coverage of this month", instance, ["coverage"], resources,
                                partition_key=today[:7] + "-01")
    timings["publication"] = _step("publication", instance, ["public_archive"], resources)

    public = paths.public
    print(f"""
Published under {public}:
  database   {public / 'archive.db'}
  CSV files  {public / 'stability.csv'}, {public / 'outcomes.csv'}, {public / 'coverage.csv'}
  open lane  {public / 'open-lane'}/
  metadata   {public / 'croissant.json'}, {public / 'status.json'}
  site       {public / 'index.html'}  (one static file: open it in a browser)

Browse:
  make serve   Datasette on http://127.0.0.1:8001 (read-only SQL over archive.db)
               and the Dagster UI on http://127.0.0.1:3000 (these runs, assets, checks, schedules)
""")
    return timings


def main(argv: list[str]) -> int:
    started = time.monotonic()
    timings = run_demo()
    print(f"demo pipeline: {time.monotonic() - started:.0f} s in all "
          f"({', '.join(f'{k} {v:.0f} s' for k, v in timings.items())})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
