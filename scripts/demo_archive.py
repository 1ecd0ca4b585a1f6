"""A demonstration archive: what ``make demo`` sets up besides the pipeline, and what it says at the end.

It sits beside :mod:`scripts.demo` and :mod:`scripts.demo_console`, its only
callers: nothing here is a command, and no real archive runs it.

**Admission.**  Admission is a human act (method §3, gate 4), so a fresh
clone has only ``candidate`` protocols, and candidates never reach a curve or
the open lane.  To show the whole pipeline, the demo admits the twelve
``v0`` protocols by SPEC's lane rule with the reviewer recorded as
:data:`DEMO_REVIEWER` — a label that says in every admission record that no
human reviewed anything.  The guard protocols of a demo archive are built
from the public development seed and are admitted only because the demo
says so explicitly; a real archive refuses that (``llmarchive panels
promote`` without ``--allow-development-seed``).

**Known answers.**  The embedded model is the instrument's control, not a
showcase: SmolLM2-135M rarely answers in the format, and its measurements
are honestly off the curve.  So that a newcomer sees what a working
instrument shows, the demo files comparison points for three simulated
readers whose answers are known in advance (:data:`panels.readers.KNOWN_ANSWER_READERS`)
through the route any outsider takes: the published panel file, an
OpenAI-compatible server (:mod:`llmarchive.comparison.reader_server`, on 127.0.0.1),
``comparison run`` (:func:`llmarchive.comparison.run.run_comparison`), then
``comparison submit`` (:func:`llmarchive.comparison.intake.submit`) — the same
functions the CLI calls.  The outsider's side lives in its own home,
``<home>/outsider/`` (its run folders, its submission files), as it would on
an outsider's machine; only the accepted points enter the archive.  Each
point's model id is ``simulated-reader-<name>``, which publication labels
"simulated reader, known answer" wherever it is shown.
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from llmarchive.archive import ArchivePaths, comparison_run_id, retry_run_id, store
from measure.errors import ArchiveError
from llmarchive.comparison import KNOWN_ANSWER_SOURCE, ReaderServer, load_panel, run_comparison, submit
from llmarchive.protocols import admissions as lanes, registry
from panels import readers
from panels.readers import FRAMING_SENSITIVE, IGNORES_QUESTION, INVARIANT

DEMO_REVIEWER = "make demo (scripted demonstration; no human review)"
DEMO_SUBMITTER = "make demo (simulated reader, known answer)"
# The open protocol the known-answer points are filed on: the framing panel, whose classic reader sees a large gap.
KNOWN_ANSWER_PROTOCOL = "risky_choice_framing__wording__v0"
OUTSIDER_FOLDER = "outsider"


class DemoError(ArchiveError, RuntimeError):
    """A demo step that could not do what it shows (the message says which and why)."""


def admit_demo_protocols(paths: ArchivePaths, series: str = "v0") -> list[str]:
    """Admit every protocol of ``series`` by the lane rule; return the ids admitted now."""
    registry.build_all(paths)
    admitted = []
    known = registry.known_ids(paths)
    for protocol in registry.load_all(paths):
        if protocol.get("series") != series or protocol.get("status") == "admitted":
            continue
        lane, twin = lanes.planned_lane(protocol["protocol_id"])
        lanes.promote(paths, protocol, lane, twin_id=twin, human_reviewed=True, reviewer=DEMO_REVIEWER,
                      allow_development_seed=True, known_ids=known)
        admitted.append(protocol["protocol_id"])
    return admitted


# --------------------------------------------------------------------------------------------- known answers
@dataclass
class KnownAnswerPoint:
    """One simulated reader's comparison point: what it had to show, and what the archive measured."""

    reader: str
    model_id: str
    expected: dict                 # panels.readers.known_answer
    comparison_id: str
    measurement: dict              # the archive's recomputation of the submitted trials
    already: bool                  # accepted on an earlier demo run (same submission bytes)
    called: int                    # calls the outsider's run made now

    @property
    def problems(self) -> list[str]:
        return known_answer_problems(self.reader, self.expected, self.measurement)


def gap_interval(m: Mapping) -> Optional[tuple[float, float]]:
    """The 95 % interval of the A↔B gap in points (``stability_pct``'s interval, turned around)."""
    low, high = m.get("ci_low_pct"), m.get("ci_high_pct")
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return None
    return round(100 - high, 6), round(100 - low, 6)


