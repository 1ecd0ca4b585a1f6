"""Third-party comparison points (method §4.2): an outside run on an open panel, checked and recomputed.

The submission file
-------------------
A JSON Lines file of **trial records in exactly the format our runner
writes** (``trials.jsonl``), so the trial log of one of our own ``open``
runs is a valid submission as it stands.  Optionally, the first line is a
header ``{"record_type": "comparison_submission", …}`` with any of
``protocol_id``, ``panel_sha256``, ``protocol_sha256``, ``grammar_version``,
``n``, ``model_id``, ``requested_model_id``, ``model_family``, ``run_date``,
``submitted_by``, ``note``, ``explicitly_set``; each value given there must
agree with the trials and the protocol.  ``llmarchive comparison run``
(:mod:`llmarchive.comparison_run`) writes exactly such a file from a
published panel file alone: the header it writes (the model as the server
named it, the id the client asked for, the run date, both panel hashes and
what the client set) is kept with the point.

What a trial needs: ``protocol_id``, ``item_id``, ``version``,
``replicate_index``, ``prompt_sha256`` (sha256 of the exact prompt sent),
``outcome``, ``token``, ``response_text`` and ``returned_model_id``.  Every
field a trial carries that :data:`measure.schema.TRIAL_FIELDS` names
(timings, token counts, chain hashes…) must have the schema's type, and may
be null only where the schema allows it (never ``outcome``); keys the schema
does not know are kept and not judged.  A file whose trials carry chain
hashes must verify as a chain.

What is checked — every failed condition is reported at once, and a rejected
file stores nothing:

* ``protocol``       one known protocol, in the ``open`` lane (only open
                     panels are public; a guard panel's prompts are not);
* ``panel_sha256``   every trial's ``prompt_sha256`` equals the hash of our
                     panel's text for that scenario and version — the run was
                     made on this exact panel, not a copy claimed to be it —
                     and a declared ``panel_sha256`` (and ``protocol_sha256``)
                     is the protocol's;
* ``grammar_version``  a declared version is the protocol's, and every
                     response re-extracts, with that grammar, to the recorded
                     outcome and token;
* ``n``              each version has exactly the protocol's ``n`` trials,
                     ``n_per_scenario`` per scenario, no trial twice (a short
                     run — fewer than ``4 × n`` trials — is named as one);
* ``versions``       all four versions are present;
* ``outcome_distribution``  every trial carries an outcome from the closed
                     list (so the distribution per version is complete),
                     a token exactly when valid;
* ``model_id``       one exact model id (no alias, no wildcard), the same on
                     every trial that names one, and equal to a declared one;
                     a declared ``requested_model_id`` (what the client asked
                     the server for) must be exact too;
* ``run_date``, ``submitted_by``, ``chain``, ``format`` — needed to file it.

An accepted file is recomputed by our own estimator
(:func:`measure.measurement.build`) — nothing submitted is trusted as a
number; its ``run_id`` is the one the trials carry, so ``llmarchive verify
--trials FILE`` recomputes it from the file as submitted — and stored as a
``comparison_point`` record plus a private copy of
the file.  It is read-only: it starts no run, touches no schedule or
rotation, and its measurement carries the ``exploratory`` flag, so it is
never on a curve or in an aggregate.
"""
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from measure.errors import ArchiveError
from llmarchive import records
from llmarchive.jsonio import write_json
from llmarchive.paths import ArchivePaths
from measure import chain, extract
from measure.measurement import MeasurementError, build
from measure.schema import OUTCOMES, VERSIONS, expected_words, json_type_words, trial_problems
from llmarchive.records import utc_today

HEADER_TYPE = "comparison_submission"
HEADER_FIELDS = ("protocol_id", "panel_sha256", "protocol_sha256", "grammar_version", "n", "model_id",
                 "requested_model_id", "model_family", "run_date", "submitted_by", "note", "explicitly_set")
_ALIAS = re.compile(r"(^|[-_.])latest$|[*?\[\]\s]")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
EXPLORATORY_NOTE = "comparison point: a third party's run on an open panel; never on a curve or in an aggregate"


