"""Whether a complete run's trial log is the one its own record describes (method §10.4, publication).

``run.json`` says how many trials the run recorded (``n_trials_recorded``)
and which record ends its log (``trials_last_sha256``); the measurement
counted its trials too.  A log with fewer or more trials, another last
record or a torn last line is not the log that was measured, and a run
folder in that state is never published as complete: publication refuses
it by name (:mod:`publish.pipeline.checks`) and ``llmarchive status`` names it.
An *open* run may honestly hold a torn line, or trials its record has not
counted yet (a process killed between the append and the record's
rewrite); it is never published, and resuming it repairs both — so only
complete runs are asked.

The folder's files are found through :mod:`llmarchive.archive.store`, which alone
spells their names.
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from llmarchive.archive.run_index import log_facts, measured_trials
from llmarchive.archive.store import RUN_FILE, TRIALS_FILE, trial_log

__all__ = ["LogState", "log_disagreement", "log_state", "measured_trials", "state_of_records"]


@dataclass(frozen=True)
class LogState:
    """What a trial log holds, read from its bytes: trial records, the last record's hash, a torn last line."""

    trials: int
    last_sha256: Optional[str]
    torn: bool


def log_state(folder: Path) -> LogState:
    """:class:`LogState` of the folder's trial log (an empty state when there is none).

    A byte scan, not a parse: trial lines are canonical JSON, where
    ``"record_type":"trial"`` can only be the record's own field (a string
    value would escape its quotes), and only the last line is decoded.
    """
    path = trial_log(folder)
    return LogState(*log_facts(path.read_bytes())) if path.exists() else LogState(0, None, False)


def state_of_records(folder: Path, records: list[dict]) -> LogState:
    """:class:`LogState` from a log's records already read (and verified) by the caller; only the last byte
    of the file is read again, to see a torn line (which a reader of the records skips)."""
    path = trial_log(folder)
    torn = False
    if path.exists() and path.stat().st_size:
        with open(path, "rb") as fh:
            fh.seek(-1, 2)
            torn = fh.read(1) != b"\n"
    last = records[-1].get("record_sha256") if records else None
    return LogState(sum(1 for r in records if r.get("record_type") == "trial"), last, torn)


def log_disagreement(folder: Path, record: Mapping, counted: Optional[int] = None,
                     state: Optional[LogState] = None) -> Optional[str]:
    """Why a complete run's trial log is not the one its own record describes, or None.

    The record (``run.json``) says how many trials the run recorded
    (``n_trials_recorded``) and which record ends its log
    (``trials_last_sha256``); the measurement counted its trials too
    (``counted``).  A log with fewer or more trials, another last record or
    a torn last line is not what was measured: it is never published as
    complete.  (An open run may honestly hold a torn line or trials its
    record has not counted yet — a process killed mid-write — and is never
    published, so only complete runs are asked.)
    """
    state = state or log_state(folder)
    where = f"run folder {folder.name}: its trial log {TRIALS_FILE}"
    problems = []
    if state.torn:
        problems.append("ends in a torn line")
    recorded = record.get("n_trials_recorded")
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded != state.trials:
        problems.append(f"holds {state.trials} trials where {RUN_FILE} records {recorded}")
    if counted is not None and counted != state.trials and counted != recorded:
        problems.append(f"holds {state.trials} trials where the measurement counted {counted}")
    last = record.get("trials_last_sha256")
    if isinstance(last, str) and state.last_sha256 != last:
        problems.append(f"does not end with the record {RUN_FILE} names (trials_last_sha256 {last[:12]}…)")
    if not problems:
        return None
    return (f"{where} " + " and ".join(problems) + "; it is not the log that was measured (resume the run with "
            "its run id to repair it)")