def known_answer_problems(reader: str, expected: Mapping, m: Mapping) -> list[str]:
    """How the measurement ``m`` misses the reader's known answer; ``[]`` when it recovers it.

    * every reader: the A↔B gap is the one its answers make (the point figure is exact);
    * ``invariant``: no gap, at the noise floor, and not flagged ``not_reading``;
    * ``framing-sensitive``: the known gap inside the measured 95 % interval, not ``not_reading``;
    * ``ignores-question``: flagged ``not_reading``.
    """
    problems = []
    want = expected["figures"]["gap_ab_pct"]
    flags = list(m.get("flags") or [])
    if m.get("gap_pct") is None or abs(float(m["gap_pct"]) - float(want)) > 1e-6:
        problems.append(f"gap_pct {m.get('gap_pct')} where its answers make {want}")
    if reader == INVARIANT and not m.get("at_noise_floor"):
        problems.append("not at the noise floor")
    if reader in (INVARIANT, FRAMING_SENSITIVE) and "not_reading" in flags:
        problems.append("flagged not_reading although it reads")
    if reader == FRAMING_SENSITIVE:
        interval = gap_interval(m)
        if interval is None or not interval[0] <= want <= interval[1]:
            problems.append(f"the known gap {want} is outside the measured interval {interval}")
    if reader == IGNORES_QUESTION and "not_reading" not in flags:
        problems.append("not flagged not_reading")
    return problems


def outsider_paths(paths: ArchivePaths) -> ArchivePaths:
    """The simulated outsider's own home (its run folders and submissions), inside the demo's."""
    return ArchivePaths(paths.home / OUTSIDER_FOLDER)


def _fresh_run_id(outsider: ArchivePaths, base: str) -> str:
    """``base``, unless a run of that id was left incomplete: then the next free ``base-<k>``.

    The reader server picks each replicate's answer by counting calls
    (:mod:`llmarchive.comparison.reader_server`), so a run left incomplete by a stopped
    demo cannot be completed truthfully by a new server: it is left as it is
    and a new run made.
    """
    k = 1
    while True:
        run_id = retry_run_id(base, k)
        folder = outsider.run_dir(run_id)
        if not store.has_run(folder) or store.load_run(folder).measurement is not None:
            return run_id
        k += 1


def file_known_answer_points(paths: ArchivePaths, panel_file: Path, *, today: Optional[str] = None,
                             say: Callable[[str], None] = print, concurrency: int = 4) -> list[KnownAnswerPoint]:
    """Run each known-answer reader on the published ``panel_file`` through the outsider route; file the points.

    A reader server is started on 127.0.0.1 for the panel file, each reader
    is run with ``comparison run`` in the outsider's home and its submission
    filed with ``comparison submit`` in the archive (``paths``).  Running it
    again resumes: complete runs are not repeated and an accepted
    submission is not filed twice.  Raises :class:`DemoError` when a run does
    not complete, and whatever the intake raises when it refuses a submission.
    """
    protocol = load_panel(panel_file)
    pid = protocol["protocol_id"]
    outsider = outsider_paths(paths).ensure()
    points = []
    with ReaderServer([panel_file]) as server:
        for name in readers.KNOWN_ANSWER_READERS:
            model = readers.simulated_model_id(name)
            out = outsider.home / "submissions" / f"{pid}__{model}.jsonl"
            out.parent.mkdir(parents=True, exist_ok=True)
            run_id = _fresh_run_id(outsider, comparison_run_id(pid, model, "openai"))
            done = run_comparison(outsider, panel_file, base_url=server.url, model=model, api="openai", out=out,
                                  run_id=run_id, concurrency=concurrency, submitted_by=DEMO_SUBMITTER)
            if not done.complete:
                run = done.result.run
                raise DemoError(f"the {model} run on {pid} did not complete ({run.get('n_trials_recorded')}/"
                                f"{run.get('n_trials_planned')} trials): run the demo again")
            accepted = submit(paths, out, today=today, source=KNOWN_ANSWER_SOURCE)   # labelled by how it was filed
            point = KnownAnswerPoint(name, model, readers.known_answer(name, protocol), accepted.comparison_id,
                                     accepted.record["measurement"], accepted.already, done.result.called)
            points.append(point)
            say(point_line(point))
    return points


