"""Options several subcommands share, declared once so each has one spelling and one default.

``--subject``, ``--model``, ``--model-path``, ``--model-sha256``,
``--max-tokens``, ``--concurrency``, ``--run-id``, ``--date`` and ``--json``
are added only through the helpers below; ``tests/test_cli_consistency.py``
walks the parser and fails when one of them has two defaults.  A reporting
command prints one JSON document on stdout with ``--json``
(:func:`print_json`).  A command that writes a file a person names takes
``--out FILE`` and ``--force`` from :func:`add_out`, under one rule
(:func:`out_file`).

A module whose name starts with ``_`` is not a subcommand: the CLI's
discovery skips it.
"""
import argparse
import json
import re
from pathlib import Path
from typing import Any, Callable, Optional

from llmarchive.archive import ArchivePaths, OutputFile, dates, json_safe, utc_today
from llmarchive.cli import CommandError
from llmarchive.subjects import list_models, make_subject, registry
from llmarchive.succession import (SUBJECT_BASE_URL_ENV, SUBJECT_MODELS_ENV, load_subject_models,
                                   subject_base_url)

# Every option that holds a day, a month or a timestamp, by its dest: the flag as the user typed it and the one
# parser of llmarchive.archive.dates that reads it.  ``main`` checks them all before any command runs, so a bad value is
# refused before anything is created or written, whichever command it was given to.
DATE_OPTIONS: dict[str, tuple[str, Callable[[object, str], str]]] = {
    "date": ("--date", dates.parse_date),
    "run_date": ("--run-date", dates.parse_date),
    "since": ("--since", dates.parse_date),
    "month": ("--month", dates.parse_month),
    "build_time": ("--build-time", dates.parse_timestamp),
}


# Calls in flight at once for an API subject when --concurrency is not given; the reference
# model answers one call at a time.
API_CONCURRENCY = 4


def add_date(parser: argparse.ArgumentParser, what: str = "the day this counts for") -> None:
    """``--date``; ``what`` says what the day means, without its default (added here, once)."""
    parser.add_argument("--date", default=None, help=f"YYYY-MM-DD, {what} (default: today, UTC)")


def check_dates(args: argparse.Namespace) -> None:
    """Refuse a bad value of any date, month or timestamp option (:data:`DATE_OPTIONS`) before anything runs."""
    for dest, (flag, parse) in DATE_OPTIONS.items():
        value = getattr(args, dest, None)
        if value is not None:
            parse(value, flag)


def plain(docstring_paragraph: str) -> str:
    """A docstring paragraph as help text: the RST markup (````x````, ``:mod:`x```) removed, lines joined.

    argparse prints a description as it is given; a reader of ``--help`` should
    see ``build writes …``, not the source's reStructuredText.
    """
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", docstring_paragraph)
    text = re.sub(r"``([^`]+)``", r"\1", text)
    return " ".join(text.split())


def add_json(parser: argparse.ArgumentParser, what: str = "print one JSON document instead of lines") -> None:
    parser.add_argument("--json", action="store_true", default=False, help=what)


def print_json(document: Any, *, sort_keys: bool = False) -> None:
    """The one JSON document a reporting command prints with ``--json``."""
    # Values from outside (model ids, submitters' names) may hold bidi overrides or C1 controls: escaped, same JSON.
    print(json_safe(json.dumps(document, indent=1, ensure_ascii=False, sort_keys=sort_keys, default=str)))


def add_subject(parser: argparse.ArgumentParser, kinds: Optional[tuple[str, ...]] = None, *,
                required: bool = False, what: str = "the API (default: subject_models.yaml's provider)") -> None:
    """``--subject``: one of ``kinds``; by default the provider table's API rows, read when the parser is built."""
    parser.add_argument("--subject", choices=registry.api_names() if kinds is None else kinds, required=required,
                        default=None, help=what)


def add_model(parser: argparse.ArgumentParser,
              what: str = "reference model name (smollm2-135m, the default, or qwen2.5-1.5b)") -> None:
    parser.add_argument("--model", default=None, help=what)


def add_model_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model-path", default=None,
                        help="reference: a GGUF file instead of the named model's default location")
    parser.add_argument("--model-sha256", default=None, help="reference: the sha256 the --model-path file must have")


def add_max_tokens(parser: argparse.ArgumentParser,
                   what: str = "override the protocols' max_tokens for a quick trial (runs become exploratory)") -> None:
    parser.add_argument("--max-tokens", type=int, default=None, help=what)


def add_concurrency(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--concurrency", type=int, default=None,
                        help=f"API subjects: calls in flight at once (default {API_CONCURRENCY}; the reference "
                             "model runs one at a time)")


