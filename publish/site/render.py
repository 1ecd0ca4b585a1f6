"""The static site: one HTML document, rendered from Jinja2 templates, its SVG made here.

The pages are method §11's closed list (:data:`publish.site.pages.PAGES`).  The
markup lives in ``publish/site/templates/`` (autoescaped: every value is escaped
unless it is markup this package made), the stylesheet and the small vanilla
script in ``publish/site/static/``; both are inlined at build time, so the result
is still one self-contained document.  The script only switches tabs, sorts
the results tables and opens a row's drawer.  No framework, no CDN, no
external request, no relative time: every date in the markup is absolute.
The document must be usable 400 px wide.

This module prepares plain values for the templates (which rows, in which
order, what the change rule says); the templates decide how they look.  Four
modules by concern: this one (the pages' values, the drawers, :func:`render`),
:mod:`publish.site.home` (the homepage's status bar, every series and the
instrument), :mod:`publish.site.jinja` (the Jinja2 environment, its
filters and the shared formatting) and :mod:`publish.site.rules` (assembly
into one document and the rules re-checked on it); their names are
re-exported here, so callers use ``publish.site.render`` alone.  What a number can
be read as comes from :mod:`publish.words.numbers`, the same words the CSV and the
database publish.

Rules enforced, each refusing the build (:class:`SiteError`):

* the homepage carries the coverage/status bar (:func:`assemble`);
* the page set is exactly the closed list;
* every stability chart has its entropy panel, a curve never crosses a
  model family or mixes series, and a flagged measurement is listed with its
  reasons, never drawn (:mod:`publish.site.svg`, re-checked by :func:`check_site`);
  a ``bridge_incomplete`` of the curve's family is marked on the chart at its
  date, no line drawn across it;
* comparison points sit in their own table with the "what nobody may
  conclude" sentence right beside it;
* an open protocol shows only its first scenario's four versions on the
  Results page, and links its full panel file (``panels/<protocol_id>.json``,
  :mod:`publish.data.panels`), which the build must carry;
* nothing in the markup loads from outside the document, and no relative
  time ("… ago", "yesterday") appears;
* the Results page lists at most :data:`FLAGGED_INLINE` off-curve
  measurements inline (the newest), so it stays readable at ten years; the
  full list is linked (Datasette's ``flagged_measurements``, ``stability.csv``).

What the pages show beyond the records' own fields: each measurement's
reading first (every Results table, every drawer) and its flags as
sentences; the status bar's lines per series, the instrument and the
comparison points (:mod:`publish.site.home`); each comparison point's kind
("simulated reader, known answer" for one of the archive's simulated
readers) with its interval; the ``instrument_alarm``
of ``status.json`` on Home and Results; the change rows of
:mod:`publish.data.changes` as the "biggest move", as each drawer's
``min_detectable_change_pct`` and as its line on the server build (a
different build under the same model id, :func:`build_words`); a measurement with most answers unreadable as
"not measurable" instead of a figure; the open-weights series as small
per-generation charts; three responses of an open-lane run in its drawer;
and, on Design, each protocol's simulated-reader figures
(``design_readers``) when the protocol has them.
"""
from dataclasses import dataclass
from typing import Optional

from markupsafe import Markup

from measure import jsonl, stats
from measure.schema import MEASUREMENT_FIELDS, VERSIONS
from panels.instruction import INSTRUCTION
from publish.data import (Inputs, PANELS_DIR, alarm_words, changes, comparison_rows, coverage_summary,
                          file_name as panel_file_name, human_gap, instrument_jobs, instrument_summary, succession_rows,
                          verify_command)
from publish.site import pages, svg
from publish.words import PUBLISHED_DESCRIPTIONS, numbers
from publish.datasette import CANNED_QUERIES, DB_FILE
from publish.errors import SiteError
from publish.site.home import latched_alarm, status_bar
from publish.site.rules import EXTERNAL_LOAD, FLAGGED_INLINE, RELATIVE_TIME, assemble, check_site
from publish.site.jinja import (UNREADABLE_SHARE, VERSION_LABEL, breakable, environment, pct, render_template,
                                repeats_reading, rounded_reason, static_text, unit, unreadable)

