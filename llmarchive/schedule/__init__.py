"""The jobs of the cycle: paid runs, the sweep, bridges, the model watch, open weights, lease, coverage.

Beside them, the morning status (:mod:`~llmarchive.schedule.status`), which only reads what they left.
"""
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from llmarchive.schedule.bridge import bridge_runs, bridges, choose_bridge, run_bridge, start_date
from llmarchive.schedule.coverage import record_month, row_key
from llmarchive.schedule.coverage_conditions import job_series
from llmarchive.schedule.coverage_wording import code_word, day_of, public_detail
from llmarchive.schedule.dagster_home import DAGSTER_YAML, ensure_dagster_home
from llmarchive.schedule.month_sweep import sweep_month
from llmarchive.schedule.no_backfill import NotThisMonth, partition_day, refuse_backfill, sweep_scope
from llmarchive.schedule.status import bridges_part, morning_status, reviews_part
from llmarchive.schedule.webhook import WEBHOOK_ENV, webhook_from
__all__ = ["DAGSTER_YAML", "NotThisMonth", "WEBHOOK_ENV", "bridge_runs", "bridges", "bridges_part", "choose_bridge", "code_word",
           "day_of", "ensure_dagster_home", "job_series", "morning_status", "partition_day", "public_detail", "record_month",
           "refuse_backfill", "reviews_part", "row_key", "run_bridge", "start_date", "sweep_month", "sweep_scope",
           "webhook_from"]
# (end of the face)
