"""The site's templates: the Jinja2 environment, its filters, and the formatting every page shares.

The markup lives in ``publish/site/templates/`` (autoescaped: every value is
escaped unless it is markup this package made), the stylesheet and the small
vanilla script in ``publish/site/static/``, inlined at build time by
:mod:`publish.site.rules`.  The filters here are the one place a figure is
rounded or an identifier made wrappable, so every table writes them the same
way; :func:`unreadable` and :func:`repeats_reading` say what a measurement's
figure can be read as, for the tables and the drawers alike.  Imported
through :mod:`publish.site.render`, which re-exports these names.
"""
import re
from functools import lru_cache
from html import escape
from importlib.resources import files
from typing import Optional

import jinja2
from markupsafe import Markup

from publish.words import numbers, wording
from publish.datasette import DATABASE

VERSION_LABEL = {"A": "A", "A_prime": "A′", "B": "B", "C": "C"}
UNREADABLE_SHARE = numbers.UNREADABLE_SHARE



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


def code_name(name) -> Markup:
    """A flag or field name that may wrap after each ``_`` (never inside a word), as ``<code>``."""
    text = escape("" if name is None else str(name)).replace("_", "_<wbr>")
    return Markup(f'<code class="name">{text}</code>')


def unreadable(m: dict) -> Optional[dict]:
    """``{"readable": n, "total": N}`` for A and B together when too few answers were readable, else ``None``.

    With more than half of A's or of B's answers unreadable, the stability
    figure is dominated by which answers happened to be readable (its loss
    bound is as wide as the scale), so the site shows the count instead:
    :func:`publish.words.numbers.readable`, the rule every published reading uses.
    """
    return numbers.readable(m)


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
    and the sealed-text check compare against that form, so the escaping is done
    here and autoescape then passes the result through unchanged.
    """
    if value is None or isinstance(value, jinja2.Undefined):
        return Markup("")
    if hasattr(value, "__html__"):
        return value
    return Markup(escape(str(value)))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("publish.site", "templates"), autoescape=True,
                             finalize=_finalize, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(pct=pct, unit=unit, sortv=_sort_value, reason=rounded_reason, breakable=breakable,
                       code_name=code_name)
    env.globals.update(wording=wording, VERSION_LABEL=VERSION_LABEL, unreadable=unreadable,
                       reading=numbers.reading, flag_sentences=numbers.flag_sentences,
                       KNOWN_ANSWER=numbers.KNOWN_ANSWER, datasette=f"../{DATABASE}")
    return env


def render_template(name: str, **values) -> str:
    """Render one template; the caller wraps the result in ``Markup`` where it is placed inside another."""
    return str(environment().get_template(name).render(**values))


def static_text(name: str) -> str:
    """A stylesheet or script from ``publish/site/static/``, to be inlined (the page loads nothing else)."""
    return (files("publish.site") / "static" / name).read_text(encoding="utf-8")
