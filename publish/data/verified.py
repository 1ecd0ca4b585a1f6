"""What publication verified of each run, kept while the run's files are the bytes it verified.

A run's trial log is closed once its measurement exists, yet every build
used to parse and re-chain every log of the archive's history to learn the
same verdict and the same derived rows again (ten years: 460,800 trials).
Hashing a file's bytes is cheap; parsing and re-chaining them is not.  So
the blocking check records, per run id, the SHA-256 of the trial log's raw
bytes and of ``run.json`` and ``measurement.json`` as they were when the run
last verified clean, with what publication derives from them (the run's
modal cells, its trial count, its value labels when its protocol is open).
The next build hashes the three files again and reuses the entry only when
all three digests are the ones recorded; any other byte — an edit that keeps
a file's size included — changes a digest and the run is read and verified
from its first record, as if never seen, so publication still refuses a
store that disagrees with itself.  Only clean verdicts are kept: a problem
is found again at every build.

The record is one digested file (:func:`llmarchive.archive.jsonio.write_digested`)
under ``private/``: a torn or hand-edited record reads as no record, and
every run is verified again.  :data:`VERSION` names what the entries mean;
a change to what is derived from a log (the cells, the labels) changes it,
and every entry of another version is ignored.

The record logs (coverage, the instrument's, comparison points) are
whole-history inputs that only grow: each is kept as the size the last
build verified, the SHA-256 of those bytes and the hash of the record that
ends there (:func:`load_logs`).  The next build hashes that prefix again and
chains on only the records after it; a prefix whose bytes changed is
verified from its first record, as the first time.
"""
import hashlib
from pathlib import Path
from typing import Collection, Iterable, Optional

from llmarchive.archive import ArchivePaths, jsonio, store
from measure import jsonl

VERSION = 1
TRIAL_MARK = b'"record_type":"trial"'


def record_file(paths: ArchivePaths) -> Path:
    return paths.private / "publication" / "verified_runs.json"


def logs_file(paths: ArchivePaths) -> Path:
    return paths.private / "publication" / "verified_logs.json"


def _load(file: Path, key: str) -> dict[str, dict]:
    """The entries under ``key``; none when the record is missing, torn, edited or of another version."""
    found = jsonio.read_digested(file)
    if not found or found.get("version") != VERSION or not isinstance(found.get(key), dict):
        return {}
    return found[key]


def load(paths: ArchivePaths) -> dict[str, dict]:
    """The runs' entries by run id."""
    return _load(record_file(paths), "runs")


def save(paths: ArchivePaths, runs: dict[str, dict]) -> None:
    jsonio.write_digested(record_file(paths), {"version": VERSION, "runs": dict(sorted(runs.items()))})


def load_logs(paths: ArchivePaths) -> dict[str, dict]:
    """Each record log as the last build verified it, by kind: its verified size, the SHA-256 of those bytes and
    the hash of the record ending there (:func:`llmarchive.archive.log_checkpoints.verify_log_deep`'s entry)."""
    return _load(logs_file(paths), "logs")


def save_logs(paths: ArchivePaths, logs: dict[str, dict]) -> None:
    jsonio.write_digested(logs_file(paths), {"version": VERSION, "logs": dict(sorted(logs.items()))})


def _digest(path: Path) -> tuple[bytes, str]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return b"", ""
    return data, hashlib.sha256(data).hexdigest()


def read_folder(folder: Path) -> tuple[bytes, dict[str, str]]:
    """The trial log's bytes, and the digests of the three files an entry stands for ("" for a missing one)."""
    raw, trials = _digest(store.trial_log(folder))
    _, run = _digest(store.run_file(folder))
    _, measurement = _digest(store.measurement_file(folder))
    return raw, {"trials": trials, "run": run, "measurement": measurement}


def holds(entry: Optional[dict], digests: dict[str, str]) -> bool:
    """Whether ``entry`` was recorded for exactly these bytes."""
    return isinstance(entry, dict) and all(entry.get(key) == value for key, value in digests.items())


def trial_lines(raw: bytes) -> list[bytes]:
    """A verified log's trial lines as written (each with its newline), found by their bytes.

    Used only on bytes an entry vouches for: :func:`entry` keeps none for a
    log where this selection differs from the parsed one.
    """
    return [line + b"\n" for line in raw.split(b"\n")[:-1] if TRIAL_MARK in line]


def entry(digests: dict[str, str], protocol_id: Optional[str], derived: Optional[tuple],
          lines: list[jsonl.Line], raw: bytes) -> Optional[dict]:
    """The entry for a run that just verified clean: its digests, its protocol, and its derived rows
    (``derived``: labels or None, modal cells, trial count; None for a run publication does not publish).

    None (nothing kept) when the trial lines found by their bytes are not the ones parsed, or the log ends
    in a torn line: such a run is verified again at every build rather than trusted to a shortcut.
    """
    kept = {**digests, "protocol_id": protocol_id}
    if derived is None:
        return kept
    parsed = [line.raw for line in lines if line.record.get("record_type") == "trial"]
    if (raw and not raw.endswith(b"\n")) or trial_lines(raw) != parsed:
        return None
    labels, cells, count = derived
    kept["count"] = count
    kept["cells"] = [[item, version, list(decision) if decision is not None else None]
                     for (item, version), decision in sorted(cells.items())]
    kept["labels"] = None if labels is None else {key: sorted(found) for key, found in sorted(labels.items())}
    return kept


def reuse(known: Optional[dict], digests: dict[str, str], raw: bytes,
          open_ids: Collection[str]) -> tuple[bool, Optional[tuple]]:
    """Whether ``known`` vouches for a run whose files have these digests (and the log ``raw``), and if so
    what publication keeps of it (:data:`publish.data.sources.CheckedRead`, None for a run it does not
    publish).  A run now in the open lane whose entry was recorded before has no value labels kept: not
    vouched, so it is read whole once more."""
    if not holds(known, digests):
        return False, None
    kept = derived(known)
    if kept is None:
        return True, None
    labels, cells, count = kept
    if known.get("protocol_id") not in open_ids:
        return True, (None, cells, count)
    if labels is None:
        return False, None
    return True, ((trial_lines(raw), labels, cells), cells, count)


def known_reads(paths: ArchivePaths, folders: Iterable[Path], open_ids: Collection[str]) -> dict[str, tuple]:
    """By run id, what publication keeps of each run in ``folders`` an entry still vouches for (a read of the
    inputs outside a build, :func:`publish.data.sources.gather`, hashes these runs' files instead of parsing)."""
    known = load(paths)
    out = {}
    for folder in folders:
        if folder.name in known:
            raw, digests = read_folder(folder)
            vouched, read = reuse(known[folder.name], digests, raw, open_ids)
            if vouched and read is not None:
                out[folder.name] = read
    return out


def derived(kept: dict) -> Optional[tuple]:
    """What :func:`entry` kept of the derived rows: labels (or None), modal cells, trial count; None if none."""
    if "cells" not in kept:
        return None
    cells = {(item, version): tuple(decision) if decision is not None else None
             for item, version, decision in kept["cells"]}
    labels = None if kept.get("labels") is None else {key: set(found) for key, found in kept["labels"].items()}
    return labels, cells, kept["count"]
