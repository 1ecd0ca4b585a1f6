"""The coverage log's summary: which bytes hold each month's rows, and which months are sealed (method §10.4).

Two readers of the coverage log want a few months of it, never all of it:
:func:`llmarchive.schedule.coverage.write_rows` appends only the rows that
changed, so it needs the latest row of each key it writes (the open window's
keys); :func:`llmarchive.schedule.coverage.compute` reads a sealed month's
rows back instead of judging the month again.  Reading the whole log for
that made every month's coverage cost in proportion to the archive's age.

The summary is kept beside the log (``coverage.summary``, digested like the
spend ledger's checkpoint, never published, never part of the chain): the
byte offset it covers and the hash of the record that ends there, each
month's *span* — from the first byte of the first row of one of its periods
to the end of the last — and the months that are sealed.  A month is sealed
when its coverage was written, judged after its last day, with every period
ran or one cause (:func:`llmarchive.schedule.coverage.record_month`); from
then on its rows are read back from its span of the log.

It is trusted only when it is whole (its digest) and the log still holds, at
its offset, the record it names; the rows written after that offset are
folded in as they are read.  Anything else — no summary, a damaged one, a
log cut short or rewritten at the seam, a broken link in the tail — rebuilds
the spans from the whole log once and forgets every seal, so each month is
judged again until it is sealed again: a lost summary costs time, never a
wrong row.  A span read back is checked record by record (each record's own
hash, each link to the one before): an edited byte in a sealed month is
refused, not published.
"""
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from llmarchive.archive import ArchivePaths, RecordFileError, jsonio, record_logs as records
from measure import chain, jsonl

FORMAT = 1
KIND = "coverage"


def summary_file(paths: ArchivePaths) -> Path:
    """Beside the coverage log, private like it."""
    return paths.record_log(KIND).with_name(f"{KIND}.summary")


@dataclass
class Summary:
    """The coverage log up to ``offset``: each month's span of bytes and the sealed months."""

    offset: int = 0
    last_sha256: str = chain.GENESIS
    spans: dict[str, list[int]] = field(default_factory=dict)    # month -> [start, end) of its rows
    sealed: set[str] = field(default_factory=set)

    def fold(self, found: Iterable[tuple[int, int, dict]]) -> None:
        """Widen each month's span over rows read at ``[start, end)``."""
        for start, end, row in found:
            month = str(row.get("period"))[:7]
            span = self.spans.setdefault(month, [start, end])
            span[0], span[1] = min(span[0], start), max(span[1], end)

    def to_json(self) -> dict:
        return {"format": FORMAT, "log": KIND, "offset": self.offset, "last_sha256": self.last_sha256,
                "spans": self.spans, "sealed": sorted(self.sealed)}


def _parse(path: Path, fh, start: int, end: int) -> list[tuple[int, int, dict]]:
    """The rows of bytes ``[start, end)`` (whole lines), each with where its line starts and ends."""
    fh.seek(start)
    reader = jsonl.JsonlReader(jsonl.STRICT, str(path))
    found: list[tuple[int, int, dict]] = []
    try:
        for line in reader.lines(io.BytesIO(fh.read(end - start))):
            found.append((start + reader.size - len(line.raw), start + reader.size, line.record))
    except jsonl.JsonlError as exc:
        raise RecordFileError(str(exc)) from None
    return found


def _links(found: list[tuple[int, int, dict]], prev: Optional[str]) -> bool:
    """Every row matches its own hash and links to the one before (to ``prev`` first, when given)."""
    for _, _, row in found:
        if (prev is not None and row.get("prev_sha256") != prev) or row.get("record_sha256") != chain.record_hash(row):
            return False
        prev = row["record_sha256"]
    return True


def _saved(paths: ArchivePaths) -> Optional[Summary]:
    data = jsonio.read_digested(summary_file(paths))
    if data is None or data.get("format") != FORMAT or data.get("log") != KIND:
        return None
    try:
        return Summary(int(data["offset"]), str(data["last_sha256"]),
                       {str(m): [int(a), int(b)] for m, (a, b) in data["spans"].items()}, set(data["sealed"]))
    except (KeyError, TypeError, ValueError):
        return None


