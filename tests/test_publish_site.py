"""The site generator's rules: status bar, entropy beside stability, one family and one series per curve,
flagged measurements listed not drawn, comparison points with their sentence, only the first open scenario."""
import html
import re

import pytest

from measure.schema import FLAGS, GAP_CAUSES, LANES, OUTCOMES, SERIES, VERSIONS
from publish import SiteError, pages, publish_all, site, svg, wording
from publish.errors import CurveError
from tests import publish_helpers as ph

BUILD = "2026-12-03T00:00:00Z"


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return ph.template_archive(tmp_path_factory.mktemp("template") / "home")


@pytest.fixture(scope="module")
def built(template, tmp_path_factory):
    paths = ph.fresh_archive(template, tmp_path_factory.mktemp("site") / "home")
    data = ph.populate(paths)
    publish_all(paths, build_time=BUILD)
    return paths, data, (paths.public / "index.html").read_text(encoding="utf-8")


@pytest.fixture
def archive(template, tmp_path):
    return ph.fresh_archive(template, tmp_path / "home")


def section(document, page_id):
    return re.search(rf'<section id="{page_id}" class="page".*?</section>', document, re.S).group(0)


def point(**overrides):
    base = {"run_id": "r", "run_date": "2026-10-02", "protocol_id": "p__wording__v0", "series": "commercial",
            "model_family": "claude-sonnet", "on_curve": True, "flags": [], "stability_pct": 80.0,
            "ci_low_pct": 70.0, "ci_high_pct": 90.0, "entropy_a": 0.9, "entropy_b": 0.8, "null_floor_pct": 9.0}
    base.update(overrides)
    return base


# --- the homepage and the page list ---------------------------------------------------------------

def test_the_homepage_carries_the_coverage_status_bar(built):
    _, _, document = built
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


def test_the_pages_are_exactly_the_closed_list_in_one_document(built):
    _, _, document = built
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


def test_every_published_chart_has_entropy_and_one_family_and_series(built):
    _, _, document = built
    charts = re.findall(r'<svg class="chart".*?</svg>', document, re.S)
    assert len(charts) == 4
    for chart in charts:
        assert 'data-panel="entropy"' in chart
        assert 'data-series="commercial"' in chart and 'data-model-family="claude-sonnet"' in chart


def test_flagged_measurements_appear_with_their_reasons_and_not_on_a_chart(built):
    paths, data, document = built
    flagged = [m for m in data["measurements"] if not m["on_curve"]]
    assert flagged
    results = section(document, "results")
    table = re.search(r'<table class="sortable flagged-table">.*?</table>', results, re.S).group(0)
    for m in flagged:
        assert f'data-run="{m["run_id"]}"' in table
        for flag in m["flags"]:
            assert flag in table
            assert html.escape(m["flag_reasons"][flag]) in table
    for chart in re.findall(r'<svg class="chart".*?</svg>', document, re.S):
        protocol_id = re.search(r'aria-label="([^ ]+) ', chart).group(1)
        on_curve = [m for m in data["measurements"]
                    if m["protocol_id"] == protocol_id and m["series"] == "commercial" and m["on_curve"]]
        drawn = re.findall(r'<circle class="pt"[^>]*><title>([0-9-]+):', chart)
        assert sorted(drawn) == sorted(m["run_date"] for m in on_curve)
        assert not {m["run_date"] for m in flagged if m["protocol_id"] == protocol_id} & set(drawn)


def test_the_open_weights_series_is_a_separate_table_never_a_line(built):
    _, _, document = built
    results = section(document, "results")
    assert '<table class="sortable scan-open">' in results
    assert "smollm2" not in "".join(re.findall(r'<svg class="chart".*?</svg>', document, re.S))


# --- comparison points, examples, human results ---------------------------------------------------

def test_comparison_points_sit_in_their_own_table_beside_the_sentence(built):
    _, _, document = built
    block = re.search(r'<div class="comparison">.*?</table>', document, re.S).group(0)
    assert html.escape(wording.NO_ONE_MAY_CONCLUDE) in block
    assert "other-model-1" in block and "2026-11-10" in block
    assert "other-model-1" not in "".join(re.findall(r'<svg class="chart".*?</svg>', document, re.S))
    assert "other-model-1" not in re.search(r'<table class="sortable scan-commercial">.*?</table>', document,
                                            re.S).group(0)


def test_only_the_first_scenario_of_an_open_protocol_is_shown(built):
    paths, _, document = built
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


def test_more_than_the_first_scenario_is_refused(built):
    paths, _, _ = built
    from publish import sources

    inputs = sources.gather(paths)
    pid = "risky_choice_framing__wording__v0"
    inputs.texts.examples[pid] = [t for t in inputs.texts.public if t.protocol_id == pid][:8]
    with pytest.raises(SiteError, match="only the first scenario"):
        site.render(site.SiteContext(inputs, [], BUILD, []))


def test_the_human_result_sits_beside_its_comparable_protocol_only(built):
    _, _, document = built
    notes = re.findall(r'<figure class="curve">(.*?)</figure>', document, re.S)
    with_note = [n for n in notes if 'class="human"' in n]
    assert len(with_note) == 1 and "risky_choice_framing__wording__v0" in with_note[0]
    assert "collected 2013" in with_note[0] and "multi_lab" in with_note[0]
    assert "Many Labs" not in section(document, "home")


# --- markup rules ---------------------------------------------------------------------------------

def test_no_external_request_and_no_relative_time_in_the_markup(built):
    _, _, document = built
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


def test_the_glossary_explains_every_code_the_tables_use(built):
    _, _, document = built
    assert pages.REQUIRED_TERMS <= pages.glossary_terms()
    glossary = section(document, "glossary")
    for code in set(FLAGS) | set(GAP_CAUSES) | set(OUTCOMES) | set(LANES) | set(SERIES):
        assert f'id="g-{code}"' in glossary, code


def test_the_data_page_lists_every_data_file_with_its_hash(built):
    paths, _, document = built
    data = section(document, "data")
    from measure.canonical import sha256_hex

    for name in ("stability.csv", "outcomes.csv", "coverage.csv", "open-lane/2026.jsonl", "croissant.json",
                 "archive.db"):
        assert sha256_hex((paths.public / name).read_bytes()) in data, name
