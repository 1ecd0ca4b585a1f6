"""The ``llmarchive`` command: one CLI, one subcommand module per area.

Every module in this package that defines ``register(subparsers)`` adds its
subcommands; ``main`` discovers them, so adding an area never means editing
a shared list.  A subcommand's handler returns an exit status: 0 success,
1 a check that failed, 2 bad input or state: any :class:`measure.errors.ArchiveError`
reaches ``main``, which prints its one-line message on stderr (a path of the
wrong kind — a file where a folder belongs — gets one line too, never a
traceback).  Every date, month and timestamp option is checked
(:data:`llmarchive.cli._options.DATE_OPTIONS`) before the handler runs.
On a light install (``pip install llm-archive`` alone) a command that needs
the ``archive`` extra prints one line naming it and exits 2, before it
starts or where it reached the missing module (:mod:`llmarchive.cli._extras`).
"""
import argparse
import importlib
import pkgutil
import sys
from typing import Optional, Sequence

from llmarchive import __version__
from llmarchive.archive import ArchivePaths, terminal
from llmarchive.cli._extras import check_installed, command_words, missing_line
from measure.errors import ArchiveError


class CommandError(ArchiveError):
    """Bad input a command itself detects (a missing flag, a bad combination)."""


def archive(args: argparse.Namespace) -> ArchivePaths:
    """The archive home a command works on (``--home``, else the environment).

    A home that exists and is not a folder (``--home README.md``) is refused
    here, before a command reads or creates anything inside it.
    """
    paths = ArchivePaths.from_env(getattr(args, "home", None))
    if paths.home.exists() and not paths.home.is_dir():
        raise CommandError(f"the archive home {paths.home} is not a folder (--home or $LLMARCHIVE_HOME)")
    return paths


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llmarchive",
        description=(
            "LLM-Archive: measure whether a language model keeps its decision when a question "
            "is reworded without changing its meaning, and publish the dated record. "
            "State lives under $LLMARCHIVE_HOME (default ./var)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"llmarchive {__version__}")
    parser.add_argument("--home", help="archive home (overrides $LLMARCHIVE_HOME; default ./var)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "register"):
            modules.append((getattr(module, "ORDER", 50), info.name, module))
    for _, _, module in sorted(modules, key=lambda m: (m[0], m[1])):
        module.register(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    # Imported here, not above: _options imports CommandError from this module (a cycle at import time).
    from llmarchive.cli._options import check_dates

    words = command_words(parser, sys.argv[1:] if argv is None else argv)
    try:
        check_installed(words, args)    # a light install is told what to add before the command does anything
        check_dates(args)       # a bad date, month or timestamp is refused before any command runs
        return int(args.func(args) or 0)
    except ArchiveError as exc:
        # A message may quote outside text (a submitted id, a provider's model name): escaped, lines kept.
        print(terminal(f"error: {exc}", keep_newlines=True), file=sys.stderr)
        return 2
    except (IsADirectoryError, NotADirectoryError, FileExistsError, PermissionError) as exc:
        # A path of the wrong kind or out of reach that no check named first: still one line, not a traceback.
        where = f": {exc.filename}" if exc.filename else ""
        print(terminal(f"error: {exc.strerror or type(exc).__name__}{where}"), file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        # The light install (no extras) lacks the archive side: a command that reaches it says what to install.
        line = missing_line(exc, " ".join((parser.prog,) + words))
        if line is None:
            raise
        print(line, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``llmarchive … | head``); nothing left to say.
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
