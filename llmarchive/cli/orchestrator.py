"""``llmarchive dagster …``: Dagster's own command, with ``$DAGSTER_HOME`` made first.

``dagster asset materialize -f definitions.py …`` in a fresh home stopped
with Dagster's traceback (``$DAGSTER_HOME "…/dagster" is not a directory``):
Dagster opens its instance before it imports the definitions, which would
otherwise make the folder.  This door makes it (default
``$LLMARCHIVE_HOME/dagster``, with its ``dagster.yaml``:
:mod:`llmarchive.schedule.dagster_home`), sets ``$LLMARCHIVE_HOME`` to this
command's archive so the definitions read the same one, and then becomes
``dagster`` with the words given (the process is replaced: its exit status
and output are Dagster's).
"""
import argparse
import os
import shutil
import sys
from pathlib import Path

from llmarchive.cli import CommandError, archive
from llmarchive.schedule import ensure_dagster_home

ORDER = 90


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "dagster",
        help="run a `dagster` command on this archive, its $DAGSTER_HOME made first (a fresh home works)",
        description="Make $DAGSTER_HOME (default $LLMARCHIVE_HOME/dagster, with its dagster.yaml), point the "
                    "definitions at this archive, then run Dagster's own command with the words given, e.g. "
                    "`llmarchive dagster asset materialize -f definitions.py --select coverage --partition "
                    "2026-11-01`.")
    p.add_argument("words", nargs=argparse.REMAINDER, help="the dagster command and its options")
    p.set_defaults(func=run)


def _dagster() -> str:
    beside = Path(sys.executable).with_name("dagster")     # the one installed with this interpreter first
    found = str(beside) if beside.exists() else shutil.which("dagster")
    if not found:
        raise CommandError("the `dagster` command is not installed beside llmarchive (run `make install`)")
    return found


def run(args: argparse.Namespace) -> int:
    if not args.words:
        raise CommandError("name the dagster command to run, e.g. `llmarchive dagster asset list -f definitions.py`")
    paths = archive(args).ensure()
    ensure_dagster_home(paths)
    os.environ["LLMARCHIVE_HOME"] = str(paths.home)
    command = _dagster()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command, [command, *args.words])
    return 0    # not reached: the process is now dagster
