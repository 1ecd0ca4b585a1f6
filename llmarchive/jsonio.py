"""Durable JSON files and hash-chained JSONL logs.

Writes go to a temporary file that is fsynced and renamed into place, so a
crash leaves either the old file or the new one, never half of either.
Appends to a chained log are flushed and fsynced before returning: a record
that was reported written survives a SIGKILL.
"""
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from llmarchive.locks import file_lock
from measure import chain
from measure.canonical import canonical_json


class RecordFileError(ValueError):
    """A record file that cannot be read; the message names file and line."""


def write_json(path: Path, value: Any, pretty: bool = True) -> None:
    """Atomically write ``value`` as JSON (pretty, or canonical with ``pretty=False``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n" if pretty else canonical_json(value)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: Path) -> Any:
    """Read one JSON file, naming the file in any error."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordFileError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise RecordFileError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


def read_jsonl(path: Path, tolerate_torn_tail: bool = True) -> list[dict]:
    """Read a JSONL log.

    A last line without its newline is what a process killed mid-write
    leaves; with ``tolerate_torn_tail`` it is ignored (the record was never
    reported written).  Any other malformed line is an error naming it.
    """
    if not path.exists():
        return []
    raw = path.read_text(encoding="utf-8")
    lines = raw.split("\n")
    torn = lines[-1] != ""
    body = lines[:-1] if not torn or tolerate_torn_tail else lines
    try:
        return chain.parse_lines(body, str(path))
    except ValueError as exc:
        raise RecordFileError(str(exc)) from None


def iter_jsonl(path: Path) -> Iterator[dict]:
    yield from read_jsonl(path)


class ChainedLog:
    """An append-only, hash-chained JSONL file.

    Opening it reads the existing records and verifies the chain; a torn
    last line (from a killed writer) is cut off before the next append.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records = read_jsonl(path)
        chain.verify(self.records)
        self._repair_torn_tail()

    def _repair_torn_tail(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as fh:
                fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())

    @property
    def last_hash(self) -> str:
        return chain.last_hash(self.records)

    def append(self, record: Mapping) -> dict:
        """Chain, write, flush and fsync one record; return it as written."""
        return self.extend([record])[0]

    def extend(self, records: Iterable[Mapping]) -> list[dict]:
        """Chain and append several records with one write, flush and fsync.

        Group commit: records that are ready together (concurrent calls
        finishing at once) become durable together, at the cost of one
        fsync.  A crash mid-write leaves a torn last line, which the next
        open cuts off.
        """
        linked: list[dict] = []
        prev = self.last_hash
        for record in records:
            entry = chain.link(record, prev)
            prev = entry["record_sha256"]
            linked.append(entry)
        if not linked:
            return linked
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write("".join(chain.to_line(entry) for entry in linked))
            fh.flush()
            os.fsync(fh.fileno())
        self.records.extend(linked)
        return linked


def append_record(path: Path, record: Mapping) -> dict:
    """Append one record to a chained log, opened, verified and written under the log's lock.

    Chained logs are shared by processes (Dagster runs each step in its own),
    so the last hash is read and the record written under one lock.
    """
    with file_lock(path):
        return ChainedLog(path).append(record)
