"""The progress bar of long runs: drawn on a terminal, silent anywhere else."""
import io

from rich.console import Console

from llmarchive.run import progress

TRIAL = {"protocol_id": "risky_choice_framing__wording__v0", "item_id": "s01", "version": "A"}


def _drive(reporter, total=10, start=0):
    with reporter as bar:
        for done in range(start + 1, total + 1):
            bar(done, total, TRIAL)
    return reporter


def test_quiet_when_the_stream_is_not_a_terminal():
    stream = io.StringIO()
    reporter = _drive(progress.TrialProgress(Console(file=stream)))
    assert not reporter.enabled
    assert stream.getvalue() == ""


def test_a_terminal_shows_done_over_total_rate_and_time_left():
    stream = io.StringIO()
    reporter = progress.TrialProgress(Console(file=stream, force_terminal=True, width=100))
    with reporter as bar:
        assert bar.active
        for done in range(1, 4):
            bar(done, 10, TRIAL)
        bar._progress.refresh()
        mid = stream.getvalue()
        for done in range(4, 11):
            bar(done, 10, TRIAL)
    out = stream.getvalue()
    assert "3/10" in mid
    assert "10/10" in out and "trials" in out and "left" in out
    assert "risky_choice_framing__wording" in out  # the id, shortened to fit 80 columns
    assert "/s" in out or "/min" in out


def test_a_resumed_run_starts_its_bar_at_the_trials_already_recorded():
    stream = io.StringIO()
    reporter = progress.TrialProgress(Console(file=stream, force_terminal=True, width=100))
    with reporter as bar:
        bar(101, 120, TRIAL)
        task = bar._progress.tasks[0]
        assert (task.completed, task.total) == (101, 120)
        # Only the one trial recorded by this process counts towards the rate.
        assert sum(sample.completed for sample in task._progress) == 1


def test_quiet_flag_draws_nothing_even_on_a_terminal():
    stream = io.StringIO()
    reporter = _drive(progress.TrialProgress(Console(file=stream, force_terminal=True), enabled=False))
    assert not reporter.active and stream.getvalue() == ""


def test_from_env_draws_only_when_asked_and_never_twice(monkeypatch):
    monkeypatch.delenv(progress.ENV_VAR, raising=False)
    stream = io.StringIO()
    _drive(progress.from_env(Console(file=stream, force_terminal=True)))
    assert stream.getvalue() == ""

    monkeypatch.setenv(progress.ENV_VAR, "terminal")
    quiet = io.StringIO()
    _drive(progress.from_env(Console(file=quiet)))
    assert quiet.getvalue() == ""

    outer_stream, inner_stream = io.StringIO(), io.StringIO()
    with progress.TrialProgress(Console(file=outer_stream, force_terminal=True)):
        inner = _drive(progress.from_env(Console(file=inner_stream, force_terminal=True)))
    assert not inner.active and inner_stream.getvalue() == ""
    shown = io.StringIO()
    _drive(progress.from_env(Console(file=shown, force_terminal=True, width=100)))
    assert "10/10" in shown.getvalue()


def test_both_calls_each_callback_once_per_trial():
    calls = []
    combined = progress.both(lambda d, t, tr: calls.append(("a", d)), lambda d, t, tr: calls.append(("b", d)))
    combined(1, 2, TRIAL)
    assert calls == [("a", 1), ("b", 1)]
    only = lambda d, t, tr: None  # noqa: E731
    assert progress.both(None, only) is only and progress.both(only, None) is only


def test_llmarchive_run_on_a_non_terminal_writes_no_progress(archive_home, built, capsys):
    from llmarchive.cli import main
    from tests.fake_provider import FakeProvider, decide_by_hash

    with FakeProvider(decide_by_hash(), require_key=None) as fake:
        code = main(["run", "base_rate_neglect__wording__v0", "--subject", "openai", "--model", "local-llama",
                     "--base-url", fake.base_url + "/v1", "--unbudgeted", "--run-id", "plain",
                     "--concurrency", "4"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "status: complete (120/120 trials" in out.out
    assert "/120" not in out.err and "trials" not in out.err and "\x1b[" not in out.err


class _GoneTerminal(io.StringIO):
    """A terminal that went away: every write fails the way a closed tty does (EIO)."""

    def __init__(self, fail_after: int = 0):
        super().__init__()
        self.fail_after = fail_after

    def write(self, text):
        if self.fail_after <= 0:
            raise OSError(5, "Input/output error")
        self.fail_after -= 1
        return super().write(text)

    def isatty(self):
        return True


def test_a_terminal_that_goes_away_mid_run_stops_the_bar_not_the_run():
    for fail_after in (0, 1, 3):
        reporter = progress.TrialProgress(Console(file=_GoneTerminal(fail_after), force_terminal=True))
        _drive(reporter)                      # no exception escapes: not from start, a trial, nor the end
        assert not reporter.active and reporter not in progress._live


def test_from_env_without_a_controlling_terminal_is_silent(monkeypatch):
    """CI: the variable set, but /dev/tty cannot be opened (no controlling terminal)."""
    import builtins

    monkeypatch.setenv(progress.ENV_VAR, "terminal")
    real_open = builtins.open

    def no_tty(file, *args, **kwargs):
        if str(file) == "/dev/tty":
            raise OSError(6, "No such device or address", "/dev/tty")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", no_tty)
    reporter = _drive(progress.from_env())
    assert not reporter.active
