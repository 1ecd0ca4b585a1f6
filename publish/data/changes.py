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

Beside the rule's verdict each row counts the *cells* that moved: a cell
is one scenario × version of a protocol, and its *modal decision* is the
option it chose most often among its valid answers (:func:`modal_cells`).
``cells_changed`` of ``cells_compared`` is how many cells the two
measurements both decided and decided differently.  For a deterministic
subject — every repeat of a prompt gives the same answer — that is an exact
count of what moved, where the change rule can only say whether the
aggregate moved beyond its margins: four scenarios that swap their answer
in every version leave the stability, and so the label, where they were.
The modal decisions come from the runs' trial logs (:mod:`publish.data.sources`
reads them); the counts are numbers only, so no wording is published by them.

Each row also says which server builds answered the two measurements
(``from_system_fingerprints``, ``to_system_fingerprints``: the runs'
``system_fingerprints``, :data:`measure.schema.BESIDE_MEASUREMENT_FIELDS`)
and whether the build changed under an unchanged model id
(``build_changed``, :func:`build_changed`): the provider serving the same
name from a different build is the change this archive exists to catch,
whether or not the figures moved.
"""
import math
from pathlib import Path
from typing import Iterable, Mapping, Optional

from measure import jsonl
from measure.schema import BESIDE_MEASUREMENT_FIELD_NAMES, json_type_words
from measure.stats import compare
from publish.errors import PublishError

CURVE_KEY = ("protocol_id", "series", "model_family")

BUILD_COLUMN_SPEC = (
    ("from_system_fingerprints", "json", "The server builds (system_fingerprint) that answered the earlier "
                                         "measurement's calls (JSON list); [] when the API reported none; empty "
                                         "when its run was recorded before trials carried the build."),
    ("to_system_fingerprints", "json", "The server builds that answered the later measurement's calls (as "
                                       "from_system_fingerprints)."),
    ("build_changed", "bool", "true when both measurements were made on one model id (the same requested and "
                              "returned id) and the server builds that answered them differ: a change of build "
                              "under an unchanged model id. false when the same builds answered both; empty when "
                              "the model id changed or a side has no build to compare."),
)
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
    ("cells_changed", "count", "Scenario x version cells whose modal decision (the option chosen most often among "
                               "the cell's valid answers) differs between the two measurements; for a subject that "
                               "always repeats its answer, exactly what moved. Empty when a trial log was unreadable."),
    ("cells_compared", "count", "Scenario x version cells that had a modal decision in both measurements (a cell "
                                "without any valid answer in one of them is not compared)."),
) + BUILD_COLUMN_SPEC
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
    # The same float operations as measure.stats.compare (√(h² + h²), d + d), not √2·h: the figure
    # must be the rule's boundary to the last bit, or a move of exactly this size could be judged
    # against a bound one unit in the last place away.
    return max(math.sqrt(h * h + h * h), d + d)


def curve_key(measurement: Mapping) -> tuple:
    return tuple(measurement.get(k) for k in CURVE_KEY)


def _order(m: Mapping) -> tuple:
    return (str(m.get("run_date") or ""), m.get("replicate_index") or 0, str(m.get("run_id") or ""))


Cell = tuple[str, str]
"""A scenario × version: ``(item_id, version)``."""

ModalCells = Mapping[Cell, Optional[tuple[str, ...]]]
"""Per cell, its modal decision(s): one option, several when tied, ``None`` without a valid answer."""


def modal_cells(trials: Iterable[Mapping]) -> dict[Cell, Optional[tuple[str, ...]]]:
    """Every cell of a run with its modal decision, from the run's trial records.

    The modal decision is the option with the most valid answers in the
    cell.  A tie is kept as the tied options together (sorted), so a cell
    that goes from a clear ``A`` to an ``A``/``B`` tie has changed, and two
    identical ties have not.  A cell whose answers were all invalid has no
    decision (``None``): it is not compared, because what it lost is the
    drop bound's business, not a decision that moved.
    """
    votes: dict[Cell, dict[str, int]] = {}
    for trial in trials:
        if trial.get("record_type", "trial") != "trial":
            continue
        cell = (str(trial.get("item_id")), str(trial.get("version")))
        tally = votes.get(cell)
        if tally is None:
            tally = votes[cell] = {}
        token = trial.get("token")
        if token is not None and trial.get("outcome") == "valid":
            token = str(token)
            tally[token] = tally.get(token, 0) + 1     # a plain dict: this runs for every trial of ten years
    out: dict[Cell, Optional[tuple[str, ...]]] = {}
    for cell, tally in votes.items():
        if not tally:
            out[cell] = None
            continue
        top = max(tally.values())
        out[cell] = tuple(sorted(token for token, count in tally.items() if count == top))
    return out


def modal_cells_of_log(path: Path) -> dict[Cell, Optional[tuple[str, ...]]]:
    """:func:`modal_cells` of a ``trials.jsonl`` (its trial records), read as the chained log it is.

    Raises ``OSError``, or ``ValueError`` (:class:`measure.jsonl.JsonlError`)
    for a log that cannot be read; the caller decides what an unreadable log
    means (publication leaves the counts empty rather than guessing).
    """
    with open(path, "rb") as fh:
        records = jsonl.JsonlReader(jsonl.STRICT, str(path)).read(fh)
    return modal_cells(r for r in records if r.get("record_type") == "trial")


def cells_moved(x: ModalCells, y: ModalCells) -> tuple[int, int]:
    """``(cells_changed, cells_compared)``: cells decided in both, and of those the ones decided differently."""
    compared = [cell for cell in x if cell in y and x[cell] is not None and y[cell] is not None]
    return sum(1 for cell in compared if x[cell] != y[cell]), len(compared)


def same_model_id(x: Mapping, y: Mapping) -> bool:
    """Whether two measurements were made on one model id: the same id requested and the same id returned."""
    return (x.get("subject_model_id") == y.get("subject_model_id")
            and x.get("returned_model_id") == y.get("returned_model_id"))


def build_changed(x: Mapping, y: Mapping) -> Optional[bool]:
    """Whether the server build changed from ``x`` to ``y`` under one model id; ``None`` when it cannot be said.

    Said only when both runs recorded the builds that answered them (a
    non-empty ``system_fingerprints``) and the model id did not change (a
    new model id is a change of its own, which the id already shows).  The
    builds are compared as sets: a run answered by two builds (the server
    changed during it) differs from one answered by either alone.
    """
    before, after = x.get("system_fingerprints"), y.get("system_fingerprints")
    if not same_model_id(x, y) or not before or not after:
        return None
    return set(before) != set(after)


def beside_fields(run: Mapping, where: str) -> dict:
    """The fields publication puts beside a measurement (:data:`measure.schema.BESIDE_MEASUREMENT_FIELDS`),
    read from its run record and checked: each null (a run recorded before it) or a list of strings.

    ``where`` names the run record in the one-line :class:`publish.errors.PublishError` for a bad value.
    """
    out = {}
    for name in BESIDE_MEASUREMENT_FIELD_NAMES:
        value = run.get(name)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise PublishError(f"{where}: field {name!r} should be a list of strings or null, "
                               f"got {json_type_words(value)}")
        out[name] = value
    return out


def change_row(x: Mapping, y: Mapping, cells: Optional[Mapping[str, ModalCells]] = None) -> dict:
    """One row of the ``changes`` table for ``y`` against the earlier ``x`` (both of one curve).

    ``cells`` maps a ``run_id`` to its :func:`modal_cells`; without both runs
    in it the two cell counts are ``None``.
    """
    hx, hy = _half_width(x), _half_width(y)
    x_cells = (cells or {}).get(str(x.get("run_id")))
    y_cells = (cells or {}).get(str(y.get("run_id")))
    changed, compared = cells_moved(x_cells, y_cells) if x_cells is not None and y_cells is not None else (None, None)
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
        "cells_changed": changed,
        "cells_compared": compared,
        "from_system_fingerprints": x.get("system_fingerprints"),
        "to_system_fingerprints": y.get("system_fingerprints"),
        "build_changed": build_changed(x, y),
    }


def _comparable(m: Mapping) -> bool:
    return all(_number(m, k) is not None for k in ("stability_pct", "ci_low_pct", "ci_high_pct", "drop_bound_pct_ab"))


def change_rows(measurements: Iterable[Mapping], cells: Optional[Mapping[str, ModalCells]] = None) -> list[dict]:
    """Every consecutive pair of on-curve measurements of every curve, as :data:`CHANGE_FIELDS` rows.

    Rows are ordered by curve, then by the later measurement's date.  An
    on-curve measurement always carries its numbers; one that does not is
    skipped rather than guessed at (the rule cannot be applied to it).
    ``cells`` is each run's :func:`modal_cells` by ``run_id`` (a build's
    :attr:`publish.data.sources.Inputs.cells`); a pair without both leaves its
    cell counts empty.
    """
    curves: dict[tuple, list[Mapping]] = {}
    for m in measurements:
        if m.get("on_curve") in (True, 1) and _comparable(m):  # a record's bool, or a database row's 1
            curves.setdefault(curve_key(m), []).append(m)
    out = []
    for key in sorted(curves, key=lambda k: tuple(str(v) for v in k)):
        points = sorted(curves[key], key=_order)
        for x, y in zip(points, points[1:]):
            out.append(change_row(x, y, cells))
    return out


def newest_first(rows: Iterable[dict]) -> list[dict]:
    """The rows a reader asks for first: latest pair first, called changes before flat ones of the same day."""
    return sorted(rows, key=lambda r: (str(r["to_run_date"]), r["label"] != "flat", abs(r["delta_pct"])),
                  reverse=True)


__all__ = ["BUILD_COLUMN_SPEC", "CHANGE_COLUMN_SPEC", "CHANGE_FIELDS", "CURVE_KEY", "beside_fields", "build_changed",
           "cells_moved", "change_row", "change_rows", "curve_key", "min_detectable_change_pct", "modal_cells",
           "modal_cells_of_log", "newest_first", "same_model_id"]
