"""Fixtures shared by the test modules (defined once here, not per module).

Every test gets its own archive home under a temp dir (``archive_home``);
the archives built on it, in rising order of preparation:

* ``paths`` — an empty archive with its folders made;
* ``built`` — every protocol file in place (no guard seed: public wording only);
* ``admitted`` — every protocol built, the v0 protocols promoted to their lanes;
* ``paid_paths`` — ``admitted`` with a (fake) API key set and a €100 budget written;
* ``publish_template`` / ``archive`` — the publication tests' admitted archive,
  built once per module and copied fresh for each test.

``protocols`` is the 24 built protocols in memory (no archive), and ``fake`` a
fake provider (real HTTP on 127.0.0.1) answering by a hash rule and listing
``claude-sonnet-5``; ``llama_server`` is llama.cpp's own OpenAI-compatible
server with the embedded model (module-scoped: it loads the model once).  A module whose tests need a differently prepared
archive defines its own fixture, with the reason in its docstring.

Retries: ``waits`` is a back-off sleep to inject into a subject (``sleep=``);
the autouse ``no_real_backoff`` fails a test whose subject sleeps a back-off
for real.  Tests assert behaviour, never elapsed time: timings are in bench/.

The clock: no test may depend on the day it runs.  A test whose story has
fixed dates (a sweep of 2026-11-02 on an archive admitted that month) sets
the clock with time-machine's marker, ``@pytest.mark.time_machine("…Z")``
(module-wide as ``pytestmark``); the marker's fixture runs before the
test's other fixtures, so the archive a fixture builds is stamped in the
story's month too.  ``LLMARCHIVE_TEST_CLOCK=2027-01-01T00:10:00Z`` starts
the whole session at that instant (ticking, from before collection), so
the rest of the suite can be run as if on any day: tests/test_any_day.py
runs the date-sensitive modules at a month's last day, a month's first day
and a new year.  Only this process travels: a test that runs the CLI in a
subprocess passes its dates as flags.
"""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CLOCK_ENV = "LLMARCHIVE_TEST_CLOCK"
"""An ISO 8601 instant (UTC) the whole session starts at instead of now; unset: the real clock."""

_session_clock = pytest.StashKey[object]()
_session_home = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Start the session's clock at ``$LLMARCHIVE_TEST_CLOCK`` (before any test module is imported).

    Also point ``$LLMARCHIVE_HOME`` at an empty folder for the session, before
    any test module is imported: what is read at import — the Dagster
    partitions start at the home's first admission (assets/partitions.py) —
    must never come from the developer's ``var/`` (``make test`` exports it).
    """
    import tempfile

    home = tempfile.mkdtemp(prefix="llmarchive-session-home-")
    os.environ["LLMARCHIVE_HOME"] = home
    # Parsed YAML kept for the session only, never in the developer's cache (llmarchive.archive.yamlfile).
    os.environ["LLMARCHIVE_YAML_CACHE"] = os.path.join(home, ".yaml-cache")
    # An owner's own webhook must never be paged by the tests: each test that posts sets its own receiver.
    for name in ("LLMARCHIVE_WEBHOOK_URL", "LLMARCHIVE_WATCH_WEBHOOK"):
        os.environ.pop(name, None)
    config.stash[_session_home] = home
    instant = os.environ.get(CLOCK_ENV)
    if not instant:
        return
    from datetime import datetime

    import time_machine

    try:
        when = datetime.fromisoformat(instant)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise pytest.UsageError(f"{CLOCK_ENV}={instant!r} is not an ISO 8601 instant with its zone "
                                "(e.g. 2027-01-01T00:10:00Z)")
    traveller = time_machine.travel(when, tick=True)
    traveller.start()
    config.stash[_session_clock] = traveller


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    home = config.stash.get(_session_home, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)
    traveller = config.stash.get(_session_clock, None)
    if traveller is not None:
        traveller.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Files that run for minutes first, each file's own order kept, the rest after them in collection order.

    ``make test`` runs two workers that take one file at a time, in this
    order (``-n 2 --dist loadfile --no-loadscope-reorder``): a long file
    started last would run on alone while the other worker sits idle, so
    the long ones (a test marked ``slow`` in them) are handed out first and
    the many short files fill the gaps.  A serial run is reordered the same
    way; no test depends on another's order.
    """
    long_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in long_files)   # a stable sort: each file stays in one piece


def pytest_report_header(config: pytest.Config) -> str:
    if config.stash.get(_session_clock, None) is not None:
        return f"clock: the session started at {os.environ[CLOCK_ENV]} ({CLOCK_ENV}), ticking"
    return "clock: real"


@pytest.fixture
def archive_home(tmp_path, monkeypatch):
    """A fresh ``$LLMARCHIVE_HOME`` so no test touches the developer's var/."""
    home = tmp_path / "archive"
    monkeypatch.setenv("LLMARCHIVE_HOME", str(home))
    return home


