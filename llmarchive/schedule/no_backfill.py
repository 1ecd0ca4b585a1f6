"""The no-backfill rule: a month is measured in that month (method §8, §9.2).

A measurement of the tracked model is dated, and its date is a claim about
the model as the provider served it then.  A run dated November that is
started in December would measure December's model under November's name,
so a paid measurement may only be *started* in the month it is dated.  A run
already started under its date and not yet complete is the exception: it
resumes on any later day under that date (the runner keeps a run's
``run_date``), judged against its own month's pools (method §9.2) and by the
instrument of its own day (method §7.4), so an outage at the end of a month
does not strand it.  A run that is complete has nothing left to resume: a
later launch of it (a backfill of past months from the UI, ``run`` again with
its id) is refused like one never started, so a past month never turns green
again by a launch that measured nothing.

:func:`refuse_backfill` is the rule; every entry point that starts paid
measurements asks it before anything is recorded or spent, and refuses with
the same sentence (:class:`NotThisMonth`, one line on the CLI, the
``not_this_month`` ``Failure`` in Dagster):

* ``llmarchive sweep --date`` and the ``commercial_trials`` partitions —
  through :func:`sweep_scope` and :func:`partition_day`, which say which of the
  month's runs were started;
* ``llmarchive run`` of a paid subject (a free subject, the reference model or
  an ``--unbudgeted`` server, measures no month of the tracked series);
* ``llmarchive bridge run`` — a bridge not yet started is dated the day it
  starts; once started, its own rule takes over (its runs keep its start date
  and resume on any day of that week, :mod:`llmarchive.schedule.bridge`).

Not here, by their own rules: an open-weights generation keeps the date of
its first run (:mod:`llmarchive.schedule.open_weights`), the instrument's days
are observed on the day itself (the Dagster ``not_today`` refusal), and a
comparison run is an outsider's, dated by them.
"""
from typing import Optional

from llmarchive.archive import ArchivePaths, is_complete, open_sweep_runs, read_run, sweep_run_folder, utc_today
from llmarchive.succession import SubjectModels, active_model
from measure.errors import ArchiveError

RULE = "a model is measured in the month it is measured, never backfilled"


class NotThisMonth(ArchiveError):
    """A paid measurement dated in a month other than today's, with no run of it started; nothing was spent."""

    refusal = "not_this_month"      # the kind of refusal Dagster reports (assets/refusals.py)

    def __init__(self, what: str, dated: str, today: str, complete: bool = False) -> None:
        why = ("its run is complete, so nothing is left to resume" if complete
               else "only a run already started under its date resumes on a later day")
        super().__init__(f"{what} cannot be started on {today}: {RULE} ({why}). Nothing was spent.")
        self.month = dated[:7]
        self.today = today
        self.complete = complete


def refuse_backfill(dated: str, *, started: bool = False, complete: bool = False, today: Optional[str] = None,
                    what: Optional[str] = None) -> str:
    """Today's date, when a measurement dated ``dated`` (a day or a month) may go ahead today; else refuse.

    It may when ``dated`` falls in today's month, or when its run was already
    ``started`` and is not ``complete`` (it resumes under its own date).
    ``what`` names it in the refusal (default: "a measurement dated <dated>").
    """
    today = today or utc_today()
    if dated[:7] != today[:7] and (not started or complete):
        raise NotThisMonth(what or f"a measurement dated {dated}", dated, today, complete=started and complete)
    return today


def sweep_scope(paths: ArchivePaths, day: str, config: SubjectModels,
                today: Optional[str] = None) -> Optional[list[str]]:
    """The protocols a sweep dated ``day`` may run today: None (all of them) in its own month.

    In a later month only the runs that month's sweep left open may go on,
    so the pass is limited to their protocols; with none, the sweep is refused.
    """
    today = today or utc_today()
    if day[:7] == today[:7]:
        return None
    started = sorted(open_sweep_runs(paths, day[:7], active_model(paths, config)))
    refuse_backfill(day, started=bool(started), today=today, what=f"a sweep dated {day}")
    return started


def partition_day(paths: ArchivePaths, month: str, protocol_id: str, model_id: str,
                  today: Optional[str] = None) -> str:
    """The day one month × protocol partition runs as: today in its own month, else its open run's date.

    A partition of an earlier month may only resume the sweep's run it
    started then and left open (under that run's date); without one, or when
    that run is complete, it is refused — as :func:`sweep_scope` refuses.
    """
    today = today or utc_today()
    if month == today[:7]:
        return today
    folder = sweep_run_folder(paths, month, protocol_id, model_id)
    refuse_backfill(month, started=folder is not None, complete=folder is not None and is_complete(folder),
                    today=today, what=f"the {month} partition")
    return str(read_run(folder).get("run_date") or f"{month}-01")
