"""The run index: one SQLite row per run folder, so a listing of runs does not open every ``run.json``.

Every scan of the archive's runs — the lease's run clock, revalidation,
coverage, status, publication's sources — used to open and parse each
folder's record, so their cost grew with the archive's age.  The index keeps,
per run folder of one root, what those readers ask: the record itself (its
JSON text), its date, job, series, model, protocol, status, whether a
measurement exists, and a *signature* of the files it was read from (inode,
size and modification time of ``run.json`` and of the measurement).  Method
§10.5 says why SQLite and how the index stays true; in short:

* **Derived, never a source.**  The run folders are the archive; the index is
  rebuilt from them whenever it is unreadable (a torn or foreign file) or of
  another format (:data:`FORMAT`), and a folder it does not know is read into
  it.  Deleting it loses nothing.  A missing index is started by the store's
  next write, never by a read, so a command that only reads leaves the
  archive's files as it found them (and reads the folders meanwhile).
* **Written after the file.**  The store writes ``run.json`` or the
  measurement first and notes the folder here second (:meth:`RunIndex.note`);
  a process killed in between leaves a row whose signature no longer matches
  its file, and the next read that looks at that row reads the folder again.
* **Folders it does not know** (written by older code, copied or moved in) are
  found by a listing of the root compared with the index's ids, gated by the
  root's own modification time, which changes whenever an entry is added,
  removed or renamed in it; a time too recent to trust (the file system's
  clock ticks coarsely) forces the listing again next time.
* **Two depths of reading.**  :meth:`RunIndex.entries` with ``full=True``
  (what :func:`llmarchive.archive.store.scan` uses) checks every row's
  signature against its files — a few ``stat`` calls per run, no parse — so an
  atomic rewrite behind the store's back is seen.  The hot queries
  (:meth:`RunIndex.latest_complete_date`) check only the rows that can still
  change their answer (open, empty and unreadable folders): a complete run's
  date does not change.  An in-place edit that keeps size and time is caught
  only by :func:`llmarchive.archive.store.index_disagreements`, which reads
  every folder and compares (``llmarchive verify --deep``, publication).

The layout of a folder is not spelled here: the store passes how to read one
folder (an :class:`Entry`) and how to sign it.  Any failure of the index
itself falls back to reading the folders, so the index can make a read
faster but never wrong by being broken.
"""
import contextlib
import io
import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from llmarchive.archive.locks import lock_file
from measure import jsonl

