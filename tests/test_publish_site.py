"""The site generator's rules: status bar, entropy beside stability, one family and one series per curve,
flagged measurements listed not drawn, comparison points with their sentence, only the first open scenario shown
and the open panels' full files linked."""
import html
import re

import pytest

from measure.schema import FLAGS, GAP_CAUSES, LANES, OUTCOMES, SERIES, VERSIONS
from publish import SiteError, publish_all
from publish.site import pages, render as site, svg
from publish.words import numbers, wording
from publish.errors import CurveError
from tests import known_answer_helpers as kh
from tests import publish_helpers as ph

BUILD = "2026-12-03T00:00:00Z"


@pytest.fixture(scope="module")
def published_site(publish_template, tmp_path_factory):
    """(paths, populated data, index.html) of one archive populated and published once for the module.

    Besides :func:`publish_helpers.populate`'s records, the three known-answer readers' runs are filed as
    comparison points through the intake (``data["points"]``, by reader)."""
    paths = ph.fresh_archive(publish_template, tmp_path_factory.mktemp("site") / "home")
    data = ph.populate(paths)
    data["points"] = kh.file_known_answer_points(paths, tmp_path_factory.mktemp("submissions"))
    publish_all(paths, build_time=BUILD)
    return paths, data, (paths.public / "index.html").read_text(encoding="utf-8")


def published_points(paths):
    """Every comparison point the build publishes, by its drawer key, with its recomputed measurement."""
    from publish.data import comparison_rows
    from publish.data import gather

    return {site.point_key(p): p["measurement"] for p in comparison_rows(gather(paths))}


def section(document, page_id):
    return re.search(rf'<section id="{page_id}" class="page".*?</section>', document, re.S).group(0)


def point(**overrides):
    base = {"run_id": "r", "run_date": "2026-10-02", "protocol_id": "p__wording__v0", "series": "commercial",
            "model_family": "claude-sonnet", "on_curve": True, "flags": [], "stability_pct": 80.0,
            "ci_low_pct": 70.0, "ci_high_pct": 90.0, "entropy_a": 0.9, "entropy_b": 0.8, "null_floor_pct": 9.0}
    base.update(overrides)
    return base


# --- the homepage and the page list ---------------------------------------------------------------

def test_the_homepage_carries_the_coverage_status_bar(published_site):
    _, _, document = published_site
    home = section(document, "home")
    assert 'id="status-bar"' in home and '<svg class="bar"' in home
    assert "2026-09" in home and "2026-12" in home and BUILD in home


def test_a_homepage_without_the_status_bar_fails_the_build(archive, monkeypatch):
    monkeypatch.setattr(site, "status_bar", lambda ctx: "<p>no bar</p>")
    with pytest.raises(SiteError, match="status bar"):
        publish_all(archive, build_time=BUILD)
    assert not (archive.public / "index.html").exists()


def test_assemble_refuses_a_homepage_without_the_bar_and_any_page_outside_the_closed_list():
    good = {pid: "<p>x</p>" for pid, _ in pages.PAGES}
    with pytest.raises(SiteError, match="status bar"):
        site.assemble(good, BUILD, {}, {})
    good["home"] = '<div id="status-bar"></div>'
    extra = dict(good, map="<p>a map page</p>")
    with pytest.raises(SiteError, match="closed list"):
        site.assemble(extra, BUILD, {}, {})
    missing = {k: v for k, v in good.items() if k != "glossary"}
    with pytest.raises(SiteError, match="closed list"):
        site.assemble(missing, BUILD, {}, {})


def test_the_pages_are_exactly_the_closed_list_in_one_document(published_site):
    _, _, document = published_site
    assert re.findall(r'<section id="([^"]+)" class="page"', document) == [
        "home", "results", "data", "design", "metric", "methodology", "value", "glossary"]
    assert document.count("<html") == 1


# --- curves -------------------------------------------------------------------------------------

def test_a_curve_across_model_families_is_refused_naming_both():
    with pytest.raises(CurveError) as caught:
        svg.stability_chart([point(), point(run_id="s", run_date="2026-11-02", model_family="claude-opus")], "t")
    assert "'claude-opus'" in str(caught.value) and "'claude-sonnet'" in str(caught.value)


def test_a_curve_mixing_series_is_refused_naming_both():
    with pytest.raises(CurveError) as caught:
        svg.stability_chart([point(), point(run_id="s", series="open_weights")], "t")
    assert "'commercial'" in str(caught.value) and "'open_weights'" in str(caught.value)


