"""Which run a submission is (method §4.2): a copy told from a reproduction.

Two things are asked of a submission's trials, and they are kept apart:

* **is it that run?** — :func:`trial_keys`: a trial as it was recorded:
  the prompt it was sent (by hash), its answer (runs of whitespace made one
  space: re-wrapping a response does not make it another answer), with each
  time of the call the trial records (``started_at``, ``finished_at``, to the
  millisecond) — which a copy carries over and a rerun, even of a
  deterministic model on the same panel, does not reproduce; either time
  alone matches, so a copy must rewrite both to pass.  A trial that records
  no time (an lm-eval log, hand-written lines) is known by its words alone.
  The run id, the model id, the replicate numbers, the order of the lines,
  the chain hashes and every header field are left out: whoever holds a file
  can rewrite them, and a copy relabelled is still the copy.
  :func:`trials_sha256` is the run's identity: its trials' identities
  (:func:`trial_identity`, words and both times), sorted.
* **did it say the same words?** — :func:`answer_identity`: the prompt and
  the folded answer alone.  Terse models, and a deterministic model run
  again, give the same words; that is a finding about the models, not a
  copy, so it is *disclosed* on the point (how many answers, which point or
  run), never a reason to refuse it.

:func:`overlaps` reads each known run once — the comparison points already
filed (their private copies) and the archive's own runs in every run folder
the store knows (the curve's, the held ones, the instrument's; a run made
here with ``llmarchive comparison run`` is an outsider's run made on this
machine and is not among them) — and returns, per run, which of the
submission's trials are its trials (copies) and which only its words
(coinciding answers).  A submission is the archive's when at least
:data:`SAME_RUN_SHARE` of its trials are copies, pooled over every source
(:func:`is_same_run`).  Only runs of the submission's protocol are read
(their ``run.json`` names it), each trial log streamed line by line, so the
check costs one pass over that protocol's runs and holds only hashes.
"""
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional

from llmarchive.archive import ArchivePaths, RecordFileError, store
from measure import jsonl
from measure.canonical import canonical_sha256
from llmarchive.instrument import run_roots

SAME_RUN_SHARE = 0.5
COMPARISON_RUN_KEY = "comparison_run"
"""The key ``llmarchive comparison run`` adds to its run record (llmarchive.comparison.run)."""
RECORDED_CALL_FIELDS = ("started_at", "finished_at")
"""A trial's own record of its call, to the millisecond: carried by a copy, not reproduced by a rerun."""
OWN_RUN, FILED_POINT = "own_run", "comparison_point"


def _folded(trial: dict) -> Optional[str]:
    response = trial.get("response_text")
    return " ".join(response.split()) if isinstance(response, str) else None


def answer_identity(trial: dict) -> Optional[str]:
    """The words of a trial: the prompt it was sent (by hash) and its answer, whitespace folded; None without a prompt."""
    prompt = trial.get("prompt_sha256")
    if not isinstance(prompt, str):
        return None
    return canonical_sha256({"prompt_sha256": prompt, "response_text": _folded(trial)})


def trial_keys(trial: dict) -> list[str]:
    """The keys a trial is known by as recorded: its words with each time of its call it records.

    Either time alone identifies the call (a copy that rewrote one still carries the other); a trial that
    records no time (an lm-eval log, hand-written lines) is known by its words alone.
    """
    words = answer_identity(trial)
    if words is None:
        return []
    times = [(key, trial[key]) for key in RECORDED_CALL_FIELDS if isinstance(trial.get(key), str) and trial[key]]
    return [canonical_sha256([words, key, value]) for key, value in times] or [words]


def trial_identity(trial: dict) -> Optional[str]:
    """The trial as recorded: its words and both times of its call (:data:`RECORDED_CALL_FIELDS`)."""
    words = answer_identity(trial)
    if words is None:
        return None
    return canonical_sha256([words, *(trial.get(key) for key in RECORDED_CALL_FIELDS)])


