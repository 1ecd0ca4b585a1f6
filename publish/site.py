"""The static site: one HTML document, rendered from Jinja2 templates, its SVG made here.

The pages are method §11's closed list (:data:`publish.pages.PAGES`).  The
markup lives in ``publish/templates/`` (autoescaped: every value is escaped
unless it is markup this package made), the stylesheet and the small vanilla
script in ``publish/static/``; both are inlined at build time, so the result
is still one self-contained document.  The script only switches tabs, sorts
the results tables and opens a row's drawer.  No framework, no CDN, no
external request, no relative time: every date in the markup is absolute.
The document must be usable 400 px wide.

This module prepares plain values for the templates (which rows, in which
order, what the change rule says); the templates decide how they look.

Rules enforced here, each refusing the build (:class:`SiteError`):

* the homepage carries the coverage/status bar (:func:`assemble`);
* the page set is exactly the closed list;
* every stability chart has its entropy panel, a curve never crosses a
  model family or mixes series, and a flagged measurement is listed with its
  reasons, never drawn (:mod:`publish.svg`, re-checked by :func:`check_site`);
* comparison points sit in their own table with the "what nobody may
  conclude" sentence right beside it;
* an open protocol shows only its first scenario's four versions;
* nothing in the markup loads from outside the document, and no relative
  time ("… ago", "yesterday") appears;
* the Results page lists at most :data:`FLAGGED_INLINE` off-curve
  measurements inline (the newest), so it stays readable at ten years; the
  full list is linked (Datasette's ``flagged_measurements``, ``stability.csv``).

What the pages show beyond the records' own fields: the ``instrument_alarm``
of ``status.json`` on Home and Results; the change rows of
:mod:`publish.changes` as the "biggest move" and each drawer's
``min_detectable_change_pct``; a measurement with most answers unreadable as
"not measurable" instead of a figure; the open-weights series as small
per-generation charts; three responses of an open-lane run in its drawer;
and, on Design, each protocol's simulated-reader figures
(``design_readers``) when the protocol has them.
"""
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from importlib.resources import files
from typing import Optional

import jinja2
from markupsafe import Markup

from measure import stats
from measure.schema import FIELD_DESCRIPTIONS, MEASUREMENT_FIELDS, VERSIONS
from panels.instruction import INSTRUCTION
from publish import changes, human_gap, pages, svg, wording
from publish import status as status_file
from publish.datasette_meta import CANNED_QUERIES, DATABASE, DB_FILE
from publish.errors import SiteError
from publish.open_lane import verify_command
from publish.sources import Inputs
from publish.status import coverage_summary, instrument_summary

VERSION_LABEL = {"A": "A", "A_prime": "A′", "B": "B", "C": "C"}
RELATIVE_TIME = re.compile(r"\b(\d+\s+(seconds?|minutes?|hours?|days?|weeks?|months?|years?)\s+ago|just now|"
                           r"yesterday|today|tomorrow|last (week|month|year)|this (week|month|year)|"
                           r"timeago|fromNow)\b", re.I)
EXTERNAL_LOAD = re.compile(r"""(<(script|img|iframe|link|source|video|audio|embed|object)\b[^>]*\b(src|href|data)\s*=\s*["']?(https?:)?//)"""
                           r"""|(url\(\s*["']?(https?:)?//)|(@import)|(\bfetch\s*\()|(XMLHttpRequest)""", re.I)
