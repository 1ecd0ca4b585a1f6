"""SVG made by our own generator: the stability-over-time chart and the coverage bar.

The chart is where method §4.1 and §6 become checks rather than conventions:

* :func:`stability_chart` refuses points of more than one ``model_family``
  or more than one ``series`` (:class:`CurveError`, naming both values) —
  a line joining two products would draw a trend that is an artefact of
  which products were picked;
* it refuses a point that is not ``on_curve``: a flagged measurement is
  listed with its reasons, never drawn on the main curve;
* it always draws entropy beside stability, in the same SVG, and refuses a
  point without ``entropy_a`` / ``entropy_b``: a curve that only climbs
  cannot tell "more consistent" from "collapsed onto one answer".

The y axes are fixed (0–100 for stability, 0–1 for entropy) so no chart
zooms a small change into a dramatic one.  The dashed line over the
stability panel is each measurement's ceiling, ``100 − null_floor_pct``:
the best score sampling noise allows at that ``n``.

A ``bridge_incomplete`` record is a permanent discontinuity of its model
family's curves (method §4.3), and it is disclosed on the curve itself, not
only in the succession table: :func:`curve_breaks` turns the family's
records into breaks, and :func:`stability_chart` draws each one as a
marked vertical line at its date and cuts every line of the chart there, so
no segment joins a point before the discontinuity to one after it.
"""
from datetime import date
from html import escape
from typing import Callable, Iterable, Mapping, Sequence

from publish.errors import CurveError, SiteError
from publish.words import public_reason

WIDTH = 480
PANEL_H = 110
GAP = 32
LEFT = 40
RIGHT = 12
TOP = 22
NEUTRAL_CAUSE = "before_archive_start"
SMALL_WIDTH = 300
BREAK_KIND = "bridge_incomplete"
BREAK_STROKE = "#b3261e"   # drawn with its own attributes: the chart says it without the site's stylesheet


def _day(value: str) -> int:
    return date.fromisoformat(value[:10]).toordinal()


