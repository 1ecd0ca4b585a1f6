"""``status.json`` and ``render_manifest.json``: what was published, from what, and when.

``status.json`` (record type ``status``) is the archive's state in one small
file: the build time (absolute, UTC), the schema hash, the latest run date
and measurement counts per series, the coverage of the commercial series
the instrument's latest self-check, and ``instrument_alarm``: the latched
alarm (since when, from which check, why, how many alarms are
unacknowledged) or null — the site's Home and Results show it from there.
``render_manifest.json`` (record
type ``render_manifest``) lists the sha256 and size of every other published
file — ``status.json`` included (method §13.9: the status sits inside the
render manifest) — plus a digest of the inputs the build read.

Only these two files and the site carry the build time; everything else is
a function of the records alone.
"""
import re
from collections import Counter
from typing import Optional

from llmarchive import __version__
from llmarchive.archive import jobs
from llmarchive.schedule import code_word, day_of
from llmarchive.instrument import CORE_CHANGE, latched_from
from measure.canonical import canonical_sha256, sha256_hex
from measure.schema import GAP_CAUSES, SCHEMA_SHA256, SCHEMA_VERSION, SERIES
from publish.data.sources import ALARM, Inputs, instrument_checks

PRODUCER = f"llmarchive publish (publish.publish_all), llm-archive {__version__}"
STATUS_FILE = "status.json"
MANIFEST_FILE = "render_manifest.json"


def coverage_summary(rows: list[dict], series: Optional[str] = "commercial") -> dict:
    """Ran and gap counts per period and per cause, for one series (the bar counts commercial only).

    ``None`` counts the rows that belong to no series: the instrument's daily jobs.
    """
    periods: dict[str, dict] = {}
    causes: Counter = Counter()
    for row in rows:
        if row.get("series") != series:
            continue
        entry = periods.setdefault(str(row["period"]), {"period": str(row["period"]), "ran": 0, "gap": 0,
                                                          "causes": {}})
        if row.get("status") == "ran":
            entry["ran"] += 1
        else:
            entry["gap"] += 1
            entry["causes"][row.get("cause")] = entry["causes"].get(row.get("cause"), 0) + 1
            causes[row.get("cause")] += 1
    ordered = [periods[k] for k in sorted(periods)]
    return {
        "series": series,
        "periods": ordered,
        "ran": sum(p["ran"] for p in ordered),
        "gap": sum(p["gap"] for p in ordered),
        "gaps_by_cause": {c: causes[c] for c in GAP_CAUSES if causes[c]},
        "first_period": ordered[0]["period"] if ordered else None,
        "last_period": ordered[-1]["period"] if ordered else None,
    }


def instrument_jobs() -> str:
    """The instrument's daily jobs that coverage counts under no series, named as the site names them.

    They are the job table's covered jobs whose coverage rows carry no series
    (``Covered.series`` None), in table order, each in its row's own words.
    """
    return ", ".join(job.says for job in jobs.covered() if job.covered and job.covered.series is None)


def _latest(records: list[dict], fields: tuple[str, ...]) -> Optional[dict]:
    if not records:
        return None
    record = max(records, key=lambda r: (str(r.get("date")), str(r.get("recorded_at"))))
    return {k: record.get(k) for k in fields}


def alarm_words(alarm: dict, inputs: Inputs) -> str:
    """Why an alarm was raised, in public words: its source, date and the check's own verdict.

    The alarm record's ``reason`` is not copied: an instrument that could not
    run writes the error's text there (a model file's path, an exception), so
    the words are composed from structured fields — the day's runtime
    fingerprint status, the rotated protocol and its verdict.
    """
    source = code_word(alarm.get("source")) or "instrument"
    day = day_of(alarm.get("date"))
    if source == "runtime_fingerprint":
        found = [r for r in inputs.by_kind("runtime_fingerprint") if str(r.get("date")) == day]
        status = code_word(found[-1].get("status")) if found else None
        where = re.match(r"prompt ([a-z0-9_]+)\b", str(found[-1].get("first_difference") or "")) if found else None
        return (f"runtime_fingerprint on {day}: " + (f"status {status}" if status else "the check did not pass")
                + (f" (first difference at prompt {where.group(1)})" if where else ""))
    if source == "guard_rotation":
        pid = code_word(alarm.get("protocol_id"))
        found = [r for r in inputs.by_kind("guard_rotation")
                 if str(r.get("date")) == day and (pid is None or r.get("protocol_id") == pid)]
        verdict = code_word(found[-1].get("verdict")) if found else None
        return f"guard_rotation on {day}: " + " ".join(x for x in (pid, verdict or "the check did not pass") if x)
    return f"{source} alarm on {day}"


