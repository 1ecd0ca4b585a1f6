"""``make demo``: the main pipeline on the embedded model, through Dagster, in process.

A fresh clone has no key, no network and no admitted protocol.  The demo

1. builds and checks the 24 protocols (one partition of the ``protocols``
   asset each, with its gate checks);
2. admits the twelve ``v0`` protocols by SPEC's lane rule as a *demonstration*
   (:mod:`scripts.demo_archive`: every admission names the demo, not a reviewer),
   writes the pre-registration manifest and records it as its partition;
3. runs today's instrument: the runtime fingerprint — and, when that first
   fingerprint only established the expectation, the fingerprint once more,
   a real run compared with it exactly as tomorrow's cycle would, so the
   day's verdict is earned rather than assumed — then the guard rotation on
   the reference model and the revalidation;
4. adds the reference model's generation partition and materialises the
   open-weights series — both open ``v0`` protocols, 240 calls — on it;
5. files comparison points for three simulated readers with known answers
   through the outsider's route (the published panel file, a local
   OpenAI-compatible server, ``comparison run``, ``comparison submit``);
6. computes this month's coverage and publishes everything;

then says in plain words what was measured, what is on or off the curve and
why, the known-answer table, and where to look.  Each step prints its
verdicts as it goes; a step that runs the model reports its progress (a bar
on a terminal, a line every few trials in Dagster's log otherwise).  State
goes to ``$LLMARCHIVE_HOME`` (default ``var/``) and Dagster's to
``$DAGSTER_HOME`` (default ``$LLMARCHIVE_HOME/dagster``), so the UI started by
``make serve`` shows these runs.  Running it again resumes: finished runs are
not repeated.
"""
import os
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator, Optional

from dagster import DagsterInstance, Failure, materialize

from scripts import demo_console as console
from llmarchive.schedule import ensure_dagster_home
from assets.definitions_builder import ASSETS, CHECKS, default_resources
from assets.partitions import MANIFESTS
from llmarchive.archive import ArchivePaths, load_run, open_weights_run_id, utc_today
from llmarchive.schedule import open_weights as ow
from llmarchive.run import progress
from scripts.demo_archive import (DEMO_REVIEWER, KNOWN_ANSWER_PROTOCOL, KnownAnswerPoint, admit_demo_protocols,
                                  closing_block, file_known_answer_points, outsider_paths)
from llmarchive.instrument import day_verdict
from llmarchive.protocols import prereg, registry
from llmarchive.subjects import EMBEDDED_SHA256
from panels.build import all_protocol_ids
from publish.data import panels as panel_files


def dagster_instance(paths: ArchivePaths) -> DagsterInstance:
    """The persistent instance ``make serve`` shows (see :mod:`llmarchive.schedule.dagster_home`)."""
    ensure_dagster_home(paths)
    return DagsterInstance.get()