def test_a_flagged_measurement_is_never_drawn_on_the_main_curve():
    with pytest.raises(SiteError, match="off the main curve.*degenerate_candidate"):
        svg.stability_chart([point(), point(run_id="s", on_curve=False, flags=["degenerate_candidate"])], "t")


def test_stability_is_never_drawn_without_entropy():
    with pytest.raises(SiteError, match="entropy"):
        svg.stability_chart([point(entropy_b=None)], "t")
    chart = svg.stability_chart([point(), point(run_id="s", run_date="2026-11-02", stability_pct=70.0)], "t")
    assert 'data-panel="stability"' in chart and 'data-panel="entropy"' in chart
    broken = chart.replace('data-panel="entropy"', 'data-panel="other"')
    document = site.assemble({**{pid: "" for pid, _ in pages.PAGES}, "home": '<div id="status-bar"></div>',
                              "results": broken}, BUILD, {}, {})
    with pytest.raises(SiteError, match="entropy panel"):
        site.check_site(document)


def test_every_published_chart_has_entropy_and_one_family_and_series(published_site):
    _, _, document = published_site
    charts = re.findall(r'<svg class="chart".*?</svg>', document, re.S)
    assert len(charts) == 4
    for chart in charts:
        assert 'data-panel="entropy"' in chart
        assert 'data-series="commercial"' in chart and 'data-model-family="claude-sonnet"' in chart


def test_flagged_measurements_appear_with_their_reasons_and_not_on_a_chart(published_site):
    paths, data, document = published_site
    flagged = [m for m in data["measurements"] if not m["on_curve"]]
    assert flagged
    results = section(document, "results")
    table = re.search(r'<table class="sortable flagged-table">.*?</table>', results, re.S).group(0)
    for m in flagged:
        assert f'data-run="{m["run_id"]}"' in table
        row = re.search(rf'<tr data-run="{m["run_id"]}".*?</tr>', table, re.S).group(0)
        assert row.startswith(f'<tr data-run="{m["run_id"]}" class="flagged"><td data-v="{numbers.reading(m)}"')
        for flag, sentence in numbers.flag_sentences(m).items():
            assert f"<code>{flag}</code>: {html.escape(sentence)}</li>" in row
    for chart in re.findall(r'<svg class="chart".*?</svg>', document, re.S):
        protocol_id = re.search(r'aria-label="([^ ]+) ', chart).group(1)
        on_curve = [m for m in data["measurements"]
                    if m["protocol_id"] == protocol_id and m["series"] == "commercial" and m["on_curve"]]
        drawn = re.findall(r'<circle class="pt"[^>]*><title>([0-9-]+):', chart)
        assert sorted(drawn) == sorted(m["run_date"] for m in on_curve)
        assert not {m["run_date"] for m in flagged if m["protocol_id"] == protocol_id} & set(drawn)


def test_the_open_weights_series_is_a_separate_table_never_a_line(published_site):
    _, _, document = published_site
    results = section(document, "results")
    assert '<table class="sortable scan-open">' in results
    assert "smollm2" not in "".join(re.findall(r'<svg class="chart".*?</svg>', document, re.S))


# --- comparison points, examples, human results ---------------------------------------------------

def test_comparison_points_sit_in_their_own_table_beside_the_sentence(published_site):
    _, _, document = published_site
    block = re.search(r'<div class="comparison">.*?</table>', document, re.S).group(0)
    assert html.escape(wording.NO_ONE_MAY_CONCLUDE) in block
    assert "other-model-1" in block and "2026-11-10" in block
    assert "other-model-1" not in "".join(re.findall(r'<svg class="chart".*?</svg>', document, re.S))
    assert "other-model-1" not in re.search(r'<table class="sortable scan-commercial">.*?</table>', document,
                                            re.S).group(0)


def test_only_the_first_scenario_of_an_open_protocol_is_shown(published_site):
    paths, _, document = published_site
    for pid in ("risky_choice_framing__wording__v0", "base_rate_neglect__wording__v0"):
        protocol = ph.protocol(paths, pid)
        first, others = protocol["panel"][0], protocol["panel"][1:]
        for version in VERSIONS:
            assert html.escape(first["versions"][version]) in document
        for item in others:
            for version in VERSIONS:
                body = item["versions"][version].split("\n")[0]
                assert html.escape(body) not in document, (pid, item["item_id"])
    guard = ph.protocol(paths, "risky_choice_framing__anchoring__v0")
    assert html.escape(guard["panel"][0]["versions"]["A"].split("\n")[0]) not in document


