"""What a command needs beyond the light install, and the one line that says how to get it.

``pip install llm-archive`` without extras is the outsider's kit: run a
published open panel against a model (``comparison run``), turn a harness
log into a submission (``comparison import``), file it (``comparison
submit``), and check what the archive published (``panels verify``,
``verify --public``).  Everything that keeps an archive — the Dagster graph,
the Datasette server, the SQLite build, the OpenTimestamps proofs, the
embedded llama.cpp model — lives in the ``archive`` extra, and its modules
are imported where they are used, so the light install never loads them.

Two guards, both in :func:`llmarchive.cli.main`, turn a missing module into
one line naming what to install (exit 2), never a traceback:

* before the handler runs, :func:`check_installed` refuses the commands of
  :data:`COMMAND_NEEDS` — each would otherwise do something first (record an
  instrument alarm for a model it cannot load, build half a publication,
  hand itself over to ``python -m datasette``);
* any other command that reaches a missing module of :data:`ARCHIVE_MODULES`
  or :data:`OUTSIDE_MODULES` is caught where it raised (:func:`missing_line`).

A missing module neither table knows is a fault of this package and keeps
its traceback: an install hint would send the reader the wrong way.
"""
import argparse
import importlib.util
from typing import Optional, Sequence

from llmarchive.subjects import registry

DISTRIBUTION = "llm-archive"
ARCHIVE_EXTRA = "archive"

# Top-level import names the archive extra brings, each with what it does for the archive.
ARCHIVE_MODULES = {
    "dagster": "the asset graph, its schedules and sensors",
    "dagster_webserver": "the Dagster UI",
    "datasette": "the read-only SQL server over archive.db",
    "sqlite_utils": "the build of archive.db",
    "opentimestamps": "the pre-registration proofs",
    "otsclient": "stamping a manifest on the OpenTimestamps calendars",
    "llama_cpp": "the embedded reference model",
}

# Outside tools a command can use that no extra of ours installs: the install line for each.
OUTSIDE_MODULES = {
    "inspect_ai": "pip install inspect-ai",
}

# Commands checked before they start (subcommand words → modules they need).  A run's --subject adds the modules
# its row of the provider table needs (the embedded model: llama_cpp), whatever the command (:func:`needed_modules`).
COMMAND_NEEDS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("publish",): ("sqlite_utils",),
    ("serve",): ("datasette",),
    ("open-weights",): ("llama_cpp",),
    ("instrument", "fingerprint"): ("llama_cpp",),
    ("instrument", "rotation"): ("llama_cpp",),
    ("prereg", "stamp"): ("opentimestamps", "otsclient"),
    ("prereg", "check"): ("opentimestamps",),
}


def archive_install_line() -> str:
    """The pip line that adds the archive side (quoted for a shell: brackets are glob characters)."""
    return f"pip install '{DISTRIBUTION}[{ARCHIVE_EXTRA}]'"


def missing_line(exc: ModuleNotFoundError, command: str) -> Optional[str]:
    """The one line for a command that needs a module this install lacks, or None if it is not ours to name.

    ``command`` is the command as typed, options left out (``llmarchive prereg stamp``).
    """
    top = (exc.name or "").split(".")[0]
    if top in ARCHIVE_MODULES:
        return f"{command} needs the {ARCHIVE_EXTRA} extra ({ARCHIVE_MODULES[top]}): {archive_install_line()}"
    if top in OUTSIDE_MODULES:
        return f"{command} needs {top.replace('_', '-')}: {OUTSIDE_MODULES[top]}"
    return None


def needed_modules(words: tuple[str, ...], args: argparse.Namespace) -> tuple[str, ...]:
    """The modules ``llmarchive <words>`` with these options needs before it may start."""
    modules = COMMAND_NEEDS.get(words, ())
    row = registry.find(getattr(args, "subject", None) or "")
    if row is not None:
        modules += row.needs
    return modules


def check_installed(words: tuple[str, ...], args: argparse.Namespace) -> None:
    """Raise ``ModuleNotFoundError`` for the first module the command needs that is not installed.

    Looked up with ``find_spec``, not imported: checking costs nothing and
    loads nothing (llama.cpp's library alone takes ~0.2 s).
    """
    for module in needed_modules(words, args):
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)


def command_words(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[str, ...]:
    """The subcommand names in ``argv``, in the order argparse chose them (options left out).

    ``--home H prereg stamp M`` gives ``("prereg", "stamp")``.
    """
    words: list[str] = []
    current, rest = parser, list(argv)
    while True:
        choices = next((a.choices for a in current._actions if isinstance(a, argparse._SubParsersAction)), None)
        index = next((i for i, token in enumerate(rest) if choices and token in choices), None)
        if index is None:
            return tuple(words)
        words.append(rest[index])
        current, rest = choices[rest[index]], rest[index + 1:]