def current(paths: ArchivePaths, save: bool = False) -> Summary:
    """The summary brought up to the log's end (rebuilt from the whole log when it cannot be trusted).

    ``save`` writes it back (the writers do; a computation that writes
    nothing — publication's check, ``status`` — folds the tail in memory).
    """
    path = paths.record_log(KIND)
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return Summary()
    with fh:
        size = jsonl.complete_size(fh)
        summary = _saved(paths)
        found = None
        if summary is not None and summary.offset <= size and (
                jsonio.record_hash_ending_at(path, fh, summary.offset) == summary.last_sha256
                if summary.offset else summary.last_sha256 == chain.GENESIS):
            found = _parse(path, fh, summary.offset, size)
            if not _links(found, summary.last_sha256):
                found = None
        if found is None:      # no summary to trust: the spans again from the whole log, and no month sealed
            summary, found = Summary(), _parse(path, fh, 0, size)
    summary.fold(found)
    grew = bool(found) or summary.offset != size
    if found:
        summary.last_sha256 = found[-1][2].get("record_sha256", summary.last_sha256)
    summary.offset = size
    if save and grew:
        _save(paths, summary)
    return summary


def _save(paths: ArchivePaths, summary: Summary) -> None:
    try:
        jsonio.write_digested(summary_file(paths), summary.to_json())
    except OSError:
        pass   # only a shortcut: without it the next writer rebuilds it, and every month is judged again


def latest_rows(paths: ArchivePaths, summary: Summary, months: Iterable[str]) -> dict[tuple, dict]:
    """The latest row of every (period, job, protocol) of ``months``, read from their spans of the log only.

    The bytes read are checked (each row's own hash, each link): an edit is
    an error naming the log, never a row taken on trust.
    """
    wanted = {m for m in months if m in summary.spans}
    if not wanted:
        return {}
    start = min(summary.spans[m][0] for m in wanted)
    end = max(summary.spans[m][1] for m in wanted)
    path = paths.record_log(KIND)
    with open(path, "rb") as fh:
        found = _parse(path, fh, start, end)
    if not _links(found, None):
        raise RecordFileError(f"{path}: the rows between bytes {start} and {end} do not match their hashes or "
                              "links (the coverage log was edited); refusing to read them back")
    latest: dict[tuple, dict] = {}
    for _, _, row in found:
        if str(row.get("period"))[:7] in wanted:
            latest[row_key(row)] = row
    return latest


def seal(paths: ArchivePaths, months: Iterable[str]) -> set[str]:
    """Mark ``months`` sealed (those with rows in the log); return the months newly sealed."""
    summary = current(paths)
    new = {m for m in months if m in summary.spans} - summary.sealed
    if new:
        summary.sealed |= new
        _save(paths, summary)
    return new


def row_key(row: dict) -> tuple:
    """What a coverage row is about: its period, job and protocol (a job belongs to one series, so that is not part)."""
    return (row.get("period"), row.get("job"), row.get("protocol_id"))


def write_rows(paths: ArchivePaths, rows: Iterable[dict]) -> list[dict]:
    """Append every row whose status, cause, run or series differs from the latest recorded for its key, as one
    batch (and, once, a row whose latest record predates the ``condition`` field: its words were not the public
    ones).

    One locked, fsynced write for the whole set: a month's coverage is in the
    log entirely or not at all, and costs about as much as one row.  A gap
    row is written under SPEC's record type ``coverage_gap``.  A row recorded
    under an older series label (the instrument's jobs were ``open_weights``)
    is written again once under its job's series.  The latest rows are read
    from the spans of the rows' own months only (the summary's spans),
    and the summary is moved forward over what was written.
    """
    rows = list(rows)
    summary = current(paths)
    latest = latest_rows(paths, summary, {str(row.get("period"))[:7] for row in rows})
    changed = []
    for row in rows:
        key = row_key(row)
        old = latest.get(key)
        # A row written before rows named their condition is written again once, in the public words.
        if old is not None and all(old.get(k) == row[k] for k in ("status", "cause", "run_id", "series")) \
                and "condition" in old:
            continue
        latest[key] = row
        changed.append(row)
    written = records.append_many(paths, "coverage", changed) if changed else []
    current(paths, save=True)
    return written
