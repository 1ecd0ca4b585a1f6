"""The conditions a comparison submission must meet (method §4.2), each named when it fails.

:func:`check` judges parsed trials (and the header) against the protocol
they name: one reason per failed condition, all at once.  It runs only on
a submission whose values :mod:`llmarchive.comparison.submission` found of the
right type, depth and size, so nothing here meets a value it cannot handle.
Ids from outside follow :func:`llmarchive.archive.textsafe.id_problems`: a model id
is exact (no alias, no pattern), at most :data:`~llmarchive.archive.textsafe.MODEL_ID_MAX`
characters, with no control or invisible format character; a run id is
path-safe like every run id of the archive.
"""
import hashlib
import re
from typing import Optional

from llmarchive.comparison.submission import RESPONSE_CHARS_PER_TOKEN, SUBMITTED_BY_MAX, _few
from llmarchive.archive import (ArchivePaths, MODEL_ID_MAX, id_problems, machine_paths, path_pattern,
                                public_text_problem, terminal)
from llmarchive.protocols import registry
from measure import chain, extract
from measure.schema import OUTCOMES, VERSIONS

_ALIAS = re.compile(r"(^|[-_.])latest$|[*?\[\]\s]")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
RUN_ID_MAX = 200


def is_exact_model_id(model_id: str) -> bool:
    """Whether ``model_id`` names one model exactly: not blank, no ``latest`` alias, no wildcard or whitespace."""
    return bool(model_id.strip()) and not _ALIAS.search(model_id)


def model_id_problems(model_id: object, what: str = "model id") -> list[str]:
    """Why ``model_id`` is not one exact, printable model id (length, controls, bidi and other invisibles)."""
    return id_problems(model_id, what, MODEL_ID_MAX, model=True)


def run_id_problems(run_id: object) -> list[str]:
    """Why ``run_id`` cannot be a run id: the archive's rule for every run id (path-safe, at most 200 characters)."""
    problems = id_problems(run_id, "run_id", RUN_ID_MAX)
    if isinstance(run_id, str) and run_id.strip() and not problems and (not _RUN_ID.match(run_id) or ".." in run_id):
        problems.append(f"run_id {run_id!r} may use only letters, digits, '.', '_' and '-' (and no '..')")
    return problems


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


Reasons = list[tuple[str, str]]
"""Failed conditions, each ``(condition, why)``: the condition's name (the header field it concerns) and one line."""


def check(paths: ArchivePaths, header: dict, numbered: list[tuple[int, dict]], submitted_by: Optional[str]
          ) -> tuple[Optional[dict], dict, Reasons]:
    """(protocol, derived fields, every failed condition) for parsed trials, each with its line number.

    One function per acceptance condition, run in this order, each adding
    its reasons: the protocol (one, open, with its panel text), the
    outcomes, the versions, the model id, the run id, the run date, the
    submitter, the public boundary (nothing publication would refuse in the
    outsider's words), the chain; then, once the protocol is known, the
    panel, the size of each response, the grammar, the tokens, and n.  The
    model id, run id, run date and submitter are derived as the conditions
    read them.
    """
    trials = [t for _, t in numbered]
    protocol, reasons = _protocol_condition(paths, header, trials)
    reasons += _outcome_condition(trials)
    reasons += _versions_condition(trials)
    derived: dict = {}
    for name, (value, found) in (("model_id", _model_id_condition(header, trials)),
                                 ("run_id", _run_id_condition(trials)),
                                 ("run_date", _run_date_condition(header, trials)),
                                 ("submitted_by", _submitted_by_condition(header, submitted_by))):
        derived[name] = value
        reasons += found
    reasons += _public_boundary_condition(paths, header, derived)
    reasons += _chain_condition(trials)
    if protocol is None:
        return None, derived, reasons
    texts = _panel_texts(protocol)
    reasons += _panel_condition(header, trials, protocol, texts)
    reasons += _size_condition(numbered, protocol)
    reasons += _grammar_condition(header, trials, protocol)
    reasons += _token_condition(trials, protocol)
    reasons += _n_condition(header, trials, protocol, texts)
    return protocol, derived, reasons


def _protocol_condition(paths: ArchivePaths, header: dict, trials: list[dict]) -> tuple[Optional[dict], Reasons]:
    """The one open protocol the trials (and the header) name, with its panel text; None when there is none."""
    reasons: Reasons = []
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
    return protocol, reasons


