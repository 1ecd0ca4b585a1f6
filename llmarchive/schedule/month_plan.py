"""The month's sweep plan: what every pass of a month's sweep would otherwise work out again.

A month's sweep is twelve Dagster partitions, each a pass of
:func:`llmarchive.schedule.sweep.sweep` in a process of its own, and every
pass needs the same three things before it decides anything: the month's
protocols (every protocol file read and hash-checked, the admissions
merged), the headers the budget ladder ranks them among, and whether each
is pre-registered (every manifest and its proof read, once per protocol).
None of it depends on what the month's other passes did; it depends only on
the files below.  So the first pass of the month works it out and writes it
to ``private/sweep_plans/<month>.json`` (a digested file, :func:`llmarchive.archive.jsonio.write_digested`),
keyed by the digest of those inputs, and every later pass reads it back:

* every built protocol file and sealed record (the protocol set);
* the admissions log (which protocols are admitted, in which lane, since when);
* the pre-registration manifests and their proofs (``private/timestamps/``);
* ``budget.json`` (the budget settings) and ``cadence.yaml`` (the cadence);
* the month and the protocol series.

Each pass digests those files' bytes again (a few milliseconds: no parsing,
no canonical JSON), so a changed input — a protocol admitted mid-month, a
new manifest, a proof upgraded, a budget edited — replans, and a torn or
edited plan file is read as no plan (its digest line) and replanned too.
What depends on the month's spend and runs is never planned: the run store,
the earmarks, a bridge or a closed series, the programme's level and the
budget ladder are read by every pass, as the rules of
:mod:`llmarchive.schedule.sweep` say.  A protocol's file is still loaded and
hash-checked by the pass that runs it (:func:`llmarchive.protocols.registry.load_protocol`).
"""
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from llmarchive.archive import ArchivePaths, jsonio, load_cadence
from llmarchive.protocols import registry
from llmarchive.run import preregistration
from panels.build import all_protocol_ids

PLAN_VERSION = 1
"""Part of the inputs' digest: raise it when the plan's fields change, so an older plan is replanned, not misread."""


@dataclass
class MonthPlan:
    """One month's sweep plan: its protocols, the ladder's ranking pool, each protocol's pre-registration."""

    month: str
    inputs: str                      # the digest of the inputs it was planned from
    headers: list[dict]              # registry.sweep_protocols: the month's protocols, with admission date
    all_headers: list[dict]          # every protocol with an n: what the ladder ranks a run among
    preregistration: dict[str, dict]   # protocol_id → {"listed", "reason"}
    # The protocols read while planning, by id (empty when the plan was read back): the pass need not read them again.
    protocols: dict[str, dict] = field(default_factory=dict)


def plan_file(paths: ArchivePaths, month: str) -> Path:
    return paths.private / "sweep_plans" / f"{month}.json"


def _digest(file: Path) -> Optional[str]:
    try:
        return hashlib.sha256(file.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _input_files(paths: ArchivePaths) -> list[Path]:
    files = [paths.protocol_file(pid) for pid in all_protocol_ids()]
    for folder in (paths.sealed, paths.timestamps):
        if folder.is_dir():
            files += sorted(f for f in folder.iterdir() if f.is_file())
    return files + [paths.admissions, paths.budget_file]


def inputs_digest(paths: ArchivePaths, month: str, series: str) -> str:
    """The digest of everything a month's plan is made from: month, series, the input files' bytes, the cadence."""
    named = {str(f.relative_to(paths.home)): _digest(f) for f in _input_files(paths)}
    text = json.dumps({"version": PLAN_VERSION, "month": month, "series": series, "files": named,
                       "cadence": load_cadence().raw}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def month_plan(paths: ArchivePaths, month: str, series: str) -> MonthPlan:
    """The month's plan: read back when its inputs are unchanged, else made and written (:func:`make_plan`)."""
    inputs = inputs_digest(paths, month, series)
    stored = jsonio.read_digested(plan_file(paths, month))
    if stored is not None and stored.get("inputs") == inputs:
        return MonthPlan(month, inputs, stored["headers"], stored["all_headers"], stored["preregistration"])
    return make_plan(paths, month, series, inputs)


def make_plan(paths: ArchivePaths, month: str, series: str, inputs: str) -> MonthPlan:
    """Plan the month from the files (each protocol read once) and write the plan for the month's other passes."""
    loaded = registry.load_all(paths)
    all_headers = registry.headers_with_sealed(paths, loaded)
    headers = registry.sweep_protocols(paths, series, all_headers)
    by_id = {p["protocol_id"]: p for p in loaded}
    prereg = {h["protocol_id"]: preregistration(paths, by_id[h["protocol_id"]]) for h in headers}
    body = {"version": PLAN_VERSION, "month": month, "series": series, "inputs": inputs, "headers": headers,
            "all_headers": [h for h in all_headers if h.get("n")], "preregistration": prereg}
    try:
        jsonio.write_digested(plan_file(paths, month), body)
    except OSError:     # a full disk: this pass goes on with the plan in hand (its run records the write failure)
        pass
    stored = json.loads(json.dumps(body))     # the plan as every later pass reads it back, to the type
    return MonthPlan(month, inputs, stored["headers"], stored["all_headers"], stored["preregistration"],
                     protocols=by_id)