__all__ = [  # the names callers reach through publish.site.render, wherever they are defined
    "SiteContext", "render", "home", "results", "data_page", "design_page", "glossary_page", "methodology_page",
    "drawer_data", "sample_responses", "latest_per_curve", "biggest_move", "curves", "flagged", "generations",
    "examples", "status_bar", "latched_alarm", "point_key", "build_words", "DRAWER_FIELDS", "DRAWER_RESPONSES", "RESPONSE_CHARS",
    "SCAN_HEADERS", "FLAGGED_HEADERS", "COMPARISON_HEADERS", "DESIGN_FIGURES",
    "EXTERNAL_LOAD", "FLAGGED_INLINE", "RELATIVE_TIME", "assemble", "check_site",
    "UNREADABLE_SHARE", "VERSION_LABEL", "breakable", "environment", "pct", "render_template", "repeats_reading",
    "rounded_reason", "static_text", "unit", "unreadable",
]

DRAWER_FIELDS = ("run_id", "run_date", "protocol_id", "rewording_type", "series", "lane", "twin_id", "model_family",
                 "subject_model_id", "returned_model_id", "stability_pct", "ci_low_pct", "ci_high_pct", "gap_pct",
                 "gap_null_pct", "gap_positive_pct", "null_floor_pct", "at_noise_floor", "entropy_a", "entropy_b",
                 "u_a", "u_a_prime", "u_b", "u_c", "drop_bound_pct_ab", "drop_bound_pct_aa", "drop_bound_pct_ac",
                 "n", "n_valid", "n_items", "k", "scenario_gaps_pct", "scenario_concentration_pct", "outcomes",
                 "decisions", "flags", "flag_reasons", "gates", "on_curve", "protocol_status", "panel_sha256",
                 "protocol_sha256", "extractor_sha", "analysis_code_sha", "schema_sha256", "grammar_version",
                 "condition_profile", "bootstrap_seed", "replicate_agreement_pct", "ci_stratified_low_pct",
                 "ci_stratified_high_pct", "gap_role_ab_pct", "system_fingerprints")
DRAWER_RESPONSES = ("A", "B", "C")
"""An open-lane run's drawer quotes one response of each of these versions, with the decision read from it."""
RESPONSE_CHARS = 700


@dataclass
class SiteContext:
    inputs: Inputs
    coverage_rows: list[dict]
    build_time: str
    data_files: list[tuple[str, int, str]]  # (name, bytes, sha256)


# --------------------------------------------------------------------------
# Home
# --------------------------------------------------------------------------

def latest_per_curve(measurements: list[dict], series: str) -> list[dict]:
    latest: dict[tuple, dict] = {}
    for m in measurements:
        if m["series"] != series:
            continue
        key = (m.get("model_family"), m["protocol_id"])
        if key not in latest or (m["run_date"], m.get("replicate_index") or 0) >= \
                (latest[key]["run_date"], latest[key].get("replicate_index") or 0):
            latest[key] = m
    return sorted(latest.values(), key=lambda m: (str(m.get("model_family")), m["protocol_id"]))


def home(ctx: SiteContext) -> str:
    a = {"sure": 18, "gamble": 12}
    b = {"sure": 11, "gamble": 19}
    example = {"a": a, "b": b, "gap": stats.gap_pct(a, b)}
    return render_template("home.html", status_bar=Markup(status_bar(ctx)), ex=example, onward=pages.PAGES[1:],
                           alarm=latched_alarm(ctx))


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------

# The reading (publish.words.numbers) is every results table's first column: what the row's numbers can be read as.
SCAN_HEADERS = [("Reading", "text"), ("Protocol", "text"), ("Type", "text"), ("Lane", "text"), ("Family", "text"),
                ("Date", "text"), ("Model returned", "text"), ("Stability %", "num"), ("95% CI", "num"),
                ("Entropy A", "num"), ("Entropy B", "num"), ("Noise floor", "num"), ("Status", "num")]
