"""The Dagster entry point: ``dagster dev -f definitions.py``.

Gathers the asset graph of :mod:`assets` with its resources, sensors and
schedules.  Resources read their settings from the environment, so the same
file serves a developer's laptop, CI and a deployment:

* ``LLMARCHIVE_HOME`` — the archive (default ``./var``);
* ``ANTHROPIC_API_KEY`` — the key, read only by the subject at call time.
  The paid schedules and the model watch are created STOPPED with or
  without it: paid work starts only when the owner turns it on in the UI;
* ``LLMARCHIVE_SUBJECT_MODELS`` — a ``subject_models.yaml`` other than the
  repository's (which names the tracked family and its active model);
  ``LLMARCHIVE_SUBJECT_BASE_URL`` — another endpoint for the provider (a
  proxy, or the local fake provider in tests); ``LLMARCHIVE_WEBHOOK_URL`` —
  where the owner's pages are POSTed (read when a page is sent, so the UI
  never shows it; optional);
* ``LLMARCHIVE_REFERENCE_MODEL`` / ``LLMARCHIVE_REFERENCE_MODEL_PATH`` /
  ``LLMARCHIVE_REFERENCE_MODEL_SHA256`` — the reference model (default: the
  embedded SmolLM2); ``LLMARCHIVE_REFERENCE_WORKERS`` — instances answering
  side by side (default 2).
"""
from assets.definitions_builder import build_definitions

defs = build_definitions()
