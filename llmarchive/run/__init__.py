"""One run of a protocol: its plan, its calls, the resumable runner, what an alarm does to it, progress."""
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from llmarchive.run.plan import RunHalted, RunInterrupted, RunResult, RunSettings, protocol_header, schedule
from llmarchive.run.progress import LogLines, TrialProgress
from llmarchive.run.runner import Progress, preregistration, recorded_trials, run_protocol
__all__ = ["LogLines", "Progress", "RunHalted", "RunInterrupted", "RunResult", "RunSettings", "TrialProgress",
           "preregistration", "protocol_header", "recorded_trials", "run_protocol", "schedule"]
# (end of the face)
