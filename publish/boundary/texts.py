"""Published files read the way a reader reads them: the texts both boundary checks search.

A JSON or JSONL file by its string values (and a JSONL line as written,
its escapes turned into spaces), a CSV row by row, HTML as written, with
its markup removed and its entities decoded, and its embedded JSON parsed,
a SQLite database by every text cell of every table (a row's cells joined,
in parts of :data:`SQLITE_CHUNK_ROWS` rows for the workers) and its
schema, anything else as UTF-8 text.  The sealed-text check
(:mod:`publish.boundary.sealed`) and the value check (:mod:`publish.boundary.values`)
both search what :func:`file_texts` (or, for bytes still in memory,
:func:`data_texts`) yields.
"""
import csv
import html
import io
import json
import re
import sqlite3
from pathlib import Path
from typing import Iterable, Iterator

from measure import jsonl

_TAG = re.compile(r"<[^>]*>")
_JSON_SCRIPT = re.compile(r'<script type="application/json"[^>]*>(.*?)</script>', re.S)


def json_strings(value, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield where, key
            yield from json_strings(item, where)
    elif isinstance(value, list):
        for item in value:
            yield from json_strings(item, where)


def text_of(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


_JSON_ESCAPE = re.compile(r'\\[nrtbf"\\/]')
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def file_texts(path: Path, where: str) -> Iterator[tuple[str, str]]:
    """Every piece of text a reader of ``path`` would see, with where it came from.

    Values are searched in context, not one by one: a CSV row or a
    database row is searched as its cells joined by spaces, a JSONL line as
    the line itself with its JSON escapes (``\\n``, ``\\"``) turned into spaces,
    so a run of words split across two adjacent fields is still one run.
    HTML is searched as written, with its markup removed and entities
    decoded, and its embedded JSON parsed.  Line-oriented formats are read
    line by line so a large file never becomes one huge string.
    """
    suffix = path.suffix.lower()
    if suffix in SQLITE_SUFFIXES:
        for part in sqlite_parts(path):
            yield from sqlite_texts(path, where, part)
        return
    if suffix in (".csv", ".jsonl"):
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            yield from _line_texts(fh, where, suffix)
        return
    yield from _whole_texts(text_of(path.read_bytes()), where, suffix)


def data_texts(data: bytes, where: str) -> Iterator[tuple[str, str]]:
    """:func:`file_texts` of a file's bytes still in memory (a build scans what it is about to write, so
    the scan need not wait for the write, nor read the file back): the same texts, read the same way."""
    suffix = Path(where).suffix.lower()
    if suffix in SQLITE_SUFFIXES:
        raise ValueError(f"{where}: a database is searched from its file (file_texts)")
    if suffix in (".csv", ".jsonl"):
        # newline="": lines split exactly as a file opened with newline="" splits them, nothing translated
        yield from _line_texts(io.StringIO(text_of(data), newline=""), where, suffix)
        return
    yield from _whole_texts(text_of(data), where, suffix)


def _line_texts(fh: Iterable[str], where: str, suffix: str) -> Iterator[tuple[str, str]]:
    """The texts of a CSV (row by row) or a JSONL file (line by line) read from text lines."""
    if suffix == ".csv":
        for number, row in enumerate(csv.reader(fh), start=1):
            yield f"{where}, row {number}", " ".join(row)
        return
    for number, line in enumerate(fh, start=1):
        record = jsonl.record_of(line) if "\\u" in line else None
        if record is not None:
            yield f"{where}, line {number}", " ".join(s for _, s in json_strings(record, ""))
        yield f"{where}, line {number}", _JSON_ESCAPE.sub(" ", line)


def _whole_texts(text: str, where: str, suffix: str) -> Iterator[tuple[str, str]]:
    """The texts of a file read whole: as written, then its JSON strings or its HTML's words and data."""
    yield where, text
    if suffix == ".json":
        try:
            yield where, " ".join(s for _, s in json_strings(json.loads(text), where))   # one JSON document: a .json file
        except json.JSONDecodeError:
            pass
    elif suffix in (".html", ".htm", ".svg", ".xml"):
        yield where, html.unescape(_TAG.sub(" ", text))
        for block in _JSON_SCRIPT.findall(text):
            try:
                yield f"{where} (embedded data)", " ".join(s for _, s in json_strings(json.loads(block), ""))  # one JSON document: a page's data
            except json.JSONDecodeError:
                pass


SQLITE_CHUNK_ROWS = 20_000


def sqlite_parts(path: Path) -> list[tuple]:
    """The parts a database is searched in: its schema, then each table in rowid ranges (for the workers)."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    parts: list[tuple] = [("",)]
    try:
        tables = [row[0] for row in connection.execute("select name from sqlite_master where type = 'table' "
                                                       "order by name")]
        for table in tables:
            low, high = connection.execute(f'select min(rowid), max(rowid) from "{table}"').fetchone()
            if low is None:
                continue
            for start in range(low, high + 1, SQLITE_CHUNK_ROWS):
                parts.append((table, start, min(start + SQLITE_CHUNK_ROWS - 1, high)))
    finally:
        connection.close()
    return parts


def row_sql(connection: sqlite3.Connection, table: str) -> tuple[str, str]:
    """SQL for a row's text as a reader sees it, and for whether the row holds a blob.

    SQLite joins a row's text cells itself, each followed by a space (the
    last one is dropped by the caller): the same text as joining them in
    Python, without making a Python value of every cell first.  A row that
    holds a blob is read cell by cell instead, its blobs decoded as every
    other file's bytes are.
    """
    columns = [row[1] for row in connection.execute(f'pragma table_info("{table}")')]
    quoted = ['"' + c.replace('"', '""') + '"' for c in columns]
    joined = " || ".join(f"(case when typeof({c}) = 'text' then {c} || ' ' else '' end)" for c in quoted)
    return joined, " or ".join(f"typeof({c}) = 'blob'" for c in quoted)


def sqlite_texts(path: Path, where: str, part: tuple) -> Iterator[tuple[str, str]]:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        if part[0] == "":
            for (sql,) in connection.execute("select sql from sqlite_master where sql is not null"):
                yield f"{where} (schema)", sql
            return
        table, low, high = part
        where_table = f"{where}, table {table}"
        joined, blob = row_sql(connection, table)
        for rowid, text, has_blob in connection.execute(
                f'select rowid, {joined}, {blob} from "{table}" where rowid between ? and ?', (low, high)):
            if has_blob:
                row = connection.execute(f'select * from "{table}" where rowid = ?', (rowid,)).fetchone()
                yield where_table, " ".join(text_of(v) if isinstance(v, bytes) else v for v in row
                                            if isinstance(v, (str, bytes)))
            else:
                yield where_table, text[:-1]
    finally:
        connection.close()
