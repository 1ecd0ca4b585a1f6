"""Comparison points: the intake of outside runs, runs made with the outsider's route, simulated readers."""
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from llmarchive.comparison.intake import submit
from llmarchive.comparison.names import KNOWN_ANSWER_SOURCE
from llmarchive.comparison.reader_server import ReaderServer
from llmarchive.comparison.run import load_panel, run_comparison
__all__ = ["KNOWN_ANSWER_SOURCE", "ReaderServer", "load_panel", "run_comparison", "submit"]
# (end of the face)