def public_instrument_detail(kind: str, status: object, detail: Optional[dict], record: dict,
                             inputs: Inputs) -> Optional[dict]:
    """An instrument record's other fields as the database publishes them, without a private reason.

    A check that could not run keeps the error's text (a path, an exception) as its ``reason``, and its
    alarm repeats it: neither is copied; an alarm's reason is composed from public fields
    (:func:`alarm_words`).
    """
    if detail is not None and (status == "unavailable" or kind == "instrument_alarm"):
        detail = {k: v for k, v in detail.items() if k != "reason"}
        if kind == "instrument_alarm":
            detail["reason"] = alarm_words(record, inputs)
    return detail or None


def instrument_summary(inputs: Inputs) -> dict:
    """``status.json``'s ``instrument`` part: each published check's newest record (the fields its row's
    ``Public.latest`` names, None before its first), then the newest alarm."""
    alarms = inputs.by_kind(ALARM)
    latest = _latest(alarms, ("date", "source"))
    if latest is not None:
        newest = max(alarms, key=lambda r: (str(r.get("date")), str(r.get("recorded_at"))))
        latest["reason"] = alarm_words(newest, inputs)
    checks = {job.record.kind: _latest(inputs.by_kind(job.record.kind), job.public.latest)
              for job in instrument_checks() if job.record and job.public}
    return {**checks, "latest_alarm": latest}


def instrument_alarm(inputs: Inputs) -> Optional[dict]:
    """The latched instrument alarm as of the records read, or None.

    Keys: ``since``, ``source``, ``reason``, ``alarm_count``, ``last_date``,
    ``sources``, ``first_alarm_sha256``.  The acknowledgements are the
    ``core_change`` records; a build that did not read that log sees every
    alarm as unacknowledged, which errs on the side of showing the alarm.
    """
    latch = latched_from(inputs.by_kind("instrument_alarm"), inputs.by_kind(CORE_CHANGE))
    if latch is None:
        return None
    first = next((a for a in inputs.by_kind("instrument_alarm")
                  if a.get("record_sha256") == latch.get("first_alarm_sha256")), None)
    # The words are composed from the first open alarm's fields (alarm_words), never its reason.
    return {**latch, "reason": alarm_words(first or {"source": latch.get("source"), "date": latch.get("since")},
                                            inputs)}


def measurement_counts(measurements: list[dict]) -> dict:
    out = {}
    for series in SERIES:
        rows = [m for m in measurements if m["series"] == series]
        out[series] = {
            "total": len(rows),
            "on_curve": sum(1 for m in rows if m["on_curve"]),
            "off_curve": sum(1 for m in rows if not m["on_curve"]),
            "latest_run_date": max((m["run_date"] for m in rows), default=None),
        }
    return out


def status(inputs: Inputs, coverage_rows: list[dict], build_time: str) -> dict:
    summary = coverage_summary(coverage_rows)
    summary.pop("periods")
    return {
        "record_type": "status",
        "schema_version": SCHEMA_VERSION,
        "schema_sha256": SCHEMA_SHA256,
        "producer": PRODUCER,
        "public_path": STATUS_FILE,
        "build_time": build_time,
        "measurements": measurement_counts(inputs.measurements),
        "coverage_commercial": summary,
        "instrument": instrument_summary(inputs),
        "instrument_alarm": instrument_alarm(inputs),
        "render_manifest": MANIFEST_FILE,
    }


def inputs_digest(inputs: Inputs) -> str:
    """One hash over what the build read: each run's measurement and each record log's chain head."""
    return canonical_sha256({
        "measurements": [[m["run_id"], canonical_sha256(m)] for m in inputs.measurements],
        "open_runs": [[r.run_id, sha256_hex(b"".join(r.lines))] for r in inputs.open_runs],
        "protocols": [canonical_sha256(h) for h in inputs.headers],
        "records": {kind: (records[-1].get("record_sha256") if records else None)
                    for kind, records in sorted(inputs.records.items())},
    })


def manifest(file_bytes: dict[str, bytes], inputs: Inputs, build_time: str) -> dict:
    return {
        "record_type": "render_manifest",
        "schema_version": SCHEMA_VERSION,
        "schema_sha256": SCHEMA_SHA256,
        "producer": PRODUCER,
        "build_time": build_time,
        "inputs_sha256": inputs_digest(inputs),
        "files": {name: {"sha256": sha256_hex(data), "bytes": len(data)} for name, data in sorted(file_bytes.items())},
    }
