"""Partitions: months × protocols for the commercial series, generations for
the open-weights series, days for the instrument, months for coverage."""
from dagster import (
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    MonthlyPartitionsDefinition,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
)

from panels.build import all_protocol_ids

ARCHIVE_START = "2026-09-01"

# end_offset=1: the partition for the current month/day exists while it is
# running, because the commercial month and the instrument's day are measured
# *during* that period, not after it closes.
months = MonthlyPartitionsDefinition(start_date=ARCHIVE_START, end_offset=1)
days = DailyPartitionsDefinition(start_date=ARCHIVE_START, end_offset=1)
protocol_ids = StaticPartitionsDefinition(all_protocol_ids())
commercial = MultiPartitionsDefinition({"month": months, "protocol": protocol_ids})
# One partition per generation: a commercial model id whose arrival the model
# watch saw, or ``<reference model>-<sha12>`` for the reference model alone.
GENERATIONS = "generation"
generations = DynamicPartitionsDefinition(name=GENERATIONS)
