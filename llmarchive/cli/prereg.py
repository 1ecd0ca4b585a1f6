"""``llmarchive prereg …``: the pre-registration manifest, its stamp, and the guard.

``manifest`` writes the hashes of every admitted protocol (and HEAD) to
``private/timestamps/preregistration_<date>.json``; ``stamp`` timestamps
it with OpenTimestamps when a calendar answers, and says plainly when none
does; ``check`` lists, per admitted protocol, whether its current hashes
are in a manifest whose ``.ots`` proof commits to that manifest, and exits 1
when any is not.
"""
import argparse
from pathlib import Path

from llmarchive.protocols import prereg, registry
from llmarchive.cli import CommandError, archive
from llmarchive.cli._options import add_date, add_json, day, plain, print_json

ORDER = 25


def register(subparsers) -> None:
    p = subparsers.add_parser("prereg", help="pre-registration: manifest of hashes, OpenTimestamps stamp, guard",
                              description=plain(__doc__.split("\n\n")[1]))
    sub = p.add_subparsers(dest="prereg_command", metavar="ACTION")

    m = sub.add_parser("manifest", help="write a manifest of every admitted protocol's hashes (no text)")
    add_date(m, "the date in the file name")
    m.set_defaults(func=cmd_manifest)

    s = sub.add_parser("stamp", help="timestamp a manifest with OpenTimestamps (needs a reachable calendar)")
    s.add_argument("manifest", nargs="?", help="manifest file (default: the newest one without a proof)")
    s.add_argument("--calendar", action="append", metavar="URL",
                   help="calendar URL (repeatable; default: the public OpenTimestamps calendars)")
    s.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for each calendar (default 5)")
    s.set_defaults(func=cmd_stamp)

    c = sub.add_parser("check", help="is each admitted protocol listed in a stamped manifest?")
    c.add_argument("protocols", nargs="*", metavar="PROTOCOL", help="protocol ids (default: every admitted one)")
    add_json(c, "print {protocols, manifests} as JSON")
    c.set_defaults(func=cmd_check)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _admitted(paths) -> list[dict]:
    return registry.load_all(paths) + registry.sealed_records(paths)


def cmd_manifest(args: argparse.Namespace) -> int:
    paths = archive(args)
    path, written = prereg.write_manifest(paths, _admitted(paths), date=day(args))
    manifest = prereg.read_manifest(path)
    verb = "wrote" if written else "already written:"
    print(f"{verb} {path} — {len(manifest['protocols'])} protocol(s), HEAD {manifest.get('head_commit') or 'unknown'}, "
          f"sha256 {prereg.file_sha256(path)}")
    if not manifest.get("head_commit"):
        print("note: the repository's HEAD commit could not be read (not a git checkout?)")
    if not written and prereg.proof_path(path).exists():
        print("it is already stamped; nothing to do")
    return 0


def cmd_stamp(args: argparse.Namespace) -> int:
    paths = archive(args)
    if args.manifest:
        manifest = Path(args.manifest)
        if not manifest.is_file():
            raise CommandError(f"{manifest}: no such manifest")
    else:
        unstamped = [m for m in prereg.manifests(paths) if not prereg.proof_path(m).exists()]
        if not unstamped:
            raise CommandError(f"no unstamped manifest under {paths.timestamps}; run `llmarchive prereg manifest`")
        manifest = unstamped[-1]
    try:
        proof, answered = prereg.stamp(manifest, args.calendar or prereg.DEFAULT_CALENDARS, timeout=args.timeout)
    except prereg.NoCalendar as exc:
        # What follows and what to do, not only what failed: an owner met this line and did not know either.
        print(f"NOT STAMPED: {exc}. Until {manifest.name} is stamped, the monthly sweep skips the protocols it "
              f"lists (not_preregistered, cause protocol_confounded) and spends nothing on them. Run "
              f"`llmarchive prereg stamp {manifest}` again when a calendar answers, or name one you can reach "
              "with --calendar URL (repeatable).")
        return 1
    print(f"stamped {manifest.name}: pending proof {proof} from {len(answered)} calendar(s) "
          f"({', '.join(answered)}). Run `ots upgrade {proof}` in a few hours for the Bitcoin attestation.")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    paths = archive(args)
    protocols = _admitted(paths)
    if args.protocols:
        by_id = {p["protocol_id"]: p for p in protocols}
        chosen = []
        for pid in args.protocols:
            if pid not in by_id:
                raise registry.UnknownProtocol(pid, list(by_id))
            chosen.append(by_id[pid])
    else:
        chosen = [p for p in protocols if p.get("status") == "admitted"]
        if not chosen:
            raise CommandError("no protocol is admitted yet; nothing is pre-registered")
    results = []
    for protocol in chosen:
        ok, why = prereg.is_preregistered(paths, protocol, detail=True)
        results.append({"protocol_id": protocol["protocol_id"], "preregistered": ok, "reason": why})
    if args.json:
        print_json({"protocols": results, "manifests": [prereg.manifest_summary(m) for m in prereg.manifests(paths)]})
    else:
        for m in prereg.manifests(paths):
            s = prereg.manifest_summary(m)
            print(f"manifest {s['manifest']}: {s['protocols']} protocol(s), proof {s['proof']}")
        for r in results:
            print(f"{'ok  ' if r['preregistered'] else 'MISS'} {r['protocol_id']}: {r['reason']}")
    return 0 if all(r["preregistered"] for r in results) else 1