FLAGGED_HEADERS = [("Reading", "text"), ("Date", "text"), ("Series", "text"), ("Protocol", "text"),
                   ("Model returned", "text"), ("Stability %", "num"), ("Entropy A / B", "num"),
                   ("Flags and reasons", "text")]
COMPARISON_HEADERS = [("Reading", "text"), ("Measured on", "text"), ("Protocol", "text"), ("Model", "text"),
                      ("Submitted by", "text"), ("Stability %", "num"), ("95% CI", "num"), ("Entropy A / B", "num"),
                      ("Noise floor", "num"), ("Flags", "text")]


def biggest_move(measurements: list[dict]) -> Optional[dict]:
    """The largest called change between a commercial curve's last two on-curve points, or ``None``.

    It reads the rows of :func:`publish.data.changes.change_rows` — the rows of the
    ``changes`` table and ``changes.csv`` — so the site and the database can
    never disagree about what moved.  Among curves, the largest ``|delta_pct|``
    wins; a tie keeps the curve that sorts first.
    """
    last: dict[tuple, dict] = {}
    for row in changes.change_rows(measurements):
        if row["series"] == "commercial":
            last[(row["model_family"], row["protocol_id"])] = row   # rows come in date order within a curve
    best = None
    for key in sorted(last, key=lambda k: (str(k[0]), str(k[1]))):
        row = last[key]
        if row["label"] != "flat" and (best is None or abs(row["delta_pct"]) > abs(best["delta_pct"])):
            best = row
    return best


def curves(ctx: SiteContext) -> list[dict]:
    """One entry per commercial (model family, protocol): its on-curve points drawn, its off-curve ones counted."""
    headers = {h["protocol_id"]: h for h in ctx.inputs.headers}
    groups: dict[tuple, list[dict]] = {}
    off: dict[tuple, int] = {}
    for m in ctx.inputs.measurements:
        if m["series"] != "commercial":
            continue
        key = (m.get("model_family"), m["protocol_id"])
        if m["on_curve"]:
            groups.setdefault(key, []).append(m)
        else:
            off[key] = off.get(key, 0) + 1
            groups.setdefault(key, [])
    out = []
    for key in sorted(groups, key=lambda k: (str(k[0]), k[1])):
        family, protocol_id = key
        points = groups[key]
        header = headers.get(protocol_id, {"protocol_id": protocol_id})
        title = f"{protocol_id} — {family} (commercial)"
        latest = max(points, key=lambda m: (m["run_date"], m.get("replicate_index") or 0)) if points else None
        # a bridge_incomplete of the family is a permanent discontinuity, marked on the curve at its date
        breaks = svg.curve_breaks(ctx.inputs.by_kind("bridge_incomplete"), family)
        out.append({"protocol_id": protocol_id, "model_family": family, "n_points": len(points),
                    "n_off": off.get(key, 0),
                    "chart": Markup(svg.stability_chart(points, title, breaks)) if points else None,
                    "human": human_gap.for_protocol(header), "latest": latest})
    return out


def flagged(measurements: list[dict]) -> tuple[list[dict], int]:
    """The newest :data:`FLAGGED_INLINE` off-curve measurements, and how many there are in all.

    Ten years of off-curve measurements inline made a page of megabytes; the
    full list is a Datasette query and ``stability.csv`` away.
    """
    rows = [m for m in measurements if not m["on_curve"]]
    rows.sort(key=lambda m: (m["run_date"], m["protocol_id"]), reverse=True)
    return rows[:FLAGGED_INLINE], len(rows)


