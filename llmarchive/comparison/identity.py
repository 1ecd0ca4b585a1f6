"""Which run a submission is (method §4.2): identity by trial content, not by the file's bytes.

A run is what its model answered to which prompt.  Everything else a trial
line carries — its run id, timings, chain hashes, extra keys — and everything
a header carries — a note, a submitter, a date — can be rewritten by whoever
holds the file, so none of it can tell two runs apart.  Hence:

* :func:`trial_identity` — the sha256 of the canonical JSON of the trial's
  ``prompt_sha256`` and its ``response_text`` with runs of whitespace made
  one space (re-wrapping a response does not make it another answer);
* :func:`trials_sha256` — the run's identity: the canonical hash of its
  trials' identities, sorted (the order of the lines and the replicate
  numbers, which can be shuffled, do not count);
* :func:`matches` — the trials a submission shares with a known run.  A
  submission is the same run as a known one when at least
  :data:`SAME_RUN_SHARE` of its trials are that run's (a copy with a few
  trials edited is still the copy).  Two honest runs almost never share
  half their answers word for word; when a model answers the same prompts
  deterministically and identically (the same greedy model on the same
  panel), the two runs are the same data, and are filed once.

The known runs are the comparison points already filed (their private
copies) and the archive's own runs in every run folder the store knows — the
curve's, the held ones, the instrument's — which are the runs the open lane
is published from; a run made here with ``llmarchive comparison run`` is an
outsider's run made on this machine and is not among them.  Only runs of
the submission's protocol are read (their ``run.json`` names it), each trial
log streamed line by line, so the check costs one pass over that protocol's
runs and holds only hashes.
"""
from pathlib import Path
from typing import Iterable, Iterator, Optional

from llmarchive.archive import store
from llmarchive.archive.jsonio import RecordFileError
from llmarchive.archive.paths import ArchivePaths
from measure import jsonl
from measure.canonical import canonical_sha256
from llmarchive.instrument.verdict import run_roots

SAME_RUN_SHARE = 0.5
COMPARISON_RUN_KEY = "comparison_run"
"""The key ``llmarchive comparison run`` adds to its run record (llmarchive.comparison.run)."""


def trial_identity(trial: dict) -> Optional[str]:
    """What the trial is: the prompt it was sent (by hash) and the answer (whitespace folded); None without both."""
    prompt, response = trial.get("prompt_sha256"), trial.get("response_text")
    if not isinstance(prompt, str):
        return None
    text = " ".join(response.split()) if isinstance(response, str) else None
    return canonical_sha256({"prompt_sha256": prompt, "response_text": text})


def trials_sha256(trials: Iterable[dict]) -> str:
    """The run's identity: the canonical hash of its trials' identities, in sorted order."""
    return canonical_sha256(sorted(str(trial_identity(t)) for t in trials))


def _file_identities(path: Path) -> Iterator[str]:
    """The identity of every trial of a log; lines that cannot be read are passed over (not judged here)."""
    reader = jsonl.JsonlReader(jsonl.COLLECT, str(path))
    try:
        with open(path, "rb") as fh:
            for line in reader.lines(fh):
                if line.problem is None and line.record.get("record_type") == "trial":
                    found = trial_identity(line.record)
                    if found is not None:
                        yield found
    except OSError:
        return


def _run_record(folder: Path) -> Optional[dict]:
    """The folder's run record; None when there is none or it cannot be read (then it cannot say whose it is)."""
    try:
        return store.read_run_if_any(folder)
    except (RecordFileError, UnicodeDecodeError):
        return None


def own_runs(paths: ArchivePaths, protocol_id: Optional[str] = None) -> Iterator[tuple[str, Path]]:
    """``(run id, folder)`` of every run (of ``protocol_id``) the archive made itself, in every run root.

    A folder whose record cannot be read counts as the archive's own: it
    cannot show that it is a comparison run.
    """
    for root in run_roots(paths):
        for folder in store.run_folders(root):
            if not store.trial_log(folder).exists() and not store.has_run(folder):
                continue
            run = _run_record(folder)
            if run is not None and (COMPARISON_RUN_KEY in run
                                    or (protocol_id is not None and run.get("protocol_id") != protocol_id)):
                continue
            yield folder.name, folder


def own_run_named(paths: ArchivePaths, run_id: str) -> bool:
    """Whether ``run_id`` is the id of one of the archive's own runs (a comparison run made here is not)."""
    for root in run_roots(paths):
        folder = root / run_id
        if folder.is_dir() and (store.has_run(folder) or store.trial_log(folder).exists()):
            run = _run_record(folder)
            if run is None or COMPARISON_RUN_KEY not in run:
                return True
    return False


def is_same_run(shared: int, total: int) -> bool:
    """Whether sharing ``shared`` of ``total`` trials makes two runs one (see :data:`SAME_RUN_SHARE`)."""
    return total > 0 and shared >= SAME_RUN_SHARE * total


def own_run_matches(paths: ArchivePaths, protocol_id: str, submitted: list[str]) -> list[tuple[str, int]]:
    """``(run id, trials shared)`` for each of the archive's own runs the submission is (see :func:`is_same_run`).

    Also counts a submission stitched from several own runs: when no single
    run reaches the share but together they do, every run that contributed
    is named.
    """
    wanted = set(submitted)
    found: list[tuple[str, int]] = []
    union: set[str] = set()
    for run_id, folder in own_runs(paths, protocol_id):
        held = wanted & set(_file_identities(store.trial_log(folder)))
        if held:
            union |= held
            found.append((run_id, sum(1 for s in submitted if s in held)))
    total_shared = sum(1 for s in submitted if s in union)
    return found if is_same_run(total_shared, len(submitted)) else []


def point_matches(paths: ArchivePaths, points: list[dict], protocol_id: str, submitted: list[str],
                  digest: str) -> Optional[tuple[dict, int]]:
    """The filed point the submission is the same run as, and how many trials they share; None when none.

    A point is the same run when its trials' hash is this one's, or when
    the submission shares :data:`SAME_RUN_SHARE` of its trials with the
    point's private copy.  Points filed from held runs (no copy) are the
    archive's own runs and are found there.
    """
    wanted = set(submitted)
    for point in points:
        if point.get("trials_sha256") == digest:
            return point, len(submitted)
    for point in points:
        if point.get("protocol_id") != protocol_id or not point.get("comparison_id"):
            continue
        copy = copy_path(paths, str(point["comparison_id"]))
        if copy is None or not copy.exists():
            continue
        held = wanted & set(_file_identities(copy))
        shared = sum(1 for s in submitted if s in held)
        if is_same_run(shared, len(submitted)):
            return point, shared
    return None


def copy_path(paths: ArchivePaths, comparison_id: str) -> Optional[Path]:
    """Where a point's private copy of the submitted file lives (None for an id that is not a file name)."""
    if not comparison_id or "/" in comparison_id or comparison_id.startswith("."):
        return None
    return paths.comparison_points / f"{comparison_id}.jsonl"
