"""Archives for the publication tests: real built protocols, real trials, real measurements.

:func:`template_archive` builds the 24 protocols once per test session with
the real panels registry (a fixed secret guard seed, so guard wording is
"secret"), promotes the twelve v0 protocols to method §3's lanes, and
:func:`fresh_archive` copies that tree into a test's own home.
:func:`write_run` then writes a complete run folder the way the runner does
— ``run.json``, a hash-chained ``trials.jsonl`` whose prompts are the real
version texts (by hash) and ``measurement.json`` from
``measure.measurement.build`` — and :func:`add_record` appends bookkeeping
records through :mod:`llmarchive.archive.record_logs`.
"""
import hashlib
import shutil
from pathlib import Path
from typing import Mapping, Optional

from llmarchive.archive import ArchivePaths, measurement_run, record_logs, write_json
from measure import chain
from measure.measurement import build
from measure.schema import VERSIONS

SECRET_SEED = "publication-test-guard-seed-0123456789"
V0_LANES = {
    "risky_choice_framing__wording__v0": "open",
    "base_rate_neglect__wording__v0": "open",
}


def template_archive(root: Path) -> ArchivePaths:
    """Build protocols and admissions once; returns the template's paths."""
    from llmarchive.protocols import admissions as lanes
    from llmarchive.protocols import registry

    paths = ArchivePaths(root).ensure()
    paths.panel_seed_file.write_text(SECRET_SEED, encoding="utf-8")
    protocols = registry.build_all(paths)
    known = [p["protocol_id"] for p in protocols]
    for protocol in protocols:
        if protocol["series"] != "v0":
            continue
        lane, twin = lanes.planned_lane(protocol["protocol_id"])
        lanes.promote(paths, protocol, lane, twin, human_reviewed=True, reviewer="test", known_ids=known)
    return paths


def fresh_archive(template: ArchivePaths, home: Path) -> ArchivePaths:
    shutil.copytree(template.home, home)
    return ArchivePaths(home)


def protocol(paths: ArchivePaths, protocol_id: str) -> dict:
    from llmarchive.protocols import registry

    return registry.load_protocol(paths, protocol_id)


def header(p: Mapping) -> dict:
    from llmarchive.protocols import registry

    return registry.header(p)


# A plan maps version -> item -> list of answers per replicate; an answer is
# an option letter (valid) or an outcome name.  Missing entries answer "A".
def healthy_plan(items: list[str]) -> dict:
    """B moves in eight scenarios, A′ does not, C moves a lot: on the curve."""
    plan = {"A": {i: ["A", "B"] for i in items}, "A_prime": {i: ["A", "B"] for i in items},
            "B": {i: ["A", "B"] for i in items}, "C": {i: ["B", "B"] for i in items}}
    for i in items[:8]:
        plan["B"][i] = ["B", "B"]
    return plan


def shifted_plan(items: list[str], moved: int) -> dict:
    """Like :func:`healthy_plan` with ``moved`` scenarios moved in B (a different stability)."""
    plan = healthy_plan(items)
    for i in items:
        plan["B"][i] = ["A", "B"]
    for i in items[:moved]:
        plan["B"][i] = ["B", "B"]
    return plan


def collapsed_plan(items: list[str]) -> dict:
    """Always "A" everywhere: degenerate, not reading, off the curve."""
    return {v: {i: ["A", "A"] for i in items} for v in VERSIONS}


