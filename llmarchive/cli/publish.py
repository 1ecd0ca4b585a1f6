"""``llmarchive publish``, ``llmarchive release`` and ``llmarchive serve``.

``publish`` regenerates everything under ``$LLMARCHIVE_HOME/public/`` from
the records (see :mod:`publish`); ``release`` assembles a release folder and
prints what stays a human decision; ``serve`` runs Datasette on the public
database, read-only, with the explicit time limit and row cap of
:data:`publish.datasette.meta.SETTINGS`.
"""
import argparse
import os
import shlex
import sys
from pathlib import Path

from llmarchive.cli import CommandError, archive
from llmarchive.cli._options import add_date, day

ORDER = 90


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "publish",
        help="regenerate the public files (CSVs, Croissant, open lane, database, site, status) from the records",
        description=(
            "Regenerate every file under $LLMARCHIVE_HOME/public/ from the archive's records: stability.csv, "
            "outcomes.csv, coverage.csv, changes.csv, open-lane/<year>.jsonl, croissant.json, archive.db, "
            "index.html, status.json and render_manifest.json. The blocking checks run first (hash chains, every "
            "complete run's trial log as its record describes it, no flagged measurement on the curve, no "
            "period that has ended without output or a cause; the same rule as the Dagster asset), then the "
            "sealed-text check and the value check (no euro amount or budget figure, no path of this machine, "
            "no credential) read every byte; a refused build leaves public/ as it was."
        ),
    )
    p.add_argument("--build-time", help="YYYY-MM-DDTHH:MM:SSZ, the build time to record (UTC; default: now)")
    p.add_argument("--metadata", metavar="PATH",
                   help="instead of publishing, write the generated Datasette metadata to PATH (metadata.yml)")
    p.set_defaults(func=run_publish)

    r = subparsers.add_parser(
        "release",
        help="assemble a release folder (generated files, public code, spec) and print the human checklist",
        description=(
            "Rebuild the publication and assemble release VERSION into a folder: the generated files, the public "
            "code, CITATION.cff and .zenodo.json for this version, and a copy of the specification. Never the "
            "private folder, guard or sealed wording, budget data or git history. Prints what stays a human "
            "decision."
        ),
    )
    r.add_argument("version", help="release version, MAJOR.MINOR.PATCH")
    r.add_argument("--out", help="release folder to create (default: $LLMARCHIVE_HOME/releases/llm-archive-VERSION)")
    r.add_argument("--spec", metavar="FILE",
                   help="the specification to ship as SPEC.md (default: SPEC.md at the repository root)")
    add_date(r, "the release date")
    r.set_defaults(func=run_release)

    s = subparsers.add_parser(
        "serve",
        help="serve the public database read-only with Datasette on 127.0.0.1",
        description=(
            "Run `datasette serve -i public/archive.db --metadata metadata.yml` from the archive home on "
            "127.0.0.1, with an explicit SQL time limit and row cap and the archive's plugins (one request "
            "bounded in time and memory, no path of this machine shown) and templates; the published site is "
            "served under /site/index.html. Run `llmarchive publish` first."
        ),
    )
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8001, help="port (default 8001)")
    s.add_argument("--print-command", action="store_true", help="print the datasette command instead of running it")
    s.set_defaults(func=run_serve)


def run_publish(args: argparse.Namespace) -> int:
    # publish is imported in the handlers, not above: it loads sqlite_utils and pandas (~0.4 s), and the CLI
    # imports every subcommand module at start, so every command would pay for it.  Not a cycle.
    from publish import publish_all
    from publish.datasette import meta as datasette_meta

    if args.metadata:
        target = Path(args.metadata)
        if target.is_dir():
            raise CommandError(f"--metadata {target} is a folder: give the file to write "
                               f"(e.g. {target / 'metadata.yml'})")
        if not target.parent.is_dir():
            raise CommandError(f"--metadata {target}: the folder {target.parent} does not exist")
        datasette_meta.write(target)
        print(f"wrote {args.metadata}")
        return 0
    paths = archive(args)
    manifest = publish_all(paths, build_time=args.build_time)
    print(f"published to {paths.public} at {manifest['build_time']}")
    for name, entry in manifest["files"].items():
        print(f"  {name:<26} {entry['bytes']:>12,} bytes  sha256 {entry['sha256']}")
    print(f"  render_manifest.json lists them; inputs sha256 {manifest['inputs_sha256']}")
    return 0


def run_release(args: argparse.Namespace) -> int:
    from publish.pipeline import assemble      # in the handler: see run_publish

    paths = archive(args)
    out = Path(args.out) if args.out else paths.home / "releases" / f"llm-archive-{args.version}"
    release = assemble(paths, args.version, out, spec=Path(args.spec) if args.spec else None,
                       date=day(args) if args.date else None)
    print(f"release {release.version} assembled in {release.folder} ({len(release.files)} files, leak-checked)")
    print()
    print(release.checklist)
    return 0


def run_serve(args: argparse.Namespace) -> int:
    from publish.datasette import DB_FILE, REPO_METADATA, serve_command   # in the handler: see run_publish

    paths = archive(args)
    db = paths.public / DB_FILE
    if not db.exists():
        raise CommandError(f"{db} does not exist; run `llmarchive publish` first")
    if not REPO_METADATA.exists():
        raise CommandError(f"{REPO_METADATA} is missing; run `llmarchive publish --metadata {REPO_METADATA}`")
    command = serve_command(paths.public, REPO_METADATA, host=args.host, port=args.port)
    # -P: the archive home, the folder it runs in, is not put on the import path (a file there is data).
    argv = [sys.executable, "-P", "-m"] + command.argv
    if args.print_command:
        print(f"cd {shlex.quote(str(command.cwd))} && {shlex.join(argv)}")
        return 0
    print(f"serving {db} read-only on http://{args.host}:{args.port}/ (site: /site/index.html); Ctrl-C stops",
          file=sys.stderr)
    sys.stderr.flush()
    os.chdir(command.cwd)
    os.execv(sys.executable, argv)
    return 0  # not reached: execv replaces this process