def generations(measurements: list[dict]) -> list[dict]:
    """The open-weights series as small charts: per model family and protocol, one point per generation.

    A generation is one ``subject_model_id``; its point is its latest
    on-curve measurement.  Generations are ordered by their first run date.
    """
    groups: dict[tuple, dict[str, list[dict]]] = {}
    first_seen: dict[str, str] = {}
    for m in measurements:
        if m["series"] != "open_weights":
            continue
        model = str(m.get("subject_model_id"))
        first_seen[model] = min(first_seen.get(model, m["run_date"]), m["run_date"])
        generation = groups.setdefault((m.get("model_family"), m["protocol_id"]), {}).setdefault(model, [])
        if m["on_curve"]:
            generation.append(m)
    out = []
    for (family, protocol_id) in sorted(groups, key=lambda k: (str(k[0]), k[1])):
        by_model = groups[(family, protocol_id)]
        points = [max(ms, key=lambda m: (m["run_date"], m.get("replicate_index") or 0, m["run_id"]))
                  for model, ms in sorted(by_model.items(), key=lambda kv: (first_seen[kv[0]], kv[0])) if ms]
        title = f"{protocol_id} — {family} (open_weights), one point per generation"
        out.append({"protocol_id": protocol_id, "model_family": family, "n_generations": len(by_model),
                    "n_drawn": len(points),
                    "chart": Markup(svg.generation_chart(points, title)) if points else None})
    return out


def examples(ctx: SiteContext) -> list[dict]:
    """Each open protocol's first scenario, with the link to its whole panel (which the build must publish)."""
    published = {name for name, _, _ in ctx.data_files}
    out = []
    for protocol_id, texts in sorted(ctx.inputs.texts.examples.items()):
        if not texts:
            continue
        panel_file = panel_file_name(protocol_id)
        if panel_file not in published:
            raise SiteError(f"{protocol_id}: an open protocol is shown without its full panel file {panel_file}")
        by_version = {t.version: t.text for t in texts}
        out.append({"protocol_id": protocol_id, "item_id": texts[0].item_id, "panel_file": panel_file,
                    "versions": [(VERSION_LABEL[v], by_version.get(v, "")) for v in VERSIONS]})
    return out


def results(ctx: SiteContext) -> str:
    ms = ctx.inputs.measurements
    flagged_rows, flagged_total = flagged(ms)
    # An alarm's own reason is private (it can hold an error's text): the list shows it in public words.
    alarms = [{"date": a.get("date"), "words": alarm_words(a, ctx.inputs)}
              for a in sorted(ctx.inputs.by_kind("instrument_alarm"), key=lambda r: str(r.get("date")),
                              reverse=True)[:10]]
    return render_template(
        "results.html", SCAN_HEADERS=SCAN_HEADERS, FLAGGED_HEADERS=FLAGGED_HEADERS,
        COMPARISON_HEADERS=COMPARISON_HEADERS,
        scan_commercial=latest_per_curve(ms, "commercial"), scan_open=latest_per_curve(ms, "open_weights"),
        move=biggest_move(ms), curves=curves(ctx), flagged=flagged_rows, flagged_total=flagged_total,
        generations=generations(ms), alarm=latched_alarm(ctx),
        instrument=instrument_summary(ctx.inputs), alarms=alarms,
        coverage=coverage_summary(ctx.coverage_rows, "commercial"),
        coverage_open=coverage_summary(ctx.coverage_rows, "open_weights"),
        coverage_instrument=coverage_summary(ctx.coverage_rows, None),   # the instrument's jobs: no series
        instrument_jobs=instrument_jobs(),
        comparison=comparison_rows(ctx.inputs), point_key=point_key, examples=examples(ctx),
        succession=succession_rows(ctx.inputs))


# --------------------------------------------------------------------------
# Data, Glossary and the fixed pages
# --------------------------------------------------------------------------

def data_page(ctx: SiteContext) -> str:
    open_ids = [r.run_id for r in (ctx.inputs.open_runs or [])]
    panel_files = sorted(name for name, _, _ in ctx.data_files              # the panels, not the harness
                         if name.startswith(PANELS_DIR + "/") and name.endswith(".json"))  # task files beside them
    return render_template("data.html", data_files=ctx.data_files, db_file=DB_FILE, panel_files=panel_files,
                           verify_command=verify_command(), verify_example=verify_command(open_ids[-1]) if open_ids else None,
                           file_names={name for name, _, _ in ctx.data_files},
                           queries=list(CANNED_QUERIES.items()),
                           columns=list(numbers.READING_COLUMNS)
                           + [(n, label, PUBLISHED_DESCRIPTIONS[n]) for n, label in MEASUREMENT_FIELDS])


