"""Datasette plugin: one request is bounded in time and memory, and the server's own paths stay private.

Loaded with ``--plugins-dir`` beside ``archive_readonly.py`` (``llmarchive
serve``, ``make serve`` and the tests run the same server).  Datasette's SQL
time limit is a progress handler, which SQLite asks only between steps of
its virtual machine, at loop jumps: it cannot stop one slow step, nor a row
whose expression calls a slow function many times.  Before this plugin,
``select hex(randomblob(150000000))`` built a 300 MB answer in 4.7 s against
a 1 s limit and the server's memory peaked at 1.2 GB; ``printf('%.*c',
500000000, 'x')`` spent 8.5 s in one step.  Everything one step can be made
to do is bounded here, per connection (``prepare_connection``):

* **Size of one value** (``SQLITE_LIMIT_LENGTH``): :data:`VALUE_BYTES_FLOOR`
  (16 KiB), raised to twice the widest stored row when the database holds a
  wider one, so every stored row can always be read, sorted and downloaded
  whole.  The widest legitimate row is a measurement (6.1 KB on the ten-year
  archive of ``bench/publish_bench.py``, 4.2 KB in the tests' archive) and
  the widest cell its ``gates`` JSON (2.4 KB) or a comparison point's
  recomputed measurement (5 KB); an open-lane response is kept to a few KB
  by the protocols' frozen ``max_tokens`` of 256.  ``randomblob``,
  ``zeroblob``, ``printf``, ``replace``, ``group_concat``, ``hex`` and a
  recursive ``s || s`` all stop at the cap with "string or blob too big".
  A computed value larger than the cap (say a ``group_concat`` of every run
  id) is refused too: the price of the bound.
* **The whole answer**: the rows one statement returns are counted as they
  are fetched (a row factory) and the statement is refused past
  :data:`RESULT_BYTES`; the row cap alone allowed 1,000 rows of 1 MB each.
  The archive's widest page, 1,000 measurement rows, is about 5 MB.
* **Shape of a statement**: :data:`SQL_BYTES` of SQL (the longest canned
  query is 1,076), :data:`COLUMNS` result columns (twice the widest table,
  so a ``select *`` of two joined tables still works), LIKE/GLOB patterns of
  :data:`LIKE_PATTERN_BYTES` (Datasette's own full-text detection uses
  patterns of up to 61 characters on this schema).  With a value of at most
  16 KiB a LIKE costs at most about 4 ms, and the SQL length bounds how many
  one row can call.
* **Work of one call**: ``instr``, ``replace`` and two-argument
  ``trim``/``ltrim``/``rtrim`` cost the product of their arguments' lengths
  (a 30,000-character ``ltrim`` took 4.3 s); ``printf``/``format`` loop over
  a width or precision as large as asked.  They are replaced by guards that
  refuse a call past :data:`PAIR_BUDGET`, or a width beyond the value cap,
  and otherwise run SQLite's own function, so every answer is SQLite's; a
  guard also refuses once the statement's time is up.  The progress handler
  is asked every :data:`PROGRESS_STEPS` steps instead of Datasette's 1,000.
* **Private paths**: ``pragma_database_list``'s ``file`` column reads as
  NULL (it is the database's absolute path); the server is started from
  the archive home with a relative database path
  (:func:`publish.datasette.meta.serve_command`), so ``/-/databases.json``
  shows ``public/archive.db`` and nothing of the machine.
* ``fts3_tokenizer`` (which hands out a memory address), ``load_extension``,
  ``sqlite_log`` and the R*Tree debugging functions are refused.

Every refusal is a clean 400 naming the limit: the errors SQLite raises
("string or blob too big", "not authorized", "user-defined function raised
exception", "query string is too large") are re-worded here, where the
statement runs.  Measured (``bench/datasette_limit_bench.py``): every hostile
query of ``tests/test_datasette_server.py`` answers 400 within 0.3 s and the
server's peak memory stays near 100 MB; a row of 160 distinct worst-case
LIKE calls stays under the time limit.
"""
import re
import sqlite3
import threading
import time
import weakref
from contextlib import contextmanager
from pathlib import Path

import datasette.database as _datasette_database
from datasette import hookimpl

VALUE_BYTES_FLOOR = 16 * 1024
RESULT_BYTES = 32 * 1024 * 1024
SQL_BYTES = 4_000
COLUMNS = 160
LIKE_PATTERN_BYTES = 100
PROGRESS_STEPS = 100
# Work one guarded call may do, in character pairs compared: instr/replace compare with memcmp (about
# 0.04 ns a pair here), trim compares each character with every one of the set (about 5 ns a pair).
PAIR_BUDGET = {"instr": 100_000_000, "replace": 100_000_000, "trim": 2_000_000, "ltrim": 2_000_000,
               "rtrim": 2_000_000}
