"""The static site: one HTML document, its SVG made here, a small embedded vanilla script.

The pages are SPEC §11's closed list (:data:`publish.pages.PAGES`); the
script only switches tabs, sorts the results tables and opens a row's
drawer.  No framework, no CDN, no external request, no relative time: every
date in the markup is absolute.  The document must be usable 400 px wide.

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
  time ("… ago", "yesterday") appears.
"""
import json
import re
from dataclasses import dataclass
from html import escape
from typing import Iterable, Optional

from measure import stats
from measure.schema import FIELD_DESCRIPTIONS, MEASUREMENT_FIELDS, VERSIONS
from panels.instruction import INSTRUCTION
from publish import human_gap, pages, svg, wording
from publish.datasette_meta import CANNED_QUERIES, DB_FILE
from publish.errors import SiteError
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
                 "condition_profile", "bootstrap_seed")


@dataclass
class SiteContext:
    inputs: Inputs
    coverage_rows: list[dict]
    build_time: str
    data_files: list[tuple[str, int, str]]  # (name, bytes, sha256)


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------

def e(value) -> str:
    return escape("" if value is None else str(value))


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


def table(headers: list[tuple[str, str]], rows: Iterable[tuple[dict, list[tuple[object, str]]]],
          css: str = "", caption: Optional[str] = None) -> str:
    """A table; headers are (label, 'num'|'text'); each row is (attributes, [(sort value, html)])."""
    out = [f'<div class="scroll"><table class="{css}">']
    if caption:
        out.append(f"<caption>{caption}</caption>")
    out.append("<thead><tr>" + "".join(f'<th scope="col" data-type="{kind}">{label}</th>' for label, kind in headers)
               + "</tr></thead><tbody>")
    for attrs, cells in rows:
        attr = "".join(f' {k}="{e(v)}"' for k, v in attrs.items())
        out.append(f"<tr{attr}>" + "".join(f'<td data-v="{e(_sort_value(v))}">{h}</td>' for v, h in cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


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


def status_cell(m: dict) -> tuple[object, str]:
    if m["on_curve"]:
        return 1, '<span class="ok">on curve</span>'
    if m["flags"]:
        return 0, '<span class="flag">off curve: ' + e(", ".join(m["flags"])) + "</span>"
    return 0, f'<span class="flag">off curve: protocol {e(m.get("protocol_status"))}</span>'


# --------------------------------------------------------------------------
# Home
# --------------------------------------------------------------------------

def status_bar(ctx: SiteContext) -> str:
    summary = coverage_summary(ctx.coverage_rows, "commercial")
    instrument = instrument_summary(ctx.inputs)
    latest = max((m["run_date"] for m in ctx.inputs.measurements if m["series"] == "commercial"), default=None)
    if summary["periods"]:
        causes = ", ".join(f"{c} {n}" for c, n in summary["gaps_by_cause"].items()) or "none"
        coverage = (f"{summary['ran'] + summary['gap']} scheduled jobs from {e(summary['first_period'])} to "
                    f"{e(summary['last_period'])}: {summary['ran']} ran, {summary['gap']} did not (causes: {e(causes)}).")
    else:
        coverage = "No scheduled job has been recorded yet."
    fp = instrument["runtime_fingerprint"]
    fp_text = f"{e(fp['status'])} on {e(fp['date'])}" if fp else "no fingerprint recorded yet"
    return (
        '<div id="status-bar" class="status-bar" role="status">'
        f"{svg.coverage_bar(summary)}"
        '<p class="legend"><span class="key ran"></span>ran <span class="key part"></span>partly ran '
        '<span class="key gap"></span>gap (each with one named cause) — commercial series only</p>'
        f"<p>Coverage: {coverage} Latest commercial measurement: {e(latest) if latest else 'none yet'}. "
        f"Instrument fingerprint: {fp_text}. Published {e(ctx.build_time)} (UTC).</p>"
        "</div>"
    )


def worked_example() -> str:
    a = {"sure": 18, "gamble": 12}
    b = {"sure": 11, "gamble": 19}
    gap = stats.gap_pct(a, b)
    return (
        "<h2>A worked example (illustrative numbers, not a measurement)</h2>"
        "<ol>"
        "<li>Version A of a scenario offers a sure outcome or a gamble of equal expected value. Of 30 fresh calls, "
        f"{a['sure']} choose the sure outcome and {a['gamble']} the gamble.</li>"
        "<li>Version B says exactly the same thing in other words — the outcomes described as losses instead of "
        f"gains. Of 30 calls, {b['sure']} choose the sure outcome and {b['gamble']} the gamble.</li>"
        f"<li>The gap is the difference in shares: |{a['sure']}/30 − {b['sure']}/30| = {gap:.1f} points, so "
        f"stability is {100 - gap:.1f}%.</li>"
        "<li>Two more versions keep that number honest: A′ changes only punctuation and shows what noise alone "
        "does; C changes one number so the right answer flips, and a model that does not move there is not "
        "reading the question. Entropy is shown beside every score so that a model which always answers the same "
        "way cannot pass for a stable one.</li>"
        "</ol>"
    )


def home(ctx: SiteContext) -> str:
    links = "".join(f'<li><a href="#{pid}">{e(title)}</a></li>' for pid, title in pages.PAGES[1:])
    return (
        f"<h1>{e(wording.PROJECT)}</h1>"
        f'<p class="lead">{e(wording.ONE_SENTENCE)}</p>'
        f"{status_bar(ctx)}"
        f"{worked_example()}"
        "<h2>What you get</h2><ul>"
        "<li>Every measurement, dated, with its interval, noise floor, entropy, loss bounds, gates and flags.</li>"
        "<li>Every scheduled job accounted for: it ran, or one named cause says why not.</li>"
        "<li>For the two open protocols, every response, so each number can be recomputed.</li>"
        "<li>The estimator's code, a read-only SQL database and machine-readable metadata.</li></ul>"
        "<h2>What you do not get</h2><ul>"
        f"<li>A ranking, a product evaluation or advice. {e(wording.NOT_AN_EVALUATION)}</li>"
        f"<li>A claim beyond the panel. {e(wording.SCOPE)}</li>"
        "<li>The wording of the guard and sealed protocols, which stays private so that it can still detect "
        "contamination.</li></ul>"
        f'<h2>Read on</h2><nav aria-label="More"><ul class="onward">{links}</ul></nav>'
    )


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------

SCAN_HEADERS = [("Protocol", "text"), ("Type", "text"), ("Lane", "text"), ("Family", "text"), ("Date", "text"),
                ("Model returned", "text"), ("Stability %", "num"), ("95% CI", "num"), ("Entropy A", "num"),
                ("Entropy B", "num"), ("Noise floor", "num"), ("Status", "num")]


def scan_table(rows: list[dict], css: str) -> str:
    body = []
    for m in rows:
        ci = f"{pct(m['ci_low_pct'])}–{pct(m['ci_high_pct'])}" if m["ci_low_pct"] is not None else "—"
        body.append(({"data-run": m["run_id"], "tabindex": "0", "class": "row"}, [
            (m["protocol_id"], f'<code class="pid">{e(m["protocol_id"])}</code>'),
            (m.get("rewording_type"), e(m.get("rewording_type"))),
            (m.get("lane"), e(m.get("lane") or "—")),
            (m.get("model_family"), e(m.get("model_family"))),
            (m["run_date"], e(m["run_date"])),
            (m.get("returned_model_id"), e(m.get("returned_model_id"))),
            (m["stability_pct"], pct(m["stability_pct"])),
            (m["ci_low_pct"], ci),
            (m["entropy_a"], unit(m["entropy_a"])),
            (m["entropy_b"], unit(m["entropy_b"])),
            (m["null_floor_pct"], pct(m["null_floor_pct"])),
            status_cell(m),
        ]))
    if not body:
        return '<p class="empty">No measurement in this series yet.</p>'
    return table(SCAN_HEADERS, body, f"sortable {css}")


def biggest_move(measurements: list[dict]) -> str:
    curves: dict[tuple, list[dict]] = {}
    for m in measurements:
        if m["series"] == "commercial" and m["on_curve"]:
            curves.setdefault((m.get("model_family"), m["protocol_id"]), []).append(m)
    best = None
    for key, points in curves.items():
        points.sort(key=lambda m: (m["run_date"], m.get("replicate_index") or 0))
        if len(points) < 2:
            continue
        before, after = points[-2], points[-1]
        try:
            label = stats.compare(before, after)
        except ValueError:
            continue
        delta = after["stability_pct"] - before["stability_pct"]
        if label != "flat" and (best is None or abs(delta) > abs(best[3])):
            best = (key, before, after, delta, label)
    if best is None:
        return ('<div class="callout"><strong>Biggest move:</strong> no protocol\'s latest on-curve measurement differs '
                "from its previous one by more than the change rule allows (both the combined interval and the summed "
                "loss bounds must be cleared).</div>")
    (family, protocol_id), before, after, delta, label = best
    return (f'<div class="callout"><strong>Biggest move:</strong> <code>{e(protocol_id)}</code> in the '
            f"{e(family)} family, from {pct(before['stability_pct'])}% on {e(before['run_date'])} to "
            f"{pct(after['stability_pct'])}% on {e(after['run_date'])} ({delta:+.1f} points): <strong>{e(label)}"
            "</strong> under the change rule. It is a change on this panel only.</div>")


def human_note(header: dict, latest: Optional[dict]) -> str:
    rows = human_gap.for_protocol(header)
    if not rows:
        return ""
    items = []
    for r in rows:
        items.append(f"{e(r['study'])} ({e(r['design'])}, collected {e(r['year'])}): {r['effect_pct']:.1f} points "
                     f"— {e(r['effect_definition'].rstrip('.'))}")
    model = (f" This protocol's latest on-curve gap_pct: {pct(latest['gap_pct'])} ({e(latest['run_date'])})."
             if latest else "")
    return ('<p class="human"><strong>Human result beside this protocol</strong> (secondary context; never '
            f"aggregated, not a headline): {'; '.join(items)}.{model}</p>")


def charts(ctx: SiteContext) -> str:
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
        out.append(f'<figure class="curve"><figcaption><code>{e(protocol_id)}</code> · model family '
                   f"<strong>{e(family)}</strong> · {len(points)} on-curve measurement(s)"
                   + (f" · {off[key]} off the curve, listed below, not drawn" if off.get(key) else "")
                   + "</figcaption>")
        if points:
            out.append(svg.stability_chart(points, title))
        else:
            out.append('<p class="empty">No on-curve measurement yet.</p>')
        latest = max(points, key=lambda m: (m["run_date"], m.get("replicate_index") or 0)) if points else None
        out.append(human_note(header, latest))
        out.append("</figure>")
    if not out:
        return '<p class="empty">No commercial measurement yet.</p>'
    return '<div class="charts">' + "".join(out) + "</div>"


def flagged_table(measurements: list[dict]) -> str:
    rows = [m for m in measurements if not m["on_curve"]]
    rows.sort(key=lambda m: (m["run_date"], m["protocol_id"]), reverse=True)
    if not rows:
        return '<p class="empty">No measurement is off the curve.</p>'
    body = []
    for m in rows:
        reasons = m.get("flag_reasons") or {}
        if m["flags"]:
            text = "".join(f"<li><code>{e(f)}</code>: {e(reasons.get(f, ''))}</li>" for f in m["flags"])
        else:
            text = f"<li>protocol status {e(m.get('protocol_status'))}: not admitted, so it never counts</li>"
        body.append(({"data-run": m["run_id"], "class": "flagged"}, [
            (m["run_date"], e(m["run_date"])), (m["series"], e(m["series"])),
            (m["protocol_id"], f'<code class="pid">{e(m["protocol_id"])}</code>'),
            (m.get("returned_model_id"), e(m.get("returned_model_id"))),
            (m["stability_pct"], pct(m["stability_pct"])),
            (m["entropy_a"], f"{unit(m['entropy_a'])} / {unit(m['entropy_b'])}"),
            (",".join(m["flags"]), f'<ul class="reasons">{text}</ul>'),
        ]))
    return table([("Date", "text"), ("Series", "text"), ("Protocol", "text"), ("Model returned", "text"),
                  ("Stability %", "num"), ("Entropy A / B", "num"), ("Flags and reasons", "text")], body,
                 "sortable flagged-table")


def instrument_block(ctx: SiteContext) -> str:
    s = instrument_summary(ctx.inputs)
    fp, rot, subj = s["runtime_fingerprint"], s["guard_rotation"], s["subject_fingerprint"]
    items = [
        "<li>Runtime fingerprint of the reference model: "
        + (f"<strong>{e(fp['status'])}</strong> on {e(fp['date'])}" if fp else "none recorded yet") + ".</li>",
        "<li>Guard rotation on the reference model: "
        + (f"<code>{e(rot['protocol_id'])}</code> on {e(rot['date'])}, verdict <strong>{e(rot['verdict'])}</strong>"
           if rot else "none recorded yet") + ".</li>",
        "<li>Subject fingerprint: "
        + (f"{e(subj['correct'])}/{e(subj['total'])} correct on {e(subj['date'])} ({e(subj['subject_model_id'])})"
           if subj else "none recorded yet") + ".</li>",
    ]
    alarms = sorted(ctx.inputs.by_kind("instrument_alarm"), key=lambda r: str(r.get("date")), reverse=True)[:10]
    alarm_html = ("<p>Recent alarms:</p><ul>" + "".join(
        f"<li>{e(a.get('date'))}: {e(a.get('source'))} — {e(a.get('reason'))}</li>" for a in alarms) + "</ul>"
                  if alarms else "<p>No instrument alarm recorded.</p>")
    return ("<ul>" + "".join(items) + "</ul>" + alarm_html +
            "<p>A day whose measurements coincide with an alarm keeps them, marked <code>instrument_suspect</code>, "
            "off every curve. A quiet instrument rules out our own pipeline only.</p>")


def coverage_note(ctx: SiteContext) -> str:
    summary = coverage_summary(ctx.coverage_rows, "commercial")
    other = coverage_summary(ctx.coverage_rows, "open_weights")
    causes = "".join(f"<li><code>{e(c)}</code>: {n}</li>" for c, n in summary["gaps_by_cause"].items())
    return (f"<p>Commercial series: {summary['ran']} jobs ran and {summary['gap']} did not"
            + (f", from {e(summary['first_period'])} to {e(summary['last_period'])}" if summary["periods"] else "")
            + ". " + (f"Gaps by cause:</p><ul>{causes}</ul>" if causes else "No gap.</p>")
            + f"<p>Open-weights series: {other['ran']} ran, {other['gap']} gaps. Every row is in "
            "<code>coverage.csv</code>.</p>")


def comparison_block(ctx: SiteContext) -> str:
    from publish.database import comparison_rows

    rows = comparison_rows(ctx.inputs)
    body = [({}, [(r["run_date"], e(r["run_date"])), (r["protocol_id"], f'<code class="pid">{e(r["protocol_id"])}</code>'),
                  (r["model_id"], e(r["model_id"])), (r["submitted_by"], e(r["submitted_by"])),
                  (r["stability_pct"], pct(r["stability_pct"])),
                  (r["entropy_a"], f"{unit(r['entropy_a'])} / {unit(r['entropy_b'])}"),
                  (r["null_floor_pct"], pct(r["null_floor_pct"]))]) for r in rows]
    sentence = f'<p class="caution" id="no-one-may-conclude"><strong>{e(wording.NO_ONE_MAY_CONCLUDE)}</strong></p>'
    tbl = (table([("Measured on", "text"), ("Protocol", "text"), ("Model", "text"), ("Submitted by", "text"),
                  ("Stability %", "num"), ("Entropy A / B", "num"), ("Noise floor", "num")], body,
                 "sortable comparison-table") if body else
           '<p class="empty">No comparison point has been accepted. The route is built but cannot yet be used '
           "from outside: the full open panels are not published (see Design).</p>")
    return f'<div class="comparison">{sentence}{tbl}</div>'


def examples_block(ctx: SiteContext) -> str:
    out = []
    for protocol_id, texts in sorted(ctx.inputs.texts.examples.items()):
        if not texts:
            continue
        item = texts[0].item_id
        out.append(f"<details><summary><code>{e(protocol_id)}</code>, scenario {e(item)}: the four versions"
                   "</summary>")
        by_version = {t.version: t.text for t in texts}
        for version in VERSIONS:
            out.append(f"<h4>Version {VERSION_LABEL[version]}</h4>"
                       f'<pre class="scenario">{e(by_version.get(version, ""))}</pre>')
        out.append("</details>")
    if not out:
        return '<p class="empty">No protocol is in the open lane yet.</p>'
    return ("<p>Only the first scenario of each open protocol is published; the other 14 are identified by hash "
            "in the trial files.</p>" + "".join(out))


def succession_block(ctx: SiteContext) -> str:
    from publish.database import succession_rows

    rows = succession_rows(ctx.inputs)
    if not rows:
        return "<p>No succession event recorded.</p>"
    items = []
    for r in rows:
        what = f"<code>{e(r['kind'])}</code> — {e(r['model_family'])}: {e(r['model_id'])}"
        if r["previous_model_id"]:
            what += f" (after {e(r['previous_model_id'])})"
        if r["status"]:
            what += f", status {e(r['status'])}"
        if r["reason"]:
            what += f" — {e(r['reason'])}"
        items.append(f"<li>{e(r['date'])}: {what}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def results(ctx: SiteContext) -> str:
    ms = ctx.inputs.measurements
    return (
        "<h1>Results</h1>"
        f'<p class="lead">{e(wording.SCOPE)}</p>'
        "<h2>Current scan — commercial series</h2>"
        "<p>The most recent measurement of each protocol. Click a column to sort; open a row for its detail.</p>"
        + scan_table(latest_per_curve(ms, "commercial"), "scan-commercial") +
        biggest_move(ms) +
        "<h2>Stability over time</h2>"
        "<p>One chart per protocol and model family, on-curve measurements only, entropy beneath stability. "
        "Curves of different model families are never joined, and the two series are never drawn together.</p>"
        + charts(ctx) +
        "<h2>Off the curve, with the reasons</h2>"
        "<p>A failed check never deletes a measurement: it is listed here with every flag and its reason.</p>"
        + flagged_table(ms) +
        "<h2>Instrument self-check</h2>" + instrument_block(ctx) +
        "<h2>Coverage</h2>" + coverage_note(ctx) +
        "<h2>Open-weights series (the control experiment)</h2>"
        "<p>A separate table, never a line on the charts above.</p>"
        + scan_table(latest_per_curve(ms, "open_weights"), "scan-open") +
        "<h2>Comparison points</h2>" + comparison_block(ctx) +
        "<h2>Wording of the open protocols</h2>" + examples_block(ctx) +
        "<h2>Model succession</h2>" + succession_block(ctx)
    )


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

def data_page(ctx: SiteContext) -> str:
    files = "".join(f"<tr><td><a href=\"{e(name)}\">{e(name)}</a></td><td data-v=\"{size}\">{size:,}</td>"
                    f"<td><code class=\"hash\">{e(sha)}</code></td></tr>" for name, size, sha in ctx.data_files)
    columns = "".join(f"<tr><td><code>{e(n)}</code></td><td>{e(label)}</td><td>{e(FIELD_DESCRIPTIONS[n])}</td></tr>"
                      for n, label in MEASUREMENT_FIELDS)
    queries = "".join(f"<li><strong>{e(q['title'])}</strong> (<code>{e(name)}</code>): {e(q['description'])}</li>"
                      for name, q in CANNED_QUERIES.items())
    licences = "".join(f"<li>{e(kind)}: <a href=\"{e(url)}\">{e(name)}</a></li>"
                       for kind, (name, url) in wording.LICENCES.items())
    return (
        "<h1>Data</h1>"
        "<p>Every file is regenerated from the archive's records on each build; none is edited by hand. "
        "<code>render_manifest.json</code> lists the SHA-256 of every published file, and <code>status.json</code> "
        "the archive's state.</p>"
        '<div class="scroll"><table><thead><tr><th>File</th><th>Bytes</th><th>SHA-256</th></tr></thead><tbody>'
        f"{files}</tbody></table></div>"
        "<h2>The files</h2><ul>"
        "<li><code>stability.csv</code>: one row per measurement, one column per schema field, in schema order; "
        "structured values are one JSON cell; both series in one file, told apart by <code>series</code>.</li>"
        "<li><code>outcomes.csv</code>: the outcome counts unpacked, one row per run, version and outcome.</li>"
        "<li><code>coverage.csv</code>: every scheduled job, ran or with one cause.</li>"
        "<li><code>open-lane/&lt;year&gt;.jsonl</code>: every trial of the open protocols, as logged (hash-chained per "
        "run).</li>"
        "<li><code>croissant.json</code>: Croissant metadata for the CSV and JSONL files.</li>"
        f"<li><code>{e(DB_FILE)}</code>: all of it as a read-only SQLite database, served by Datasette.</li></ul>"
        "<h2>Cell conventions</h2><p>An empty cell is an absent value; booleans are <code>true</code>/<code>false"
        "</code>; percentages (<code>_pct</code>) are on 0–100; shares (<code>u_*</code>, entropy) on 0–1.</p>"
        "<h2>SQL</h2><p>Run <code>make serve</code> (or <code>llmarchive serve</code>) to query the database with "
        "Datasette on 127.0.0.1, read-only, with a time limit and a row cap. Prepared queries:</p>"
        f"<ul>{queries}</ul>"
        "<h2>Every column of stability.csv</h2>"
        '<div class="scroll"><table><thead><tr><th>Column</th><th>Type</th><th>Meaning</th></tr></thead><tbody>'
        f"{columns}</tbody></table></div>"
        f"<h2>Licences</h2><ul>{licences}</ul>"
        "<h2>Citing</h2><p>Cite the release you used (see <code>CITATION.cff</code>) and name the "
        "<code>protocol_id</code> and <code>panel_sha256</code> of every number you quote.</p>"
    )


# --------------------------------------------------------------------------
# Glossary and static pages
# --------------------------------------------------------------------------

def glossary_page() -> str:
    out = ["<h1>Glossary</h1><p>Every code and term used in the tables, in plain words. Column names are fixed; "
           "this page is the bridge between them and the prose.</p>"]
    for group, terms in pages.GLOSSARY.items():
        out.append(f"<h2>{e(group)}</h2><dl>")
        for term, meaning in terms.items():
            label = VERSION_LABEL.get(term, term)
            out.append(f'<dt id="g-{e(term)}"><code>{e(label)}</code></dt><dd>{e(meaning)}</dd>')
        out.append("</dl>")
    return "".join(out)


def methodology_page() -> str:
    return pages.METHODOLOGY + (
        "<h3>The instruction every version ends with</h3>"
        f"<pre>{e(INSTRUCTION)}</pre>")


# --------------------------------------------------------------------------
# assembly and checks
# --------------------------------------------------------------------------

def drawer_data(measurements: list[dict]) -> dict:
    rows = latest_per_curve(measurements, "commercial") + latest_per_curve(measurements, "open_weights")
    return {m["run_id"]: {k: m.get(k) for k in DRAWER_FIELDS} for m in rows}


def _json_script(element_id: str, value) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    text = text.replace("</", "<\\/").replace("<!--", "<\\!--")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def assemble(page_html: dict[str, str], build_time: str, data: dict, human: dict) -> str:
    """The whole document; refuses a page set other than the closed list or a homepage without the status bar."""
    expected = [pid for pid, _ in pages.PAGES]
    if sorted(page_html) != sorted(expected):
        raise SiteError(f"the site's pages are a closed list {expected}; got {sorted(page_html)}")
    if 'id="status-bar"' not in page_html["home"]:
        raise SiteError("the homepage has no coverage/status bar; refusing to build the site")
    nav = "".join(f'<a href="#{pid}" data-tab="{pid}">{e(title)}</a>' for pid, title in pages.PAGES)
    sections = "".join(f'<section id="{pid}" class="page" aria-label="{e(title)}">{page_html[pid]}</section>'
                       for pid, title in pages.PAGES)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(wording.PROJECT)}</title>"
        f'<meta name="description" content="{e(wording.ONE_SENTENCE)}">'
        f"<style>{CSS}</style></head><body>"
        f'<header><a class="brand" href="#home">{e(wording.PROJECT)}</a><nav aria-label="Pages">{nav}</nav></header>'
        f"<main>{sections}</main>"
        '<aside id="drawer" class="drawer" hidden aria-label="Measurement detail" tabindex="-1">'
        '<button type="button" class="close" id="drawer-close">Close</button><div id="drawer-body"></div></aside>'
        f"<footer><p>Built {e(build_time)} (UTC) by <code>llmarchive publish</code>. Data "
        f"{e(wording.LICENCES['data'][0])}, prose {e(wording.LICENCES['prose'][0])}, code "
        f"{e(wording.LICENCES['code'][0])}.</p></footer>"
        + _json_script("drawer-data", data) + _json_script("human-data", human) +
        f"<script>{JS}</script></body></html>\n"
    )


def check_site(document: str) -> None:
    """Re-check the rules on the finished markup (so no later edit can slip past them)."""
    home_match = re.search(r'<section id="home".*?</section>', document, re.S)
    if not home_match or 'id="status-bar"' not in home_match.group(0):
        raise SiteError("the homepage has no coverage/status bar")
    ids = re.findall(r'<section id="([^"]+)" class="page"', document)
    if ids != [pid for pid, _ in pages.PAGES]:
        raise SiteError(f"the site's pages must be exactly {[p for p, _ in pages.PAGES]}, got {ids}")
    for chart in re.findall(r'<svg class="chart" data-chart="stability".*?</svg>', document, re.S):
        if 'data-panel="entropy"' not in chart:
            raise SiteError("a stability chart without its entropy panel")
    for chart in re.findall(r'<svg class="chart"[^>]*>', document):
        if 'data-series="' not in chart or 'data-model-family="' not in chart:
            raise SiteError("a chart that does not declare its one series and model family")
    if EXTERNAL_LOAD.search(document):
        raise SiteError(f"the page would load something from outside itself: {EXTERNAL_LOAD.search(document).group(0)!r}")
    # quoted scenario wording (fiction: "last month, the board...") is content, not a time stamp of ours
    visible = re.sub(r"<script\b.*?</script>|<pre class=\"scenario\">.*?</pre>", " ", document, flags=re.S)
    found = RELATIVE_TIME.search(re.sub(r"<[^>]+>", " ", visible))
    if found:
        raise SiteError(f"relative time in the markup: {found.group(0)!r}")
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
        "design": pages.DESIGN,
        "metric": pages.METRIC,
        "methodology": methodology_page(),
        "value": pages.VALUE,
        "glossary": glossary_page(),
    }
    document = assemble(page_html, ctx.build_time, drawer_data(ctx.inputs.measurements), human)
    check_site(document)
    return document


