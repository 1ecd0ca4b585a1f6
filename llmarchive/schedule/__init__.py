"""The jobs of the cycle: paid runs, the sweep, bridges, the model watch, open weights, lease, coverage.

Beside them, the morning status (:mod:`~llmarchive.schedule.status`), which only reads what they left.
"""