def _outcome_condition(trials: list[dict]) -> Reasons:
    """Every trial carries an outcome from the closed list."""
    missing_outcome = [i for i, t in enumerate(trials) if t.get("outcome") not in OUTCOMES]
    if missing_outcome:
        return [("outcome_distribution", f"{len(missing_outcome)} trial(s) carry no outcome from the closed "
                                         f"list {', '.join(OUTCOMES)} (first: trial #{missing_outcome[0]})")]
    return []


def _versions_condition(trials: list[dict]) -> Reasons:
    """The four versions, and no other."""
    reasons: Reasons = []
    versions_seen = {t.get("version") for t in trials}
    bad_versions = sorted(str(v) for v in versions_seen - set(VERSIONS))
    if bad_versions:
        reasons.append(("versions", f"unknown version(s) {', '.join(bad_versions)}"))
    absent = [v for v in VERSIONS if v not in versions_seen]
    if absent:
        reasons.append(("versions", f"version(s) {', '.join(absent)} missing; all four versions are required"))
    return reasons


def _model_id_condition(header: dict, trials: list[dict]) -> tuple[Optional[str], Reasons]:
    """One exact, printable model id, the header's and the trials' agreeing; it is derived."""
    reasons: Reasons = []
    named = sorted({t.get("returned_model_id") for t in trials if t.get("returned_model_id")})
    declared = header.get("model_id")
    model_id = declared or (named[0] if len(named) == 1 else None)
    if len(named) > 1:
        reasons.append(("model_id", f"the trials name {len(named)} models ({_few(named)}); one exact model id"))
    if declared and named and named != [declared]:
        reasons.append(("model_id", f"the header declares {declared} but the trials name {_few(named)}"))
    if not model_id:
        reasons.append(("model_id", "no model id: trials carry no returned_model_id and the header declares none"))
    elif _ALIAS.search(model_id) and not model_id_problems(model_id):
        reasons.append(("model_id", f"{model_id!r} is not an exact model id (an alias or pattern)"))
    # the header's ids were checked with the header; the trials' are checked here, each once
    unprintable = sorted({m for name in named for m in model_id_problems(name, "returned_model_id")})
    reasons += [("model_id", m) for m in unprintable[:3]]
    requested = header.get("requested_model_id")
    if isinstance(requested, str) and requested.strip() and not is_exact_model_id(requested):
        reasons.append(("model_id", f"the run asked the server for {requested!r}, which is not an exact model id "
                                    "(an alias or pattern); run again with the exact id"))
    return model_id, reasons


def _run_id_condition(trials: list[dict]) -> tuple[Optional[str], Reasons]:
    """The trials' own run id, one, checked like every run id (a submission is one run); it is derived."""
    run_ids = sorted({str(t["run_id"]) for t in trials if t.get("run_id") is not None})
    if len(run_ids) > 1:
        return None, [("run_id", f"the trials carry {len(run_ids)} run ids ({_few(run_ids, 3)}); a submission is "
                                 "one run")]
    if run_ids:
        return run_ids[0], [("run_id", m) for m in run_id_problems(run_ids[0])]
    return None, []


def _run_date_condition(header: dict, trials: list[dict]) -> tuple[Optional[str], Reasons]:
    """A run date: the header's, else the first trial's start; it is derived."""
    run_date = header.get("run_date")
    if run_date is None:
        started = sorted(str(t.get("started_at"))[:10] for t in trials if isinstance(t.get("started_at"), str))
        run_date = started[0] if started else None
    if not isinstance(run_date, str) or not _DATE.match(run_date):
        return run_date, [("run_date", "no run date: give run_date (YYYY-MM-DD) in the header or started_at on "
                                       "trials")]
    return run_date, []


def _submitted_by_condition(header: dict, submitted_by: Optional[str]) -> tuple[Optional[str], Reasons]:
    """Who submits, named and not too long; it is derived."""
    who = submitted_by or header.get("submitted_by")
    if not who or not str(who).strip():
        return who, [("submitted_by", "name who submits the run (--submitted-by or the header's submitted_by)")]
    if len(str(who)) > SUBMITTED_BY_MAX:
        return who, [("submitted_by", f"submitted_by is {len(str(who))} characters long; at most "
                                      f"{SUBMITTED_BY_MAX} are accepted")]
    return who, []


