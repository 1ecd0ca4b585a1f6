"""The Dagster asset graph of LLM-Archive.

Assets are thin: each calls the library (``panels``, ``llmarchive``,
``publish``) and reports what a maintainer would look at in the UI.  All
state goes through :class:`assets.resources.ArchiveResource`, never module
globals, so the graph runs unchanged under the multiprocess, Celery or
Kubernetes executors.  ``definitions.py`` at the repository root gathers
everything into one ``Definitions``.
"""