DRAWER_FIELDS = ("run_id", "run_date", "protocol_id", "rewording_type", "series", "lane", "twin_id", "model_family",
                 "subject_model_id", "returned_model_id", "stability_pct", "ci_low_pct", "ci_high_pct", "gap_pct",
                 "gap_null_pct", "gap_positive_pct", "null_floor_pct", "at_noise_floor", "entropy_a", "entropy_b",
                 "u_a", "u_a_prime", "u_b", "u_c", "drop_bound_pct_ab", "drop_bound_pct_aa", "drop_bound_pct_ac",
                 "n", "n_valid", "n_items", "k", "scenario_gaps_pct", "scenario_concentration_pct", "outcomes",
                 "decisions", "flags", "flag_reasons", "gates", "on_curve", "protocol_status", "panel_sha256",
                 "protocol_sha256", "extractor_sha", "analysis_code_sha", "schema_sha256", "grammar_version",
                 "condition_profile", "bootstrap_seed", "replicate_agreement_pct", "ci_stratified_low_pct",
                 "ci_stratified_high_pct", "gap_role_ab_pct")
FLAGGED_INLINE = 50
"""Off-curve measurements listed inline, newest first; the rest are one click away (Datasette, stability.csv)."""
UNREADABLE_SHARE = 0.5
"""Above this share of unreadable answers in A or in B, no stability figure is shown: there is too little to read."""
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
# templates
# --------------------------------------------------------------------------

def pct(value) -> str:
    return "—" if value is None else f"{value:.1f}"