GUARDED = (("instr", 2), ("replace", 3), ("trim", 2), ("ltrim", 2), ("rtrim", 2))
FORMATTERS = ("printf", "format")
# One conversion of SQLite's printf: flags, width, precision, length, type (SQLite's printf.c grammar).
_CONVERSION = re.compile(r"%[-+ 0#!,]*(\*|\d+)?(?:\.(\*|\d+))?l{0,2}(.?)", re.S)
REFUSED_FUNCTIONS = frozenset({"fts3_tokenizer", "load_extension", "sqlite_log", "rtreenode", "rtreedepth"})
LIMITS = {
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: SQL_BYTES,
    sqlite3.SQLITE_LIMIT_COLUMN: COLUMNS,
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: LIKE_PATTERN_BYTES,
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
}
INTERNAL = "_internal"

_refusal = threading.local()      # why the statement running on this thread was refused, in words
_value_caps: dict[tuple, int] = {}
_caps_by_connection: dict[int, int] = {}  # id(connection) -> its value cap, for the refusal's words
_caps_lock = threading.Lock()


def _refuse(reason: str) -> None:
    _refusal.reason = reason


def _refused(reason: str, cap: int) -> bytes:
    """What a guard returns to stop the statement: a value one byte over the cap, which SQLite refuses
    ("string or blob too big") and :func:`sqlite_timelimit` re-words with ``reason``.  Raising instead
    would print a traceback per refusal: Datasette turns on ``sqlite3.enable_callback_tracebacks``."""
    _refuse(reason)
    return bytes(cap + 1)


def _late(name: str) -> str | None:
    """Why a guarded call must not run: the statement's time is up.  One row's expression has no step
    between calls where SQLite asks the progress handler, so a row of many calls could run past the limit."""
    deadline = getattr(_refusal, "deadline", None)
    if deadline is not None and time.perf_counter() >= deadline:
        return f"SQL query took too long: the time limit is {_refusal.limit_ms:,} ms (stopped in {name}())"
    return None


def _kib(n: int) -> str:
    return f"{n // 1024:,} KiB" if n < 1024 * 1024 else f"{n // (1024 * 1024):,} MiB"


# --------------------------------------------------------------------------- the value cap

def widest_row_bytes(conn: sqlite3.Connection) -> int:
    """The widest stored row of any table, in bytes of its values (read once per database file)."""
    widest = 0
    tables = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table' "
                                         "and name not like 'sqlite_%'")]
    for table in tables:
        columns = [r[0] for r in conn.execute("select name from pragma_table_info(?)", (table,))]
        if not columns:
            continue
        quoted = ['"' + c.replace('"', '""') + '"' for c in columns]
        total = " + ".join(f"coalesce(length(cast({c} as blob)), 0)" for c in quoted)
        table_quoted = '"' + table.replace('"', '""') + '"'
        value = conn.execute(f"select max({total}) from {table_quoted}").fetchone()[0]
        widest = max(widest, value or 0)
    return widest


def value_cap(conn: sqlite3.Connection, path: str | None) -> int:
    """``SQLITE_LIMIT_LENGTH`` for a database: the floor, or twice its widest stored row if larger."""
    if not path:
        return VALUE_BYTES_FLOOR
    try:
        stat = Path(path).stat()
        key = (str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)
    except OSError:
        return VALUE_BYTES_FLOOR
    with _caps_lock:
        cap = _value_caps.get(key)
    if cap is None:
        cap = max(VALUE_BYTES_FLOOR, 2 * widest_row_bytes(conn))
        with _caps_lock:
            _value_caps[key] = cap
    return cap


# --------------------------------------------------------------------------- the answer's size

def _counting_rows(limit: int):
    """A row factory that builds Datasette's ``sqlite3.Row`` and refuses a statement past ``limit`` bytes."""
    state = {"cursor": None, "bytes": 0}

    def row(cursor: sqlite3.Cursor, values: tuple) -> sqlite3.Row:
        ref = state["cursor"]
        if ref is None or ref() is not cursor:
            state["cursor"], state["bytes"] = weakref.ref(cursor), 0
        size = state["bytes"]
        for value in values:
            size += len(value) if isinstance(value, (str, bytes)) else 8
        state["bytes"] = size
        if size > limit:
            reason = (f"the answer to this query is larger than {_kib(limit)}, the most one request may return "
                      "here: ask for fewer rows or columns, or download a whole table as CSV from its page")
            _refuse(reason)
            raise sqlite3.OperationalError(reason)
        return sqlite3.Row(cursor, values)

    return row


# --------------------------------------------------------------------------- guarded functions

def _length(value) -> int:
    if value is None:
        return 0
    return len(value) if isinstance(value, (str, bytes)) else len(str(value))


def _guard(name: str, n_args: int, helper: sqlite3.Connection, cap: int):
    """SQLite's own ``name`` (run on ``helper``), refused when its two first arguments would cost too much."""
    sql = f"select {name}({', '.join('?' for _ in range(n_args))})"
    budget = PAIR_BUDGET[name]

    def call(*args):
        late = _late(name)
        if late:
            return _refused(late, cap)
        if _length(args[0]) * _length(args[1]) > budget:
            return _refused(f"{name}() on arguments of {_length(args[0]):,} and {_length(args[1]):,} characters "
                            f"is more work than one step may do here ({budget:,} character pairs)", cap)
        try:
            return helper.execute(sql, args).fetchone()[0]
        except sqlite3.Error as exc:
            return _refused(f"{name}(): {exc}", cap)

    return call