@pytest.fixture
def instance():
    """An ephemeral Dagster instance (in memory, gone after the test)."""
    from dagster import DagsterInstance

    with DagsterInstance.ephemeral() as instance:
        yield instance


@pytest.fixture
def paths(archive_home):
    """An empty archive under ``archive_home`` with its folders made."""
    from llmarchive.archive import ArchivePaths

    return ArchivePaths.from_env().ensure()


@pytest.fixture
def built(archive_home, monkeypatch):
    """``archive_home`` with every protocol file in place and no guard seed set."""
    from tests.panels_helpers import built_paths

    return built_paths(monkeypatch, None)


@pytest.fixture
def admitted(archive_home, monkeypatch):
    """``archive_home`` with every protocol built and the v0 protocols promoted to their lanes."""
    from tests.instrument_helpers import admitted_archive

    return admitted_archive(monkeypatch)


@pytest.fixture
def paid_paths(archive_home, monkeypatch):
    """``admitted`` plus a (fake) API key and ``tests.instrument_helpers.PAID_BUDGET`` written: the paid paths."""
    from tests.instrument_helpers import PAID_BUDGET, paid_archive

    return paid_archive(monkeypatch, PAID_BUDGET)


@pytest.fixture(scope="module")
def protocols():
    """The 24 protocols built in memory from the public and development seeds, by protocol_id.

    Module-scoped (not session): a module that mutates a protocol cannot leak it into another.
    """
    from panels.build import build_protocols
    from panels.seeds import development_seed, public_seed

    return {p["protocol_id"]: p for p in build_protocols(public_seed(), development_seed())}


@pytest.fixture(scope="module")
def publish_template(tmp_path_factory):
    """The publication tests' admitted archive (secret guard seed), built once per module."""
    from tests import publish_helpers as ph

    return ph.template_archive(tmp_path_factory.mktemp("template") / "home")


@pytest.fixture
def archive(publish_template, tmp_path):
    """A fresh copy of ``publish_template`` for one test to change."""
    from tests import publish_helpers as ph

    return ph.fresh_archive(publish_template, tmp_path / "home")


@pytest.fixture
def fake():
    """A fake provider answering by a hash of the prompt and listing ``claude-sonnet-5``."""
    from tests.fake_provider import FakeProvider, decide_by_hash

    with FakeProvider(decide_by_hash(), models=["claude-sonnet-5"]) as server:
        yield server


@pytest.fixture(scope="module")
def llama_server():
    """llama.cpp's own OpenAI-compatible server on 127.0.0.1 with the embedded SmolLM2 model, one per module.

    ``python -m llama_cpp.server`` in its own process group (stopped with
    ``tests.ports.stop``), ready once ``/v1/models`` answers; two threads
    (the machine has two cores).  Yields ``(base_url, model_id)``: the URL
    with ``/v1`` as llama.cpp documents it, and the one id the server lists.
    """
    import subprocess

    import httpx

    from llmarchive.subjects import embedded_model_path
    from tests.ports import free_port, stop, wait_for_http

    model = embedded_model_path()
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", model.stem,
         "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2", "--n_threads_batch", "2",
         "--n_ctx", "2048", "--verbose", "False"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        wait_for_http(base_url + "/models", process)
        listed = [m["id"] for m in httpx.get(base_url + "/models", timeout=10.0).json()["data"]]
        assert len(listed) == 1, listed
        yield base_url, listed[0]
    finally:
        stop(process)


@pytest.fixture
def waits():
    """A fresh recording back-off sleep (``tests.retry_helpers.Waits``) for a subject's ``sleep=``."""
    from tests.retry_helpers import Waits

    return Waits()


@pytest.fixture(autouse=True)
def no_real_backoff(monkeypatch):
    """Fail any test in which an API subject sleeps a retry back-off for real.

    A subject made without ``sleep=`` keeps its real wait (``asyncio.sleep``),
    only counted here; a test that retries must inject one (the ``waits``
    fixture), so the suite spends no time waiting and can assert the waits.
    """
    import asyncio

    from llmarchive.subjects import http

    slept: list[float] = []
    real_init = http.HttpSubject.__init__

    def counted_init(self, *args, **kwargs) -> None:
        real_init(self, *args, **kwargs)
        if self._sleep is asyncio.sleep:
            def real_sleep(seconds: float):
                slept.append(seconds)
                return asyncio.sleep(seconds)
            self._sleep = real_sleep

    monkeypatch.setattr(http.HttpSubject, "__init__", counted_init)
    yield
    assert not slept, (f"a retry back-off slept {len(slept)}x ({sum(slept):.2f} s) for real: "
                       "give the subject sleep= (the waits fixture)")
