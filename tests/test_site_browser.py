"""The built site in a real browser (Debian's chromium driven by playwright), served by `llmarchive serve`.

At 400 px and 1280 px: the homepage shows the status bar without sideways
scrolling, the Results tab opens, a results table sorts, a row's drawer
opens and closes, no script error occurs, and no request leaves
127.0.0.1.  Screenshots go to var/screenshots/ in the repository.

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

from publish import publish_all
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
        "table.scan-commercial tbody tr", "rows => rows.map(r => parseFloat(r.cells[6].getAttribute('data-v')))")
    assert values == sorted(values) and len(values) == 4
    header.click()
    values = page.eval_on_selector_all(
        "table.scan-commercial tbody tr", "rows => rows.map(r => parseFloat(r.cells[6].getAttribute('data-v')))")
    assert values == sorted(values, reverse=True)

    row = page.locator("table.scan-commercial tbody tr").first
    protocol_id = row.locator("td").first.inner_text()
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
    from publish import site

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
