"""A progress bar for long runs: done/total, rate and time left, on a terminal only.

A run on the reference model takes minutes to hours and reports each
recorded trial through the runner's ``progress(done, total, trial)``
callback (:data:`llmarchive.run.runner.Progress`).  :class:`TrialProgress` is
such a callback that draws one bar per protocol with :mod:`rich.progress`.

It is **quiet when its stream is not a terminal** — CI logs, a file, the
log Dagster captures from a step process: then it writes nothing at all,
because a bar redrawn into a log is noise, and the trial log itself is the
record of what was done.

Two ways in:

* the CLI wraps a run in ``with TrialProgress() as progress:`` and passes
  ``progress`` to the runner;
* code that the CLI does not call directly — a Dagster asset materialised
  in process by ``make demo`` — is reached through the environment: when
  :data:`ENV_VAR` is ``terminal``, :func:`from_env` gives a bar, otherwise a
  reporter that does nothing.  Dagster captures a step's stderr (file
  descriptor 2 goes to its compute log), so that bar writes to the
  process's controlling terminal, ``/dev/tty``; the demo sets the variable
  only when its own stderr is a terminal, and where there is no controlling
  terminal the reporter stays silent.  At most one bar is live in a
  process; a second request while one is live gets the do-nothing
  reporter, so a nested call never draws two.

Each bar also counts the answers it saw that the grammar could read
(``outcome`` ``valid``) — on a small model most are not, and the bar says so
while the run goes.  A caller that is not a runner (the runtime fingerprint)
passes ``unit`` (``prompts``) in its report instead of a trial.

:class:`LogLines` is the same report as a line every so many trials, for a
log (Dagster's console, a CI log) where a redrawn bar would be noise.
"""
import os
from types import TracebackType
from typing import Any, Callable, Mapping, Optional, TextIO

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TaskID, TextColumn,
                           TimeRemainingColumn)
from rich.table import Column
from rich.text import Text

ENV_VAR = "LLMARCHIVE_PROGRESS"

ProgressCallback = Callable[[int, int, Mapping[str, Any]], None]

_live: list["TrialProgress"] = []


class RateColumn(ProgressColumn):
    """Trials per second (or per minute, for a slow model) over the last minute."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text("–/s", style="progress.data.speed")
        if speed < 1:
            return Text(f"{60 * speed:.1f}/min", style="progress.data.speed")
        return Text(f"{speed:.1f}/s", style="progress.data.speed")


class LeftColumn(TimeRemainingColumn):
    """Time left, labelled so a reader does not take it for time spent."""

    def render(self, task: Task) -> Text:
        text = super().render(task)
        text.append(" left")
        return text


class TrialProgress:
    """The runner's progress callback as a terminal bar, one line per protocol.

    Use it as a context manager around the run; calling it outside one (or
    on a stream that is not a terminal) records nothing and draws nothing.
    ``console`` defaults to stderr, so stdout stays clean for a command's
    result; tests pass ``Console(file=StringIO(), force_terminal=True)``.
    """

    def __init__(self, console: Optional[Console] = None, *, enabled: bool = True,
                 closing: Optional[TextIO] = None) -> None:
        self.console = console if console is not None else Console(stderr=True)
        self.enabled = enabled and self.console.is_terminal
        self._closing = closing
        self._progress: Optional[Progress] = None
        self._tasks: dict[str, TaskID] = {}
        self._tallies: dict[str, "Tally"] = {}

    @property
    def active(self) -> bool:
        """True while a bar is being drawn."""
        return self._progress is not None

    def __enter__(self) -> "TrialProgress":
        if self.enabled:
            self._progress = Progress(
                # Fits an 80-column terminal: the protocol id is shortened before the numbers are.
                TextColumn("{task.description}",
                           table_column=Column(max_width=30, no_wrap=True, overflow="ellipsis")),
                BarColumn(bar_width=12),
                MofNCompleteColumn(),
                TextColumn("{task.fields[unit]}"),
                TextColumn("{task.fields[readable]}"),
                RateColumn(),
                LeftColumn(),
                console=self.console,
                speed_estimate_period=60.0,
                # Redrawn from the caller's thread, at each trial: a write that fails is caught there
                # (:meth:`__call__`) instead of killing a refresh thread with a traceback on stderr.
                auto_refresh=False,
            )
            _live.append(self)
            try:
                self._progress.start()
            except (OSError, ValueError):
                self._drop()
        return self

    def __exit__(self, exc_type: Optional[type], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self._drop()

    def _drop(self) -> None:
        """Stop drawing for good; a terminal that is gone (EIO, a closed pipe) is not the run's failure."""
        progress, self._progress = self._progress, None
        if self in _live:
            _live.remove(self)
        if progress is not None:
            try:
                progress.stop()
            except (OSError, ValueError):
                pass
        if self._closing is not None:
            try:
                self._closing.close()
            except OSError:
                pass
            self._closing = None

    def __call__(self, done: int, total: int, trial: Mapping[str, Any]) -> None:
        if self._progress is None:
            return
        try:
            self._draw(done, total, trial)
        except (OSError, ValueError):
            # The terminal went away mid-run (a closed ssh session, a revoked /dev/tty): the bar stops,
            # the run goes on — a progress report must never stop a measurement.
            self._drop()

    def _draw(self, done: int, total: int, trial: Mapping[str, Any]) -> None:
        label = str(trial.get("protocol_id") or trial.get("run_id") or "trials")
        tally = self._tallies.setdefault(label, Tally())
        tally.add(trial)
        task = self._tasks.get(label)
        if task is None:
            # Trials recorded before this process (a resumed run) are not this
            # process's rate: start the bar there, so only new trials count.
            task = self._progress.add_task(label, total=total, completed=max(done - 1, 0),
                                           unit=str(trial.get("unit") or "trials"), readable="")
            self._tasks[label] = task
        self._progress.update(task, completed=done, total=total, readable=tally.short(), refresh=True)