def _int32(value: int) -> int:
    return abs(((value + 2 ** 31) % 2 ** 32) - 2 ** 31)


def _printf_guard(name: str, helper: sqlite3.Connection, cap: int):
    """SQLite's own ``printf``/``format``, refused when a width or precision exceeds the value cap.

    ``printf('%.*c', 500000000, 'x')`` spends 8.5 s in one step writing characters past the value cap one
    by one (and then answers NULL); every width and precision, literal or ``*``, is checked first.
    """
    def sizes(args: tuple):
        fmt = args[0] if args else None
        if not isinstance(fmt, str):
            return
        position = 1
        for match in _CONVERSION.finditer(fmt):
            width, precision, kind = match.groups()
            for part in (width, precision):
                if part == "*":
                    value = args[position] if position < len(args) else None
                    position += 1
                    if value is not None:
                        yield _int32(helper.execute("select cast(? as integer)", (value,)).fetchone()[0])
                elif part:
                    yield int(part) & 0x7FFFFFFF
            if kind and kind not in "%n":
                position += 1

    def call(*args):
        late = _late(name)
        if late:
            return _refused(late, cap)
        widest = max(sizes(args), default=0)
        if widest > cap:
            return _refused(f"{name}() with a width or precision of {widest:,} would write more than the most "
                            f"one value may be here ({_kib(cap)})", cap)
        try:
            return helper.execute(f"select {name}({', '.join('?' for _ in args)})", args).fetchone()[0]
        except sqlite3.Error as exc:
            return _refused(f"{name}(): {exc}", cap)

    return call


# --------------------------------------------------------------------------- private paths, refused functions

def _authorize(action, arg1, arg2, db_name, source):
    if action == sqlite3.SQLITE_READ and (arg1 or "").lower() == "pragma_database_list" \
            and (arg2 or "").lower() == "file":
        return sqlite3.SQLITE_IGNORE     # the absolute path of the database file: reads as NULL
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in REFUSED_FUNCTIONS:
        _refuse(f"{arg2.lower()}() is not available on this server")
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


# --------------------------------------------------------------------------- the time limit

def _reworded(exc: sqlite3.Error, cap: int | None) -> sqlite3.Error:
    """The statement's error in words naming the limit it met (``exc`` itself when no limit of ours was met)."""
    message = str(exc)
    reason = getattr(_refusal, "reason", None)     # set by a guard, the row factory or the authorizer
    if reason is None and message == "string or blob too big":
        size = f" ({_kib(cap)})" if cap else ""
        reason = (f"a value in this query would be longer than the most one value may be here{size}: "
                  "string or blob too big")
    elif reason is None and message == "query string is too large":   # Python's sqlite3 checks SQL_LENGTH itself
        reason = f"the SQL is longer than {SQL_BYTES:,} bytes, the most this server reads: query string is too large"
    if reason is None or message == "interrupted":
        return exc
    return sqlite3.OperationalError(reason)


@contextmanager
def sqlite_timelimit(conn: sqlite3.Connection, ms: int):
    """Datasette's time limit (``datasette.utils.sqlite_timelimit``), asked every :data:`PROGRESS_STEPS` steps.

    It also re-words the refusals of this plugin: the statement's exception leaves Datasette's own handler
    through here, so the 400 names the limit instead of SQLite's generic words.
    """
    deadline = time.perf_counter() + ms / 1000
    steps = 1 if ms <= 20 else PROGRESS_STEPS

    def handler():
        if time.perf_counter() >= deadline:
            return 1

    _refusal.reason, _refusal.deadline, _refusal.limit_ms = None, deadline, ms
    conn.set_progress_handler(handler, steps)
    try:
        yield
    except sqlite3.Error as exc:
        replacement = _reworded(exc, _caps_by_connection.get(id(conn)))
        if replacement is exc:
            raise
        raise replacement from None
    finally:
        conn.set_progress_handler(None, steps)
        _refusal.reason, _refusal.deadline = None, None


_datasette_database.sqlite_timelimit = sqlite_timelimit


@hookimpl
def prepare_connection(conn, database, datasette):
    if database == INTERNAL:
        return
    db = datasette.databases.get(database)
    path = None if db is None or db.is_memory else db.path
    cap = value_cap(conn, path)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, cap)
    for limit, value in LIMITS.items():
        conn.setlimit(limit, value)
    _caps_by_connection[id(conn)] = cap
    conn.row_factory = _counting_rows(RESULT_BYTES)
    helper = sqlite3.connect(":memory:", check_same_thread=False)
    helper.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, cap)
    for name, n_args in GUARDED:
        conn.create_function(name, n_args, _guard(name, n_args, helper, cap), deterministic=True)
    for name in FORMATTERS:
        conn.create_function(name, -1, _printf_guard(name, helper, cap), deterministic=True)
    conn.set_authorizer(_authorize)
