"""Data: the archive's records read once, and every published data file written from them.

The face of ``publish/data/``: the inputs (:mod:`~publish.data.sources`), the
CSVs, the SQLite database, Croissant, the open lane's JSONL, the open panels,
the protocol texts, the human gap, the changes between runs and the status
file, and the one table of the published files (:mod:`~publish.data.files`).  It stands on ``publish/words/`` and ``publish/tasks/``.
"""
from publish.data import (changes, croissant, csvs, database, files, human_gap, open_lane, panels, protocols,
                          sources, status)
from publish.data.open_lane import verify_command
from publish.data.sources import Inputs, gather

__all__ = ["changes", "croissant", "csvs", "database", "files", "human_gap", "open_lane", "panels", "protocols", "sources",
           "status", "Inputs", "gather", "verify_command"]
