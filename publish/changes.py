"""The change rule as public data: what moved between consecutive measurements of a curve, and what could.

A *curve* is one ``protocol_id`` within one ``series`` and one
``model_family``; only on-curve measurements are on it, in the order
``run_date``, ``replicate_index``, ``run_id``.  For every consecutive pair on a
curve, :func:`change_rows` publishes the difference, its random-error bound,
its systematic-error cap and the label — the label always from the frozen
:func:`measure.stats.compare`, never re-derived here, so the ``changes``
table, ``changes.csv`` and the site's "biggest move" (which reads these rows)
cannot disagree with the rule (method: the change rule, method §6).

:func:`min_detectable_change_pct` is the per-measurement companion: how
large a move from this measurement the rule could call at all, so a reader
knows what this design can and cannot see.
"""
import math
from typing import Iterable, Mapping, Optional

from measure.stats import compare

CURVE_KEY = ("protocol_id", "series", "model_family")

CHANGE_COLUMN_SPEC = (
    ("to_run_id", "text", "The later measurement of the pair; each on-curve measurement is the later one at most once."),
    ("from_run_id", "text", "The earlier measurement of the pair: the previous on-curve measurement of the same curve."),
    ("protocol_id", "text", "The protocol; with series and model_family, the curve."),
    ("series", "text", "commercial or open_weights; the two series are never compared with each other."),
    ("model_family", "text", "The product family; a curve never crosses families."),
    ("rewording_type", "text", "What B changes in this protocol."),
    ("from_run_date", "text", "UTC date of the earlier measurement."),
    ("to_run_date", "text", "UTC date of the later measurement."),
    ("from_subject_model_id", "text", "Model of the earlier measurement."),
    ("to_subject_model_id", "text", "Model of the later measurement."),
    ("from_stability_pct", "pct", "Stability of the earlier measurement."),
    ("to_stability_pct", "pct", "Stability of the later measurement."),
    ("delta_pct", "pct", "Later stability minus earlier stability (positive: more stable)."),
    ("bound_pct", "pct", "Random error of the difference: the two CI half-widths combined in quadrature."),
    ("cap_pct", "pct", "Systematic worst case of the difference: the two A-B drop bounds added."),
    ("label", "text", "improved, regressed or flat, from the frozen change rule: a change is called only when "
                      "|delta_pct| >= bound_pct and |delta_pct| > cap_pct."),
)
CHANGE_FIELDS = tuple(name for name, _, _ in CHANGE_COLUMN_SPEC)


def _number(record: Mapping, name: str) -> Optional[float]:
    value = record.get(name)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    return float(value)


def _half_width(record: Mapping) -> Optional[float]:
    low, high = _number(record, "ci_low_pct"), _number(record, "ci_high_pct")
    if low is None or high is None:
        return None
    return (high - low) / 2


def min_detectable_change_pct(measurement: Mapping) -> Optional[float]:
    """The smallest move from this measurement the change rule could call, if the next one were as precise.

    The rule calls a change from ``x`` to ``y`` when ``|Δ| ≥ √(hw(x)² + hw(y)²)``
    (random error, in quadrature) **and** ``|Δ| > drop(x) + drop(y)``
    (systematic worst case, added), with ``hw`` half the CI width and ``drop``
    the A–B drop bound.  "Equally precise" means the next measurement has
    the same half-width ``h`` and the same drop bound ``d`` as this one, so
    the two conditions become ``|Δ| ≥ √2·h`` and ``|Δ| > 2·d``, and the
    threshold is::

        min_detectable_change_pct = max(√2 · h, 2 · d)

    A move larger than it, in either direction, is called; a move smaller
    is ``flat``.  Exactly at it, the move is called when the random term is
    the larger (``≥``) and not when the systematic term is (``>``): the
    figure is the boundary itself, in the same units as ``stability_pct``.
    It says nothing about whether the move is possible: from a stability
    near 100 only a fall of that size could be seen.

    ``None`` when the measurement has no numeric stability, interval or
    drop bound (nothing could be compared with it).
    """
    h = _half_width(measurement)
    d = _number(measurement, "drop_bound_pct_ab")
    if h is None or d is None or _number(measurement, "stability_pct") is None:
        return None
    return max(math.sqrt(2.0) * h, 2.0 * d)


def curve_key(measurement: Mapping) -> tuple:
    return tuple(measurement.get(k) for k in CURVE_KEY)


def _order(m: Mapping) -> tuple:
    return (str(m.get("run_date") or ""), m.get("replicate_index") or 0, str(m.get("run_id") or ""))


def change_row(x: Mapping, y: Mapping) -> dict:
    """One row of the ``changes`` table for ``y`` against the earlier ``x`` (both of one curve)."""
    hx, hy = _half_width(x), _half_width(y)
    sx, sy = float(x["stability_pct"]), float(y["stability_pct"])
    delta = sy - sx
    return {
        "to_run_id": y.get("run_id"), "from_run_id": x.get("run_id"),
        "protocol_id": y.get("protocol_id"), "series": y.get("series"), "model_family": y.get("model_family"),
        "rewording_type": y.get("rewording_type"),
        "from_run_date": x.get("run_date"), "to_run_date": y.get("run_date"),
        "from_subject_model_id": x.get("subject_model_id"), "to_subject_model_id": y.get("subject_model_id"),
        "from_stability_pct": sx, "to_stability_pct": sy,
        "delta_pct": delta,
        "bound_pct": math.sqrt(hx * hx + hy * hy),
        "cap_pct": float(x["drop_bound_pct_ab"]) + float(y["drop_bound_pct_ab"]),
        "label": compare(x, y),
    }


def _comparable(m: Mapping) -> bool:
    return all(_number(m, k) is not None for k in ("stability_pct", "ci_low_pct", "ci_high_pct", "drop_bound_pct_ab"))


def change_rows(measurements: Iterable[Mapping]) -> list[dict]:
    """Every consecutive pair of on-curve measurements of every curve, as :data:`CHANGE_FIELDS` rows.

    Rows are ordered by curve, then by the later measurement's date.  An
    on-curve measurement always carries its numbers; one that does not is
    skipped rather than guessed at (the rule cannot be applied to it).
    """
    curves: dict[tuple, list[Mapping]] = {}
    for m in measurements:
        if m.get("on_curve") in (True, 1) and _comparable(m):  # a record's bool, or a database row's 1
            curves.setdefault(curve_key(m), []).append(m)
    out = []
    for key in sorted(curves, key=lambda k: tuple(str(v) for v in k)):
        points = sorted(curves[key], key=_order)
        for x, y in zip(points, points[1:]):
            out.append(change_row(x, y))
    return out


def newest_first(rows: Iterable[dict]) -> list[dict]:
    """The rows a reader asks for first: latest pair first, called changes before flat ones of the same day."""
    return sorted(rows, key=lambda r: (str(r["to_run_date"]), r["label"] != "flat", abs(r["delta_pct"])),
                  reverse=True)


__all__ = ["CHANGE_COLUMN_SPEC", "CHANGE_FIELDS", "CURVE_KEY", "change_row", "change_rows", "curve_key",
           "min_detectable_change_pct", "newest_first"]