FORMAT = "3"
# A root modified this recently may gain an entry within the same clock tick: list it again next time.
RACY_NS = 2_000_000_000
BUSY_MS = 30_000

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,      -- the folder's name
    kind TEXT NOT NULL,           -- run | unreadable | empty
    signature TEXT NOT NULL,      -- of the files the row was read from
    measured INTEGER NOT NULL,    -- a measurement exists
    problem TEXT,                 -- why it cannot be read (kind unreadable)
    trials_size INTEGER,          -- the trial log when the row was read: size, last record's hash, trials, torn tail
    trials_last TEXT, trials_count INTEGER, trials_torn INTEGER,
    counted INTEGER,              -- the trials the measurement counted, or why it cannot be read
    measurement_problem TEXT,
    record_run_id TEXT, run_date TEXT, job TEXT, series TEXT, model TEXT, protocol_id TEXT, status TEXT
);
CREATE INDEX runs_by_date ON runs (measured, run_date);
CREATE INDEX runs_unsettled ON runs (run_id) WHERE kind != 'run' OR measured = 0;
-- the records apart: the table the hot queries walk stays a few hundred bytes a run
CREATE TABLE records (run_id TEXT PRIMARY KEY, record TEXT NOT NULL);
"""
_ROWS = "SELECT runs.*, records.record FROM runs LEFT JOIN records USING (run_id)"
_FIELDS = ("record_run_id", "run_date", "job", "series", "model", "protocol_id", "status")
_SOURCE = {"record_run_id": "run_id", "model": "subject_model_id"}


@dataclass(frozen=True)
class Entry:
    """One run folder as read from its files: a run (``record``), unreadable (``problem``) or empty."""

    run_id: str
    kind: str
    signature: str
    measured: bool = False
    record: Optional[dict] = None
    problem: Optional[str] = None
    trials_size: Optional[int] = None
    trials_last: Optional[str] = None
    trials_count: Optional[int] = None
    trials_torn: bool = False
    counted: Optional[int] = None
    measurement_problem: Optional[str] = None

    def columns(self) -> tuple:
        record = self.record or {}

        def text(key: str) -> Optional[str]:
            value = record.get(_SOURCE.get(key, key))
            return str(value) if value else None
        return (self.run_id, self.kind, self.signature, int(self.measured), self.problem,
                self.trials_size, self.trials_last, self.trials_count, int(self.trials_torn), self.counted,
                self.measurement_problem, *(text(k) for k in _FIELDS))

    def body(self) -> Optional[str]:
        return None if self.record is None else json.dumps(self.record, ensure_ascii=False)

    @property
    def dated(self) -> bool:
        """A readable run with a run date (what the archive's listings of complete runs count)."""
        return self.kind == "run" and bool((self.record or {}).get("run_date"))


@dataclass(frozen=True)
class Run:
    """One readable run folder: its ``experiment_run`` record, whether it has a measurement, and its index row."""

    folder: Path
    record: dict
    measured: bool
    indexed: Optional[Entry] = field(default=None, compare=False, repr=False)

    @property
    def run_id(self) -> str:
        return self.folder.name

    @property
    def run_date(self) -> Optional[str]:
        return self.record.get("run_date")

    @property
    def status(self) -> Optional[str]:
        return self.record.get("status")


@dataclass
class RunScan:
    """Every run folder under one root: complete, open (no measurement yet) and unreadable (store ``Unreadable``)."""

    complete: list[Run] = field(default_factory=list)
    open: list[Run] = field(default_factory=list)
    unreadable: list = field(default_factory=list)   # llmarchive.archive.store.Unreadable, each

    def runs(self) -> list[Run]:
        """Every readable run, complete or open, by run id."""
        return sorted([*self.complete, *self.open], key=lambda r: r.run_id)

    def refuse(self, error: Callable[[str], Exception]) -> "RunScan":
        """Raise ``error`` naming the first unreadable folder (publication's policy), else return self."""
        if self.unreadable:
            first = self.unreadable[0]
            more = len(self.unreadable) - 1
            raise error(first.problem + (f" (and {more} more unreadable run folder(s))" if more else ""))
        return self


def log_facts(raw: bytes) -> tuple[int, Optional[str], bool]:
    """A trial log's bytes read as (trials, the last record's hash, whether the last line is torn).

    A byte scan, not a parse: trial lines are canonical JSON, where
    ``"record_type":"trial"`` can only be the record's own field (a string
    value would escape its quotes), and only the last line is decoded.
    """
    torn = bool(raw) and not raw.endswith(b"\n")
    body = raw[:raw.rfind(b"\n") + 1] if torn else raw
    last = jsonl.last_record(io.BytesIO(body))
    return body.count(b'"record_type":"trial"'), None if last is None else last.get("record_sha256"), torn


def measured_trials(measurement: object) -> Optional[int]:
    """How many trials a measurement counted (its outcomes per version, summed), None when it cannot say."""
    outcomes = measurement.get("outcomes") if isinstance(measurement, dict) else None
    if not isinstance(outcomes, dict):
        return None
    total = 0
    for counts in outcomes.values():
        if not isinstance(counts, dict):
            return None
        for value in counts.values():
            if not isinstance(value, int) or isinstance(value, bool):
                return None
            total += value
    return total


def _entry_of(row: sqlite3.Row) -> Entry:
    record = None if row["record"] is None else json.loads(row["record"])
    return Entry(row["run_id"], row["kind"], row["signature"], bool(row["measured"]), record, row["problem"],
                 row["trials_size"], row["trials_last"], row["trials_count"], bool(row["trials_torn"]), row["counted"],
                 row["measurement_problem"])


def index_file(root: Path) -> Path:
    """Where the index of ``root`` lives: ``<parent>/index/<root name>.sqlite`` (``private/index/experiments.sqlite``).

    Beside the root, not in it: the root lists run folders and nothing else.
    """
    return Path(root).parent / "index" / f"{Path(root).name}.sqlite"


class _IndexBroken(Exception):
    """The index file cannot be used (raised inside, answered by a rebuild or by reading the folders)."""


class RunIndex:
    """The index of one root's run folders; ``read`` and ``sign`` are the store's, who alone knows a folder's files."""

    def __init__(self, root: Path, read: Callable[[Path], Entry], sign: Callable[[str], str]) -> None:
        self.root = Path(root)
        self.file = index_file(self.root)
        self._read = read
        self._sign = sign

    # ---------------------------------------------------------------- opening
    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection per operation: a rebuilt file is seen by the next operation of every process."""
        self.file.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.file, timeout=BUSY_MS / 1000, isolation_level=None)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
            try:
                found = conn.execute("SELECT value FROM meta WHERE key='format'").fetchone()
            except sqlite3.OperationalError as exc:
                if "no such table" not in str(exc):
                    raise
                found = None
            if found is None or found[0] != FORMAT:
                raise _IndexBroken(f"{self.file}: no index of format {FORMAT}")
            yield conn
        finally:
            conn.close()

    def _create(self) -> None:
        """Start an empty index of the current format, under its lock (two processes may find it missing at once)."""
        with lock_file(self.file.with_name(self.file.name + ".lock")):
            try:
                with self._connect():
                    return   # another process built it while we waited
            except (_IndexBroken, sqlite3.DatabaseError):
                pass
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(str(self.file) + suffix).unlink(missing_ok=True)
            conn = sqlite3.connect(self.file, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript("BEGIN;" + _SCHEMA +
                                   f"INSERT INTO meta VALUES ('format', '{FORMAT}'), ('listed', '');COMMIT;")
            finally:
                conn.close()

    def _use(self, work: Callable[[sqlite3.Connection], object], create: bool = False) -> object:
        """Run ``work`` on the index, rebuilding it once when it is torn or of another format.

        Only a writer (``create``) starts a missing index: a read — a command
        that refuses, a status — leaves an archive without one as it found it,
        and answers from the folders.
        """
        if not self.root.is_dir() or not (create or self.file.exists()):
            raise _IndexBroken(f"{self.file}: no run index (yet)")
        for attempt in (1, 2):
            try:
                with self._connect() as conn:
                    return work(conn)
            except (_IndexBroken, sqlite3.DatabaseError) as exc:
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                    raise _IndexBroken(str(exc)) from None
                if attempt == 2:
                    raise _IndexBroken(str(exc)) from None
                try:
                    self._create()
                except (sqlite3.DatabaseError, OSError) as failed:     # a full disk: the folders still answer
                    raise _IndexBroken(f"{self.file}: cannot be made ({failed})") from None
        raise AssertionError("unreachable")

    # ---------------------------------------------------------------- keeping it true
    def _listing(self) -> Optional[set[str]]:
        try:
            return {e.name for e in os.scandir(self.root) if e.is_dir()}
        except FileNotFoundError:
            return None

    def _refresh(self, conn: sqlite3.Connection, full: bool) -> None:
        """Bring the rows up to the folders: new and removed folders, and the rows whose files may have changed."""
        try:
            root_time = os.stat(self.root).st_mtime_ns
        except FileNotFoundError:   # the root went away while we read: so did its runs
            conn.executescript("BEGIN IMMEDIATE; DELETE FROM runs; DELETE FROM records; COMMIT;")
            return
        listed = conn.execute("SELECT value FROM meta WHERE key='listed'").fetchone()[0]
        names = self._listing() if full or listed != str(root_time) else None
        # Without a listing only the unsettled rows are read from the table: 10,000 settled ones cost milliseconds.
        asked = "" if names is not None else " WHERE kind != 'run' OR measured = 0"
        rows = {r[0]: (r[1], r[2], r[3])
                for r in conn.execute(f"SELECT run_id, kind, signature, measured FROM runs{asked}")}
        unsettled = {i for i, (kind, _, measured) in rows.items() if kind != "run" or not measured}
        gone = [] if names is None else sorted(set(rows) - names)
        check = (names if full else (names or set()) - set(rows)) | unsettled
        check -= set(gone)
        changed: list[tuple[Entry, Optional[str]]] = []
        root = str(self.root)
        for run_id in sorted(check):
            seen = rows.get(run_id)
            if seen is not None and seen[0] != "empty" and self._sign(f"{root}/{run_id}") == seen[1]:
                continue
            changed.append((self._read(self.root / run_id), None if seen is None else seen[1]))
        trust = str(root_time) if time.time_ns() - root_time > RACY_NS else ""
        if not changed and not gone and (names is None or listed == trust):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            for entry, before in changed:   # only over the row we read: a writer's newer note wins
                _put(conn, entry, before)
            conn.executemany("DELETE FROM runs WHERE run_id=?", [(g,) for g in gone])
            conn.executemany("DELETE FROM records WHERE run_id=?", [(g,) for g in gone])
            if names is not None:
                conn.execute("UPDATE meta SET value=? WHERE key='listed'", (trust,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # ---------------------------------------------------------------- reading
    def entries(self, full: bool = True) -> list[Entry]:
        """Every run folder of the root, by run id (empty folders left out); ``full`` checks every row's files."""
        def work(conn: sqlite3.Connection) -> list[Entry]:
            self._refresh(conn, full)
            return [_entry_of(r) for r in conn.execute(f"{_ROWS} WHERE kind != 'empty' ORDER BY run_id")]
        try:
            return self._use(work)
        except (_IndexBroken, OSError):
            return self.from_folders()

    def from_folders(self) -> list[Entry]:
        """Every run folder read from its files, the index aside (its fallback, and what verification compares)."""
        found = [self._read(self.root / name) for name in sorted(self._listing() or ())]
        return [e for e in found if e.kind != "empty"]

    def select(self, where: str, args: tuple = ()) -> list[Entry]:
        """The rows matching an SQL condition on the columns, by run id, after the light refresh (the hot paths)."""
        def work(conn: sqlite3.Connection) -> list[Entry]:
            self._refresh(conn, False)
            return [_entry_of(r) for r in conn.execute(f"{_ROWS} WHERE {where} ORDER BY run_id", args)]
        try:
            return self._use(work)
        except (_IndexBroken, OSError):
            return [e for e in self.from_folders() if self._matches(e, where, args)]

    def dates(self, where: str, args: tuple = ()) -> list[str]:
        """The ``run_date`` of the rows matching ``where``, by run id, after the light refresh: no record parsed
        (a look-back over every run's day costs a column, not every record)."""
        def work(conn: sqlite3.Connection) -> list[str]:
            self._refresh(conn, False)
            return [r[0] for r in conn.execute(f"SELECT run_date FROM runs WHERE {where} ORDER BY run_id", args)]
        try:
            return self._use(work)
        except (_IndexBroken, OSError):
            return [str((e.record or {}).get("run_date")) for e in self.from_folders() if self._matches(e, where, args)]

    @staticmethod
    def _matches(entry: Entry, where: str, args: tuple) -> bool:
        """``where`` asked of one entry read from its folder (the fallback keeps the index's answer)."""
        conn = sqlite3.connect(":memory:")
        try:
            conn.executescript(_SCHEMA)
            _put(conn, entry)
            return conn.execute(f"SELECT count(*) FROM runs WHERE {where}", args).fetchone()[0] == 1
        finally:
            conn.close()

    def latest_complete_date(self) -> Optional[str]:
        """The newest day (``YYYY-MM-DD``) of a complete, dated run: the lease's run clock, one indexed query."""
        def work(conn: sqlite3.Connection) -> Optional[str]:
            self._refresh(conn, False)
            # Down the (measured, run_date) index from its end: a truncated date orders as the whole one.
            found = conn.execute("SELECT substr(run_date, 1, 10) FROM runs WHERE measured=1 AND run_date IS NOT NULL "
                                 "AND kind='run' ORDER BY run_date DESC LIMIT 1").fetchone()
            return None if found is None else found[0]
        try:
            return self._use(work)
        except (_IndexBroken, OSError):
            dates = [str((e.record or {}).get("run_date"))[:10] for e in self.from_folders() if e.measured and e.dated]
            return max(dates) if dates else None

    # ---------------------------------------------------------------- writing
    def note(self, folder: Path) -> None:
        """Read ``folder`` again and put its row in the index (the store calls this after each write).

        A failure of the index is not the writer's failure: the file is
        written, and the row's stale signature makes the next read read it again.
        """
        def work(conn: sqlite3.Connection) -> None:
            entry = self._read(Path(folder))
            conn.execute("BEGIN IMMEDIATE")
            _put(conn, entry, replace=True)
            conn.execute("COMMIT")
            self._refresh(conn, False)   # a new index learns the other folders now, not at each read
        with contextlib.suppress(_IndexBroken, OSError):
            self._use(work, create=True)

    def forget(self, run_id: str) -> None:
        """Drop a folder's row (it moved away); the listing would find it gone as well."""
        def work(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            for table in ("runs", "records"):
                conn.execute(f"DELETE FROM {table} WHERE run_id=?", (run_id,))
            conn.execute("COMMIT")
        with contextlib.suppress(_IndexBroken, OSError):
            self._use(work)

    def disagreements(self) -> list[str]:
        """Every way the index differs from the folders read whole now, one line each (none when it agrees, or
        when there is no index yet: every reading then answers from the folders)."""
        if not self.file.exists():
            return []

        def work(conn: sqlite3.Connection) -> dict[str, Entry]:
            return {r["run_id"]: _entry_of(r) for r in conn.execute(f"{_ROWS} WHERE kind != 'empty'")}
        try:
            indexed = self._use(work)
        except (_IndexBroken, OSError) as exc:
            return [f"{self.file}: the run index cannot be read ({exc})"]
        disk = {e.run_id: e for e in self.from_folders()}
        out = []
        for run_id in sorted(set(indexed) | set(disk)):
            have, want = indexed.get(run_id), disk.get(run_id)
            if have is None:
                out.append(f"run folder {run_id}: not in the run index {self.file}")
            elif want is None:
                out.append(f"run folder {run_id}: in the run index {self.file} but not under {self.root}")
            elif have.columns()[1:] != want.columns()[1:] or have.record != want.record:
                out.append(f"run folder {run_id}: the run index {self.file} differs from its files "
                           f"(indexed {have.kind}, measured {have.measured}; "
                           f"read {want.kind}, measured {want.measured})")
        return out


_MARKS = ", ".join("?" * (11 + len(_FIELDS)))
_SETS = ", ".join(f"{c}=?" for c in ("kind", "signature", "measured", "problem", "trials_size", "trials_last",
                                     "trials_count", "trials_torn", "counted", "measurement_problem", *_FIELDS))


def _put(conn: sqlite3.Connection, entry: Entry, before: Optional[str] = None, replace: bool = False) -> None:
    """Write one folder's row: over any row (``replace``), over the row signed ``before``, or as a new row only."""
    if replace:
        conn.execute(f"INSERT OR REPLACE INTO runs VALUES ({_MARKS})", entry.columns())
    elif before is None:
        if conn.execute(f"INSERT OR IGNORE INTO runs VALUES ({_MARKS})", entry.columns()).rowcount == 0:
            return
    elif conn.execute(f"UPDATE runs SET {_SETS} WHERE run_id=? AND signature=?",
                      (*entry.columns()[1:], entry.run_id, before)).rowcount == 0:
        return
    body = entry.body()
    if body is None:
        conn.execute("DELETE FROM records WHERE run_id=?", (entry.run_id,))
    else:
        conn.execute("INSERT OR REPLACE INTO records VALUES (?, ?)", (entry.run_id, body))