def trials_sha256(trials: Iterable[dict]) -> str:
    """The run's identity: the canonical hash of its trials' identities, in sorted order."""
    return canonical_sha256(sorted(str(trial_identity(t)) for t in trials))


@dataclass
class Overlap:
    """What a submission shares with one known run: the indices of its trials that are that run's, and of its
    trials whose words are that run's (every copy among them)."""

    kind: str                       # OWN_RUN or FILED_POINT
    name: str                       # the run id, or the point's comparison id
    point: Optional[dict] = None    # the filed point's record
    copied: set[int] = field(default_factory=set)
    coinciding: set[int] = field(default_factory=set)


def _file_identities(path: Path) -> Iterator[tuple[list[str], str]]:
    """``(trial keys, answer identity)`` of every trial of a log; lines that cannot be read are passed over."""
    reader = jsonl.JsonlReader(jsonl.COLLECT, str(path))
    try:
        with open(path, "rb") as fh:
            for line in reader.lines(fh):
                if line.problem is None and line.record.get("record_type") == "trial":
                    words = answer_identity(line.record)
                    if words is not None:
                        yield trial_keys(line.record), words
    except OSError:
        return


def _overlap(kind: str, name: str, path: Path, keys: list[list[str]], words: list[str],
             point: Optional[dict] = None) -> Optional[Overlap]:
    """The submission's trials held by one log: copies by key; coinciding answers counted as many times as the
    log gives them (two replicates answering alike coincide with two of the log's, not with one twice)."""
    held_keys: set[str] = set()
    held_words: Counter[str] = Counter()
    for trial, word in _file_identities(path):
        held_keys.update(trial)
        held_words[word] += 1
    coinciding = set()
    for i, word in enumerate(words):
        if held_words[word] > 0:
            held_words[word] -= 1
            coinciding.add(i)
    found = Overlap(kind, name, point, {i for i, k in enumerate(keys) if not held_keys.isdisjoint(k)}, coinciding)
    return found if found.coinciding or found.copied else None


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
    """Whether ``shared`` of ``total`` trials being the archive's makes the submission the archive's."""
    return total > 0 and shared >= SAME_RUN_SHARE * total


def own_run_overlaps(paths: ArchivePaths, protocol_id: str, trials: list[list[str]],
                     words: list[str]) -> list[Overlap]:
    """What the submission (its trials' :func:`trial_keys` and :func:`answer_identity`, in order) shares
    with each of the archive's own runs of ``protocol_id``; runs it shares nothing with are left out."""
    found = (_overlap(OWN_RUN, run_id, store.trial_log(folder), trials, words)
             for run_id, folder in own_runs(paths, protocol_id))
    return [o for o in found if o is not None]


def point_overlaps(paths: ArchivePaths, points: list[dict], protocol_id: str, trials: list[list[str]],
                   words: list[str]) -> list[Overlap]:
    """What the submission shares with each filed point of ``protocol_id`` that has a private copy.

    Points filed from held runs (no copy) are the archive's own runs and are found there.
    """
    out = []
    for point in points:
        if point.get("protocol_id") != protocol_id or not point.get("comparison_id"):
            continue
        copy = copy_path(paths, str(point["comparison_id"]))
        if copy is None or not copy.exists():
            continue
        found = _overlap(FILED_POINT, str(point["comparison_id"]), copy, trials, words, point)
        if found is not None:
            out.append(found)
    return out


def pooled_copies(overlaps: Iterable[Overlap]) -> set[int]:
    """The submission's trials that are the archive's, whichever run or point holds each."""
    return set().union(*(o.copied for o in overlaps))


def copy_path(paths: ArchivePaths, comparison_id: str) -> Optional[Path]:
    """Where a point's private copy of the submitted file lives (None for an id that is not a file name)."""
    if not comparison_id or "/" in comparison_id or comparison_id.startswith("."):
        return None
    return paths.comparison_points / f"{comparison_id}.jsonl"
