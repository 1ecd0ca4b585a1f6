"""Site: the static site — its pages, charts, templates and rules.

The face of ``publish/site/``: :mod:`~publish.site.render` builds the pages
(:func:`render`), :mod:`~publish.site.home` the home page's status,
:mod:`~publish.site.rules` what a page may hold, :mod:`~publish.site.jinja` the
Jinja2 environment over ``templates/`` and ``static/``, :mod:`~publish.site.svg`
the charts, :mod:`~publish.site.pages` the prose pages.  It stands on
``publish/datasette/`` and ``publish/data/``.
"""
from publish.site import home, jinja, pages, render, rules, svg

__all__ = ["home", "jinja", "pages", "render", "rules", "svg"]
