"""The open-weights series: the open protocols on the reference model, once per generation.

method §4 runs the ``open_weights`` series once per generation of the tracked
commercial model: the frozen reference model answers every ``open``
protocol, which shows the method reproduces on weights nobody can change.
A *generation* is named by an id — the commercial model id whose arrival
triggered it, or ``embedded-<sha12>`` for a run of the embedded model on its
own — and every run of a generation has the run id
``ow_<generation>_<protocol_id>`` (:func:`llmarchive.archive.run_ids.open_weights_run_id`), so
materialising a generation twice resumes it instead of paying (in CPU time) for it again.  Every run of a
generation is dated by the generation's first run (:func:`first_date`), so
a generation interrupted one day resumes on any later day.

These runs are free and therefore not gated by pre-registration or the
budget (method §3.7); whether each protocol was pre-registered is still
recorded on its run.
"""
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from measure.errors import ArchiveError
from llmarchive.run import RunResult, RunSettings, preregistration, progress as progress_bar, run_protocol
from llmarchive.succession import review
from llmarchive.archive import ArchivePaths, RecordFileError, check_id, open_weights_run_id, store, utc_today
from llmarchive.protocols import registry

SERIES = "open_weights"
# What run_generation is told about the instrument: a value, or how to judge the generation's own date.
SuspectOf = Union[bool, str, Callable[[str, str], Union[bool, str]]]


class OpenWeightsError(ArchiveError, ValueError):
    """An open-weights generation that cannot run; the message says why."""


@dataclass
class GenerationResult:
    generation_id: str
    runs: list[RunResult]

    @property
    def complete(self) -> bool:
        return all(r.complete for r in self.runs)


def generation_id_for_model(model_name: str, model_sha256: str) -> str:
    """The generation id of a reference model on its own: ``<name>-<sha12>``."""
    return check_id(f"{model_name}-{model_sha256[:12]}", "generation id")


def open_protocols(paths: ArchivePaths, protocol_series: str = "v0",
                   only: Optional[Iterable[str]] = None) -> list[dict]:
    """The admitted ``open`` protocols of one protocol series (optionally a subset)."""
    chosen = [p for p in registry.load_all(paths)
              if p.get("lane") == "open" and p.get("status") == "admitted" and p.get("series") == protocol_series]
    if only is not None:
        wanted = list(only)
        known = {p["protocol_id"] for p in chosen}
        unknown = [pid for pid in wanted if pid not in known]
        if unknown:
            raise OpenWeightsError(f"not admitted open protocols of series {protocol_series}: {', '.join(unknown)} "
                                   f"(admitted open: {', '.join(sorted(known)) or 'none'})")
        chosen = [p for p in chosen if p["protocol_id"] in wanted]
    if not chosen:
        raise OpenWeightsError(
            f"no admitted open protocol in series {protocol_series}: promote them first "
            "(`llmarchive panels promote PROTOCOL --lane open --human-reviewed`)")
    return sorted(chosen, key=lambda p: p["protocol_id"])


def first_date(paths: ArchivePaths, generation_id: str, protocol_series: str = "v0") -> Optional[str]:
    """The date a generation's first run started under (None before any run).

    Every run of a generation carries that date, so a generation interrupted
    today resumes tomorrow as the same dated measurement instead of being
    refused by the runner (a run keeps its ``run_date``).
    """
    dates = []
    for protocol in registry.list_protocols(paths):
        if protocol.get("lane") != "open" or protocol.get("series") != protocol_series:
            continue
        try:
            run = store.run_record(paths, open_weights_run_id(generation_id, protocol["protocol_id"]))
        except RecordFileError as exc:
            raise OpenWeightsError(str(exc)) from None
        if run is not None and run.get("generation_id") == generation_id and run.get("run_date"):
            dates.append(str(run["run_date"]))
    return min(dates) if dates else None


def run_generation(paths: ArchivePaths, generation_id: str, subject_for: Callable[[int], Any], *,
                   protocol_series: str = "v0", only: Optional[Sequence[str]] = None,
                   run_date: Optional[str] = None, model_family: Optional[str] = None,
                   instrument_suspect: SuspectOf = False, max_tokens: Optional[int] = None,
                   progress: Optional[Callable] = None) -> GenerationResult:
    """Run (or resume) every open protocol of a generation on the reference model.

    ``subject_for(max_tokens)`` returns the reference subject for a
    protocol's frozen ``max_tokens``; the caller keeps one instance per
    value, so the model loads once per step, not once per call.
    ``instrument_suspect`` is a value for every run, or a callable
    ``(run_date, run_id) -> value`` (the CLI and Dagster pass
    :func:`llmarchive.instrument.verdict.suspect_value` bound to the
    archive): it is asked with the date the generation's runs carry — the
    first run's, for a generation resumed on a later day — because a
    measurement is judged by the instrument of its own day, never of the
    day it happened to be resumed on.  A
    ``max_tokens`` override (for quick trials) makes every run exploratory:
    it is recorded, and the measurements never reach a curve.
    """
    check_id(generation_id, "generation id")
    protocols = open_protocols(paths, protocol_series, only)
    first = first_date(paths, generation_id, protocol_series)
    if first and run_date and run_date != first:
        raise OpenWeightsError(f"generation {generation_id} started on {first}; its runs keep that date and "
                               f"cannot be run as of {run_date}")
    date = first or run_date or utc_today()
    results = []
    # A terminal bar when the caller's environment asks for one (make demo runs this in
    # process through Dagster; see llmarchive.run.progress), besides the caller's own callback.
    with progress_bar.from_env() as bar:
        progress = progress_bar.both(progress, bar if bar.active else None)
        for protocol in protocols:
            subject = subject_for(max_tokens or protocol["generation"]["max_tokens"])
            prereg = preregistration(paths, protocol)
            family = model_family or getattr(subject, "name", None)
            run_id = open_weights_run_id(generation_id, protocol["protocol_id"])
            settings = RunSettings(
                run_id=run_id,
                run_date=date,
                series=SERIES,
                model_family=family,
                concurrency=getattr(subject, "workers", 1),
                instrument_suspect=(instrument_suspect(date, run_id)
                                    if callable(instrument_suspect) else instrument_suspect),
                # A model of the tracked commercial family nobody declared stays off every curve here too.
                exploratory=review.mark_held(paths, subject.subject_model_id, family),
                allow_generation_override=max_tokens is not None,
                extra={"generation_id": generation_id, "preregistration": prereg},
            )
            results.append(run_protocol(paths, protocol, subject, settings, progress=progress))
    return GenerationResult(generation_id, results)


class SubjectCache:
    """One reference subject per ``max_tokens`` value, built on first use."""

    def __init__(self, factory: Callable[[int], Any]) -> None:
        self._factory = factory
        self._subjects: dict[int, Any] = {}

    def __call__(self, max_tokens: int) -> Any:
        if max_tokens not in self._subjects:
            self._subjects[max_tokens] = self._factory(max_tokens)
        return self._subjects[max_tokens]