CSS = """
:root{--ink:#1d2330;--muted:#5b6476;--line:#d8dce4;--bg:#fff;--soft:#f4f6f9;--accent:#1f5fa8;--ok:#2e7d4f;--warn:#a3461a}
*{box-sizing:border-box}html{-webkit-text-size-adjust:100%}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
header{position:sticky;top:0;z-index:2;background:var(--bg);border-bottom:1px solid var(--line);padding:.5rem 1rem;display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:center}
.brand{font-weight:700;color:var(--ink);text-decoration:none}
header nav{display:flex;flex-wrap:wrap;gap:.25rem .75rem}
header nav a{color:var(--accent);text-decoration:none;padding:.15rem 0;border-bottom:2px solid transparent}
header nav a[aria-current=page]{border-bottom-color:var(--accent);font-weight:600}
main{max-width:62rem;margin:0 auto;padding:1rem}
html.js .page{display:none}html.js .page.active{display:block}
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.25rem;margin:1.6rem 0 .5rem}h3{font-size:1.05rem}
.lead{font-size:1.1rem;color:var(--muted)}
code{font-size:.9em;overflow-wrap:anywhere}pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--soft);padding:.75rem;border-radius:4px}
.scroll{overflow-x:auto;max-width:100%;margin:.5rem 0}
table{border-collapse:collapse;font-size:.9rem;min-width:100%}
th,td{border-bottom:1px solid var(--line);padding:.35rem .5rem;text-align:left;vertical-align:top}
th[data-type]{cursor:pointer;white-space:nowrap}th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
tr.row{cursor:pointer}tr.row:hover,tr.row:focus{background:var(--soft);outline:none}
.ok{color:var(--ok)}.flag{color:var(--warn)}
.status-bar{border:1px solid var(--line);border-radius:6px;padding:.5rem .75rem;background:var(--soft)}
svg{width:100%;height:auto;display:block}
.bar rect.ran,.key.ran{fill:#4c9a6a;background:#4c9a6a}.bar rect.part,.key.part{fill:#d7a440;background:#d7a440}
.bar rect.gap,.key.gap{fill:#b5533c;background:#b5533c}.bar rect.none{fill:#e3e6ec}
.key{display:inline-block;width:.8rem;height:.8rem;margin:0 .2rem 0 .6rem;vertical-align:middle}
.legend{font-size:.85rem;color:var(--muted);margin:.25rem 0}
.chart .grid{stroke:#e3e6ec}.chart .tick,.bar .tick{font-size:12px;fill:var(--muted)}.chart .cap{font-size:12.5px;fill:var(--ink)}
.chart .curve{fill:none;stroke:var(--accent);stroke-width:2}.chart .pt{fill:var(--accent)}
.chart .ci{stroke:var(--accent);stroke-opacity:.45;stroke-width:3}
.chart .ceiling{fill:none;stroke:var(--muted);stroke-dasharray:4 3}
.chart .ent-a{fill:none;stroke:#6b4fa1;stroke-width:1.6}.chart .ent-b{fill:none;stroke:#6b4fa1;stroke-width:1.6;stroke-dasharray:5 3}
.chart .ent-a-pt,.chart .ent-b-pt{fill:#6b4fa1}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,27rem),1fr));gap:1rem}
code.pid{white-space:nowrap;overflow-wrap:normal}
figure.curve{margin:0;padding:.5rem;border:1px solid var(--line);border-radius:6px}
figcaption{font-size:.9rem;margin-bottom:.25rem}
.callout{border-left:4px solid var(--accent);background:var(--soft);padding:.5rem .75rem;margin:1rem 0}
.caution{border-left:4px solid var(--warn);background:#fbf1ec;padding:.5rem .75rem}
.human{font-size:.9rem;color:var(--muted)}
ul.reasons{margin:0;padding-left:1rem}.empty{color:var(--muted);font-style:italic}
.hash{font-size:.75rem}dt{margin-top:.6rem;font-weight:600}dd{margin-left:1rem}
.drawer{position:fixed;top:0;right:0;bottom:0;width:min(34rem,100vw);background:var(--bg);border-left:1px solid var(--line);box-shadow:-4px 0 16px rgba(0,0,0,.12);overflow-y:auto;padding:1rem;z-index:5}
.drawer .close{float:right}.drawer h3{margin-top:1rem}.drawer table{font-size:.8rem}
footer{max-width:62rem;margin:2rem auto;padding:0 1rem;color:var(--muted);font-size:.85rem}
@media (max-width:480px){body{font-size:15px}main{padding:.75rem}th,td{padding:.3rem}}
"""

