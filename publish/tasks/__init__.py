"""Tasks: the outside routes' task files, published beside each open panel.

The face of ``publish/tasks/``: :mod:`~publish.tasks.inspect_task` (an Inspect AI
task, ``panels/<protocol_id>.py``) and :mod:`~publish.tasks.lmeval_task` (an
lm-evaluation-harness task, ``panels/<protocol_id>.lm_eval.yaml``).  Each module's
own text is what is published, so nothing here is edited for the tree's sake.
"""
from publish.tasks import inspect_task, lmeval_task

__all__ = ["inspect_task", "lmeval_task"]
