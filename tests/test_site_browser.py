"""The built site in a real browser (Debian's chromium driven by playwright), served by `llmarchive serve`.

At 400 px and 1280 px: the homepage shows the status bar without sideways
scrolling, the Results tab opens, a results table sorts, a row's drawer
opens and closes, no script error occurs, and no request leaves
127.0.0.1.  Screenshots go to var/screenshots/ in the repository.  The publication is
built like the demo's: the fixture archive's runs, and the known-answer
points filed by the demo's own step (:func:`scripts.demo.known_answers_step`:
the published panel file, the reader server, ``comparison run``, ``comparison
submit``).

On a longer generated archive (many more off-curve measurements than the
page lists): ``index.html`` stays under 1 MB and the Results page under
30,000 px at 1280 px, and no Results table is clipped at 400 or 1280 px
(every column visible, or a scroll area no taller than the window).  An
open-lane run's drawer quotes three responses with the decision read from
each.
"""
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import time_machine

from panels import readers
from publish import publish_all
from scripts.demo import known_answers_step
from tests import publish_helpers as ph
from tests.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "var" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]

pytestmark = pytest.mark.slow



@pytest.fixture(scope="module")
def server(publish_template, tmp_path_factory):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs it (apt-get install -y chromium)")
    paths = ph.fresh_archive(publish_template, tmp_path_factory.mktemp("browser") / "home")
    ph.populate(paths)
    # The demo's own known-answer step: the published panel file, the reader server, `comparison run` and
    # `comparison submit` (scripts/demo.py), on the day the fixture's story is set.
    with time_machine.travel("2026-11-26T12:00:00Z", tick=True):
        points = known_answers_step(paths, "2026-11-26")
    assert [p.problems for p in points] == [[]] * len(readers.KNOWN_ANSWER_READERS), points
    publish_all(paths, build_time="2026-12-03T00:00:00Z")
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "llmarchive", "--home", str(paths.home), "serve",
                                "--port", str(port)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(base + "/-/versions.json", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                output = process.stdout.read().decode(errors="replace") if process.stdout else ""
                pytest.fail(f"llmarchive serve did not start: {output[-2000:]}")
            time.sleep(0.3)
    yield base
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield instance
        instance.close()


def test_the_server_answers_read_only(server):
    with urllib.request.urlopen(server + "/archive/latest_scan.json") as response:
        assert response.status == 200
    request = urllib.request.Request(server + "/archive/measurements", data=b"run_id=x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request)
    assert caught.value.code == 405


@pytest.mark.parametrize("width", [400, 1280])
def test_site_works_at_this_width_without_leaving_127_0_0_1(server, browser, width):
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    page.goto(server + "/site/index.html", wait_until="load")
    assert page.locator("#status-bar").is_visible()
    assert page.locator("section#results").is_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(SHOTS / f"home_{width}.png"), full_page=True)

    page.click("header nav a[data-tab=results]")
    # Tabs switch on the hashchange event, which fires after the click returns: wait for it.
    expect(page.locator("section#results")).to_be_visible()
    assert page.locator("section#home").is_hidden()
    assert page.url.endswith("#results")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(SHOTS / f"results_{width}.png"))

    header = page.locator("table.scan-commercial th", has_text="Stability %")
    header.click()
    values = page.eval_on_selector_all(
        "table.scan-commercial tbody tr", "rows => rows.map(r => parseFloat(r.cells[7].getAttribute('data-v')))")
    assert values == sorted(values) and len(values) == 4
    header.click()
    values = page.eval_on_selector_all(
        "table.scan-commercial tbody tr", "rows => rows.map(r => parseFloat(r.cells[7].getAttribute('data-v')))")
    assert values == sorted(values, reverse=True)

    row = page.locator("table.scan-commercial tbody tr").first
    protocol_id = row.locator("td:nth-child(2) code").inner_text()
    row.click()
    drawer = page.locator("#drawer")
    assert drawer.is_visible()
    assert protocol_id in drawer.locator("h2").inner_text()
    assert "Checks" in drawer.inner_text() and "panel_sha256" in drawer.inner_text()
    page.screenshot(path=str(SHOTS / f"drawer_{width}.png"))
    page.keyboard.press("Escape")
    assert drawer.is_hidden()

    page.click("header nav a[data-tab=glossary]")
    expect(page.locator("section#glossary")).to_be_visible()
    assert page.locator("section#results").is_hidden()
    context.close()

    assert errors == []
    outside = [u for u in requests if not u.startswith(server + "/")]
    assert outside == [], outside
    assert any(u.endswith("/site/index.html") for u in requests)


# --- the site at ten years: bounded, nothing clipped (issue 14) ---------------------------------

RESULTS_TABLES = "section#results table"
MAX_INDEX_BYTES = 1_000_000
MAX_RESULTS_PX = 30_000