def glossary_page() -> str:
    groups = [(group, [(term, VERSION_LABEL.get(term, term), meaning) for term, meaning in terms.items()])
              for group, terms in pages.glossary().items()]
    return render_template("glossary.html", glossary=groups)


def design_page(ctx: SiteContext) -> str:
    """The fixed Design prose, then each protocol's design figures per reference reader when it has them."""
    designs = getattr(ctx.inputs.texts, "designs", None) or {}
    rows = []
    for protocol_id in sorted(designs):
        readers = designs[protocol_id]
        if not isinstance(readers, dict):
            continue
        for reader in sorted(readers):
            figures = readers[reader] if isinstance(readers[reader], dict) else {}
            rows.append({"protocol_id": protocol_id, "reader": reader,
                         **{k: _number(figures.get(k)) for k in DESIGN_FIGURES}})
    return render_template("design.html", prose=Markup(pages.DESIGN), rows=rows)


def _number(value) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


DESIGN_FIGURES = ("gap_ab_pct", "gap_aa_prime_pct", "gap_ac_pct", "stability_pct")


def methodology_page() -> str:
    return render_template("methodology.html", prose=Markup(pages.METHODOLOGY), instruction=INSTRUCTION)


# --------------------------------------------------------------------------
# the drawers
# --------------------------------------------------------------------------

def drawer_data(measurements: list[dict], open_runs: Optional[list] = None,
                points: Optional[list[dict]] = None) -> dict:
    """What a row's drawer shows, for the rows that have one (the latest of each curve, both series, and
    every comparison point, keyed :func:`point_key`).

    Beside the measurement's own fields: its ``reading`` and ``flag_sentences``
    (:mod:`publish.words.numbers`), ``bounds`` (each loss bound and
    ``min_detectable_change_pct`` in words when it is beyond the scale),
    ``min_detectable_change_pct`` (:func:`publish.data.changes.min_detectable_change_pct`),
    ``unreadable`` (see :func:`unreadable`) and, for an open-lane run,
    ``responses``: one response of each of :data:`DRAWER_RESPONSES` from the
    open-lane file, with the decision the grammar read from it.  A comparison
    point's entry also carries ``point_kind`` ("simulated reader, known
    answer" for a simulated reader), ``expected``, ``model_id`` and
    ``submitted_by``.  ``system_fingerprints`` lists the server builds that
    answered the run, and ``build_change`` says, in the words of
    :func:`build_words`, whether a different build answered than for the
    previous measurement of the curve under the same model id (the
    ``changes`` row whose later measurement this is; ``None`` without one).
    """
    rows = latest_per_curve(measurements, "commercial") + latest_per_curve(measurements, "open_weights")
    lines = {r.run_id: r.lines for r in (open_runs or [])}
    # The change rows again (publish.data.changes), so the drawer says what the changes table says about the build.
    builds = {r["to_run_id"]: build_words(r) for r in changes.change_rows(measurements)}
    out = {}
    for m in rows:
        entry = _drawer_entry(m)
        entry["build_change"] = builds.get(m["run_id"])
        if m["run_id"] in lines:
            entry["responses"] = sample_responses(lines[m["run_id"]])
        out[m["run_id"]] = entry
    for point in points or []:
        if isinstance(point.get("measurement"), dict):
            entry = _drawer_entry(point["measurement"])
            entry.pop("system_fingerprints")    # not the point's measurement's field: shown when the point has it
            if point.get("system_fingerprints") is not None:
                entry["system_fingerprints"] = point["system_fingerprints"]
            out[point_key(point)] = {**entry,
                                     **{k: point.get(k) for k in ("point_kind", "expected", "model_id",
                                                                  "submitted_by")},
                                     "known_answer": point.get("point_kind") == numbers.KNOWN_ANSWER}
    return out


