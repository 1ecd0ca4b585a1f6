"""The code location the drill loads: the project's own ``Definitions``, configured for the drill.

Everything the owner's ``definitions.py`` serves — every asset, check, job,
schedule and sensor, whatever the project defines when the drill runs — from
:func:`assets.definitions_builder.build_definitions`, with three settings of
the drill's (read from the environment the drill sets before it loads this):
the archive home, the fake provider's URL, and the scripted reference engine
(the webhook is read from the environment when a page is sent, as in production)
(:mod:`scripts.drill_engine`).  Two more differences, and why: a run's steps
run in the run's process (``in_process_executor``: the drill moves the clock
of the processes it starts itself, not of those Dagster's multiprocess
executor would start), where the owner's steps each run in a process of
their own; with ``--runs process`` each run is one (most runs are one step
and its checks), with ``--runs thread`` every run is in the drill's.  And the
runs' console loggers are quiet: a drill prints its table, not two years of
step logs (they are all in the instance's event log).
"""
import os

from dagster import Definitions, colored_console_logger, in_process_executor

from assets.definitions_builder import build_definitions
from assets.resources import ArchiveResource, ReferenceModelResource, SubjectResource

SCRIPTED_REFERENCE = "scripted:scripts.drill_engine:REFERENCE"


def drill_definitions() -> Definitions:
    """The project's definitions with the drill's resources, every step in process."""
    base = build_definitions(resources={
        "archive": ArchiveResource(home=os.environ["LLMARCHIVE_HOME"]),
        "reference_model": ReferenceModelResource(model=SCRIPTED_REFERENCE, workers=1),
        "subject": SubjectResource(base_url=os.environ["LLMARCHIVE_SUBJECT_BASE_URL"]),
    })
    # Quiet consoles: every event still goes to the instance's event log (what the UI and the checks read).
    quiet = {"console": colored_console_logger.configured({"log_level": "CRITICAL"})}
    return Definitions.merge(base, Definitions(executor=in_process_executor, loggers=quiet))


defs = drill_definitions()