def unit(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _sort_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


NUMBER = re.compile(r"-?\d+\.\d{3,}")


def rounded_reason(text: str) -> str:
    """A flag reason with its long numbers rounded as the tables round them.

    The estimator writes reasons with up to ten decimals ("drop_asymmetry_pct_ab
    = 6.666666667 exceeds 1.0"); a reader gets one decimal for points and two
    for entropy, as in every table.  Short numbers (thresholds) are kept.
    """
    out, last = [], 0
    for match in NUMBER.finditer(text):
        before = text[last:match.start()]
        name = before[before.rfind(",") + 1:]
        decimals = 2 if "entropy" in name else 1
        out.append(before + f"{float(match.group(0)):.{decimals}f}")
        last = match.end()
    return "".join(out) + text[last:]


def breakable(identifier) -> Markup:
    """An identifier that may wrap after its ``__`` separators (a long protocol id must not widen a table)."""
    return Markup(escape("" if identifier is None else str(identifier)).replace("__", "__<wbr>"))


def unreadable(m: dict) -> Optional[dict]:
    """``{"readable": n, "total": N}`` for A and B together when too few answers were readable, else ``None``.

    With more than half of A's or of B's answers unreadable, the stability
    figure is dominated by which answers happened to be readable (its loss
    bound is wider than the scale), so the site shows the count instead.
    """
    u_a, u_b = m.get("u_a"), m.get("u_b")
    if u_a is None or u_b is None or max(u_a, u_b) <= UNREADABLE_SHARE:
        return None
    n_valid = m.get("n_valid") or {}
    n = m.get("n") or 0
    return {"readable": int(n_valid.get("A", 0)) + int(n_valid.get("B", 0)), "total": 2 * int(n)}


_NUMBER_WORDS = {15: "fifteen"}


def repeats_reading(m: dict) -> Optional[str]:
    """What the interval of a measurement can be read as, given how its repeats behaved (method §6.7).

    The frozen interval resamples every response as if it were a fresh draw.
    When each prompt's repeats came back the same (a greedy subject, or a
    model that answers one prompt identically) those "draws" are copies, and
    the interval then describes how the scenarios differ from one another,
    not sampling noise; the within-panel interval (``ci_stratified_*``),
    which resamples only the repeats of each scenario, is the one that
    speaks to noise.  ``None`` when the measurement has no repeats to read.
    """
    agreement = m.get("replicate_agreement_pct")
    if agreement is None:
        return None
    n_items = m.get("n_items")
    scenarios = f"the {_NUMBER_WORDS.get(n_items, n_items)} scenarios" if n_items else "the scenarios"
    low, high = m.get("ci_stratified_low_pct"), m.get("ci_stratified_high_pct")
    if agreement >= 100:
        return (f"every repeat of a prompt came back the same: the interval shows how {scenarios} differ, "
                f"not sampling noise; resampling only the repeats gives zero width")
    within = ("no within-panel interval (a version has no valid answer)" if low is None else
              f"the within-panel interval, which resamples only the repeats and never the scenarios, is "
              f"{pct(low)}–{pct(high)}")
    return f"the repeats of a prompt came back the same in {pct(agreement)}% of scenario × version cells; {within}"


def _finalize(value):
    """Escape every template output the way :func:`html.escape` does, unless it is already markup.

    Jinja's own autoescape (markupsafe) writes ``'`` as ``&#39;``; the
    published page has always used ``html.escape`` (``&#x27;``), and tests
    and the leak guard compare against that form, so the escaping is done
    here and autoescape then passes the result through unchanged.
    """
    if value is None or isinstance(value, jinja2.Undefined):
        return Markup("")
    if hasattr(value, "__html__"):
        return value
    return Markup(escape(str(value)))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("publish", "templates"), autoescape=True,
                             finalize=_finalize, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(pct=pct, unit=unit, sortv=_sort_value, reason=rounded_reason, breakable=breakable)
    env.globals.update(wording=wording, VERSION_LABEL=VERSION_LABEL, unreadable=unreadable,
                       datasette=f"../{DATABASE}")
    return env


def render_template(name: str, **values) -> str:
    """Render one template; the caller wraps the result in ``Markup`` where it is placed inside another."""
    return str(environment().get_template(name).render(**values))


def static_text(name: str) -> str:
    """A stylesheet or script from ``publish/static/``, to be inlined (the page loads nothing else)."""
    return (files("publish") / "static" / name).read_text(encoding="utf-8")


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


def status_bar(ctx: SiteContext) -> str:
    summary = coverage_summary(ctx.coverage_rows, "commercial")
    latest = max((m["run_date"] for m in ctx.inputs.measurements if m["series"] == "commercial"), default=None)
    causes = ", ".join(f"{c} {n}" for c, n in summary["gaps_by_cause"].items())
    return render_template("status_bar.html", bar=Markup(svg.coverage_bar(summary)), summary=summary, causes=causes,
                           latest=latest, fp=instrument_summary(ctx.inputs)["runtime_fingerprint"],
                           build_time=ctx.build_time)


def latched_alarm(ctx: SiteContext) -> Optional[dict]:
    """The ``instrument_alarm`` entry of ``status.json`` (``None`` when nothing is latched).

    Read through :func:`publish.status.status`, the function that writes
    ``status.json``, so the page and the file say the same thing.
    """
    alarm = status_file.status(ctx.inputs, ctx.coverage_rows, ctx.build_time).get("instrument_alarm")
    return alarm if isinstance(alarm, dict) else None


def home(ctx: SiteContext) -> str:
    a = {"sure": 18, "gamble": 12}
    b = {"sure": 11, "gamble": 19}
    example = {"a": a, "b": b, "gap": stats.gap_pct(a, b)}
    return render_template("home.html", status_bar=Markup(status_bar(ctx)), ex=example, onward=pages.PAGES[1:],
                           alarm=latched_alarm(ctx))


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------

SCAN_HEADERS = [("Protocol", "text"), ("Type", "text"), ("Lane", "text"), ("Family", "text"), ("Date", "text"),
                ("Model returned", "text"), ("Stability %", "num"), ("95% CI", "num"), ("Entropy A", "num"),
                ("Entropy B", "num"), ("Noise floor", "num"), ("Status", "num")]
FLAGGED_HEADERS = [("Date", "text"), ("Series", "text"), ("Protocol", "text"), ("Model returned", "text"),
                   ("Stability %", "num"), ("Entropy A / B", "num"), ("Flags and reasons", "text")]
COMPARISON_HEADERS = [("Measured on", "text"), ("Protocol", "text"), ("Model", "text"), ("Submitted by", "text"),
                      ("Stability %", "num"), ("Entropy A / B", "num"), ("Noise floor", "num")]


def biggest_move(measurements: list[dict]) -> Optional[dict]:
    """The largest called change between a commercial curve's last two on-curve points, or ``None``.

    It reads the rows of :func:`publish.changes.change_rows` — the rows of the
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
        out.append({"protocol_id": protocol_id, "model_family": family, "n_points": len(points),
                    "n_off": off.get(key, 0),
                    "chart": Markup(svg.stability_chart(points, title)) if points else None,
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
    out = []
    for protocol_id, texts in sorted(ctx.inputs.texts.examples.items()):
        if not texts:
            continue
        by_version = {t.version: t.text for t in texts}
        out.append({"protocol_id": protocol_id, "item_id": texts[0].item_id,
                    "versions": [(VERSION_LABEL[v], by_version.get(v, "")) for v in VERSIONS]})
    return out


def results(ctx: SiteContext) -> str:
    from publish.database import comparison_rows, succession_rows

    ms = ctx.inputs.measurements
    flagged_rows, flagged_total = flagged(ms)
    alarms = sorted(ctx.inputs.by_kind("instrument_alarm"), key=lambda r: str(r.get("date")), reverse=True)[:10]
    return render_template(
        "results.html", SCAN_HEADERS=SCAN_HEADERS, FLAGGED_HEADERS=FLAGGED_HEADERS,
        COMPARISON_HEADERS=COMPARISON_HEADERS,
        scan_commercial=latest_per_curve(ms, "commercial"), scan_open=latest_per_curve(ms, "open_weights"),
        move=biggest_move(ms), curves=curves(ctx), flagged=flagged_rows, flagged_total=flagged_total,
        generations=generations(ms), alarm=latched_alarm(ctx),
        instrument=instrument_summary(ctx.inputs), alarms=alarms,
        coverage=coverage_summary(ctx.coverage_rows, "commercial"),
        coverage_open=coverage_summary(ctx.coverage_rows, "open_weights"),
        comparison=comparison_rows(ctx.inputs), examples=examples(ctx), succession=succession_rows(ctx.inputs))


# --------------------------------------------------------------------------
# Data, Glossary and the fixed pages
# --------------------------------------------------------------------------

def data_page(ctx: SiteContext) -> str:
    open_ids = [r.run_id for r in (ctx.inputs.open_runs or [])]
    return render_template("data.html", data_files=ctx.data_files, db_file=DB_FILE,
                           verify_command=verify_command(), verify_example=verify_command(open_ids[-1]) if open_ids else None,
                           file_names={name for name, _, _ in ctx.data_files},
                           queries=list(CANNED_QUERIES.items()),
                           columns=[(n, label, FIELD_DESCRIPTIONS[n]) for n, label in MEASUREMENT_FIELDS])


def glossary_page() -> str:
    groups = [(group, [(term, VERSION_LABEL.get(term, term), meaning) for term, meaning in terms.items()])
              for group, terms in pages.GLOSSARY.items()]
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
# assembly and checks
# --------------------------------------------------------------------------

def drawer_data(measurements: list[dict], open_runs: Optional[list] = None) -> dict:
    """What a row's drawer shows, for the rows that have one (the latest of each curve, both series).

    Beside the measurement's own fields: ``min_detectable_change_pct``
    (:func:`publish.changes.min_detectable_change_pct`), ``unreadable`` (see
    :func:`unreadable`) and, for an open-lane run, ``responses``: one
    response of each of :data:`DRAWER_RESPONSES` from the open-lane file,
    with the decision the grammar read from it.
    """
    rows = latest_per_curve(measurements, "commercial") + latest_per_curve(measurements, "open_weights")
    lines = {r.run_id: r.lines for r in (open_runs or [])}
    out = {}
    for m in rows:
        entry = {k: m.get(k) for k in DRAWER_FIELDS}
        entry["min_detectable_change_pct"] = changes.min_detectable_change_pct(m)
        entry["unreadable"] = unreadable(m)
        entry["repeats_reading"] = repeats_reading(m)
        if m["run_id"] in lines:
            entry["responses"] = sample_responses(lines[m["run_id"]])
        out[m["run_id"]] = entry
    return out


def sample_responses(lines: list[bytes]) -> list[dict]:
    """The first trial of each of :data:`DRAWER_RESPONSES`, as the open-lane file holds it.

    ``decision`` is the token the grammar extracted when the trial was
    logged, or the outcome when no decision could be read; the text is cut
    at :data:`RESPONSE_CHARS` characters (the full text is in the file).
    """
    picked: dict[str, dict] = {}
    for line in lines:
        try:
            trial = json.loads(line)
        except ValueError:
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


def _json_text(value) -> Markup:
    """JSON for a ``<script type="application/json">`` element: nothing in it can close the element."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return Markup(text.replace("</", "<\\/").replace("<!--", "<\\!--"))


def assemble(page_html: dict[str, str], build_time: str, data: dict, human: dict) -> str:
    """The whole document; refuses a page set other than the closed list or a homepage without the status bar."""
    expected = [pid for pid, _ in pages.PAGES]
    if sorted(page_html) != sorted(expected):
        raise SiteError(f"the site's pages are a closed list {expected}; got {sorted(page_html)}")
    if 'id="status-bar"' not in page_html["home"]:
        raise SiteError("the homepage has no coverage/status bar; refusing to build the site")
    return render_template(
        "document.html", pages=pages.PAGES, page_html={k: Markup(v) for k, v in page_html.items()},
        build_time=build_time, css=Markup(static_text("site.css")), js=Markup(static_text("site.js")),
        json_scripts=[("drawer-data", _json_text(data)), ("human-data", _json_text(human))]) + "\n"


def check_site(document: str) -> None:
    """Re-check the rules on the finished markup (so no later edit can slip past them)."""
    home_match = re.search(r'<section id="home".*?</section>', document, re.S)
    if not home_match or 'id="status-bar"' not in home_match.group(0):
        raise SiteError("the homepage has no coverage/status bar")
    ids = re.findall(r'<section id="([^"]+)" class="page"', document)
    if ids != [pid for pid, _ in pages.PAGES]:
        raise SiteError(f"the site's pages must be exactly {[p for p, _ in pages.PAGES]}, got {ids}")
    for chart in re.findall(r'<svg class="chart[^"]*" data-chart="(?:stability|generations)".*?</svg>', document, re.S):
        if 'data-panel="entropy"' not in chart:
            raise SiteError("a stability chart without its entropy panel")
    for chart in re.findall(r'<svg class="chart[^"]*"[^>]*>', document):
        if 'data-series="' not in chart or 'data-model-family="' not in chart:
            raise SiteError("a chart that does not declare its one series and model family")
    if EXTERNAL_LOAD.search(document):
        raise SiteError(f"the page would load something from outside itself: {EXTERNAL_LOAD.search(document).group(0)!r}")
    # quoted scenario wording (fiction: "last month, the board...") is content, not a time stamp of ours
    visible = re.sub(r"<script\b.*?</script>|<pre class=\"scenario\">.*?</pre>", " ", document, flags=re.S)
    found = RELATIVE_TIME.search(re.sub(r"<[^>]+>", " ", visible))
    if found:
        raise SiteError(f"relative time in the markup: {found.group(0)!r}")
    inline = len(re.findall(r'<tr data-run="[^"]*" class="flagged">', document))
    if inline > FLAGGED_INLINE:
        raise SiteError(f"the Results page lists {inline} off-curve measurements inline; at most {FLAGGED_INLINE} "
                        "(the rest are linked), or the page grows without bound")
    comparison = re.search(r'<div class="comparison">.*?</div>', document, re.S)
    if not comparison or 'id="no-one-may-conclude"' not in comparison.group(0):
        raise SiteError("the comparison points are not beside the 'what nobody may conclude' sentence")


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
    document = assemble(page_html, ctx.build_time, drawer_data(ctx.inputs.measurements, ctx.inputs.open_runs),
                        human)
    check_site(document)
    return document