def concurrency(args: argparse.Namespace, is_async: bool = True) -> int:
    """``--concurrency``, or its default for this kind of subject."""
    given = getattr(args, "concurrency", None)
    if given is None:
        return API_CONCURRENCY if is_async else 1
    if given < 1:
        raise CommandError(f"--concurrency must be at least 1, got {given}")
    return given


def add_out(parser: argparse.ArgumentParser, what: str) -> None:
    """``--out FILE`` and ``--force``: where the command writes ``what``, under one rule
    (:class:`llmarchive.archive.outputs.OutputFile`)."""
    parser.add_argument("--out", required=True, metavar="FILE",
                        help=f"where {what} is written: a new file (an existing one only with --force), never a "
                             "file of the archive home or one the command reads")
    parser.add_argument("--force", action="store_true",
                        help="replace the file at --out when there is one (never a file of the archive home or an "
                             "input, whatever the flags)")


def out_file(args: argparse.Namespace, paths: ArchivePaths) -> OutputFile:
    """``--out`` as a file the command may write: never inside the home it works on nor ``$LLMARCHIVE_HOME``."""
    homes = tuple(dict.fromkeys((paths.home, ArchivePaths.from_env().home)))
    return OutputFile(Path(args.out), force=bool(args.force), homes=homes)


def add_run_id(parser: argparse.ArgumentParser, what: str, *, repeatable: bool = False) -> None:
    if repeatable:
        parser.add_argument("--run-id", action="append", dest="run_ids", metavar="RUN_ID", default=None, help=what)
    else:
        parser.add_argument("--run-id", default=None, help=what)


def day(args: argparse.Namespace) -> str:
    """``--date`` (checked by :func:`llmarchive.archive.dates.parse_date`), else today in UTC."""
    value = getattr(args, "date", None)
    return utc_today() if value is None else dates.parse_date(value, "--date")


def refuse_unbudgeted_with_a_budget(args: argparse.Namespace, paths, what: str) -> None:
    """``--unbudgeted`` is for an archive with no budget.json; with one, ``what`` is paid by it, so refuse the flag.

    (``llmarchive run`` is different: there the flag is honoured, a manual run charged to no pool.)
    """
    if getattr(args, "unbudgeted", False) and paths.budget_file.exists():
        raise CommandError(f"--unbudgeted applies only with no budget.json; {paths.budget_file} exists and pays "
                           f"{what} — drop the flag")


def add_subject_models(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--subject-models", metavar="FILE",
                        help=f"a subject_models.yaml other than the repository's (default: ${SUBJECT_MODELS_ENV}, "
                             "which the Dagster definitions read too)")


def subject_models(args: argparse.Namespace):
    return load_subject_models(getattr(args, "subject_models", None))


def add_api(parser: argparse.ArgumentParser, *, timeout: bool = True) -> None:
    parser.add_argument("--base-url", default=subject_base_url(),
                        help=f"the provider's API (default: ${SUBJECT_BASE_URL_ENV}, which the Dagster definitions "
                             "read too, else its public address)")
    parser.add_argument("--max-attempts", type=int, default=6, help="attempts per call before it counts as "
                                                                     "unanswered (default 6)")
    if timeout:
        parser.add_argument("--timeout", type=float, default=120.0, help="seconds per attempt (default 120)")


def api_subject_factory(args: argparse.Namespace, provider: str) -> Callable[[str, int], Any]:
    """``factory(model_id, max_tokens)`` → a paid subject of ``provider`` (a bad option raises SubjectError)."""
    def make(model: str, max_tokens: int) -> Any:
        return make_subject(provider, max_tokens=max_tokens, model=model, base_url=args.base_url,
                            max_attempts=args.max_attempts, timeout_s=args.timeout)
    return make


def lister(args: argparse.Namespace, provider: str) -> Callable[[], list[str]]:
    """``listed()`` → the ids the provider lists now (raises on failure)."""
    def listed() -> list[str]:
        return [m["id"] for m in list_models(provider, base_url=args.base_url, max_attempts=args.max_attempts)
                if isinstance(m, dict) and "id" in m]
    return listed


def add_reference(parser: argparse.ArgumentParser, *, model: bool = True, workers: bool = False) -> None:
    """The reference model's options; ``model=False`` when the command declares its own ``--model``."""
    if model:
        add_model(parser)
    add_model_file(parser)
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp n_threads (part of the runtime; default 1)")
    parser.add_argument("--batch", type=int, default=512, help="llama.cpp n_batch (part of the runtime; default 512)")
    if workers:
        parser.add_argument("--workers", type=int, default=1,
                            help="reference: identical model instances answering side by side (default 1; the "
                                 "answers are the same at any number, only faster on spare cores)")


def reference_options(args: argparse.Namespace) -> dict:
    return {"model": args.model, "model_path": args.model_path, "model_sha256": args.model_sha256,
            "n_threads": args.threads, "n_batch": args.batch}


def optional(value: Optional[str]) -> str:
    return "-" if value is None else str(value)