def _num(value: object) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "–"
    return f"{value:.1f}"


def point_line(point: KnownAnswerPoint) -> str:
    """One console line per filed point: calls, what was filed, the recomputed gap, recovered or not."""
    m = point.measurement
    interval = gap_interval(m)
    shown = f"[{_num(interval[0])}, {_num(interval[1])}]" if interval else "–"
    filed = "already filed" if point.already else "filed"
    verdict = "known answer recovered" if not point.problems else "NOT RECOVERED: " + "; ".join(point.problems)
    return (f"   {point.model_id}: {point.called} calls now; {filed} as {point.comparison_id}; "
            f"gap {_num(m.get('gap_pct'))} points, 95% interval {shown}, flags {', '.join(m.get('flags') or []) or 'none'} — {verdict}")


# --------------------------------------------------------------------------------------------- the closing block
EXPECTED_WORDS = {
    "invariant": "no A↔B gap (0), at the noise floor",
    "framing-sensitive": "an A↔B gap of {gap} points",
    "ignores-question": "flagged not_reading (C moves nothing)",
}


def known_answer_table(points: Sequence[KnownAnswerPoint]) -> list[str]:
    """The known-answer table as aligned text rows: reader, expected, measured, interval, flags."""
    rows = [("reader", "expected", "measured gap", "95% interval", "flags")]
    for p in points:
        m = p.measurement
        interval = gap_interval(m)
        rows.append((p.model_id, EXPECTED_WORDS[p.reader].format(gap=_num(p.expected["figures"]["gap_ab_pct"])),
                     f"{_num(m.get('gap_pct'))} (floor {_num(m.get('null_floor_pct'))})",
                     f"{_num(interval[0])}–{_num(interval[1])}" if interval else "–",
                     ", ".join(m.get("flags") or []) or "none"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["   " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def readable_words(m: Mapping) -> str:
    """``18 of 240 answers readable`` from a measurement's per-version outcomes."""
    outcomes = m.get("outcomes") or {}
    total = sum(sum(v.values()) for v in outcomes.values() if isinstance(v, dict))
    valid = sum((v or {}).get("valid", 0) for v in outcomes.values() if isinstance(v, dict))
    return f"{valid} of {total} answers readable"


def own_lines(measurements: Sequence[Mapping], model: str) -> list[str]:
    """The embedded model's measurements in plain words: on or off the curve, and why."""
    lines = []
    for m in measurements:
        where = "on the curve" if m.get("on_curve") else f"off the curve ({', '.join(m.get('flags') or [])})"
        lines.append(f"   {m.get('protocol_id')}: {readable_words(m)}; {where}")
    if measurements and not any(m.get("on_curve") for m in measurements):
        lines.append(f"   That is the honest result for {model}: with most answers unreadable, the losses alone "
                     "could explain any gap, so no number is put on a curve.")
    return lines


def closing_block(points: Sequence[KnownAnswerPoint], own: Sequence[Mapping], *, model: str, day: str,
                  instrument: str, public: Path) -> str:
    """What the demo measured, what is on or off the curve and why, and where to look — in plain words."""
    lines = ["", "What this demo measured", "=======================",
             f"The instrument on {day}: {instrument}.", "",
             f"The embedded model, {model} (the instrument's own control, not a showcase):"]
    lines += own_lines(own, model) or ["   no measurement yet"]
    lines += ["", "Known answers: simulated readers filed as an outsider would file a model (published panel file → "
                  "OpenAI-compatible server → `comparison run` → `comparison submit`), each labelled "
                  "\"simulated reader, known answer\":"]
    lines += known_answer_table(points) if points else ["   none filed"]
    recovered = [p for p in points if not p.problems]
    lines += [f"   {len(recovered)} of {len(points)} known answers recovered by the archive's own estimator."
              if points else "",
              "   Comparison points are never on a curve: each is one model, one panel, one day "
              "(flag exploratory).", "",
              "Where to look:",
              f"   site      {public / 'index.html'}  (#results: the measurements and the comparison points; "
              "#data: the files)",
              f"   database  {public / 'archive.db'}  (tables measurements, comparison_points, instrument; "
              "`make serve` opens it in Datasette)",
              f"   files     {public / 'stability.csv'}, {public / 'outcomes.csv'}, {public / 'panels'}/",
              ""]
    return "\n".join(lines)
