"""What must hold before (and after) publication, as plain functions.

Each returns a list of problems in words (empty means the check passes).
``llmarchive publish --check`` prints them and the Dagster ``public_archive``
asset reports each as an asset check, so both read the same verdict.

* :func:`chain_problems` — every run's trial log and every bookkeeping log
  verifies as a hash chain from its first record.
* :func:`flagged_on_curve` — no measurement carries a flag and
  ``on_curve: true`` at once (the estimator never writes one; a hand edit
  would).
* :func:`unexplained_gaps` — every coverage row that is a gap names exactly
  one cause from the closed list.
* :func:`leak_problems` — no published byte carries guard or sealed wording
  (the leak guard, run again over ``public/`` as it stands), and
  ``public/panels/`` holds exactly the open protocols' panel files, each
  verifying against its own hashes and the registry's
  (:func:`publish.panels.published_problems`).
"""
from pathlib import Path
from typing import Optional

from llmarchive import records, store
from llmarchive.jsonio import RecordFileError, read_json, read_jsonl
from llmarchive.paths import ArchivePaths
from measure import chain
from measure.schema import GAP_CAUSES
from publish.errors import LeakError, PublishError
from publish.workers import pool

CHECKS = ("trial_log_chains", "no_flagged_measurement_on_curve", "coverage_gaps_have_causes", "leak_guard")
BLOCKING = CHECKS[:3]


def _run_folders(paths: ArchivePaths) -> list[Path]:
    return store.run_folders(paths.experiments)


def _log_problem(log: str) -> Optional[str]:
    try:
        chain.verify(read_jsonl(Path(log)))
    except (chain.ChainError, RecordFileError) as exc:
        return f"{log}: {exc}"
    except UnicodeDecodeError as exc:
        return f"{log}: not UTF-8 text (byte {exc.start})"
    return None


def chain_problems(paths: ArchivePaths) -> list[str]:
    """Every trial log and record log that does not verify from its first record.

    Ten years of runs are thousands of logs (460,800 trials in the
    benchmark's archive), so many logs are verified in two worker processes
    — clean ones (:mod:`publish.workers`), never forked from the caller,
    which may be a Dagster step or a server with threads of its own.
    """
    logs = [str(store.trial_log(folder)) for folder in _run_folders(paths)]
    if len(logs) < 64:
        found = [_log_problem(log) for log in logs]
    else:
        with pool(2) as workers:
            found = list(workers.map(_log_problem, logs, chunksize=16))
    problems = [p for p in found if p]
    for kind in records.KINDS:
        log = paths.record_log(kind)
        try:
            chain.verify(read_jsonl(log))
        except (chain.ChainError, RecordFileError) as exc:
            problems.append(f"{log}: {exc}")
    return problems


def flagged_on_curve(paths: ArchivePaths) -> list[str]:
    problems = []
    for folder in _run_folders(paths):
        file = store.measurement_file(folder)
        if not file.exists():
            continue
        try:
            m = read_json(file)
        except RecordFileError as exc:
            problems.append(str(exc))
            continue
        if m.get("on_curve") and m.get("flags"):
            problems.append(f"{file}: on_curve with flags {', '.join(m['flags'])}")
    return problems


def unexplained_gaps(paths: ArchivePaths) -> list[str]:
    problems = []
    try:
        rows = records.read(paths, "coverage")
    except RecordFileError as exc:
        return [str(exc)]
    for row in rows:
        if row.get("status") == "gap" and row.get("cause") not in GAP_CAUSES:
            problems.append(f"coverage {row.get('job')} {row.get('period')} {row.get('protocol_id') or ''}: "
                            f"gap without a cause from the closed list (got {row.get('cause')!r})")
        if row.get("status") not in ("ran", "gap"):
            problems.append(f"coverage {row.get('job')} {row.get('period')}: status {row.get('status')!r}")
    return problems


def leak_problems(paths: ArchivePaths) -> list[str]:
    from publish import leak_guard, panels, sources

    if not paths.public.is_dir():
        return []
    problems: list[str] = []
    try:
        inputs = sources.gather(paths)
        # A panel file for a protocol that is not open publishes guarded wording whatever the guard finds.
        problems = panels.published_problems(paths.public, inputs.headers)
        leak_guard(inputs).check_tree(paths.public, workers=1)
    except LeakError as exc:
        return problems + [str(exc)]
    except PublishError as exc:
        return [f"the leak guard could not read its inputs: {exc}"]
    return problems


def blocking_problems(paths: ArchivePaths) -> dict[str, list[str]]:
    """The checks that must pass before anything is published, by name (only the failing ones).

    :func:`publish.publish_all` runs them, so ``llmarchive publish`` and the
    Dagster asset publish under one rule; the fourth check, the leak guard,
    runs inside the build on the staging folder.
    """
    found = {"trial_log_chains": chain_problems(paths),
             "no_flagged_measurement_on_curve": flagged_on_curve(paths),
             "coverage_gaps_have_causes": unexplained_gaps(paths)}
    return {name: problems for name, problems in found.items() if problems}


def refusal(blocking: dict[str, list[str]]) -> str:
    """One line naming every failing check and its first problem."""
    return "refusing to publish: " + "; ".join(
        f"{name}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
        for name, problems in blocking.items())


def run_all(paths: ArchivePaths) -> dict[str, list[str]]:
    """Every check by name."""
    return {
        "trial_log_chains": chain_problems(paths),
        "no_flagged_measurement_on_curve": flagged_on_curve(paths),
        "coverage_gaps_have_causes": unexplained_gaps(paths),
        "leak_guard": leak_problems(paths),
    }