def test_more_than_the_first_scenario_is_refused(published_site):
    paths, _, _ = published_site
    from publish.data import sources

    inputs = sources.gather(paths)
    pid = "risky_choice_framing__wording__v0"
    inputs.texts.examples[pid] = [t for t in inputs.texts.public if t.protocol_id == pid][:8]
    with pytest.raises(SiteError, match="only the first scenario"):
        site.render(site.SiteContext(inputs, [], BUILD, []))


def test_each_shown_open_scenario_links_its_full_panel_file_and_the_data_page_lists_them(published_site):
    paths, _, document = published_site
    results, data = section(document, "results"), section(document, "data")
    for pid in ("risky_choice_framing__wording__v0", "base_rate_neglect__wording__v0"):
        block = re.search(rf'<details class="open-example" data-protocol="{pid}">.*?</details>', results, re.S)
        assert block and f'href="panels/{pid}.json"' in block.group(0)
        assert f'href="panels/{pid}.json"' in data and (paths.public / "panels" / f"{pid}.json").is_file()
    assert "llmarchive panels verify public/panels/" in data
    assert "llmarchive comparison run --panel public/panels/" in data and "llmarchive comparison submit" in data
    assert "not yet published" not in document and "cannot yet be used from outside" not in document
    assert "only the first scenario" not in document.lower()


def test_an_open_scenario_shown_without_its_panel_file_is_refused(published_site):
    paths, _, _ = published_site
    with pytest.raises(SiteError, match="without its full panel file panels/base_rate_neglect__wording__v0.json"):
        site.render(site.SiteContext(_context(paths).inputs, [], BUILD, []))
    unlinked = site.assemble({**{pid: "" for pid, _ in pages.PAGES}, "home": '<div id="status-bar"></div>',
                              "results": '<details class="open-example" data-protocol="x__wording__v0">'
                                         '<pre class="scenario">text</pre></details>'}, BUILD, {}, {})
    with pytest.raises(SiteError, match="does not link the full panel file panels/x__wording__v0.json"):
        site.check_site(unlinked)


def test_the_human_result_sits_beside_its_comparable_protocol_only(published_site):
    _, _, document = published_site
    notes = re.findall(r'<figure class="curve">(.*?)</figure>', document, re.S)
    with_note = [n for n in notes if 'class="human"' in n]
    assert len(with_note) == 1 and "risky_choice_framing__wording__v0" in with_note[0]
    assert "collected 2013" in with_note[0] and "multi_lab" in with_note[0]
    assert "Many Labs" not in section(document, "home")


# --- markup rules ---------------------------------------------------------------------------------

def test_no_external_request_and_no_relative_time_in_the_markup(published_site):
    _, _, document = published_site
    assert not site.EXTERNAL_LOAD.search(document)
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"https?:", document)
    assert "<script src" not in document and "<link" not in document
    visible = re.sub(r"<script\b.*?</script>|<pre class=\"scenario\">.*?</pre>", " ", document, flags=re.S)
    assert not site.RELATIVE_TIME.search(re.sub(r"<[^>]+>", " ", visible))
    bad = site.assemble({**{pid: "" for pid, _ in pages.PAGES}, "home": '<div id="status-bar"></div>',
                         "results": "<p>updated 3 days ago</p>"}, BUILD, {}, {})
    with pytest.raises(SiteError, match="relative time"):
        site.check_site(bad)
    remote = site.assemble({**{pid: "" for pid, _ in pages.PAGES}, "home": '<div id="status-bar"></div>',
                            "data": '<img src="https://example.org/x.png">'}, BUILD, {}, {})
    with pytest.raises(SiteError, match="outside itself"):
        site.check_site(remote)


def test_the_glossary_explains_every_code_the_tables_use(published_site):
    _, _, document = published_site
    assert pages.REQUIRED_TERMS <= pages.glossary_terms()
    glossary = section(document, "glossary")
    for code in set(FLAGS) | set(GAP_CAUSES) | set(OUTCOMES) | set(LANES) | set(SERIES):
        assert f'id="g-{code}"' in glossary, code


def test_the_data_page_lists_every_data_file_with_its_hash(published_site):
    paths, _, document = published_site
    data = section(document, "data")
    from measure.canonical import sha256_hex

    for name in ("stability.csv", "outcomes.csv", "coverage.csv", "open-lane/2026.jsonl", "croissant.json",
                 "archive.db"):
        assert sha256_hex((paths.public / name).read_bytes()) in data, name


# --- templates (issue 13) -----------------------------------------------------------------------

