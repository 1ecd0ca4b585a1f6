"""Assembling the site into one document, and the rules re-checked on the finished markup.

:func:`assemble` refuses a page set other than method §11's closed list or a
homepage without its coverage/status bar, and inlines the stylesheet, the
script and the drawers' data; :func:`check_site` then re-reads the finished
markup for every rule, so no later edit of a template can slip past them
(each refusal a :class:`SiteError`).  Imported through :mod:`publish.site.render`,
which re-exports these names.
"""
import json
import re

from markupsafe import Markup

from publish.site import pages
from publish.errors import SiteError
from publish.site.jinja import render_template, static_text

RELATIVE_TIME = re.compile(r"\b(\d+\s+(seconds?|minutes?|hours?|days?|weeks?|months?|years?)\s+ago|just now|"
                           r"yesterday|today|tomorrow|last (week|month|year)|this (week|month|year)|"
                           r"timeago|fromNow)\b", re.I)
EXTERNAL_LOAD = re.compile(r"""(<(script|img|iframe|link|source|video|audio|embed|object)\b[^>]*\b(src|href|data)\s*=\s*["']?(https?:)?//)"""
                           r"""|(url\(\s*["']?(https?:)?//)|(@import)|(\bfetch\s*\()|(XMLHttpRequest)""", re.I)
FLAGGED_INLINE = 50
"""Off-curve measurements listed inline, newest first; the rest are one click away (Datasette, stability.csv)."""


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
    for example in re.findall(r'<details class="open-example" data-protocol="[^"]*">.*?</details>', document, re.S):
        protocol_id = re.match(r'<details class="open-example" data-protocol="([^"]*)"', example).group(1)
        if f'href="panels/{protocol_id}.json"' not in example:
            raise SiteError(f"{protocol_id}: its shown scenario does not link the full panel file "
                            f"panels/{protocol_id}.json")
    comparison = re.search(r'<div class="comparison">.*?</div>', document, re.S)
    if not comparison or 'id="no-one-may-conclude"' not in comparison.group(0):
        raise SiteError("the comparison points are not beside the 'what nobody may conclude' sentence")
