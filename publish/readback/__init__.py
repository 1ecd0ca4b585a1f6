"""Readback: published files read back, as an outsider would read them.

The face of ``publish/readback/``: :mod:`~publish.readback.files` reads the
published CSVs, JSONL and database back into records (``llmarchive verify``,
the drill).  It stands on ``publish/datasette/`` and ``publish/data/``.
"""
from publish.readback.files import (decode_beside, decode_header, decode_measurement, public_inputs, read_json_file,
                                    read_records, read_trials, single_row)

__all__ = ["decode_beside", "decode_header", "decode_measurement", "public_inputs", "read_json_file", "read_records",
           "read_trials", "single_row"]
