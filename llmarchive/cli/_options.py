"""Options shared by the daily-cycle commands (instrument, sweep, watch, bridge, coverage, …).

A module whose name starts with ``_`` is not a subcommand: the CLI's
discovery skips it.
"""
import argparse
import re
from datetime import datetime
from typing import Any, Callable, Optional

from llmarchive.cli import CommandError
from llmarchive.records import utc_today

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def add_date(parser: argparse.ArgumentParser, what: str = "the day this counts for") -> None:
    parser.add_argument("--date", help=f"YYYY-MM-DD, {what} (default: today, UTC)")


def day(args: argparse.Namespace) -> str:
    value = getattr(args, "date", None) or utc_today()
    if not _DATE.match(value):
        raise CommandError(f"--date must be YYYY-MM-DD, got {value!r}")
    try:
        datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        raise CommandError(f"--date {value!r} is not a calendar date") from None
    return value


def add_subject_models(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--subject-models", metavar="FILE",
                        help="a subject_models.yaml other than the repository's")


def subject_models(args: argparse.Namespace):
    from llmarchive.subject_models import SubjectModelsError, load_subject_models

    try:
        return load_subject_models(getattr(args, "subject_models", None))
    except SubjectModelsError as exc:
        raise CommandError(str(exc)) from None


def add_api(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", help="the provider's API (default: its public address)")
    parser.add_argument("--max-attempts", type=int, default=6, help="attempts per call before blocked_upstream")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per attempt")


def api_subject_factory(args: argparse.Namespace, provider: str) -> Callable[[str, int], Any]:
    """``factory(model_id, max_tokens)`` → a paid subject of ``provider``; errors become CommandError."""
    from llmarchive.subjects import make_subject
    from llmarchive.subjects.base import SubjectError

    def make(model: str, max_tokens: int) -> Any:
        try:
            return make_subject(provider, max_tokens=max_tokens, model=model, base_url=args.base_url,
                                max_attempts=args.max_attempts, timeout_s=args.timeout)
        except SubjectError as exc:
            raise CommandError(str(exc)) from None
    return make


def lister(args: argparse.Namespace, provider: str) -> Callable[[], list[str]]:
    """``listed()`` → the ids the provider lists now (raises on failure)."""
    from llmarchive.subjects import list_models

    def listed() -> list[str]:
        return [m["id"] for m in list_models(provider, base_url=args.base_url, max_attempts=args.max_attempts)
                if isinstance(m, dict) and "id" in m]
    return listed


def add_reference(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="reference model name (smollm2-135m, the default, or qwen2.5-1.5b)")
    parser.add_argument("--model-path", help="a GGUF file instead of the named model's default location")
    parser.add_argument("--model-sha256", help="the sha256 the --model-path file must have")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp n_threads (part of the runtime; default 1)")
    parser.add_argument("--batch", type=int, default=512, help="llama.cpp n_batch (part of the runtime; default 512)")


def reference_options(args: argparse.Namespace) -> dict:
    return {"model": args.model, "model_path": args.model_path, "model_sha256": args.model_sha256,
            "n_threads": args.threads, "n_batch": args.batch}


def optional(value: Optional[str]) -> str:
    return "-" if value is None else str(value)
