"""The homepage's status bar: where every series and the instrument stand, at the build.

Method §11 puts a coverage/status bar on Home (the build refuses a homepage
without one).  It says, for each part of the archive separately — the two
series are never merged into one line or one count — what ran last, what is
on the curve and what is off it and why, so a newcomer who has just run one
cycle sees that cycle:

* the commercial series: its coverage bar (which counts ``commercial``
  only, as the method requires), the jobs that ran or did not, its latest
  run date and that date's measurements read in words;
* the open-weights series: the same, in words (it has no bar);
* the instrument: the reference model's runtime fingerprint, the guard
  rotation, the subject fingerprint, whether an alarm is latched, and the
  coverage of its daily jobs (their rows carry no series: the open-weights
  series runs once per generation and has no scheduled job to count);
* the comparison points, which are never on a curve: how many, and how many
  are simulated readers with a known answer.

Every date is absolute (no "today"): the page is read long after the build.
"""
from collections import Counter
from typing import Optional

from markupsafe import Markup

from publish.site import svg
from publish.words import numbers
from publish.data import comparison_rows, coverage_summary, instrument_jobs, instrument_summary, status as status_file
from publish.site.jinja import render_template

SERIES_TITLES = {"commercial": "Commercial series", "open_weights": "Open-weights series"}
INSTRUMENT_SERIES = None
"""The coverage rows of the instrument's daily jobs carry no series: they are not the open-weights series."""
SERIES_ROLES = {"commercial": "the model under study, measured monthly",
                "open_weights": "the instrument's own control: a local open-weights model"}


def plural(count: int, word: str, many: Optional[str] = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def latched_alarm(ctx) -> Optional[dict]:
    """The ``instrument_alarm`` entry of ``status.json`` (``None`` when nothing is latched).

    Read through :func:`publish.data.status.status`, the function that writes
    ``status.json``, so the page and the file say the same thing.
    """
    alarm = status_file.status(ctx.inputs, ctx.coverage_rows, ctx.build_time).get("instrument_alarm")
    return alarm if isinstance(alarm, dict) else None


def why_off(measurements: list[dict]) -> list[tuple[str, int]]:
    """Why the off-curve ones are off, most frequent first: "not measurable" once per row, else each flag's phrase."""
    reasons: Counter = Counter()
    for m in measurements:
        if m.get("on_curve") is True:
            continue
        if numbers.readable(m) is not None:
            reasons["not measurable: too few readable answers"] += 1
            continue
        flags = [f for f in (m.get("flags") or []) if isinstance(f, str)]
        for phrase in [numbers.FLAG_PHRASES.get(f, f) for f in flags] or [numbers.standing(m).split(": ", 1)[-1]]:
            reasons[phrase] += 1
    return sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))


def series_status(ctx, series: str) -> dict:
    """One series' line: coverage counts, the latest run date and how that date's measurements read."""
    rows = [m for m in ctx.inputs.measurements if m.get("series") == series]
    latest = max((m["run_date"] for m in rows), default=None)
    day = [m for m in rows if m["run_date"] == latest]
    models = sorted({str(m.get("returned_model_id") or m.get("subject_model_id")) for m in day})
    return {
        "series": series, "title": SERIES_TITLES[series], "role": SERIES_ROLES[series],
        "coverage": coverage_summary(ctx.coverage_rows, series),
        "latest": latest, "models": models,
        "day_total": len(day), "day_on": sum(1 for m in day if m.get("on_curve") is True),
        "day_why": why_off(day),
        "total": len(rows), "on": sum(1 for m in rows if m.get("on_curve") is True),
    }


def comparison_status(ctx) -> dict:
    points = comparison_rows(ctx.inputs)
    return {"total": len(points), "known": sum(1 for p in points if p.get("point_kind") == numbers.KNOWN_ANSWER),
            "latest": max((str(p.get("run_date")) for p in points if p.get("run_date")), default=None)}


def status_bar(ctx) -> str:
    """The bar: one block per series, the instrument, the comparison points; the coverage bar counts commercial."""
    commercial = coverage_summary(ctx.coverage_rows, "commercial")
    causes = ", ".join(f"{c} {n}" for c, n in commercial["gaps_by_cause"].items())
    return render_template("status_bar.html", bar=Markup(svg.coverage_bar(commercial)), causes=causes,
                           series=[series_status(ctx, s) for s in ("commercial", "open_weights")],
                           instrument=instrument_summary(ctx.inputs), alarm=latched_alarm(ctx),
                           instrument_coverage=coverage_summary(ctx.coverage_rows, INSTRUMENT_SERIES),
                           instrument_jobs=instrument_jobs(),
                           points=comparison_status(ctx), build_time=ctx.build_time, plural=plural)