def test_record_text_is_escaped_by_the_templates(archive):
    """A model id is the provider's text, shown as it was recorded: escaped, never markup."""
    ph.populate(archive)
    hostile = '<script>alert("x")</script> & <b>bold</b>'
    ph.add_record(archive, "subject_model", date="2026-12-01", model_family="claude-sonnet", model_id=hostile,
                  previous_model_id="claude-sonnet-5", declared_by="models_endpoint")
    publish_all(archive, build_time=BUILD)
    document = (archive.public / "index.html").read_text(encoding="utf-8")
    assert "<script>alert" not in document and "<b>bold</b>" not in document
    assert html.escape(hostile) in section(document, "results")


def test_an_alarms_own_reason_is_never_shown_only_its_public_words(archive):
    ph.populate(archive)
    ph.add_record(archive, "instrument_alarm", date="2026-12-01", source="runtime_fingerprint",
                  reason="the runtime fingerprint could not run: OSError: /home/owner/models/x.gguf unreadable")
    publish_all(archive, build_time=BUILD)
    document = (archive.public / "index.html").read_text(encoding="utf-8")
    assert "x.gguf" not in document and "OSError" not in document
    assert "2026-12-01: runtime_fingerprint on 2026-12-01" in section(document, "results")


def test_the_stylesheet_and_script_are_package_files_inlined_into_the_one_document(published_site):
    _, _, document = published_site
    css, js = site.static_text("site.css"), site.static_text("site.js")
    assert css.strip() and js.strip()
    assert f"<style>\n{css}</style>" in document and f"<script>\n{js}</script>" in document
    assert "<link" not in document and "<script src" not in document


# --- the site at ten years (issue 14) ------------------------------------------------------------

def _context(paths, extra=(), **texts):
    from publish.data import csvs, panels, sources

    inputs = sources.gather(paths)
    inputs.measurements.extend(extra)
    for name, value in texts.items():
        setattr(inputs.texts, name, value)
    # The open panels' files, as the build passes them: the site links every one it shows a scenario of.
    data_files = [(name, len(data), "") for name, data in panels.files(paths, inputs.headers).items()]
    return site.SiteContext(inputs, csvs.coverage_rows(inputs.by_kind("coverage")), BUILD, data_files)


def _copies(template, count, **overrides):
    out = []
    for i in range(count):
        m = dict(template, run_id=f"{template['run_id']}-copy{i:03d}",
                 run_date=f"2025-{1 + i // 28:02d}-{1 + i % 28:02d}")
        m.update(overrides)
        out.append(m)
    return out


def test_the_results_page_lists_only_the_newest_off_curve_measurements_and_links_the_rest(published_site):
    paths, data, _ = published_site
    flagged = next(m for m in data["measurements"] if not m["on_curve"])
    ctx = _context(paths, _copies(flagged, site.FLAGGED_INLINE + 20))
    total = sum(1 for m in ctx.inputs.measurements if not m["on_curve"])
    results = site.results(ctx)
    table = re.search(r'<table class="sortable flagged-table">.*?</table>', results, re.S).group(0)
    rows = re.findall(r'<tr data-run="([^"]+)" class="flagged">', table)
    newest = sorted((m for m in ctx.inputs.measurements if not m["on_curve"]),
                    key=lambda m: (m["run_date"], m["protocol_id"]), reverse=True)[:site.FLAGGED_INLINE]
    assert rows == [m["run_id"] for m in newest]
    assert f"the {site.FLAGGED_INLINE} most recent of {total}" in results
    assert 'href="../archive/flagged_measurements"' in results and 'href="stability.csv"' in results


def test_a_results_page_listing_too_many_off_curve_measurements_is_refused():
    rows = "".join(f'<tr data-run="r{i}" class="flagged"><td>x</td></tr>' for i in range(site.FLAGGED_INLINE + 1))
    document = site.assemble({**{pid: "" for pid, _ in pages.PAGES}, "home": '<div id="status-bar"></div>',
                              "results": f"<table>{rows}</table>"}, BUILD, {}, {})
    with pytest.raises(SiteError, match="off-curve measurements inline"):
        site.check_site(document)