def _outsider_strings(value: object, name: str) -> list[tuple[str, str]]:
    """``(field, text)`` for every string of a header value, its keys included (``explicitly_set.stop``)."""
    if isinstance(value, str):
        return [(name, value)]
    found: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += [(f"{name}.{key}", str(key))] + _outsider_strings(item, f"{name}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _outsider_strings(item, f"{name}[{index}]")
    return found


def _public_boundary_condition(paths: ArchivePaths, header: dict, derived: dict) -> Reasons:
    """Nothing in the outsider's words that publication would refuse: no credential, no path of this machine,
    no money field.

    Publication refuses a build that carries any of them, with no exemption
    (:mod:`publish.boundary.values`, by the same rules:
    :func:`llmarchive.archive.boundary_rules.public_text_problem`); a point
    accepted with one would stop every later publication until its private
    record was edited by hand.  So it is refused here, before anything is
    written, naming the field and never a credential's value.
    """
    patterns = [(what, path_pattern(p)) for what, p in machine_paths(paths.home)]
    fields = [(name, derived.get(name)) for name in ("submitted_by", "model_id", "run_id")]
    fields += [found for key, value in header.items() if key != "record_type"
               for found in _outsider_strings(value, str(key))]
    reasons: Reasons = []
    seen: set[tuple[str, str]] = set()
    for name, text in fields:
        if not isinstance(text, str) or (name, text) in seen:
            continue
        seen.add((name, text))
        problem = public_text_problem(text, patterns)
        if problem:
            reasons.append((name.split(".")[0].split("[")[0],
                            f"{terminal(name)} holds {terminal(problem)}; publication never carries one, so a "
                            "point holding it is not accepted"))
    return reasons


def _chain_condition(trials: list[dict]) -> Reasons:
    """Chain hashes on every trial or on none, and an unbroken chain when they are there."""
    chained = [("record_sha256" in t) for t in trials]
    if any(chained) and not all(chained):
        return [("chain", "some trials carry chain hashes and some do not")]
    if all(chained):
        broken = chain.first_break(trials)
        if broken is not None:
            return [("chain", f"the trial chain breaks at trial #{broken}")]
    return []


def _panel_texts(protocol: dict) -> dict[tuple, str]:
    """The panel's prompt text of each (scenario, version)."""
    return {(item["item_id"], v): item["versions"][v] for item in protocol["panel"] for v in VERSIONS}


def _panel_condition(header: dict, trials: list[dict], protocol: dict, texts: dict[tuple, str]) -> Reasons:
    """The declared panel and protocol hashes are the protocol's, and every trial was sent this panel's prompt."""
    reasons: Reasons = []
    if header.get("panel_sha256") and header["panel_sha256"] != protocol["panel_sha256"]:
        reasons.append(("panel_sha256", f"declared {header['panel_sha256']}, the protocol's panel is "
                                        f"{protocol['panel_sha256']}"))
    if header.get("protocol_sha256") and header["protocol_sha256"] != protocol.get("protocol_sha256"):
        reasons.append(("panel_sha256", f"declared protocol_sha256 {header['protocol_sha256']}, the protocol's is "
                                        f"{protocol.get('protocol_sha256')}"))
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
    return reasons


def _size_condition(numbered: list[tuple[int, dict]], protocol: dict) -> Reasons:
    """Each response bounded by the panel's max_tokens."""
    limit = RESPONSE_CHARS_PER_TOKEN * int(protocol.get("generation", {}).get("max_tokens") or 256)
    long = [f"line {number}: {len(t['response_text']):,}" for number, t in numbered
            if isinstance(t.get("response_text"), str) and len(t["response_text"]) > limit]
    if long:
        return [("size", f"{len(long)} response(s) longer than {limit:,} characters ({_few(long, 3)}); the "
                         f"panel asks for at most {limit // RESPONSE_CHARS_PER_TOKEN} tokens, and the cap "
                         f"allows {RESPONSE_CHARS_PER_TOKEN} characters per token")]
    return []


def _grammar_condition(header: dict, trials: list[dict], protocol: dict) -> Reasons:
    """The protocol's grammar, and every decided trial re-extracts to its recorded outcome and token."""
    reasons: Reasons = []
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
    return reasons


def _token_condition(trials: list[dict], protocol: dict) -> Reasons:
    """A token exactly when the outcome is valid, and then one of the protocol's options."""
    bad_tokens = [i for i, t in enumerate(trials) if t.get("outcome") in OUTCOMES and
                  ((t["outcome"] == "valid") != (t.get("token") is not None)
                   or (t["outcome"] == "valid" and t.get("token") not in protocol["options"]))]
    if bad_tokens:
        return [("outcome_distribution", f"{len(bad_tokens)} trial(s) carry a token that does not match "
                                         f"their outcome (first: trial #{bad_tokens[0]})")]
    return []


def _n_condition(header: dict, trials: list[dict], protocol: dict, texts: dict[tuple, str]) -> Reasons:
    """The protocol's frozen n: per version, per scenario and version, and each replicate once."""
    reasons: Reasons = []
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
    return reasons
