"""The built site in a real browser (Debian's chromium driven by playwright), served by `llmarchive serve`.

At 400 px and 1280 px: the homepage shows the status bar without sideways
scrolling, the Results tab opens, a results table sorts, a row's drawer
opens and closes, no script error occurs, and no request leaves
127.0.0.1.  Screenshots go to var/screenshots/ in the repository.
"""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from publish import publish_all
from tests import publish_helpers as ph

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "var" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs it (apt-get install -y chromium)")
    template = ph.template_archive(tmp_path_factory.mktemp("template") / "home")
    paths = ph.fresh_archive(template, tmp_path_factory.mktemp("browser") / "home")
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