def test_flags_are_sentences_with_their_figures_never_formulas(published_site):
    paths, data, _ = published_site
    flagged = next(m for m in data["measurements"] if not m["on_curve"])
    reasons = {"asymmetric_missingness": "drop_asymmetry_pct_ab = 6.666666667 exceeds 1.0",
               "drop_confounded": "drop_bound_pct_ab = 180.0 exceeds 2.0"}
    odd = dict(flagged, run_id="odd-reasons", run_date="2027-01-01", flags=sorted(reasons), flag_reasons=reasons,
               u_a=0.9, u_b=0.8333333333, drop_bound_pct_ab=173.333333333, drop_asymmetry_pct_ab=6.666666667)
    table = re.search(r'<table class="sortable flagged-table">.*?</table>', site.results(_context(paths, [odd])),
                      re.S).group(0)
    row = re.search(r'<tr data-run="odd-reasons".*?</tr>', table, re.S).group(0)
    text = html.unescape(re.sub(r"<[^>]+>", "", row))
    assert "A lost 90.0% of its answers and B 83.3%, 6.7 points apart" in text
    assert "between A and B by up to 173.3 points — more than the whole 0–100 scale, so the losses alone could " \
           "explain any result" in text
    assert "exceeds" not in text and " = " not in text, "a formula where a sentence belongs"
    assert not re.search(r"\d\.\d{3,}", text), "a long number in the visible text"


def test_a_measurement_with_most_answers_unreadable_shows_no_stability_figure_and_no_interval(published_site):
    paths, data, _ = published_site
    latest = site.latest_per_curve(data["measurements"], "commercial")[0]
    poor = dict(latest, run_id="poor", run_date="2027-01-01", stability_pct=100.0, ci_low_pct=0.0, ci_high_pct=100.0,
                u_a=0.9, u_b=0.9, n_valid={"A": 3, "A_prime": 30, "B": 3, "C": 30}, on_curve=False,
                drop_bound_pct_ab=180.0, flags=["drop_confounded"])
    results = site.results(_context(paths, [poor]))
    scan = re.search(r'<table class="sortable scan-commercial">.*?</table>', results, re.S).group(0)
    row = re.search(r'<tr data-run="poor".*?</tr>', scan, re.S).group(0)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert cells[0] == ("not measurable: 6 of 60 answers of A and B readable — the losses alone could explain any "
                        "result; off the curve")
    assert "not measurable (6 of 60 answers readable)" in row
    assert "100.0" not in row and "0.0–100.0" not in row, "a figure of an unmeasurable run shown as a result"
    assert site.unreadable(dict(poor, u_a=0.5, u_b=0.5, drop_bound_pct_ab=99.0)) is None


def test_days_before_the_archive_started_are_drawn_neutral_and_the_legend_says_so(published_site):
    _, _, document = published_site
    bar = re.search(r'<svg class="bar".*?</svg>', document, re.S).group(0)
    assert re.search(r'<rect class="before"[^>]*><title>2026-09: before the archive started', bar)
    assert not re.search(r'<rect class="gap"[^>]*><title>2026-09', bar)
    assert "before the archive started (nothing was due; not a failure)" in section(document, "home")


def test_the_open_weights_series_has_a_small_chart_with_one_point_per_generation(published_site):
    paths, data, _ = published_site
    ow = next(m for m in data["measurements"] if m["series"] == "open_weights")
    later = [dict(ow, run_id="ow-gen2", run_date="2026-12-20", subject_model_id="smollm2-360m", stability_pct=61.0),
             dict(ow, run_id="ow-gen2-again", run_date="2026-12-21", subject_model_id="smollm2-360m",
                  stability_pct=64.0)]
    results = site.results(_context(paths, later))
    charts = re.findall(r'<svg class="chart small" data-chart="generations".*?</svg>', results, re.S)
    assert len(charts) == 1
    chart = charts[0]
    assert 'data-series="open_weights"' in chart and 'data-panel="entropy"' in chart
    points = re.findall(r'<circle class="pt"[^>]*><title>([^<]*)</title>', chart)
    assert points == [f"{ow['run_date']} smollm2-135m: {svg._fmt(ow['stability_pct'])}%", "2026-12-21 smollm2-360m: 64%"]
    with pytest.raises(SiteError, match="one point per generation"):
        svg.generation_chart([ow, dict(ow, run_id="again")], "t")


def test_an_open_lane_run_drawer_quotes_three_responses_with_their_decisions(published_site):
    import json

    paths, _, document = published_site
    drawer = json.loads(re.search(r'<script type="application/json" id="drawer-data">(.*?)</script>', document,
                                  re.S).group(1))
    run_id = "c-2026-12-rcf-wording"
    trials = [json.loads(line) for line in (paths.public / "open-lane" / "2026.jsonl").read_text().splitlines()]
    trials = [t for t in trials if t["run_id"] == run_id]
    responses = drawer[run_id]["responses"]
    assert [r["version"] for r in responses] == ["A", "B", "C"]
    for r in responses:
        trial = next(t for t in trials if t["trial_index"] == r["trial_index"])
        assert r["text"] == trial["response_text"] and r["decision"] == trial["token"]
        assert f"DECISION: {r['decision']}" in r["text"]
    guard_run = "c-2026-12-rcf-anchoring"
    assert "responses" not in drawer[guard_run]


