"""``llmarchive panels …``: build, list, show, check and admit protocols.

``build`` writes the 24 protocol files under ``private/protocols/``;
``list`` prints their text-free headers (``--json`` for one object per
protocol); ``show`` prints one whole file, text included — a private-side
command; ``design`` prints what the simulated readers (``panels.readers``)
score on each protocol; ``check`` runs gate 1, gate 1b with its self-test,
the twin-pairing check, the 12-word leak check and the simulated-reader
design checks, and exits 1 naming protocol, item and rule
on any failure; ``promote`` is the human admission (gate 4) — to the
``open`` lane it publishes the panel in full; ``verify FILE`` recomputes a
published open-panel file's hashes from the file alone; ``seal`` records a
sealed protocol by its two hashes; ``init-seed`` writes a secret guard seed.
"""
import argparse
import json
import sys
import time

from llmarchive.protocols import admissions as lanes, guard_seed, init_secret_seed, open_panels, registry
from llmarchive.cli import CommandError, archive
from llmarchive.cli._options import add_json, plain, print_json
from measure import invariants
from panels import checks, conformance, leak, readers
from panels.build import BuildError, build_protocols
from panels.seeds import SeedError, public_seed

ORDER = 20


def register(subparsers) -> None:
    p = subparsers.add_parser("panels", help="build, list, show, check and promote the protocols",
                              description=plain(__doc__.split("\n\n")[1]))
    sub = p.add_subparsers(dest="panels_command", metavar="ACTION")

    b = sub.add_parser("build", help="build every protocol file under private/protocols/ (idempotent)")
    b.set_defaults(func=cmd_build)

    ls = sub.add_parser("list", help="one line (or JSON object) per protocol: ids, lane, status, hashes — no text")
    add_json(ls, "print a JSON list of protocol headers")
    ls.set_defaults(func=cmd_list)

    show = sub.add_parser("show", help="print one protocol file, text included (private side only)")
    show.add_argument("protocol", metavar="PROTOCOL")
    show.set_defaults(func=cmd_show)

    check = sub.add_parser("check", help="gates 1 and 1b (+ self-test), twin pairing, the 12-word leak check and "
                                         "the simulated-reader design checks")
    add_json(check, "print the failures as a JSON list")
    check.set_defaults(func=cmd_check)

    design = sub.add_parser("design", help="the simulated readers' gap_ab, gap_aa', gap_ac and stability per "
                                           "protocol (what the panel can see)")
    add_json(design, "print {protocol_id: {reader: figures}} as JSON")
    design.add_argument("protocols", nargs="*", metavar="PROTOCOL", help="only these protocols (default: all)")
    design.set_defaults(func=cmd_design)

    pr = sub.add_parser("promote", help="admit a protocol to a lane (the human gate 4); the open lane publishes "
                                        "the panel in full",
                        description="Admit a candidate protocol to its lane. Requires --human-reviewed, unless a "
                                    "protocol with the identical panel_sha256 was reviewed before (v1 inherits v0). "
                                    + lanes.OPEN_LANE_PUBLISHES)
    pr.add_argument("protocol", metavar="PROTOCOL")
    pr.add_argument("--lane", required=True, choices=("open", "guard"),
                    help="open: the panel is published in full (public/panels/<id>.json) and anyone may run it; "
                         "guard: its wording never leaves private/")
    pr.add_argument("--twin", metavar="ID", help="the twin protocol (must be the one SPEC's lane rule names)")
    pr.add_argument("--human-reviewed", action="store_true",
                    help="I reviewed it against the gate-4 checklist: gates 1 and 1b pass, every phrase B adds or "
                         "changes is in the catalogue, the blind reader's verdict is recorded")
    pr.add_argument("--reviewer", metavar="NAME", help="who reviewed it (default: your login name)")
    pr.add_argument("--allow-development-seed", action="store_true",
                    help="admit a guard protocol built from the public development seed (demo archives only)")
    pr.set_defaults(func=cmd_promote)

    verify = sub.add_parser("verify", help="recompute a published open-panel file's panel_sha256, protocol_sha256 "
                                           "and every prompt_sha256 from the file alone",
                            description="Check a public/panels/<protocol_id>.json file against its own hashes "
                                        "(method §3.9). Prints OK with both hashes, or every problem and exits 2. "
                                        "Needs no archive home.")
    verify.add_argument("file", metavar="FILE")
    add_json(verify, "print {file, protocol_id, ok, panel_sha256, protocol_sha256, problems} as JSON")
    verify.set_defaults(func=cmd_verify)

    seal = sub.add_parser("seal", help="register a sealed protocol by its two hashes (no text ever)")
    seal.add_argument("protocol", metavar="PROTOCOL_ID")
    seal.add_argument("--panel-sha256", required=True)
    seal.add_argument("--protocol-sha256", required=True)
    seal.add_argument("--human-reviewed", action="store_true", help="its review happened in the sealed repository")
    seal.add_argument("--reviewer", metavar="NAME")
    seal.set_defaults(func=cmd_seal)

    seed = sub.add_parser("init-seed", help="write a fresh secret guard seed to private/panel_seed")
    seed.set_defaults(func=cmd_init_seed)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _load_all(paths):
    return registry.load_all(paths)


