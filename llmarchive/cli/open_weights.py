"""``llmarchive open-weights``: the open protocols on the reference model for one generation."""
import argparse
import sys

from llmarchive.schedule import open_weights as ow
from llmarchive.cli import archive
from llmarchive.cli._options import add_max_tokens, add_reference
from llmarchive.instrument import suspect_value
from llmarchive.run import TrialProgress
from llmarchive.subjects import make_subject

ORDER = 42


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "open-weights",
        help="run every admitted open protocol on the reference model for one generation",
        description=(
            "The open_weights series (method §4): every admitted open protocol of a protocol series, run on "
            "the reference model, once per generation. GENERATION names it — the commercial model id that "
            "triggered it, or omit it to use <model>-<sha12> of the reference model. Resumable: the run ids "
            "are ow_<generation>_<protocol_id>. Free, so neither budget nor pre-registration gate it."
        ),
    )
    p.add_argument("generation", nargs="?", help="generation id (default: <reference model>-<sha12>)")
    p.add_argument("--series", default="v0", help="protocol series (default v0)")
    p.add_argument("--protocol", action="append", dest="protocols", help="only this protocol (repeatable)")
    add_reference(p, workers=True)
    add_max_tokens(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar on stderr (there is none anyway when stderr is not a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    paths = archive(args).ensure()

    def subject(max_tokens: int):
        return make_subject("reference", max_tokens=max_tokens, model=args.model, model_path=args.model_path,
                            model_sha256=args.model_sha256, n_threads=args.threads, n_batch=args.batch,
                            workers=args.workers)

    subjects = ow.SubjectCache(subject)
    generation = args.generation
    if generation is None:
        first = subjects(args.max_tokens or 256)
        generation = ow.generation_id_for_model(first.name, first.model_sha256)
    # A bar on a terminal (done/total, rate, time left); nothing when stderr is not one.
    with TrialProgress(enabled=not args.quiet) as progress:
        result = ow.run_generation(paths, generation, subjects, protocol_series=args.series,
                                   only=args.protocols,
                                   instrument_suspect=lambda day, run_id: suspect_value(paths, day, run_id),
                                   max_tokens=args.max_tokens, progress=progress if progress.active else None)
    for r in result.runs:
        m = r.measurement
        summary = (f"stability_pct {m['stability_pct']}, flags {', '.join(m['flags']) or 'none'}"
                   if m else "not complete")
        print(f"{r.run['run_id']}: {r.run['status']} ({r.called} called now); {summary}")
    print(f"generation {generation}: {'complete' if result.complete else 'incomplete'}", file=sys.stderr)
    return 0 if result.complete else 1