def _fmt(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def check_curve(points: Sequence[dict]) -> tuple[str, str]:
    """The single (series, model_family) of a curve; raises when the points mix either."""
    if not points:
        raise SiteError("a stability curve needs at least one measurement")
    families = sorted({str(p.get("model_family")) for p in points})
    series = sorted({str(p.get("series")) for p in points})
    if len(families) > 1:
        raise CurveError(f"refusing to draw one curve across model families {families[0]!r} and {families[1]!r}")
    if len(series) > 1:
        raise CurveError(f"refusing to draw one curve mixing series {series[0]!r} and {series[1]!r}")
    protocols = sorted({str(p.get("protocol_id")) for p in points})
    if len(protocols) > 1:
        raise CurveError(f"refusing to draw one curve across protocols {protocols[0]!r} and {protocols[1]!r}")
    for p in points:
        if not p.get("on_curve"):
            raise SiteError(f"measurement {p.get('run_id')} is off the main curve "
                            f"(flags: {', '.join(p.get('flags') or []) or 'protocol not admitted'}); it is listed, not drawn")
        for name in ("stability_pct", "entropy_a", "entropy_b"):
            if p.get(name) is None:
                raise SiteError(f"measurement {p.get('run_id')} has no {name}; stability is never drawn without "
                                "entropy beside it")
    return series[0], families[0]


def curve_breaks(records: Iterable[Mapping], family: object) -> list[dict]:
    """The permanent discontinuities of ``family``'s curves: one break per date of its ``bridge_incomplete`` records.

    Each break is ``{"date", "kind", "label"}``; the label is the succession
    table's public words (:func:`publish.words.succession.public_reason`),
    never the record's own free-text ``reason``.
    """
    by_date: dict[str, list[str]] = {}
    for record in records:
        day = str(record.get("date") or "")[:10]
        if record.get("model_family") != family or len(day) != 10:
            continue
        words = public_reason(BREAK_KIND, record) or "a permanent discontinuity"
        if words not in by_date.setdefault(day, []):
            by_date[day].append(words)
    return [{"date": day, "kind": BREAK_KIND, "label": "; ".join(by_date[day])} for day in sorted(by_date)]


def _segments(points: Sequence[dict], breaks: Sequence[Mapping]) -> list[list[int]]:
    """Indices of ``points`` (date order) between consecutive breaks: a point dated on a break's day follows it."""
    segments: list[list[int]] = [[]]
    cuts = sorted(str(b["date"]) for b in breaks)
    for i, p in enumerate(points):
        while cuts and str(p["run_date"])[:10] >= cuts[0]:
            cuts.pop(0)
            if segments[-1]:
                segments.append([])
        segments[-1].append(i)
    return segments


def _break_marks(breaks: Sequence[Mapping], x: Callable[[int], float], top: float, bottom: float) -> list[str]:
    """Each break as a marked vertical line over both panels, with what it is in words.

    The short label sits at the foot of the stability panel, where a
    stability figure rarely is; the full words are the line's title.
    """
    parts = []
    for b in breaks:
        at = x(_day(str(b["date"])))
        right = at > LEFT + (WIDTH - LEFT - RIGHT) * 0.75
        parts.append(f'<line class="break" data-break="{escape(str(b["kind"]))}" data-date="{escape(str(b["date"]))}" '
                     f'x1="{at:.1f}" x2="{at:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" stroke="{BREAK_STROKE}" '
                     f'stroke-width="1.5" stroke-dasharray="2 3"><title>{escape(str(b["date"]))}: '
                     f'{escape(str(b["label"]))}</title></line>')
        parts.append(f'<text class="break-label" x="{at + (-3 if right else 3):.1f}" y="{top + PANEL_H - 4:.1f}" '
                     f'text-anchor="{"end" if right else "start"}" font-size="11" fill="{BREAK_STROKE}">'
                     f'bridge incomplete {escape(str(b["date"]))}</text>')
    return parts


def stability_chart(points: Sequence[dict], title: str, breaks: Sequence[Mapping] = ()) -> str:
    """One protocol's main curve in one model family and one series, with its entropy panel.

    ``breaks`` (:func:`curve_breaks`) are the family's permanent
    discontinuities: each one dated after the curve's first point is marked
    at its date (the date axis reaching it if it is later than the last
    point), and every line is cut there.  Without one the chart is as it
    always was.
    """
    series, family = check_curve(points)
    points = sorted(points, key=lambda p: (p["run_date"], p.get("replicate_index") or 0))
    days = [_day(p["run_date"]) for p in points]
    breaks = [b for b in breaks if _day(str(b["date"])) > days[0]]
    first, last = min(days), max(days + [_day(str(b["date"])) for b in breaks])
    span = max(last - first, 1)
    plot_w = WIDTH - LEFT - RIGHT

    def x(d: int) -> float:
        return LEFT + (plot_w / 2 if last == first else (d - first) / span * plot_w)

    top1, top2 = TOP, TOP + PANEL_H + GAP
    height = top2 + PANEL_H + 26

    def y_stab(v: float) -> float:
        return top1 + (100 - v) / 100 * PANEL_H

    def y_ent(v: float) -> float:
        return top2 + (1 - v) * PANEL_H

    segments = _segments(points, breaks)

    def lines(css: str, where: Callable[[dict], float]) -> None:
        for segment in segments:
            coords = " ".join(f"{x(days[i]):.1f},{where(points[i]):.1f}" for i in segment)
            parts.append(f'<polyline class="{css}" points="{coords}"/>')

    parts = [f'<svg class="chart" data-chart="stability" data-series="{escape(series)}" '
             f'data-model-family="{escape(family)}" viewBox="0 0 {WIDTH} {height}" role="img" '
             f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{escape(title)}</title>"]

    def axes(top: int, labels: Iterable[tuple[float, str]], caption: str, panel: str) -> None:
        parts.append(f'<g data-panel="{panel}">')
        parts.append(f'<text class="cap" x="{LEFT}" y="{top - 6}">{escape(caption)}</text>')
        for value_y, text in labels:
            parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{value_y:.1f}" y2="{value_y:.1f}"/>')
            parts.append(f'<text class="tick" x="{LEFT - 6}" y="{value_y + 4:.1f}" text-anchor="end">{text}</text>')

    axes(top1, [(y_stab(v), str(v)) for v in (0, 50, 100)], "stability_pct · bars: 95% CI · dashes: noise ceiling",
         "stability")
    lines("ceiling", lambda p: y_stab(100 - (p.get("null_floor_pct") or 0)))
    for d, p in zip(days, points):
        if p.get("ci_low_pct") is not None and p.get("ci_high_pct") is not None:
            parts.append(f'<line class="ci" x1="{x(d):.1f}" x2="{x(d):.1f}" y1="{y_stab(p["ci_low_pct"]):.1f}" '
                         f'y2="{y_stab(p["ci_high_pct"]):.1f}"/>')
    lines("curve", lambda p: y_stab(p["stability_pct"]))
    for d, p in zip(days, points):
        parts.append(f'<circle class="pt" cx="{x(d):.1f}" cy="{y_stab(p["stability_pct"]):.1f}" r="3">'
                     f'<title>{escape(p["run_date"])}: {_fmt(p["stability_pct"])}% '
                     f'({escape(str(p.get("returned_model_id") or p.get("subject_model_id")))})</title></circle>')
    parts.append("</g>")

    axes(top2, [(y_ent(v), t) for v, t in ((0, "0"), (0.5, "0.5"), (1, "1"))],
         "entropy_a (solid), entropy_b (dashed) · 0 = one answer", "entropy")
    for name, css in (("entropy_a", "ent-a"), ("entropy_b", "ent-b")):
        lines(css, lambda p, name=name: y_ent(p[name]))
        for d, p in zip(days, points):
            parts.append(f'<circle class="{css}-pt" cx="{x(d):.1f}" cy="{y_ent(p[name]):.1f}" r="2">'
                         f'<title>{escape(p["run_date"])}: {name} {p[name]:.3f}</title></circle>')
    parts.append("</g>")
    parts += _break_marks(breaks, x, top1, top2 + PANEL_H)
    first_label, last_label = points[0]["run_date"], points[-1]["run_date"]
    parts.append(f'<text class="tick" x="{LEFT}" y="{height - 6}">{escape(first_label)}</text>')
    if last_label != first_label:
        parts.append(f'<text class="tick" x="{WIDTH - RIGHT}" y="{height - 6}" text-anchor="end">'
                     f'{escape(last_label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def generation_chart(points: Sequence[dict], title: str) -> str:
    """A small chart of one protocol in one model family: one point per generation, stability above entropy.

    Generations are categories in the order given (oldest first), not dates:
    they are separate models, so the points are not joined by a line.  The
    same refusals as :func:`stability_chart` apply (one family, one series,
    one protocol, on-curve points with entropy), and a generation may appear
    only once.
    """
    series, family = check_curve(points)
    models = [str(p.get("subject_model_id")) for p in points]
    if len(set(models)) != len(models):
        raise SiteError(f"a generation chart shows one point per generation; {sorted(models)} repeats one")
    width, panel_h, gap, top = SMALL_WIDTH, 60, 26, 18
    plot_w = width - LEFT - RIGHT
    top2 = top + panel_h + gap
    height = top2 + panel_h + 30

    def x(i: int) -> float:
        return LEFT + (i + 0.5) / len(points) * plot_w

    def y_stab(v: float) -> float:
        return top + (100 - v) / 100 * panel_h

    def y_ent(v: float) -> float:
        return top2 + (1 - v) * panel_h

    parts = [f'<svg class="chart small" data-chart="generations" data-series="{escape(series)}" '
             f'data-model-family="{escape(family)}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{escape(title)}</title>"]
    for panel, panel_top, caption, ticks in (
            ("stability", top, "stability_pct per generation · bar: 95% CI", ((y_stab(0), "0"), (y_stab(100), "100"))),
            ("entropy", top2, "entropy_a (filled), entropy_b (open)", ((y_ent(0), "0"), (y_ent(1), "1")))):
        parts.append(f'<g data-panel="{panel}">')
        parts.append(f'<text class="cap" x="{LEFT}" y="{panel_top - 5}">{caption}</text>')
        for value_y, text in ticks:
            parts.append(f'<line class="grid" x1="{LEFT}" x2="{width - RIGHT}" y1="{value_y:.1f}" y2="{value_y:.1f}"/>')
            parts.append(f'<text class="tick" x="{LEFT - 6}" y="{value_y + 4:.1f}" text-anchor="end">{text}</text>')
        for i, p in enumerate(points):
            label = f'{escape(p["run_date"])} {escape(models[i])}'
            if panel == "stability":
                if p.get("ci_low_pct") is not None and p.get("ci_high_pct") is not None:
                    parts.append(f'<line class="ci" x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{y_stab(p["ci_low_pct"]):.1f}" '
                                 f'y2="{y_stab(p["ci_high_pct"]):.1f}"/>')
                parts.append(f'<circle class="pt" cx="{x(i):.1f}" cy="{y_stab(p["stability_pct"]):.1f}" r="3.5">'
                             f'<title>{label}: {_fmt(p["stability_pct"])}%</title></circle>')
            else:
                parts.append(f'<circle class="ent-a-pt" cx="{x(i) - 4:.1f}" cy="{y_ent(p["entropy_a"]):.1f}" r="3">'
                             f'<title>{label}: entropy_a {p["entropy_a"]:.3f}</title></circle>')
                parts.append(f'<circle class="ent-b-open" cx="{x(i) + 4:.1f}" cy="{y_ent(p["entropy_b"]):.1f}" r="3">'
                             f'<title>{label}: entropy_b {p["entropy_b"]:.3f}</title></circle>')
        parts.append("</g>")
    shown = range(len(points)) if len(points) <= 4 else (0, len(points) - 1)
    for i in shown:
        anchor = "middle" if len(points) <= 4 else ("start" if i == 0 else "end")
        at = x(i) if anchor == "middle" else (LEFT if i == 0 else width - RIGHT)
        parts.append(f'<text class="tick" x="{at:.1f}" y="{height - 8}" text-anchor="{anchor}">{escape(models[i])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def coverage_bar(summary: dict) -> str:
    """One segment per scheduled period of the commercial series: ran, partly ran, a gap, or not yet started.

    A period whose only gaps are ``before_archive_start`` is drawn neutral:
    nothing was due then, so it is not a failure and must not look like one.
    """
    periods = summary["periods"]
    height = 28
    if not periods:
        return (f'<svg class="bar" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="no scheduled job recorded yet" '
                f'xmlns="http://www.w3.org/2000/svg"><rect class="none" x="0" y="4" width="{WIDTH}" height="18"/>'
                f'<text class="tick" x="8" y="17">no scheduled job recorded yet</text></svg>')
    width = WIDTH / len(periods)
    parts = [f'<svg class="bar" viewBox="0 0 {WIDTH} {height}" role="img" '
             f'aria-label="coverage of the commercial series, {escape(summary["first_period"])} to '
             f'{escape(summary["last_period"])}" xmlns="http://www.w3.org/2000/svg">']
    for i, p in enumerate(periods):
        if p["ran"] == 0 and p["gap"] and set(p["causes"]) == {NEUTRAL_CAUSE}:
            css, what = "before", "before the archive started (not a failure)"
        elif p["gap"] == 0:
            css, what = "ran", f"{p['ran']} ran"
        elif p["ran"] == 0:
            css, what = "gap", "gap: " + ", ".join(f"{c} ({n})" for c, n in sorted(p["causes"].items()))
        else:
            css, what = "part", (f"{p['ran']} ran; gap: "
                                 + ", ".join(f"{c} ({n})" for c, n in sorted(p["causes"].items())))
        parts.append(f'<rect class="{css}" x="{i * width:.2f}" y="4" width="{max(width - 0.5, 0.5):.2f}" height="18">'
                     f'<title>{escape(p["period"])}: {escape(what)}</title></rect>')
    parts.append("</svg>")
    return "".join(parts)