def is_exact_model_id(model_id: str) -> bool:
    """Whether ``model_id`` names one model exactly: not blank, no ``latest`` alias, no wildcard or whitespace."""
    return bool(model_id.strip()) and not _ALIAS.search(model_id)


class SubmissionRejected(ArchiveError, ValueError):
    """A submission that fails one or more conditions; ``reasons`` lists every one.

    Its message is one line naming the file and every reason, so a command
    line prints it as it is — never a traceback, whatever the file holds.
    """

    def __init__(self, reasons: list[tuple[str, str]], file: Optional[Path] = None) -> None:
        self.reasons = [(condition, " ".join(str(message).split())) for condition, message in reasons]
        self.file = file
        where = f"{file}: " if file is not None else ""
        super().__init__(f"{where}submission rejected, nothing stored: " +
                         "; ".join(f"{condition}: {message}" for condition, message in self.reasons))


@dataclass
class Accepted:
    record: dict
    comparison_id: str
    already: bool = False


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


HEADER_TYPES: dict[str, tuple[type, ...]] = {
    "protocol_id": (str,), "panel_sha256": (str,), "protocol_sha256": (str,), "grammar_version": (int,),
    "n": (int,), "model_id": (str,), "requested_model_id": (str,), "model_family": (str,), "run_date": (str,),
    "submitted_by": (str,), "note": (str,), "explicitly_set": (dict,),
}
_TYPE_NAMES = {str: "a string", int: "an integer", dict: "an object"}
MAX_LINE_PROBLEMS = 3


def _wrong_type(value: object, allowed: tuple[type, ...], nullable: bool) -> bool:
    if value is None:
        return not nullable
    if isinstance(value, bool):
        return bool not in allowed
    return not isinstance(value, allowed)


def field_types(header: dict, trials: list[tuple[int, dict]]) -> list[tuple[str, str]]:
    """One ``format`` reason per field that has the wrong JSON type (checked before anything is judged)."""
    problems: list[tuple[str, str]] = []
    for key, allowed in HEADER_TYPES.items():
        if key in header and _wrong_type(header[key], allowed, True):
            problems.append(("format", f"the header's {key} must be {_TYPE_NAMES[allowed[0]]}, "
                                       f"got {json_type_words(header[key])}"))
    wrong: dict[str, list[str]] = {}
    for number, trial in trials:
        for problem in trial_problems(trial):    # the schema's types; a missing field is judged by its condition
            wrong.setdefault(problem.field, []).append(f"line {number}: {json_type_words(trial[problem.field])}")
    for key, where in wrong.items():
        problems.append(("format", f"{len(where)} trial(s) carry {key} that is not {expected_words(key)} "
                                   f"({_few(where, 3)})"))
    return problems


def parse(data: bytes) -> tuple[dict, list[dict], list[tuple[str, str]]]:
    """(header, trials, format problems) of a submission file's bytes."""
    header, numbered, problems = _parse(data)
    if numbered or header:
        problems += field_types(header, numbered)
    return header, [t for _, t in numbered], problems


def _parse(data: bytes) -> tuple[dict, list[tuple[int, dict]], list[tuple[str, str]]]:
    problems: list[tuple[str, str]] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        return {}, [], [("format", f"the file is not UTF-8 text (byte {exc.start}, line {line})")]
    header: dict = {}
    trials: list[tuple[int, dict]] = []
    lines = text.split("\n")
    unreadable: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                problems.append(("format", f"line {number} is cut off: the file ends in the middle of a record "
                                           f"({exc.msg}); send the complete file"))
            else:
                unreadable.append(f"line {number} is not JSON ({exc.msg})")
            continue
        except RecursionError:
            unreadable.append(f"line {number} is nested too deeply to read")
            continue
        if not isinstance(value, dict):
            problems.append(("format", f"line {number} is not a JSON object"))
        elif value.get("record_type") == HEADER_TYPE:
            if trials or header:
                problems.append(("format", f"line {number}: the {HEADER_TYPE} header may only be the first line"))
            else:
                unknown = sorted(set(value) - set(HEADER_FIELDS) - {"record_type"})
                if unknown:
                    problems.append(("format", f"the header has unknown field(s) {', '.join(unknown)}"))
                header = value
        elif value.get("record_type") == "trial":
            trials.append((number, value))
        else:
            problems.append(("format", f"line {number}: record_type {value.get('record_type')!r} is neither "
                                       f"'trial' nor '{HEADER_TYPE}'"))
    if unreadable:
        shown = unreadable[:MAX_LINE_PROBLEMS]
        more = len(unreadable) - len(shown)
        problems[:0] = [("format", m) for m in shown]
        if more:
            problems.insert(len(shown), ("format", f"and {more} more line(s) that are not JSON"))
    if not trials:
        problems.append(("format", "the file holds no trial record"))
    return header, trials, problems