def write_run(paths: ArchivePaths, protocol_record: Mapping, run_id: str, run_date: str, *,
              series: str = "commercial", model_family: str = "claude-sonnet",
              subject_model_id: str = "claude-sonnet-5", returned_model_id: Optional[str] = None,
              plan: Optional[dict] = None, replicate_index: int = 0, response: Optional[str] = None,
              instrument_suspect=False) -> dict:
    """Write a complete run folder and return its measurement."""
    items = list(protocol_record["item_ids"])
    plan = plan or healthy_plan(items)
    n_per = protocol_record["n_per_scenario"]
    folder = paths.run_dir(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    prompts = {item["item_id"]: item["versions"] for item in protocol_record["panel"]}
    lines, prev, trials, index = [], chain.GENESIS, [], 0
    for r in range(n_per):
        for item in items:
            for version in VERSIONS:
                answers = plan.get(version, {}).get(item, ["A"] * n_per)
                answer = answers[r]
                valid = answer in protocol_record["options"]
                text = response if response is not None else (
                    f"Weighing the two options for {item}, I settle on {answer}.\nDECISION: {answer}" if valid else "")
                trial = {
                    "record_type": "trial", "schema_version": 2, "run_id": run_id,
                    "protocol_id": protocol_record["protocol_id"], "item_id": item,
                    "n_items": protocol_record["n_items"], "version": version, "replicate_index": r,
                    "trial_index": index,
                    "prompt_sha256": hashlib.sha256(prompts[item][version].encode("utf-8")).hexdigest(),
                    "outcome": "valid" if valid else answer, "token": answer if valid else None,
                    "reason": "one decision line" if valid else answer,
                    "response_text": text, "stop_reason": "end_turn",
                    "returned_model_id": returned_model_id or subject_model_id,
                    "input_tokens": 400, "output_tokens": 30, "latency_ms": 900, "attempts": 1,
                    "started_at": f"{run_date}T10:00:00Z", "finished_at": f"{run_date}T10:00:01Z",
                }
                linked = chain.link(trial, prev)
                prev = linked["record_sha256"]
                lines.append(chain.to_line(linked))
                trials.append(linked)
                index += 1
    (folder / "trials.jsonl").write_text("".join(lines), encoding="utf-8")
    hdr = header(protocol_record)
    run = {
        "record_type": "experiment_run", "schema_version": 2, "run_id": run_id, "run_date": run_date,
        "protocol_id": protocol_record["protocol_id"], "protocol_header": hdr,
        "panel_sha256": protocol_record["panel_sha256"], "protocol_sha256": protocol_record["protocol_sha256"],
        "lane": protocol_record.get("lane"), "grammar_version": protocol_record["grammar_version"],
        "series": series, "model_family": model_family, "subject_model_id": subject_model_id,
        "returned_model_id": returned_model_id or subject_model_id, "api_surface_sha": "d" * 64,
        "condition_profile": "thinking-disabled", "explicitly_set": {"max_tokens": 256, "thinking": "disabled"},
        "subject": {"provider": "anthropic", "model": subject_model_id, "base_url": "http://127.0.0.1:9/v1"},
        "replicate_index": replicate_index, "instrument_suspect": instrument_suspect, "exploratory": False,
        "status": "complete", "started_at": f"{run_date}T10:00:00Z", "finished_at": f"{run_date}T10:05:00Z",
        "input_tokens": 48000, "output_tokens": 3600, "cost_eur": 1.23,
    }
    write_json(folder / "run.json", run)
    measurement = build(hdr, trials, measurement_run(run))
    write_json(folder / "measurement.json", measurement)
    return measurement


def add_record(paths: ArchivePaths, kind: str, recorded_at: str = "2026-12-01T00:00:00Z", **fields) -> dict:
    return record_logs.append(paths, kind, fields, recorded_at=recorded_at)


def populate(paths: ArchivePaths) -> dict:
    """A small but complete archive: three months of commercial runs, an open-weights run, records of every kind."""
    out: dict = {"measurements": []}
    rcf_open = protocol(paths, "risky_choice_framing__wording__v0")
    rcf_guard = protocol(paths, "risky_choice_framing__anchoring__v0")
    brn_open = protocol(paths, "base_rate_neglect__wording__v0")
    sunk = protocol(paths, "sunk_cost_fallacy__order__v0")
    items = list(rcf_open["item_ids"])
    months = ["2026-10-02", "2026-11-02", "2026-12-02"]
    for month_index, date in enumerate(months):
        tag = date[:7]
        out["measurements"].append(write_run(paths, rcf_open, f"c-{tag}-rcf-wording", date,
                                             plan=shifted_plan(items, 4 + 2 * month_index)))
        out["measurements"].append(write_run(paths, rcf_guard, f"c-{tag}-rcf-anchoring", date,
                                             plan=shifted_plan(items, 5)))
        out["measurements"].append(write_run(paths, brn_open, f"c-{tag}-brn-wording", date))
        out["measurements"].append(write_run(paths, sunk, f"c-{tag}-sunk-order", date,
                                             plan=collapsed_plan(items) if month_index == 2 else None))
        add_record(paths, "coverage", period=tag, job="full_sweep", series="commercial",
                   protocol_id=None, status="ran", cause=None, run_id=f"c-{tag}-rcf-wording", detail="sweep ran")
    add_record(paths, "coverage", period="2026-09", job="full_sweep", series="commercial", protocol_id=None,
               status="gap", cause="before_archive_start", run_id=None, detail="archive started in October")
    out["measurements"].append(write_run(paths, rcf_open, "ow-2026-11-rcf-wording", "2026-11-20",
                                         series="open_weights", model_family="smollm2",
                                         subject_model_id="smollm2-135m"))
    add_record(paths, "runtime_fingerprint", date="2026-12-02", status="pass", digest="e" * 64,
               expected_digest="e" * 64, model_sha256="f" * 64, template_sha256="a" * 64,
               llama_cpp_version="0.3.36", runner_arch="x86_64", n_threads=2, n_batch=512, seed=0)
    add_record(paths, "guard_rotation", date="2026-12-02", protocol_id="sunk_cost_fallacy__default__v0",
               run_id=None, previous_run_id=None, verdict="flat")
    add_record(paths, "subject_fingerprint", date="2026-12-02", subject_model_id="claude-sonnet-5",
               returned_model_id="claude-sonnet-5", correct=24, total=24, items=[])
    add_record(paths, "instrument_alarm", date="2026-11-15", source="runtime_fingerprint",
               reason="digest differed from the expected digest")
    add_record(paths, "subject_model", date="2026-10-01", model_family="claude-sonnet", model_id="claude-sonnet-5",
               previous_model_id=None, declared_by="initial configuration")
    comparison = dict(out["measurements"][0])
    comparison.update({"run_id": "cp-1", "subject_model_id": "other-model-1", "returned_model_id": "other-model-1",
                       "model_family": "other", "run_date": "2026-11-10"})
    add_record(paths, "comparison_point", date="2026-11-12", protocol_id="risky_choice_framing__wording__v0",
               model_id="other-model-1", submitted_by="a test lab", measurement=comparison)
    return out