def cmd_build(args: argparse.Namespace) -> int:
    paths = archive(args)
    started = time.perf_counter()
    protocols = registry.build_all(paths)
    for p in protocols:
        print(f"{p['protocol_id']:42} seed={p['wording_seed']:11} panel={p['panel_sha256'][:12]} "
              f"protocol={p['protocol_sha256'][:12]} {p['status']}")
    print(f"built {len(protocols)} protocols in {paths.protocols} ({time.perf_counter() - started:.1f} s)")
    if guard_seed(paths).label == "development":
        print("note: guard panels were built from the public DEVELOPMENT seed; they guard nothing. "
              "Set $LLMARCHIVE_PANEL_SEED or run `llmarchive panels init-seed`, then rebuild.", file=sys.stderr)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    paths = archive(args)
    headers = registry.list_protocols(paths)
    if args.json:
        keys = ("protocol_id", "series", "family", "rewording_type", "lane", "twin_id", "status",
                "panel_sha256", "protocol_sha256")
        print_json([{k: h.get(k) for k in keys} for h in headers])
        return 0
    for h in headers:
        print(f"{h['protocol_id']:42} {h['status'] or '-':9} {h['lane'] or '-':6} {h['twin_id'] or '-':42} "
              f"{(h['panel_sha256'] or '')[:12]} {(h['protocol_sha256'] or '')[:12]}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    paths = archive(args)
    protocol = registry.load_protocol(paths, args.protocol)
    print(json.dumps(protocol, indent=1, sort_keys=True, ensure_ascii=False))
    return 0


def run_checks(protocols: list[dict], headers: list[dict]) -> list:
    """Every check ``panels check`` runs, in order; a list of Failures."""
    return checks.run_all(protocols, headers)


def cmd_check(args: argparse.Namespace) -> int:
    paths = archive(args)
    started = time.perf_counter()
    protocols = _load_all(paths)
    headers = registry.headers_with_sealed(paths, protocols)
    failures = run_checks(protocols, headers)
    stale = _stale(paths, protocols)
    if stale:
        print(f"note: {len(stale)} protocol file(s) differ from what the builder makes now ({', '.join(stale[:3])}"
              f"{', …' if len(stale) > 3 else ''}); the checks above ran on the files — run `llmarchive panels "
              f"build` to refresh them", file=sys.stderr)
    if args.json:
        print_json([f.__dict__ for f in failures])
    else:
        for failure in failures:
            print(f"FAIL {failure}")
        items = sum(len(p["panel"]) for p in protocols)
        print(f"{'FAILED' if failures else 'OK'}: {len(protocols)} protocols, {items} items — gate 1, gate 1b "
              f"(self-test: {len(conformance.CATALOGUE)} rules), twin pairing, {leak.LEAK_WORDS}-word leak, "
              f"simulated-reader design checks; "
              f"{len(failures)} failure(s) in {time.perf_counter() - started:.1f} s")
    return 1 if failures else 0


def cmd_design(args: argparse.Namespace) -> int:
    """Score the simulated readers (panels.readers) with the real estimator and print their figures."""
    paths = archive(args)
    protocols = _load_all(paths)
    known = [p["protocol_id"] for p in protocols]
    unknown = [pid for pid in args.protocols if pid not in known]
    if unknown:
        raise CommandError(f"unknown protocol {unknown[0]!r}; known protocols: {', '.join(known)}")
    chosen = [p for p in protocols if not args.protocols or p["protocol_id"] in args.protocols]
    table = {p["protocol_id"]: readers.design_figures(p) for p in chosen}
    if args.json:
        print_json(table, sort_keys=True)
        return 0
    print(f"{'protocol':42} {'reader':10} {'gap_ab':>8} {'gap_aa′':>8} {'gap_ac':>8} {'stability':>9}")
    for pid, design in table.items():
        for reader, figures in design.items():
            cells = [figures[k] for k in ("gap_ab_pct", "gap_aa_prime_pct", "gap_ac_pct", "stability_pct")]
            print(f"{pid:42} {reader:10} " + " ".join(f"{'-' if c is None else f'{c:.1f}':>8}" for c in cells[:3])
                  + f" {'-' if cells[3] is None else f'{cells[3]:.1f}':>9}")
    for family in sorted({p["family"] for p in chosen}):
        for reader, model in readers.reader_models(family).items():
            print(f"reader {reader} ({family}): {model}")
    return 0


def _stale(paths, protocols: list[dict]) -> list[str]:
    """Ids whose file no longer matches a fresh in-memory build with the same seed label."""
    try:
        fresh = {p["protocol_id"]: p for p in build_protocols(public_seed(), guard_seed(paths))}
    except (BuildError, SeedError):
        return []
    return [p["protocol_id"] for p in protocols
            if p["protocol_id"] in fresh and fresh[p["protocol_id"]]["wording_seed"] == p["wording_seed"]
            and fresh[p["protocol_id"]]["protocol_sha256"] != p["protocol_sha256"]]


def cmd_promote(args: argparse.Namespace) -> int:
    lanes.reviewer_name(args.reviewer)      # an empty --reviewer is refused before anything is built or read
    paths = archive(args)
    protocol = registry.load_protocol(paths, args.protocol)
    if protocol.get("lane") == "sealed" or "panel" not in protocol:
        raise CommandError(f"{args.protocol} is a sealed, hash-only record; it was admitted when it was registered")
    failures = invariants.check_protocol(protocol) + conformance.check_protocol(protocol)
    if failures:
        for failure in failures:
            print(f"FAIL {failure}", file=sys.stderr)
        raise CommandError(f"{args.protocol} fails gate 1 or gate 1b; it cannot be admitted")
    row = lanes.promote(paths, protocol, args.lane, twin_id=args.twin, human_reviewed=args.human_reviewed,
                        reviewer=args.reviewer, allow_development_seed=args.allow_development_seed,
                        known_ids=registry.known_ids(paths))
    how = "human review" if row["review"] == "human" else f"review inherited from {row['inherited_from']}"
    print(f"admitted {row['protocol_id']} to lane {row['lane']}"
          f"{' with twin ' + row['twin_id'] if row['twin_id'] else ''} ({how}; by {row['reviewer']} at "
          f"{row['reviewed_at']})")
    if row["lane"] == "open":
        print(f"note: in the open lane the panel is published in full — every scenario's four versions, exactly as "
              f"sent — as public/panels/{row['protocol_id']}.json at the next `llmarchive publish`")
    if row["twin_id"]:
        twin = registry.load_protocol(paths, row["twin_id"])
        if twin.get("twin_id") != row["protocol_id"]:
            print(f"note: the pair is one-sided until {row['twin_id']} is promoted too; "
                  f"`llmarchive panels check` fails until then", file=sys.stderr)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Recompute the published file's hashes from its own content; a malformed file is an ArchiveError (exit 2)."""
    doc = open_panels.read_panel_file(args.file)
    problems = open_panels.verify_panel_file(doc)
    if args.json:
        print_json({"file": args.file, "protocol_id": doc["protocol_id"], "ok": not problems,
                    "panel_sha256": doc["panel_sha256"], "protocol_sha256": doc["protocol_sha256"],
                    "problems": problems})
        return 2 if problems else 0
    if problems:
        for problem in problems:
            print(f"FAIL {problem}")
        print(f"FAILED: {args.file} ({doc['protocol_id']}): {len(problems)} problem(s); this is not the panel "
              f"its hashes name")
        return 2
    prompts = sum(len(by) for by in doc["prompt_sha256"].values())
    print(f"OK {doc['protocol_id']}: panel_sha256 {doc['panel_sha256']} protocol_sha256 {doc['protocol_sha256']} "
          f"({doc['n_items']} scenarios, {prompts} prompt_sha256 recomputed from {args.file})")
    return 0


def cmd_seal(args: argparse.Namespace) -> int:
    paths = archive(args)
    record = registry.register_sealed(paths, args.protocol, args.panel_sha256, args.protocol_sha256,
                                      reviewer=args.reviewer, human_reviewed=args.human_reviewed)
    print(f"registered sealed protocol {record['protocol_id']} (panel {record['panel_sha256'][:12]}, "
          f"protocol {record['protocol_sha256'][:12]}); no text is held here")
    return 0


def cmd_init_seed(args: argparse.Namespace) -> int:
    paths = archive(args)
    file = init_secret_seed(paths)
    print(f"wrote a new secret guard seed to {file} (mode 0600); keep it out of every repository and back it up "
          f"privately. Rebuild with `llmarchive panels build`.")
    return 0