def test_the_drawer_carries_the_smallest_detectable_change(published_site):
    import json

    from publish.data import changes

    paths, data, document = published_site
    drawer = json.loads(re.search(r'<script type="application/json" id="drawer-data">(.*?)</script>', document,
                                  re.S).group(1))
    by_id = {m["run_id"]: m for m in data["measurements"]}
    by_id.update(published_points(paths))
    assert drawer
    for run_id, entry in drawer.items():
        assert entry["min_detectable_change_pct"] == changes.min_detectable_change_pct(by_id[run_id])
    assert any(entry["min_detectable_change_pct"] is not None for entry in drawer.values())
    assert "min_detectable_change_pct" in site.static_text("site.js")


def test_the_biggest_move_reads_the_change_rows(published_site, monkeypatch):
    from publish.data import changes

    paths, data, _ = published_site
    rows = changes.change_rows(data["measurements"])
    last = {}
    for r in rows:
        if r["series"] == "commercial":
            last[(r["model_family"], r["protocol_id"])] = r
    called = [r for r in last.values() if r["label"] != "flat"]
    expected = max(called, key=lambda r: abs(r["delta_pct"])) if called else None
    assert rows and site.biggest_move(data["measurements"]) == expected
    invented = dict(rows[0], series="commercial", label="regressed", delta_pct=-42.5, from_stability_pct=90.0,
                    to_stability_pct=47.5, to_run_date="2026-12-02")
    monkeypatch.setattr(changes, "change_rows", lambda ms: [invented])
    results = site.results(_context(paths))
    assert (f"<code>{invented['protocol_id']}</code> in the claude-sonnet family, from 90.0% on "
            f"{invented['from_run_date']} to 47.5% on 2026-12-02 (-42.5 points): <strong>regressed</strong>") in results


def test_a_latched_instrument_alarm_shows_on_home_and_results(published_site, monkeypatch):
    paths, _, document = published_site
    status = json_status(paths)
    assert status["instrument_alarm"]["since"] == "2026-11-15"
    for page, box in (("home", "instrument-alarm-home"), ("results", "instrument-alarm-results")):
        text = section(document, page)
        assert f'id="{box}"' in text and "latched since 2026-11-15" in text
    from publish.data import status as status_file

    real = status_file.status
    monkeypatch.setattr(status_file, "status", lambda *a: {k: v for k, v in real(*a).items()
                                                          if k != "instrument_alarm"})
    ctx = _context(paths)
    assert "instrument-alarm" not in site.home(ctx) and "instrument-alarm" not in site.results(ctx)


def json_status(paths):
    import json

    return json.loads((paths.public / "status.json").read_text(encoding="utf-8"))


def test_the_design_page_shows_the_simulated_readers_when_a_protocol_has_them(published_site):
    from publish.data import sources

    paths, _, document = published_site
    published = sources.gather(paths).texts.designs
    for protocol_id, readers in published.items():
        for reader in readers:
            assert re.search(rf"<td><code class=\"pid\">{protocol_id}</code></td><td>{reader}</td>",
                             section(document, "design")), (protocol_id, reader)
    assert "design-readers" not in site.design_page(_context(paths, designs={}))
    designs = {"risky_choice_framing__wording__v0": {
        "normative": {"gap_ab_pct": 0.0, "gap_aa_prime_pct": 0.0, "gap_ac_pct": 100.0, "stability_pct": 100.0},
        "prospect_theory": {"gap_ab_pct": 73.333333, "gap_aa_prime_pct": 0.0, "gap_ac_pct": 46.7,
                            "stability_pct": 26.666667}}}
    page = site.design_page(_context(paths, designs=designs))
    table = re.search(r'<table class="design-readers">.*?</table>', page, re.S).group(0)
    assert re.search(r"<td>normative</td><td>0\.0</td><td>0\.0</td><td>100\.0</td><td>100\.0</td>", table)
    assert re.search(r"<td>prospect_theory</td><td>73\.3</td><td>0\.0</td><td>46\.7</td><td>26\.7</td>", table)


def test_the_data_page_shows_the_outsiders_verify_command_for_an_open_run(published_site):
    import json

    from publish.data import verify_command

    paths, _, document = published_site
    data = section(document, "data")
    run_ids = {json.loads(line)["run_id"] for line in
               (paths.public / "open-lane" / "2026.jsonl").read_text(encoding="utf-8").splitlines() if line}
    assert html.escape(verify_command()) in data
    assert any(html.escape(verify_command(run_id)) in data for run_id in run_ids)


