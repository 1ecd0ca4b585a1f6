"""Reading a run folder: the experiment_run record, its trials, its measurement.

A run folder (``private/experiments/<run_id>/``) holds ``run.json`` (the
``experiment_run`` record, which embeds the protocol's text-free header as
``protocol_header``), ``trials.jsonl`` (the hash-chained trial log) and,
once the run is complete, ``measurement.json``.
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from llmarchive.jsonio import RecordFileError, read_json, read_jsonl


@dataclass
class RunFolder:
    path: Path
    run: dict
    trials: list[dict]
    measurement: Optional[dict]

    @property
    def protocol_header(self) -> dict:
        header = self.run.get("protocol_header")
        if not isinstance(header, dict):
            raise RecordFileError(f"{self.path / 'run.json'}: no protocol_header object")
        return header


def load_run(path: Path) -> RunFolder:
    """Load a run folder, naming the file at fault on any problem."""
    path = Path(path)
    if not path.is_dir():
        raise RecordFileError(f"{path}: not a run folder")
    run = read_json(path / "run.json")
    trials = [t for t in read_jsonl(path / "trials.jsonl") if t.get("record_type") == "trial"]
    measurement_file = path / "measurement.json"
    measurement = read_json(measurement_file) if measurement_file.exists() else None
    return RunFolder(path, run, trials, measurement)


def measurement_run(run: dict) -> dict:
    """The fields of an experiment_run that :func:`measure.measurement.build` reads."""
    keys = ("run_id", "run_date", "subject_model_id", "series", "model_family", "returned_model_id",
            "api_surface_sha", "condition_profile", "replicate_index", "instrument_suspect", "exploratory")
    return {k: run.get(k) for k in keys if k in run}