@pytest.fixture(scope="module")
def long_site(tmp_path_factory):
    """The populated archive plus many more off-curve runs than the page lists inline (a small ten-year stand-in)."""
    from publish.site import render as site

    template = ph.template_archive(tmp_path_factory.mktemp("template-long") / "home")
    paths = ph.fresh_archive(template, tmp_path_factory.mktemp("long") / "home")
    ph.populate(paths)
    extra = site.FLAGGED_INLINE + 30
    for i, pid in enumerate(["sunk_cost_fallacy__order__v0", "base_rate_neglect__default__v0"] * (extra // 2)):
        protocol = ph.protocol(paths, pid)
        ph.write_run(paths, protocol, f"old-{i:03d}", f"2025-{1 + i % 9:02d}-{1 + i // 9:02d}",
                     plan=ph.collapsed_plan(list(protocol["item_ids"])))
    publish_all(paths, build_time="2026-12-03T00:00:00Z")
    return paths, extra


def open_results(browser, index, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(index.as_uri() + "#results", wait_until="load")
    page.wait_for_selector("section#results.active")
    return context, page, errors


def test_the_results_page_stays_bounded_on_a_long_archive(long_site, browser):
    paths, extra = long_site
    index = paths.public / "index.html"
    size = index.stat().st_size
    assert size <= MAX_INDEX_BYTES, size
    context, page, errors = open_results(browser, index, 1280)
    height = page.evaluate("document.querySelector('section#results').getBoundingClientRect().height")
    rows = page.locator("table.flagged-table tbody tr").count()
    context.close()
    assert errors == []
    assert height <= MAX_RESULTS_PX, height
    assert rows == 50
    print(f"long archive: index.html {size:,} bytes, Results {height:,.0f} px tall at 1280 px, "
          f"{rows} of {extra + 1}+ off-curve measurements inline")


CLIPPING = """() => [...document.querySelectorAll('section#results table')].map(t => {
  const box = t.closest('.scroll') || t.parentElement;
  const style = getComputedStyle(box), edge = box.getBoundingClientRect();
  const heads = [...t.querySelectorAll('thead th')].map(th => th.getBoundingClientRect().right);
  return {table: t.className, allColumnsVisible: Math.max(...heads) <= edge.right + 1 && edge.right <= innerWidth + 1,
          scrolls: box.scrollWidth > box.clientWidth && ['auto', 'scroll'].includes(style.overflowX),
          boxHeight: edge.height, viewportHeight: innerHeight, boxRight: edge.right, viewportWidth: innerWidth};
})"""


@pytest.mark.parametrize("width", [400, 1280])
def test_no_results_table_is_clipped_at_this_width(long_site, browser, width):
    paths, _ = long_site
    context, page, errors = open_results(browser, paths.public / "index.html", width)
    tables = page.evaluate(CLIPPING)
    context.close()
    assert errors == [] and len(tables) >= 3
    for t in tables:
        visible_scroll_area = t["scrolls"] and t["boxHeight"] <= t["viewportHeight"] and t["boxRight"] <= width + 1
        assert t["allColumnsVisible"] or visible_scroll_area, t


def test_an_open_lane_drawer_shows_what_the_model_wrote(server, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(server + "/site/index.html#results", wait_until="load")
    page.locator("table.scan-commercial tbody tr", has_text="risky_choice_framing__wording__v0").click()
    drawer = page.locator("#drawer")
    assert drawer.is_visible()
    assert "What the model wrote (from the open-lane file)" in drawer.inner_text()
    quoted = drawer.locator("figure.response")
    assert quoted.count() == 3
    for i, version in enumerate(["A", "B", "C"]):
        caption = quoted.nth(i).locator("figcaption").inner_text()
        decision = caption.rsplit("decision read by the grammar: ", 1)[1]
        assert caption.startswith(f"Version {version}, scenario s01")
        assert f"DECISION: {decision}" in quoted.nth(i).locator("pre").inner_text()
    assert "min_detectable_change_pct" in drawer.inner_text()
    context.close()


# --- what the screens say, and the layout (issue 25) ---------------------------------------------

ANCHORS = ["home", "results", "data", "glossary", "current-scan", "off-the-curve", "open-weights",
           "comparison-points", "succession", "stability-columns"]
UNDER_HEADER = """id => {
  const target = document.getElementById(id), header = document.querySelector('body > header');
  const box = target.matches('section.page') ? target.querySelector('h1') : target;
  const top = box.getBoundingClientRect().top, bottom = header.getBoundingClientRect().bottom;
  return {id, top, headerBottom: bottom, visible: box.getClientRects().length > 0 && top < innerHeight};
}"""
LAST_COLUMNS = """() => [...document.querySelectorAll('section.page.active table')].map(t => {
  const rows = [...t.tBodies].flatMap(b => [...b.rows]);
  const hidden = rows.map(r => r.cells[r.cells.length - 1]).filter(cell => {
    const box = cell.getBoundingClientRect();
    if (!cell.getClientRects().length || box.right > innerWidth + 1 || box.left < -1) return true;
    for (let up = cell.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX === 'visible') continue;
      const edge = up.getBoundingClientRect();
      if (box.right > edge.right + 1 || box.left < edge.left - 1 || up.scrollWidth > up.clientWidth + 1) return true;
    }
    return false;
  });
  return {table: t.className || t.closest('section').id, rows: rows.length, hidden: hidden.length};
})"""


def shoot(page, selector, name):
    """A screenshot of one element as it sits on the whole page (an element shot would stitch the sticky header in)."""
    box = page.locator(selector).first.bounding_box()
    top = box["y"] + page.evaluate("scrollY")
    page.screenshot(path=str(SHOTS / name), full_page=True,
                    clip={"x": 0, "y": top, "width": page.viewport_size["width"], "height": box["height"]})


def open_page(browser, url, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url, wait_until="load")
    return context, page, errors


@pytest.mark.parametrize("width", [400, 1280])
def test_no_anchored_heading_sits_under_the_sticky_header(server, browser, width):
    context, page, errors = open_page(browser, server + "/site/index.html", width)
    found = []
    for anchor in ANCHORS:
        page.goto("about:blank")
        page.goto(f"{server}/site/index.html#{anchor}", wait_until="load")
        page.wait_for_function("id => document.getElementById(id).closest('section.page').classList.contains('active')",
                               arg=anchor)
        found.append(page.evaluate(UNDER_HEADER, anchor))
        if anchor == "comparison-points":
            page.screenshot(path=str(SHOTS / f"anchor_comparison_points_{width}.png"))
    page.click("header nav a[data-tab=results]")             # a tab opened from the menu, not a fresh load
    page.wait_for_selector("section#results.active")
    found.append(page.evaluate(UNDER_HEADER, "results"))
    context.close()
    assert errors == []
    for f in found:
        assert f["visible"] and f["top"] >= f["headerBottom"] - 1, f


def test_no_table_hides_its_last_column_at_400_px(server, browser):
    context, page, errors = open_page(browser, server + "/site/index.html#results", 400)
    tables = []
    for tab in ("results", "data", "design"):
        page.click(f"header nav a[data-tab={tab}]")
        page.wait_for_selector(f"section#{tab}.active")
        tables += page.evaluate(LAST_COLUMNS)
    page.click("header nav a[data-tab=results]")
    page.wait_for_selector("section#results.active")
    shoot(page, "table.flagged-table", "flagged_400.png")
    shoot(page, "table.scan-commercial", "scan_400.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    context.close()
    assert errors == [] and len(tables) >= 6
    assert [t for t in tables if t["hidden"]] == [], tables


@pytest.mark.parametrize("width", [400, 1280])
def test_known_answer_points_with_their_interval_are_visible_on_results(server, browser, width):
    from publish.words.numbers import KNOWN_ANSWER

    context, page, errors = open_page(browser, server + "/site/index.html#comparison-points", width)
    known = page.locator(f"table.comparison-table tbody tr[data-kind='{KNOWN_ANSWER}']")
    assert known.count() == len(readers.KNOWN_ANSWER_READERS)
    shoot(page, "div.comparison", f"known_answers_{width}.png")
    intervals = {}
    for i in range(known.count()):
        row = known.nth(i)
        assert row.is_visible()
        label = row.locator("span.kind.known-answer")
        assert label.is_visible() and label.inner_text() == KNOWN_ANSWER
        model = row.locator("td:nth-child(4) code").inner_text()
        interval = row.locator("td:nth-child(7)")
        assert interval.is_visible()
        intervals[readers.simulated_reader(model)] = interval.inner_text().split(":")[-1].strip()
    assert set(intervals) == set(readers.KNOWN_ANSWER_READERS)
    low, high = (float(x) for x in intervals[readers.FRAMING_SENSITIVE].split("–"))
    assert 0 < low < high < 100, intervals                 # an effect recovered, with its interval
    known.filter(has_text=readers.simulated_model_id(readers.FRAMING_SENSITIVE)).click()
    drawer = page.locator("#drawer")
    assert drawer.is_visible() and KNOWN_ANSWER in drawer.inner_text()
    assert "Expected, known before any call:" in drawer.inner_text()
    assert "Reading: measurable; off the curve: exploratory" in drawer.inner_text()
    page.screenshot(path=str(SHOTS / f"known_answer_drawer_{width}.png"))
    context.close()
    assert errors == []


@pytest.mark.parametrize("width", [400, 1280])
def test_the_home_status_bar_covers_the_open_weights_series_and_the_instrument(server, browser, width):
    context, page, errors = open_page(browser, server + "/site/index.html", width)
    bar = page.locator("#status-bar")
    open_weights = bar.locator("[data-series=open_weights]")
    instrument = bar.locator("[data-part=instrument]")
    assert open_weights.is_visible() and instrument.is_visible()
    assert open_weights.inner_text().startswith("Open-weights series")
    assert "Latest run 2026-11-20 (smollm2-135m): 1 measurement, 1 on the curve, 0 off it" in open_weights.inner_text()
    assert "Runtime fingerprint of the reference model: pass on 2026-12-02" in instrument.inner_text()
    assert "Guard rotation: flat on 2026-12-02" in instrument.inner_text()
    assert bar.locator("[data-series=commercial] svg.bar").is_visible()
    assert bar.locator("svg.bar").count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shoot(page, "#status-bar", f"status_bar_{width}.png")
    context.close()
    assert errors == []