# --- repeats of one prompt and the options' roles ----------------------------------------------------

def test_the_drawer_reads_the_interval_by_how_the_repeats_behaved(published_site):
    import json

    paths, data, document = published_site
    drawer = json.loads(re.search(r'<script type="application/json" id="drawer-data">(.*?)</script>', document,
                                  re.S).group(1))
    by_id = {m["run_id"]: m for m in data["measurements"]}
    by_id.update(published_points(paths))
    for run_id, entry in drawer.items():
        m = by_id[run_id]
        for name in ("replicate_agreement_pct", "ci_stratified_low_pct", "ci_stratified_high_pct", "gap_role_ab_pct"):
            assert entry[name] == m[name], name
        assert entry["repeats_reading"] == site.repeats_reading(m)
    script = site.static_text("site.js")
    assert "repeats_reading" in script and "gap_role_ab_pct" in script and "ci_stratified_low_pct" in script


def test_a_subject_whose_repeats_all_agree_is_read_as_scenario_differences_not_noise():
    agreeing = {"replicate_agreement_pct": 100.0, "n_items": 15, "ci_stratified_low_pct": 86.7,
                "ci_stratified_high_pct": 86.7}
    assert site.repeats_reading(agreeing).startswith(
        "every repeat of a prompt came back the same: the interval shows how the fifteen scenarios differ, "
        "not sampling noise")
    mixed = dict(agreeing, replicate_agreement_pct=38.3, ci_stratified_low_pct=50.0, ci_stratified_high_pct=93.3)
    reading = site.repeats_reading(mixed)
    assert "38.3% of scenario × version cells" in reading and "50.0–93.3" in reading
    assert site.repeats_reading({"replicate_agreement_pct": None}) is None


def test_the_human_result_is_read_against_the_role_gap_not_the_letter_gap(published_site):
    _, data, document = published_site
    note = next(n for n in re.findall(r'<figure class="curve">(.*?)</figure>', document, re.S)
                if 'class="human"' in n)
    latest = max((m for m in data["measurements"] if m["protocol_id"] == "risky_choice_framing__wording__v0"
                  and m["series"] == "commercial" and m["on_curve"]), key=lambda m: m["run_date"])
    text = html.unescape(re.sub(r"<[^>]+>", "", note))
    assert "gap_role_ab_pct, the same distance over the options' roles" in text
    assert f": {latest['gap_role_ab_pct']:.1f}; its gap_pct, by letter: {latest['gap_pct']:.1f}" in text
    assert "gap_role_ab_pct" in text.split("Many Labs")[1]


# --- what the screens say (issue 25) -------------------------------------------------------------

def _rows(table):
    return {run: row for run, row in re.findall(r'<tr data-run="([^"]+)"[^>]*>(.*?)</tr>', table, re.S)}


def test_every_results_table_shows_the_reading_first(published_site):
    paths, data, document = published_site
    results = section(document, "results")
    by_key = {m["run_id"]: m for m in data["measurements"]}
    by_key.update(published_points(paths))
    seen = 0
    for css in ("scan-commercial", "scan-open", "flagged-table", "comparison-table"):
        table = re.search(rf'<table class="sortable {css}">.*?</table>', results, re.S).group(0)
        assert re.search(r'<thead><tr><th scope="col" data-type="text">Reading</th>', table), css
        for key, row in _rows(table).items():
            first = re.match(r'<td data-v="[^"]*" class="reading[^"]*">(.*?)</td>', row, re.S)
            assert first and html.unescape(first.group(1)) == numbers.reading(by_key[key]), (css, key)
            seen += 1
    assert seen >= 10
    columns = re.search(r'<h2 id="stability-columns">.*?</table>', section(document, "data"), re.S).group(0)
    assert re.findall(r"<tr><td><code>([a-z_]+)</code>", columns)[:3] == ["reading", "flag_sentences", "record_type"]


