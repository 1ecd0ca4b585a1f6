"""Data: the archive's records read once, and every published data file written from them.

The face of ``publish/data/``: the inputs (:mod:`~publish.data.sources`), the
CSVs, the SQLite database, Croissant, the open lane's JSONL, the open panels,
the protocol texts, the human gap, the changes between runs, the tables of the
archive's own records the site shows too (:mod:`~publish.data.record_tables`), the
status file, and the one table of the published files (:mod:`~publish.data.files`).
It stands on ``publish/words/`` and ``publish/tasks/``.
"""
from publish.data import (changes, croissant, csvs, database, files, human_gap, open_lane, panels, protocols,
                          sources, status)
from publish.data.open_lane import verify_command
from publish.data.sources import Inputs, gather

__all__ = ["changes", "croissant", "csvs", "database", "files", "human_gap", "open_lane", "panels", "protocols", "sources",
           "status", "Inputs", "gather", "verify_command"]
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from publish.data.changes import modal_cells
from publish.data.database import DESIGN_COLUMN_SPEC, PROTOCOL_COLUMN_SPEC
from publish.data.record_tables import comparison_rows, succession_rows
from publish.data.panels import PANELS_DIR, file_name
from publish.data.protocols import ProtocolText, list_headers
from publish.data.sources import CheckedRead, instrument_checks
from publish.data.status import alarm_words, coverage_summary, instrument_jobs, instrument_summary
__all__ += ["CheckedRead", "DESIGN_COLUMN_SPEC", "PANELS_DIR", "PROTOCOL_COLUMN_SPEC", "ProtocolText", "alarm_words",
            "comparison_rows", "coverage_summary", "file_name", "instrument_checks", "instrument_jobs",
            "instrument_summary", "list_headers", "modal_cells", "succession_rows"]
# (end of the face)