def _few(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def check(paths: ArchivePaths, header: dict, trials: list[dict], submitted_by: Optional[str]
          ) -> tuple[Optional[dict], dict, list[tuple[str, str]]]:
    """(protocol, derived fields, every failed condition) for parsed trials."""
    from llmarchive import registry

    reasons: list[tuple[str, str]] = []
    derived: dict = {}
    ids = sorted({str(t.get("protocol_id")) for t in trials})
    pid = header.get("protocol_id") or (ids[0] if len(ids) == 1 else None)
    protocol = None
    if len(ids) != 1:
        reasons.append(("protocol", f"the trials name {len(ids)} protocols ({_few(ids)}); a submission is one run "
                                    "of one protocol"))
    elif header.get("protocol_id") and header["protocol_id"] != ids[0]:
        reasons.append(("protocol", f"the header names {header['protocol_id']} but the trials are of {ids[0]}"))
    if pid:
        try:
            protocol = registry.load_protocol(paths, pid)
        except ValueError as exc:
            reasons.append(("protocol", str(exc)))
    if protocol is not None and protocol.get("lane") != "open":
        reasons.append(("protocol", f"{pid} is in the {protocol.get('lane') or 'no'} lane; comparison points are "
                                    "accepted only on open panels"))
    if protocol is not None and "panel" not in protocol:
        reasons.append(("protocol", f"{pid} has no panel text here (a sealed protocol)"))
        protocol = None

    # outcome distribution and keys
    missing_outcome = [i for i, t in enumerate(trials) if t.get("outcome") not in OUTCOMES]
    if missing_outcome:
        reasons.append(("outcome_distribution", f"{len(missing_outcome)} trial(s) carry no outcome from the closed "
                                                f"list {', '.join(OUTCOMES)} (first: trial #{missing_outcome[0]})"))
    versions_seen = {t.get("version") for t in trials}
    bad_versions = sorted(str(v) for v in versions_seen - set(VERSIONS))
    if bad_versions:
        reasons.append(("versions", f"unknown version(s) {', '.join(bad_versions)}"))
    absent = [v for v in VERSIONS if v not in versions_seen]
    if absent:
        reasons.append(("versions", f"version(s) {', '.join(absent)} missing; all four versions are required"))

    # model id
    named = sorted({t.get("returned_model_id") for t in trials if t.get("returned_model_id")})
    declared = header.get("model_id")
    model_id = declared or (named[0] if len(named) == 1 else None)
    if len(named) > 1:
        reasons.append(("model_id", f"the trials name {len(named)} models ({_few(named)}); one exact model id"))
    if declared and named and named != [declared]:
        reasons.append(("model_id", f"the header declares {declared} but the trials name {_few(named)}"))
    if not model_id:
        reasons.append(("model_id", "no model id: trials carry no returned_model_id and the header declares none"))
    elif not isinstance(model_id, str) or _ALIAS.search(model_id) or not model_id.strip():
        reasons.append(("model_id", f"{model_id!r} is not an exact model id (an alias or pattern)"))
    requested = header.get("requested_model_id")
    if requested is not None and not is_exact_model_id(requested):
        reasons.append(("model_id", f"the run asked the server for {requested!r}, which is not an exact model id "
                                    "(an alias or pattern); run again with the exact id"))
    derived["model_id"] = model_id

    # run date and submitter
    run_date = header.get("run_date")
    if run_date is None:
        started = sorted(str(t.get("started_at"))[:10] for t in trials if isinstance(t.get("started_at"), str))
        run_date = started[0] if started else None
    if not isinstance(run_date, str) or not _DATE.match(run_date):
        reasons.append(("run_date", "no run date: give run_date (YYYY-MM-DD) in the header or started_at on trials"))
    derived["run_date"] = run_date
    who = submitted_by or header.get("submitted_by")
    if not who or not str(who).strip():
        reasons.append(("submitted_by", "name who submits the run (--submitted-by or the header's submitted_by)"))
    derived["submitted_by"] = who

    # chain
    chained = [("record_sha256" in t) for t in trials]
    if any(chained) and not all(chained):
        reasons.append(("chain", "some trials carry chain hashes and some do not"))
    elif all(chained):
        broken = chain.first_break(trials)
        if broken is not None:
            reasons.append(("chain", f"the trial chain breaks at trial #{broken}"))

    if protocol is None:
        return None, derived, reasons

    # panel
    if header.get("panel_sha256") and header["panel_sha256"] != protocol["panel_sha256"]:
        reasons.append(("panel_sha256", f"declared {header['panel_sha256']}, the protocol's panel is "
                                        f"{protocol['panel_sha256']}"))
    if header.get("protocol_sha256") and header["protocol_sha256"] != protocol.get("protocol_sha256"):
        reasons.append(("panel_sha256", f"declared protocol_sha256 {header['protocol_sha256']}, the protocol's is "
                                        f"{protocol.get('protocol_sha256')}"))
    texts = {(item["item_id"], v): item["versions"][v] for item in protocol["panel"] for v in VERSIONS}
    wrong, unknown_items, no_hash = [], [], 0
    for t in trials:
        key = (t.get("item_id"), t.get("version"))
        if key not in texts:
            if t.get("version") in VERSIONS:
                unknown_items.append(str(t.get("item_id")))
            continue
        if not isinstance(t.get("prompt_sha256"), str):
            no_hash += 1
        elif t["prompt_sha256"] != _sha256(texts[key]):
            wrong.append(f"{key[0]}/{key[1]}")
    if unknown_items:
        reasons.append(("panel_sha256", f"scenario id(s) not in this panel: {_few(sorted(set(unknown_items)))}"))
    if no_hash:
        reasons.append(("panel_sha256", f"{no_hash} trial(s) carry no prompt_sha256, so the panel cannot be checked"))
    if wrong:
        reasons.append(("panel_sha256", f"{len(wrong)} trial(s) were sent a prompt that is not this panel's "
                                        f"({_few(sorted(set(wrong)))})"))

    # grammar
    grammar = protocol["grammar_version"]
    if header.get("grammar_version") is not None and header["grammar_version"] != grammar:
        reasons.append(("grammar_version", f"declared {header['grammar_version']}, the protocol uses {grammar}"))
    mismatched, textless = [], 0
    for t in trials:
        if t.get("outcome") not in ("valid", "unparseable"):
            continue
        if not isinstance(t.get("response_text"), str):
            textless += 1
            continue
        found = extract(t["response_text"], protocol["options"], grammar)
        if (found.outcome, found.token) != (t.get("outcome"), t.get("token")):
            mismatched.append(f"{t.get('item_id')}/{t.get('version')}/{t.get('replicate_index')}")
    if textless:
        reasons.append(("grammar_version", f"{textless} decided trial(s) carry no response_text to re-extract"))
    if mismatched:
        reasons.append(("grammar_version", f"{len(mismatched)} trial(s) do not re-extract to their recorded outcome "
                                           f"with grammar_version {grammar} ({_few(mismatched)})"))
    bad_tokens = [i for i, t in enumerate(trials) if t.get("outcome") in OUTCOMES and
                  ((t["outcome"] == "valid") != (t.get("token") is not None)
                   or (t["outcome"] == "valid" and t.get("token") not in protocol["options"]))]
    if bad_tokens:
        reasons.append(("outcome_distribution", f"{len(bad_tokens)} trial(s) carry a token that does not match "
                                                f"their outcome (first: trial #{bad_tokens[0]})"))

    # n
    n, per = protocol["n"], protocol["n_per_scenario"]
    if header.get("n") is not None and header["n"] != n:
        reasons.append(("n", f"declared n {header['n']}, the protocol freezes n = {n}"))
    if len(trials) < len(VERSIONS) * n:
        reasons.append(("n", f"a short run: {len(trials)} of the {len(VERSIONS) * n} trials the protocol freezes "
                             "(4 versions × n); finish the run (`llmarchive comparison run` again resumes it) and "
                             "submit the complete file"))
    counts = {v: sum(1 for t in trials if t.get("version") == v) for v in VERSIONS}
    off = [f"{v} has {c}" for v, c in counts.items() if c != n and c]
    if off:
        reasons.append(("n", f"each version needs exactly n = {n} trials: {', '.join(off)}"))
    cells: dict[tuple, int] = {}
    for t in trials:
        cells[(t.get("item_id"), t.get("version"))] = cells.get((t.get("item_id"), t.get("version")), 0) + 1
    uneven = sorted(f"{i}/{v}" for (i, v), c in cells.items() if c != per and (i, v) in texts)
    if uneven:
        reasons.append(("n", f"each scenario and version needs n_per_scenario = {per} trials: {_few(uneven)}"))
    identities = [(t.get("item_id"), t.get("version"), t.get("replicate_index")) for t in trials]
    if len(set(identities)) != len(identities):
        reasons.append(("n", "the same (scenario, version, replicate) appears more than once"))
    return protocol, derived, reasons


def submit(paths: ArchivePaths, file: Path, submitted_by: Optional[str] = None,
           today: Optional[str] = None) -> Accepted:
    """Check a submission file; store it as a comparison point or raise :class:`SubmissionRejected`."""
    from llmarchive import registry

    file = Path(file)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise SubmissionRejected([("format", f"cannot be read ({exc.strerror or exc})")], file) from None
    digest = hashlib.sha256(data).hexdigest()
    for r in records.read(paths, "comparison_point"):
        if r.get("submission_sha256") == digest:
            return Accepted(r, r.get("comparison_id"), already=True)
    header, numbered, reasons = _parse(data)
    typing = field_types(header, numbered) if numbered or header else []
    reasons += typing
    trials = [t for _, t in numbered]
    protocol, derived = None, {}
    if trials and not typing:        # a field of the wrong type is named, not judged further
        protocol, derived, more = check(paths, header, trials, submitted_by)
        reasons += more
    if reasons:
        raise SubmissionRejected(reasons, file)
    comparison_id = f"cp-{digest[:16]}"
    # The measurement is of the submitted trials under their own run id, so `llmarchive verify --trials FILE`
    # recomputes it from the file as submitted (its trials are read by run id); the point's id when they name none.
    run_ids = sorted({t["run_id"] for t in trials if isinstance(t.get("run_id"), str) and t["run_id"]})
    run = {"run_id": run_ids[0] if len(run_ids) == 1 else comparison_id, "run_date": derived["run_date"],
           "subject_model_id": derived["model_id"],
           "series": None, "model_family": header.get("model_family") or "third_party",
           "returned_model_id": derived["model_id"], "api_surface_sha": None,
           "condition_profile": "third-party submission", "replicate_index": 0, "exploratory": EXPLORATORY_NOTE}
    try:
        measurement = build(registry.header(protocol), trials, run)
    except MeasurementError as exc:
        raise SubmissionRejected([("format", f"the trials cannot be measured: {exc}")], file) from None
    day = today or utc_today()
    folder = paths.comparison_points
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / f"{comparison_id}.jsonl"
    if not copy.exists():
        copy.write_bytes(data)
    fields = {"date": day, "protocol_id": protocol["protocol_id"], "model_id": derived["model_id"],
              "submitted_by": str(derived["submitted_by"]).strip(), "measurement": measurement,
              "comparison_id": comparison_id, "submission_sha256": digest, "file_name": file.name,
              "n_trials": len(trials), "run_date": derived["run_date"], "note": header.get("note"),
              "requested_model_id": header.get("requested_model_id"),
              "explicitly_set": header.get("explicitly_set")}
    record = records.append(paths, "comparison_point", fields)
    write_json(folder / f"{comparison_id}.json", record)
    return Accepted(record, comparison_id)