class Tally:
    """How many of the answers seen (this process) the grammar could read."""

    def __init__(self) -> None:
        self.readable = self.unreadable = 0

    def add(self, trial: Mapping[str, Any]) -> None:
        outcome = trial.get("outcome")
        if outcome == "valid":
            self.readable += 1
        elif outcome is not None:
            self.unreadable += 1

    @property
    def seen(self) -> int:
        return self.readable + self.unreadable

    def short(self) -> str:
        """``7 readable`` (empty before the first answer, or for a report that carries none)."""
        return f"{self.readable} readable" if self.seen else ""

    def words(self) -> str:
        """`` (7 readable, 33 not, of the 40 answered now)``, or empty."""
        if not self.seen:
            return ""
        return f" ({self.readable} readable, {self.unreadable} not, of the {self.seen} answered now)"


class LogLines:
    """The runner's progress callback as one line every ``every`` reports, and at the last one.

    ``say`` receives each line (a Dagster step passes ``context.log.info``),
    e.g. ``risky_choice_framing__wording__v0: 40/120 trials (3 readable, 37
    not, of the 40 answered now)``.
    """

    def __init__(self, say: Callable[[str], None], every: int = 40) -> None:
        self.say = say
        self.every = max(1, every)
        self._tallies: dict[str, Tally] = {}

    def __call__(self, done: int, total: int, trial: Mapping[str, Any]) -> None:
        label = str(trial.get("protocol_id") or trial.get("run_id") or "trials")
        tally = self._tallies.setdefault(label, Tally())
        tally.add(trial)
        if done % self.every == 0 or done == total:
            self.say(f"{label}: {done}/{total} {trial.get('unit') or 'trials'}{tally.words()}")


class _Nothing:
    """The reporter that reports nothing (no terminal, or not asked for)."""

    active = False

    def __enter__(self) -> "_Nothing":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __call__(self, done: int, total: int, trial: Mapping[str, Any]) -> None:
        return None


def from_env(console: Optional[Console] = None) -> "TrialProgress | _Nothing":
    """A bar when :data:`ENV_VAR` is ``terminal`` and no bar is live in this process; else nothing.

    The bar goes to ``console`` when given, else to the controlling terminal.
    """
    if os.environ.get(ENV_VAR, "").strip().lower() != "terminal" or _live:
        return _Nothing()
    if console is not None:
        return TrialProgress(console)
    try:
        tty = open("/dev/tty", "w", encoding="utf-8")
    except OSError:
        return _Nothing()
    return TrialProgress(Console(file=tty), closing=tty)


def both(first: Optional[ProgressCallback], second: Optional[ProgressCallback]) -> Optional[ProgressCallback]:
    """One callback that calls two (either may be ``None``)."""
    if first is None:
        return second
    if second is None:
        return first

    def call(done: int, total: int, trial: Mapping[str, Any]) -> None:
        first(done, total, trial)
        second(done, total, trial)

    return call