def build_words(row: dict) -> Optional[str]:
    """What a ``changes`` row says about the server build, as a sentence; ``None`` when it says nothing.

    A changed build is said first and plainly (the provider served the same
    model id from a different build); an unchanged one is said too, so a
    reader knows it was looked at.  Without a build on both sides, or when
    the model id itself changed, there is nothing to compare.
    """
    changed = row.get("build_changed")
    if changed is None:
        return None
    before = ", ".join(row.get("from_system_fingerprints") or [])
    after = ", ".join(row.get("to_system_fingerprints") or [])
    previous = f"the previous measurement of this curve ({row.get('from_run_id')}, {row.get('from_run_date')})"
    if changed:
        return (f"Server build changed under the same model id {row.get('to_subject_model_id')}: {previous} was "
                f"answered by {before}, this one by {after}. The provider served the same name from a different "
                f"build; the change rule's verdict on the figures is {row.get('label')}.")
    return f"Same server build as {previous}: {after}."


def point_key(point: dict) -> str:
    """A comparison point's drawer key: never a run id of the series (the point's own run id is the submitter's)."""
    return f"point-{str(point.get('record_sha256'))[:16]}"


def _drawer_entry(m: dict) -> dict:
    entry = {k: m.get(k) for k in DRAWER_FIELDS}
    entry["min_detectable_change_pct"] = changes.min_detectable_change_pct(m)
    entry["unreadable"] = unreadable(m)
    entry["repeats_reading"] = repeats_reading(m)
    entry["reading"] = numbers.reading(m)
    entry["flag_sentences"] = numbers.flag_sentences(m)
    entry["bounds"] = {k: numbers.beyond_scale(v) for k, v in
                       [(k, m.get(k)) for k in ("drop_bound_pct_ab", "drop_bound_pct_aa", "drop_bound_pct_ac")]
                       + [("min_detectable_change_pct", entry["min_detectable_change_pct"])]
                       if numbers.beyond_scale(v)}
    return entry


def sample_responses(lines: list[bytes]) -> list[dict]:
    """The first trial of each of :data:`DRAWER_RESPONSES`, as the open-lane file holds it.

    ``decision`` is the token the grammar extracted when the trial was
    logged, or the outcome when no decision could be read; the text is cut
    at :data:`RESPONSE_CHARS` characters (the full text is in the file).
    """
    picked: dict[str, dict] = {}
    for line in lines:
        trial = jsonl.record_of(line)
        if trial is None:
            continue
        version = trial.get("version")
        if version in DRAWER_RESPONSES and version not in picked:
            text = str(trial.get("response_text") or "")
            picked[version] = {
                "version": VERSION_LABEL.get(version, version), "item_id": trial.get("item_id"),
                "trial_index": trial.get("trial_index"), "outcome": trial.get("outcome"),
                "decision": trial.get("token") if trial.get("outcome") == "valid" else None,
                "text": text[:RESPONSE_CHARS], "cut": len(text) > RESPONSE_CHARS,
            }
            if len(picked) == len(DRAWER_RESPONSES):
                break
    return [picked[v] for v in DRAWER_RESPONSES if v in picked]


def render(ctx: SiteContext) -> str:
    """The whole site as one HTML document."""
    for protocol_id, texts in ctx.inputs.texts.examples.items():
        if len({t.item_id for t in texts}) > 1:
            raise SiteError(f"{protocol_id}: only the first scenario's four versions may be shown")
    human = {h["protocol_id"]: human_gap.for_protocol(h) for h in ctx.inputs.headers if human_gap.for_protocol(h)}
    page_html = {
        "home": home(ctx),
        "results": results(ctx),
        "data": data_page(ctx),
        "design": design_page(ctx),
        "metric": pages.METRIC,
        "methodology": methodology_page(),
        "value": pages.VALUE,
        "glossary": glossary_page(),
    }
    document = assemble(page_html, ctx.build_time,
                        drawer_data(ctx.inputs.measurements, ctx.inputs.open_runs, comparison_rows(ctx.inputs)), human)
    check_site(document)
    return document
