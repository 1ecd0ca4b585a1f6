"""The Dagster entry point: ``dagster dev -f definitions.py``.

Gathers the asset graph of :mod:`assets` with its resources, sensors and
schedules.  Resources read their settings from the environment, so the same
file serves a developer's laptop, CI and a deployment:

* ``LLMARCHIVE_HOME`` — the archive (default ``./var``);
* ``LLMARCHIVE_SUBJECT_MODEL`` / ``LLMARCHIVE_SUBJECT_BASE_URL`` — the tracked
  commercial model and, optionally, another endpoint (a proxy, or the local
  fake provider in tests); ``ANTHROPIC_API_KEY`` — the key, read only by the
  subject at call time;
* ``LLMARCHIVE_REFERENCE_MODEL`` / ``LLMARCHIVE_REFERENCE_MODEL_PATH`` /
  ``LLMARCHIVE_REFERENCE_MODEL_SHA256`` — the reference model (default: the
  embedded SmolLM2).
"""
from assets.definitions_builder import build_definitions

defs = build_definitions()