JS = r"""
(function(){
'use strict';
var root=document.documentElement;root.classList.add('js');
var pages=[].slice.call(document.querySelectorAll('section.page'));
var tabs=[].slice.call(document.querySelectorAll('header nav a[data-tab]'));
function show(id){
  var found=false;
  pages.forEach(function(p){var on=p.id===id;p.classList.toggle('active',on);if(on){found=true;}});
  if(!found){pages[0].classList.add('active');id=pages[0].id;}
  tabs.forEach(function(t){if(t.getAttribute('data-tab')===id){t.setAttribute('aria-current','page');}else{t.removeAttribute('aria-current');}});
}
function fromHash(){show((location.hash||'#home').slice(1));}
window.addEventListener('hashchange',function(){fromHash();window.scrollTo(0,0);});
fromHash();

function sortBy(th){
  var table=th.closest('table'),tbody=table.tBodies[0],index=[].indexOf.call(th.parentNode.children,th);
  var numeric=th.getAttribute('data-type')==='num';
  var dir=th.getAttribute('aria-sort')==='ascending'?-1:1;
  [].forEach.call(th.parentNode.children,function(h){h.removeAttribute('aria-sort');});
  th.setAttribute('aria-sort',dir===1?'ascending':'descending');
  var rows=[].slice.call(tbody.rows);
  rows.sort(function(a,b){
    var x=a.cells[index].getAttribute('data-v'),y=b.cells[index].getAttribute('data-v');
    if(numeric){var fx=x===''?-Infinity:parseFloat(x),fy=y===''?-Infinity:parseFloat(y);return (fx-fy)*dir;}
    return x.localeCompare(y)*dir;
  });
  rows.forEach(function(r){tbody.appendChild(r);});
}
[].forEach.call(document.querySelectorAll('table.sortable th[data-type]'),function(th){
  th.tabIndex=0;
  th.addEventListener('click',function(){sortBy(th);});
  th.addEventListener('keydown',function(ev){if(ev.key==='Enter'){sortBy(th);}});
});

var data=JSON.parse(document.getElementById('drawer-data').textContent);
var human=JSON.parse(document.getElementById('human-data').textContent);
var drawer=document.getElementById('drawer'),body=document.getElementById('drawer-body');
var opener=null;
function el(tag,text,cls){var n=document.createElement(tag);if(text!==undefined&&text!==null){n.textContent=String(text);}if(cls){n.className=cls;}return n;}
function fmt(v,d){if(v===null||v===undefined){return '—';}if(typeof v==='number'){return v.toFixed(d===undefined?1:d);}if(typeof v==='boolean'){return v?'true':'false';}return String(v);}
function kv(list,label,value){var dt=el('dt',label);var dd=el('dd',value);list.appendChild(dt);list.appendChild(dd);}
function grid(title,obj,cols){
  body.appendChild(el('h3',title));
  var t=el('table'),head=el('tr');head.appendChild(el('th',''));cols.forEach(function(c){head.appendChild(el('th',c));});
  t.appendChild(head);
  Object.keys(obj||{}).forEach(function(k){var tr=el('tr');tr.appendChild(el('th',k));cols.forEach(function(c){tr.appendChild(el('td',fmt((obj[k]||{})[c],0)));});t.appendChild(tr);});
  var wrap=el('div',null,'scroll');wrap.appendChild(t);body.appendChild(wrap);
}
function open(runId,row){
  var m=data[runId];if(!m){return;}
  opener=row;body.textContent='';
  body.appendChild(el('h2',m.protocol_id));
  body.appendChild(el('p',m.run_date+' · '+m.series+' · '+(m.model_family||'')+' · '+(m.returned_model_id||m.subject_model_id||'')));
  var dl=el('dl');
  kv(dl,'stability_pct',fmt(m.stability_pct)+'  (95% CI '+fmt(m.ci_low_pct)+'–'+fmt(m.ci_high_pct)+', conditional on this panel)');
  kv(dl,'entropy_a / entropy_b',fmt(m.entropy_a,3)+' / '+fmt(m.entropy_b,3));
  kv(dl,'null_floor_pct',fmt(m.null_floor_pct)+(m.at_noise_floor?'  (at the noise floor)':''));
  kv(dl,'gap_pct / gap_null_pct / gap_positive_pct',fmt(m.gap_pct)+' / '+fmt(m.gap_null_pct)+' / '+fmt(m.gap_positive_pct));
  kv(dl,'u_a / u_a_prime / u_b / u_c',[m.u_a,m.u_a_prime,m.u_b,m.u_c].map(function(v){return fmt(v,3);}).join(' / '));
  kv(dl,'drop_bound_pct ab / aa / ac',fmt(m.drop_bound_pct_ab)+' / '+fmt(m.drop_bound_pct_aa)+' / '+fmt(m.drop_bound_pct_ac));
  kv(dl,'scenario_concentration_pct',fmt(m.scenario_concentration_pct));
  kv(dl,'on_curve',m.on_curve?'yes':'no (protocol '+m.protocol_status+')');
  body.appendChild(dl);
  body.appendChild(el('h3','Flags'));
  if(m.flags&&m.flags.length){var ul=el('ul');m.flags.forEach(function(f){ul.appendChild(el('li',f+': '+((m.flag_reasons||{})[f]||'')));});body.appendChild(ul);}
  else{body.appendChild(el('p','No flag.'));}
  body.appendChild(el('h3','Checks'));
  var gt=el('table'),gh=el('tr');['check','pair','rule','result'].forEach(function(c){gh.appendChild(el('th',c));});gt.appendChild(gh);
  (m.gates||[]).forEach(function(g){var tr=el('tr');[g.check,g.pair||'',g.rule,g.pass?'pass':'fail → '+g.flag].forEach(function(c){tr.appendChild(el('td',c));});gt.appendChild(tr);});
  var gw=el('div',null,'scroll');gw.appendChild(gt);body.appendChild(gw);
  var options=Object.keys((m.decisions||{}).A||{});
  grid('Decisions per version',m.decisions,options);
  grid('Outcomes per version',m.outcomes,['valid','unparseable','refused','blocked_upstream','truncated','empty','off_format']);
  body.appendChild(el('h3','Per-scenario gap (points)'));
  var sg=el('p');sg.textContent=Object.keys(m.scenario_gaps_pct||{}).map(function(k){return k+' '+fmt(m.scenario_gaps_pct[k]);}).join(' · ');body.appendChild(sg);
  var hs=human[m.protocol_id];
  if(hs&&hs.length){body.appendChild(el('h3','Human result beside this protocol (secondary, never aggregated)'));
    hs.forEach(function(h){body.appendChild(el('p',h.study+' — collected '+h.year+', '+h.design+': '+fmt(h.effect_pct)+' points. '+h.effect_definition));});}
  body.appendChild(el('h3','Identity'));
  var id=el('dl');['run_id','panel_sha256','protocol_sha256','extractor_sha','analysis_code_sha','schema_sha256','grammar_version','condition_profile','bootstrap_seed','lane','twin_id'].forEach(function(k){kv(id,k,fmt(m[k]));});
  body.appendChild(id);
  drawer.hidden=false;drawer.focus();
}
function close(){drawer.hidden=true;if(opener){opener.focus();opener=null;}}
document.getElementById('drawer-close').addEventListener('click',close);
document.addEventListener('keydown',function(ev){if(ev.key==='Escape'&&!drawer.hidden){close();}});
[].forEach.call(document.querySelectorAll('tr[data-run]'),function(tr){
  if(!data[tr.getAttribute('data-run')]){return;}
  tr.classList.add('row');tr.tabIndex=0;
  tr.addEventListener('click',function(){open(tr.getAttribute('data-run'),tr);});
  tr.addEventListener('keydown',function(ev){if(ev.key==='Enter'||ev.key===' '){ev.preventDefault();open(tr.getAttribute('data-run'),tr);}});
});
})();
"""