def test_the_status_bar_covers_every_series_and_the_instrument(published_site):
    paths, data, document = published_site
    bar = re.search(r'<div id="status-bar".*?Published [^<]*</p>', section(document, "home"), re.S).group(0)
    parts = dict(re.findall(r'<div class="status-part" data-(?:series|part)="([a-z_]+)">(.*?)</div>', bar, re.S))
    assert list(parts) == ["commercial", "open_weights", "instrument", "comparison"]
    assert bar.count('<svg class="bar"') == 1 and '<svg class="bar"' in parts["commercial"], \
        "the coverage bar counts the commercial series only, and only once"
    assert "Latest run 2026-12-02 (claude-sonnet-5): 4 measurements, 3 on the curve, 1 off it — why: " \
           "does not read the question; " in parts["commercial"]
    assert "Latest run 2026-11-20 (smollm2-135m): 1 measurement, 1 on the curve, 0 off it" in parts["open_weights"]
    assert "Runtime fingerprint of the reference model: <strong>pass</strong> on 2026-12-02" in parts["instrument"]
    assert "Guard rotation: <strong>flat</strong> on 2026-12-02" in parts["instrument"]
    assert "latched since 2026-11-15" in parts["instrument"]
    assert "4 comparison points, the latest measured on 2026-11-25; 3 of them are simulated readers with a known " \
           "answer" in parts["comparison"]
    # a later open-weights run that is not measurable is named as such, beside the series it belongs to
    ow = next(m for m in data["measurements"] if m["series"] == "open_weights")
    poor = dict(ow, run_id="ow-poor", run_date="2026-12-02", u_a=0.9, u_b=0.9, on_curve=False,
                n_valid={"A": 3, "A_prime": 2, "B": 3, "C": 1}, flags=["drop_confounded", "not_reading"])
    bar = site.status_bar(_context(paths, [poor]))
    open_weights = re.search(r'data-series="open_weights">(.*?)</div>', bar, re.S).group(1)
    assert "Latest run 2026-12-02 (smollm2-135m): 1 measurement, 0 on the curve, 1 off it — why: not measurable: " \
           "too few readable answers. In all: 2 measurements, 1 on the curve." in open_weights
    # with more than one off the curve, each reason says how many of them it covers
    second = dict(poor, run_id="ow-poor-2", protocol_id="base_rate_neglect__wording__v0")
    bar = site.status_bar(_context(paths, [poor, second]))
    open_weights = re.search(r'data-series="open_weights">(.*?)</div>', bar, re.S).group(1)
    assert "2 measurements, 0 on the curve, 2 off it — why: not measurable: too few readable answers (2 of 2)" \
        in open_weights


def test_known_answer_points_are_labelled_with_their_interval_on_results_and_in_their_drawer(published_site):
    import json

    from panels import readers

    paths, data, document = published_site
    table = re.search(r'<table class="sortable comparison-table">.*?</table>', section(document, "results"),
                      re.S).group(0)
    drawer = json.loads(re.search(r'<script type="application/json" id="drawer-data">(.*?)</script>', document,
                                  re.S).group(1))
    rows = _rows(table)
    for name, point in data["points"].items():
        key, m = site.point_key(point), point["measurement"]
        row = rows[key]
        assert point["model_id"] == readers.simulated_model_id(name) and point["model_id"] in row
        assert f'<span class="kind known-answer">{numbers.KNOWN_ANSWER}</span>' in row
        assert f"<td data-v=\"{m['ci_low_pct']}\">{m['ci_low_pct']:.1f}–{m['ci_high_pct']:.1f}</td>" in row
        entry = drawer[key]
        assert entry["point_kind"] == numbers.KNOWN_ANSWER and entry["known_answer"] is True
        assert entry["expected"] == readers.KNOWN_ANSWER_WORDS[name]
        assert entry["reading"] == numbers.reading(m)
    outside = next(row for key, row in rows.items() if "other-model-1" in row)
    assert numbers.KNOWN_ANSWER not in outside and f'<span class="kind">{numbers.OUTSIDE_RUN}</span>' in outside
    recovered = data["points"][readers.FRAMING_SENSITIVE]["measurement"]
    assert recovered["ci_high_pct"] < 100 - recovered["null_floor_pct"], "the framing reader's effect is recovered"
    assert "known_answer" in site.static_text("site.js") and "expected" in site.static_text("site.js")


def test_a_bound_beyond_the_scale_is_said_in_words_in_the_drawer(published_site):
    _, data, _ = published_site
    latest = site.latest_per_curve(data["measurements"], "commercial")[0]
    lost = dict(latest, run_id="lost", run_date="2027-01-01", u_a=0.9, u_b=0.9, drop_bound_pct_ab=180.0,
                drop_bound_pct_aa=95.0, on_curve=False, flags=["drop_confounded"])
    entry = site.drawer_data(data["measurements"] + [lost])["lost"]
    assert entry["bounds"] == {"drop_bound_pct_ab": numbers.MORE_THAN_THE_SCALE,
                               "min_detectable_change_pct": numbers.MORE_THAN_THE_SCALE}
    assert entry["min_detectable_change_pct"] == 360.0
    assert entry["reading"].startswith("not measurable: ")
    assert "bounds.min_detectable_change_pct" in site.static_text("site.js")
