"""The instrument's pin for a reference model given by path alone (method §7).

A named reference model has its sha256 pinned in code
(:data:`llmarchive.subjects.models.PINS`), and a file given with
``--model-sha256`` is checked against that; both are checked before every
load.  A file given by path under a name no pin knows, without a sha256, has
nothing to be checked against: its sha256 is only computed and recorded.
For the instrument that is not enough — a different file put at the same
path would be measured as if nothing had changed, and the guard rotation
would even take its first result as a fresh baseline.

So the instrument pins such a model itself, to **the sha256 its accepted
baseline was made on**: the newest runtime-fingerprint expectation whose
runtime names the same model (an accepted expectation, never a candidate),
or, before any fingerprint of that model, its newest accepted guard-rotation
baseline.  :func:`pin_options` puts that sha256 into the options the model
is built from, so the file is refused before it is loaded, naming both
hashes; :func:`refuse_changed` makes the same check of a subject someone
else loaded (the Dagster resource builds the rotation's subject), before
any call.  The first run of a model has no baseline: it is the baseline.

A deliberate change of file goes the way of any runtime change: name its
sha256 (``--model-sha256``, ``LLMARCHIVE_REFERENCE_MODEL_SHA256``); its new
runtime key is an alarm, and a person's acknowledgement makes it the
expectation — after which the path alone is pinned to the new file.
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from llmarchive.archive import ArchivePaths, RecordFileError, read_json, record_logs as records
from llmarchive.instrument.verdict import accepted_rotation_runs
from llmarchive.subjects import models
from measure.errors import ArchiveError

HOW_TO_CHANGE = ("to change the reference model on purpose, give its sha256 (--model-sha256 or "
                 "LLMARCHIVE_REFERENCE_MODEL_SHA256) and acknowledge the alarm its new runtime raises")


class ModelChanged(ArchiveError, RuntimeError):
    """A reference model whose sha256 is not the one the instrument's baseline was made on."""


@dataclass(frozen=True)
class Baseline:
    """The sha256 the instrument's accepted baseline of a model was made on, and which baseline that is."""

    sha256: str
    source: str


def expectations_dir(paths: ArchivePaths) -> Path:
    """Where the runtime fingerprint's accepted expectations live (candidates and superseded ones below it)."""
    return paths.private / "instrument" / "expectations"


def _fingerprint_baselines(paths: ArchivePaths, model_name: str) -> list[tuple[str, str, str]]:
    folder = expectations_dir(paths)
    found = []
    for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            body = read_json(file)
        except RecordFileError:
            continue
        runtime = body.get("runtime") if isinstance(body, dict) else None
        if isinstance(runtime, dict) and runtime.get("model_name") == model_name and runtime.get("model_sha256"):
            day = str(body.get("established_on"))
            found.append((day, str(runtime["model_sha256"]),
                          f"the runtime fingerprint expectation established on {day}"))
    return found


def _rotation_baselines(paths: ArchivePaths, model_name: str) -> list[tuple[str, str, str]]:
    accepted = accepted_rotation_runs(paths)
    found = []
    for r in records.read(paths, "guard_rotation"):
        runtime = r.get("runtime") if isinstance(r.get("runtime"), dict) else {}
        if (runtime.get("model_name") == model_name and r.get("model_sha256")
                and (r.get("verdict") == "baseline" or r.get("run_id") in accepted)):
            found.append((str(r.get("date")), str(r["model_sha256"]),
                          f"the guard rotation baseline of {r.get('date')} (run {r.get('run_id')})"))
    return found


def baseline(paths: ArchivePaths, model_name: Optional[str]) -> Optional[Baseline]:
    """The sha256 the instrument's newest accepted baseline of ``model_name`` was made on, or None (none yet)."""
    if not model_name:
        return None
    found = _fingerprint_baselines(paths, model_name) or _rotation_baselines(paths, model_name)
    if not found:
        return None
    _, sha256, source = max(found, key=lambda f: f[0])
    return Baseline(sha256, source)


def unpinned(options: Mapping[str, Any]) -> bool:
    """Reference options naming a file by path alone: no sha256 given and a name no pin knows."""
    name = options.get("model") or models.DEFAULT_MODEL
    return bool(options.get("model_path")) and not options.get("model_sha256") and name not in models.PINS


def pin_options(paths: ArchivePaths, options: Mapping[str, Any]) -> dict:
    """``options`` with a model given by path alone pinned to its baseline's sha256 (``pin_source`` says whose)."""
    out = dict(options)
    if not unpinned(out):
        return out
    found = baseline(paths, out.get("model") or models.DEFAULT_MODEL)
    if found is not None:
        out["model_sha256"] = found.sha256
        out["pin_source"] = f"the sha256 the instrument's baseline was made on: {found.source}; {HOW_TO_CHANGE}"
    return out


def refuse_changed(paths: ArchivePaths, subject: Any) -> None:
    """Refuse a loaded reference model that nothing pinned and whose sha256 is not its baseline's (before any call).

    A subject that is not a reference model, or whose file was checked
    against a pin or a given sha256 (``pin_source`` set), is left alone.
    """
    if not hasattr(subject, "pin_source") or subject.pin_source is not None:
        return
    runtime = subject.runtime()
    found = baseline(paths, runtime.get("model_name"))
    got = runtime.get("model_sha256")
    if found is not None and got != found.sha256:
        raise ModelChanged(f"reference model {runtime.get('model_name')} ({runtime.get('model_file')}) has sha256 "
                           f"{got}, but the instrument's baseline was made on {found.sha256} ({found.source}); "
                           f"refusing it before any call: {HOW_TO_CHANGE}")
