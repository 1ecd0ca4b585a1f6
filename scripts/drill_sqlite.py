"""Dagster's SQLite storages, made cheaper to repeat in one long process — what they store unchanged.

A daemon on SQLite storage opens a new SQLAlchemy engine for every
statement, and before most statements of the schedule storage asks the
database's schema which tables exist and which secondary indexes are built;
each sensor evaluation also opens the whole instance again from its ref,
reading Alembic's migration scripts and checking every table.  A real
daemon pays that too, spread over real hours.  The drill replays 24 months
in one process, where it was most of the wall time, so — and only in the
drill's process — :func:`install`:

* reads Alembic's scripts once per storage kind (the schema check itself
  still runs each time a storage opens);
* keeps one engine per database file (``NullPool`` still opens and closes a
  SQLite connection for every statement, as before);
* learns once per database the schema facts nothing undoes while the drill
  runs (a table that exists, an index that is built: a "no" is asked again)
  and initialises an event-log shard once per process instead of once per
  opened instance.

The rows written and read, the statements and the transactions are
Dagster's own.
"""
import threading
from typing import Any, Callable

_ENGINES: dict = {}
_FACTS: dict = {}
_INITIALISED: set = set()
_LOCK = threading.Lock()


class _ScriptDirectoryOnce:
    """Alembic's migration scripts of a storage, read once per process (see the module docstring)."""

    _read: dict = {}

    @classmethod
    def from_config(cls, config: Any) -> Any:
        from alembic.script import ScriptDirectory

        key = config.get_main_option("script_location")
        if key not in cls._read:
            cls._read[key] = ScriptDirectory.from_config(config)
        return cls._read[key]


def _engine_once(create: Callable) -> Callable:
    def create_engine(url: Any, *args: Any, **kwargs: Any) -> Any:
        key = (str(url), repr(sorted(kwargs.get("connect_args", {}).items())))
        with _LOCK:
            if key not in _ENGINES:
                _ENGINES[key] = create(url, *args, **kwargs)
            return _ENGINES[key]
    return create_engine


def _fact_once(name: str, method: Callable) -> Callable:
    def learned(self: Any, *args: Any) -> Any:
        key = (getattr(self, "_conn_string", id(self)), name,
               tuple(a for a in args if isinstance(a, (str, int))))
        if key in _FACTS:
            return _FACTS[key]
        found = method(self, *args)
        if found:            # a table or an index that exists stays; one that does not may be made (a migration)
            _FACTS[key] = found
        return found
    return learned


def _initdb_once(method: Callable) -> Callable:
    def initdb(self: Any, engine: Any, *args: Any, **kwargs: Any) -> None:
        key = str(engine.url)
        if key in _INITIALISED:
            return
        method(self, engine, *args, **kwargs)
        _INITIALISED.add(key)
    return initdb


def install() -> None:
    """Apply the three changes of the module docstring to Dagster's SQLite storages (idempotent)."""
    from dagster._core.storage import sql
    from dagster._core.storage.event_log.sqlite import sqlite_event_log
    from dagster._core.storage.runs.sqlite import sqlite_run_storage
    from dagster._core.storage.schedules import sql_schedule_storage
    from dagster._core.storage.schedules.sqlite import sqlite_schedule_storage

    if getattr(sql, "_drill_installed", False):
        return
    sql._drill_installed = True                                    # type: ignore[attr-defined]
    sql.ScriptDirectory = _ScriptDirectoryOnce                     # type: ignore[attr-defined,misc]
    for module in (sqlite_schedule_storage, sqlite_run_storage, sqlite_event_log):
        module.create_engine = _engine_once(module.create_engine)  # type: ignore[attr-defined]
    storage = sql_schedule_storage.SqlScheduleStorage
    for name in ("has_instigators_table", "_has_instigators_table", "has_secondary_index_table",
                 "has_built_index", "_has_asset_daemon_asset_evaluations_table"):
        if hasattr(storage, name):
            setattr(storage, name, _fact_once(name, getattr(storage, name)))
    events = sqlite_event_log.SqliteEventLogStorage
    events._initdb = _initdb_once(events._initdb)                  # type: ignore[method-assign]