class Steps:
    """Prints each step's title and time, and keeps the timings."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    @contextmanager
    def step(self, key: str, title: str) -> Iterator[None]:
        print(f"\n== {title}", flush=True)
        started = time.monotonic()
        yield
        self.timings[key] = self.timings.get(key, 0.0) + time.monotonic() - started
        print(f"   done in {time.monotonic() - started:.0f} s", flush=True)


def _materialize(instance: DagsterInstance, selection: list[str], resources: dict, partition_key: Optional[str] = None,
                 run_config: Optional[dict] = None, log_level: str = "INFO") -> Any:
    # INFO, not Dagster's DEBUG event stream: the steps' own progress lines stay readable.
    config = {**(run_config or {}), "loggers": {"console": {"config": {"log_level": log_level}}}}
    return materialize(ASSETS + CHECKS, selection=selection, partition_key=partition_key, resources=resources,
                       instance=instance, run_config=config, raise_on_error=True)


def _bar_drawn() -> bool:
    """Whether model steps draw a bar on the terminal (then Dagster's INFO lines, which would cut it, wait)."""
    return sys.stderr.isatty() and os.environ.get(progress.ENV_VAR) == "terminal"


def protocols_step(instance: DagsterInstance, resources: dict) -> None:
    results = [_materialize(instance, ["protocols"], resources, partition_key=pid, log_level="WARNING")
               for pid in all_protocol_ids()]
    for line in console.protocol_checks_line(results):
        print(line)


def manifest_step(paths: ArchivePaths, instance: DagsterInstance, resources: dict) -> None:
    path, written, notes = prereg.write_admitted_manifest(paths)
    for note in notes:
        print(f"   {note}")
    if path is None:
        return
    key = prereg.manifest_key(path)
    instance.add_dynamic_partitions(MANIFESTS, [key])
    meta = console.metadata(_materialize(instance, ["preregistration_manifest"], resources, partition_key=key,
                                         log_level="WARNING"), "preregistration_manifest")
    print(f"   manifest partition {key}: {meta.get('protocols_listed')} protocols listed (hashes only), "
          f"OpenTimestamps {meta.get('stamp_status')} (stamping needs a calendar: `llmarchive prereg stamp`)")


def fingerprint_step(instance: DagsterInstance, resources: dict, today: str) -> list[str]:
    """The day's runtime fingerprint; when it only established the expectation, a second real run compared with it.

    The first fingerprint an archive ever runs has nothing to be compared
    with (method §7: the day does not count as passing).  Tomorrow's cycle
    would run it again and compare; the demo does that now, so the day's
    verdict rests on a comparison that was made.  The second run is recorded
    like any other and can fail like any other.  Returns the statuses.
    """
    level = "WARNING" if _bar_drawn() else "INFO"
    meta = console.metadata(_materialize(instance, ["runtime_fingerprint"], resources, partition_key=today,
                                         log_level=level), "runtime_fingerprint")
    print(f"   runtime fingerprint: {meta.get('status')} — {meta.get('reason')}")
    statuses = [meta.get("status")]
    if meta.get("status") == "established":
        meta = console.metadata(_materialize(instance, ["runtime_fingerprint"], resources, partition_key=today,
                                             log_level=level), "runtime_fingerprint")
        print(f"   runtime fingerprint, checked once more against it as tomorrow's cycle would: {meta.get('status')} "
              f"— {meta.get('reason')}")
        statuses.append(meta.get("status"))
    return statuses


def instrument_step(paths: ArchivePaths, instance: DagsterInstance, resources: dict, today: str) -> None:
    level = "WARNING" if _bar_drawn() else "INFO"
    fingerprint_step(instance, resources, today)
    result = _materialize(instance, ["guard_rotation", "revalidation"], resources, partition_key=today,
                          log_level=level)
    rotation, revalidated = console.metadata(result, "guard_rotation"), console.metadata(result, "revalidation")
    print(f"   guard rotation: {rotation.get('protocol_id')}: {rotation.get('verdict')} — {rotation.get('reason')}")
    print(f"   revalidation: {len(revalidated.get('revalidated') or [])} historical measurement(s) recomputed, "
          f"{revalidated.get('differing')} differ")
    verdict = day_verdict(paths, today)
    print(f"   the instrument's verdict on {today}: "
          f"{'passing — measurements made today are vouched for' if verdict.passing else verdict.reason}")


def open_weights_step(paths: ArchivePaths, instance: DagsterInstance, resources: dict, generation: str,
                      protocols: Optional[list[str]], max_tokens: Optional[int]) -> list[dict]:
    config = {"protocols": protocols, "max_tokens": max_tokens}
    result = _materialize(instance, ["open_weights_trials", "open_weights_measurements"], resources,
                          partition_key=generation,
                          run_config={"ops": {"open_weights_trials": {"config": config},
                                              "open_weights_measurements": {"config": {"protocols": protocols}}}},
                          log_level="WARNING" if _bar_drawn() else "INFO")
    measured = own_measurements(paths, generation, protocols)
    for m in measured:
        print(console.outcome_line(m))
    model = resources["reference_model"].model
    for line in console.check_lines(result.get_asset_check_evaluations(), measured, model=model):
        print(line)
    return measured


def own_measurements(paths: ArchivePaths, generation: str, protocols: Optional[list[str]] = None) -> list[dict]:
    """The generation's complete measurements of the open ``v0`` protocols, as stored."""
    out = []
    for protocol in ow.open_protocols(paths, "v0", protocols):
        folder = load_run(paths.run_dir(open_weights_run_id(generation, protocol["protocol_id"])))
        if folder.measurement is not None:
            out.append(folder.measurement)
    return out


def known_answers_step(paths: ArchivePaths, today: Optional[str] = None) -> list[KnownAnswerPoint]:
    """Publish the open panel file as publication would, then file the three readers through the outsider route."""
    published = panel_files.files(paths, registry.list_protocols(paths))
    name = panel_files.file_name(KNOWN_ANSWER_PROTOCOL)
    if name not in published:
        print(f"   {KNOWN_ANSWER_PROTOCOL} is not in the open lane: no panel file to run")
        return []
    panel = outsider_paths(paths).home / name
    panel.parent.mkdir(parents=True, exist_ok=True)
    if not panel.exists() or panel.read_bytes() != published[name]:
        panel.write_bytes(published[name])
    print(f"   the outsider's panel file: {panel} (the bytes publication writes to public/{name})")
    return file_known_answer_points(paths, panel, today=today)


def run_demo(home: Optional[str] = None, protocols: Optional[list[str]] = None,
             max_tokens: Optional[int] = None) -> dict:
    """Run the demo pipeline; return the timings per step (seconds)."""
    paths = ArchivePaths.from_env(home).ensure()
    os.environ["LLMARCHIVE_HOME"] = str(paths.home)
    instance = dagster_instance(paths)
    resources = default_resources()
    today = utc_today()
    # Steps that run the model draw a bar on the terminal when the demo's stderr is one (llmarchive.run.progress,
    # asked for through the environment); elsewhere they write a line every few trials to Dagster's log.
    if sys.stderr.isatty():
        os.environ.setdefault(progress.ENV_VAR, "terminal")
    steps = Steps()

    with steps.step("protocols", "protocols: build the 24 protocols and run gates 1, 1b, twins, leak, design readers"):
        protocols_step(instance, resources)
    admitted = admit_demo_protocols(paths)
    with steps.step("manifest", "pre-registration manifest"):
        if admitted:
            print(f"   admitted {len(admitted)} v0 protocols as a demonstration (reviewer: {DEMO_REVIEWER!r})")
        else:
            print("   the v0 protocols were already admitted (an earlier demo run)")
        manifest_step(paths, instance, resources)
    with steps.step("instrument", f"instrument for {today}: runtime fingerprint, guard rotation, revalidation "
                                  f"(the reference model: a few minutes to a quarter of an hour)"):
        instrument_step(paths, instance, resources, today)

    reference = resources["reference_model"]
    generation = ow.generation_id_for_model(reference.model, reference.model_sha256 or EMBEDDED_SHA256)
    instance.add_dynamic_partitions("generation", [generation])
    with steps.step("open_weights", f"open-weights series, generation {generation}: the open v0 protocols on the "
                                    f"reference model (240 calls: the longest step)"):
        own = open_weights_step(paths, instance, resources, generation, protocols, max_tokens)
    with steps.step("known_answers", "known answers: three simulated readers filed as an outsider files a model"):
        points = known_answers_step(paths, today)
    with steps.step("coverage", "coverage of this month"):
        meta = console.metadata(_materialize(instance, ["coverage"], resources, partition_key=today[:7] + "-01",
                                             log_level="WARNING"), "coverage")
        causes = ", ".join(f"{cause} {count}" for cause, count in (meta.get("gaps_by_cause") or {}).items())
        print(f"   {meta.get('rows')} scheduled job periods: {meta.get('ran')} ran, {meta.get('gaps')} gaps"
              + (f", each with its cause ({causes})" if causes else ""))
    with steps.step("publication", "publication"):
        result = _materialize(instance, ["public_archive"], resources, log_level="WARNING")
        meta = console.metadata(result, "public_archive")
        print(f"   {str(meta.get('files', '')).count('- `')} files published under {paths.public} (each listed with its "
              f"sha256 in render_manifest.json)")
        for line in console.check_lines(result.get_asset_check_evaluations()):
            print(line)

    verdict = day_verdict(paths, today)
    print(closing_block(points, own, model=reference.model, day=today,
                        instrument="passing (a runtime fingerprint matched its expectation; no alarm)"
                        if verdict.passing else f"not passing — {verdict.reason}", public=paths.public))
    print("Browse:\n  make serve   Datasette on http://127.0.0.1:8001 (read-only SQL over archive.db)\n"
          "               and the Dagster UI on http://127.0.0.1:3000 (these runs, assets, checks, schedules)\n")
    return steps.timings


def main(argv: list[str]) -> int:
    started = time.monotonic()
    try:
        timings = run_demo()
    except Failure as exc:
        # An expected refusal (a Dagster Failure) stops the demo with its sentence, not a stack trace.
        print(f"\nthe demo stopped: {exc.description}", file=sys.stderr)
        return 1
    print(f"demo pipeline: {time.monotonic() - started:.0f} s in all "
          f"({', '.join(f'{k} {v:.0f} s' for k, v in timings.items())})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
