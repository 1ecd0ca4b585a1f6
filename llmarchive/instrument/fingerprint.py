"""The runtime fingerprint (method §7): twelve fixed prompts, compared for exact equality.

Every day the reference model answers the twelve prompts of
:mod:`llmarchive.instrument.prompts` greedily, from an empty cache, with a
fixed seed, and the top-5 log-probabilities of every generated token are
recorded.  Their sha256 (canonical JSON of token ids and logprobs, with the
prompt list's own hash) is the day's **digest**.

The digest is compared for exact equality with the **expectation** stored
for the *runtime* it ran on — the key is the model file's sha256,
llama-cpp-python's version, the chat template's sha256, ``runner_arch``,
threads and batch.  Expectations live privately under
``private/instrument/expectations/<sha256 of the key>.json``, with the full
token data, so a mismatch can say which prompt and which token moved.

Outcomes, each one ``runtime_fingerprint`` record carrying every runtime
detail method §7 names:

``pass``         the digest equals the expectation;
``fail``         it does not → an ``instrument_alarm`` naming the first difference;
                 or no expectation exists for this runtime while one exists for
                 another: **a new runtime key is an alarm like any other**;
``unavailable``  the fingerprint could not run (missing file, wrong sha256 —
                 for a model given by path alone, a sha256 that is not the one
                 its baseline was made on, :mod:`llmarchive.instrument.model_pin`
                 — a llama.cpp error) → an ``instrument_alarm``: not running
                 counts as failing;
``established``  the archive's very first fingerprint: its digest becomes the
                 expectation, and the record says so.  Nothing was compared,
                 so the day does not count as passing.

A failing digest is kept as the **candidate** for its runtime
(``expectations/candidates/``); a later passing day of that runtime
discards it (the difference was transient).  Only a human acknowledgement
(``llmarchive instrument acknowledge``, a ``core_change`` record) turns a
candidate into the expectation — nothing the daily cycle does on its own
can write a new expectation once the first exists.
"""
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional

from llmarchive.archive import ArchivePaths, RecordFileError, read_json, record_logs as records, write_json
from llmarchive.instrument.engine import Generated, LogprobEngine
from llmarchive.instrument.model_pin import expectations_dir, pin_options, refuse_changed
from llmarchive.instrument.prompts import (FINGERPRINT_MAX_TOKENS, FINGERPRINT_PROMPTS, PROMPTS_SHA256,
                                           TOP_LOGPROBS)
from llmarchive.instrument import scripted
from llmarchive.instrument.verdict import raise_alarm
from measure.canonical import canonical_sha256
from measure.errors import ArchiveError

RUNTIME_KEY_FIELDS = ("model_sha256", "llama_cpp_version", "template_sha256", "runner_arch", "n_threads", "n_batch")
STATUSES = ("pass", "fail", "unavailable", "established")

EngineFactory = Callable[[], Any]


class InstrumentError(ArchiveError, RuntimeError):
    """An instrument step that cannot proceed; the message says why."""


def runtime_key(runtime: dict) -> dict:
    """The fields an expectation is stored under."""
    return {k: runtime.get(k) for k in RUNTIME_KEY_FIELDS}


def digest_of(results: list[Generated]) -> str:
    """sha256 over the prompt list's hash and every step's token id and top-5 logprobs."""
    return canonical_sha256({"prompts_sha256": PROMPTS_SHA256, "results": [g.to_json() for g in results]})


def _expectation_file(paths: ArchivePaths, key: dict) -> Path:
    return expectations_dir(paths) / f"{canonical_sha256(key)}.json"


def candidates_dir(paths: ArchivePaths) -> Path:
    """Failing digests waiting for a human decision, one file per runtime key."""
    return expectations_dir(paths) / "candidates"


def superseded_dir(paths: ArchivePaths) -> Path:
    """Expectations an acknowledgement replaced, kept for the record."""
    return expectations_dir(paths) / "superseded"


def _candidate_file(paths: ArchivePaths, key: dict) -> Path:
    return candidates_dir(paths) / f"{canonical_sha256(key)}.json"


def _expectation_body(key: dict, digest: str, date: str, runtime: dict, results: list[Generated]) -> dict:
    return {"runtime_key": key, "runtime_key_sha256": canonical_sha256(key), "digest": digest,
            "prompts_sha256": PROMPTS_SHA256, "established_on": date, "runtime": runtime,
            "results": [g.to_json() for g in results], "texts": {g.prompt_id: g.text for g in results}}


def pending_candidates(paths: ArchivePaths) -> list[dict]:
    """Every stored candidate (a digest that differed, or a new runtime's), oldest runtime key first."""
    folder = candidates_dir(paths)
    out = []
    for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            out.append(read_json(file))
        except RecordFileError:
            continue
    return out


def install_candidate(paths: ArchivePaths, candidate: dict, accepted_by: str) -> None:
    """Make ``candidate`` its runtime's expectation (the old one moves to ``superseded/``); acknowledgement only."""
    key = candidate["runtime_key"]
    target = _expectation_file(paths, key)
    if target.exists():
        old = read_json(target)
        if old.get("digest") == candidate.get("digest"):
            _candidate_file(paths, key).unlink(missing_ok=True)
            return
        write_json(superseded_dir(paths) / f"{target.stem}_{old.get('established_on')}.json", old)
    write_json(target, {**candidate, "accepted_by": accepted_by})
    _candidate_file(paths, key).unlink(missing_ok=True)


def load_expectation(paths: ArchivePaths, key: dict) -> Optional[dict]:
    file = _expectation_file(paths, key)
    if not file.exists():
        return None
    try:
        return read_json(file)
    except RecordFileError as exc:
        raise InstrumentError(f"the stored expectation cannot be read: {exc}") from None


def other_expectations(paths: ArchivePaths, key: dict) -> list[dict]:
    """Expectations stored for runtimes other than ``key`` (a changed runtime)."""
    folder = expectations_dir(paths)
    if not folder.is_dir():
        return []
    mine = _expectation_file(paths, key).name
    out = []
    for file in sorted(folder.glob("*.json")):
        if file.name != mine:
            try:
                out.append(read_json(file))
            except RecordFileError:
                continue
    return out


def first_difference(expected: list[dict], got: list[dict]) -> str:
    """Where two fingerprints part: prompt, step, and what changed."""
    for want, have in zip(expected, got):
        pid = want.get("prompt_id")
        if want == have:
            continue
        for step, (w, h) in enumerate(zip(want["tokens"], have["tokens"])):
            if w == h:
                continue
            if w[0] != h[0]:
                return f"prompt {pid}, token {step}: generated token id {h[0]} where {w[0]} was expected"
            for rank, (wi, hi) in enumerate(zip(w[1], h[1])):
                if wi != hi:
                    return (f"prompt {pid}, token {step}, top-{rank + 1}: (token {hi[0]}, logprob {hi[1]!r}) "
                            f"where (token {wi[0]}, logprob {wi[1]!r}) was expected")
            return f"prompt {pid}, token {step}: the top-{TOP_LOGPROBS} list differs in length"
        if len(want["tokens"]) != len(have["tokens"]):
            return f"prompt {pid}: {len(have['tokens'])} tokens generated where {len(want['tokens'])} were expected"
        return f"prompt {pid}: finish reason {have.get('finish_reason')!r} where {want.get('finish_reason')!r} was expected"
    if len(expected) != len(got):
        return f"{len(got)} prompts answered where {len(expected)} were expected"
    return "the digests differ"


@dataclass(frozen=True)
class ReferenceEngineFactory:
    """Builds the fingerprint's engine from reference options; :meth:`pinned` pins a path-only model first."""

    model: str = "smollm2-135m"
    model_path: Optional[str] = None
    model_sha256: Optional[str] = None
    n_threads: int = 1
    n_batch: int = 512
    pin_source: Optional[str] = None

    def pinned(self, paths: ArchivePaths) -> "ReferenceEngineFactory":
        """The same factory, a model given by path alone pinned to the instrument's baseline (model_pin)."""
        options = pin_options(paths, {"model": self.model, "model_path": self.model_path,
                                      "model_sha256": self.model_sha256})
        return replace(self, model_sha256=options.get("model_sha256"), pin_source=options.get("pin_source"))

    def __call__(self) -> LogprobEngine:
        return LogprobEngine(FINGERPRINT_MAX_TOKENS, model=self.model, model_path=self.model_path,
                             model_sha256=self.model_sha256, n_threads=self.n_threads, n_batch=self.n_batch,
                             pin_source=self.pin_source)


def default_engine_factory(model: str = "smollm2-135m", model_path: Optional[str] = None,
                           model_sha256: Optional[str] = None, n_threads: int = 1,
                           n_batch: int = 512) -> EngineFactory:
    """The engine of the reference model named ``model``; a ``scripted:`` name is a drill's scripted engine
    (:mod:`llmarchive.instrument.scripted`), which the day's record then names."""
    if scripted.is_scripted(model):
        return scripted.engine_factory(model)
    return ReferenceEngineFactory(model, model_path, model_sha256, n_threads, n_batch)


@dataclass(frozen=True)
class FingerprintOutcome:
    record: dict
    alarm: Optional[dict]

    @property
    def status(self) -> str:
        return self.record["status"]


def _record(paths: ArchivePaths, date: str, status: str, digest: Optional[str], expected: Optional[str],
            runtime: dict, **extra: Any) -> dict:
    fields = {
        "date": date,
        "status": status,
        "digest": digest,
        "expected_digest": expected,
        "model_sha256": runtime.get("model_sha256"),
        "template_sha256": runtime.get("template_sha256"),
        "llama_cpp_version": runtime.get("llama_cpp_version"),
        "runner_arch": runtime.get("runner_arch"),
        "n_threads": runtime.get("n_threads"),
        "n_batch": runtime.get("n_batch"),
        "seed": runtime.get("seed"),
        "n_ctx": runtime.get("n_ctx"),
        "model_file": runtime.get("model_file"),
        "container_digest": runtime.get("container_digest"),
        "prompts_sha256": PROMPTS_SHA256,
        "runtime_key_sha256": canonical_sha256(runtime_key(runtime)) if runtime else None,
    }
    if runtime.get("scripted"):
        fields["scripted"] = runtime["scripted"]     # never a silent stand-in for the reference model
    fields.update(extra)
    return records.append(paths, "runtime_fingerprint", fields)


# What a progress report names the fingerprint's prompts by (llmarchive.run.progress labels a bar by protocol_id).
PROGRESS_LABEL = "runtime fingerprint"
# The model file, llama.cpp or the runtime failed: a failed fingerprint (recorded, alarmed), not a crash.
# Anything else is a bug in this code and keeps its traceback.
_RUN_FAILURES = (ArchiveError, OSError, RuntimeError, ValueError, MemoryError)


def _unavailable(paths: ArchivePaths, date: str, runtime: dict, exc: BaseException) -> "FingerprintOutcome":
    reason = f"the runtime fingerprint could not run: {type(exc).__name__}: {exc}"
    record = _record(paths, date, "unavailable", None, None, runtime, reason=reason, established=False)
    return FingerprintOutcome(record, raise_alarm(paths, date, "runtime_fingerprint", reason, runtime=runtime))


def runtime_fingerprint(paths: ArchivePaths, date: str, engine_factory: Optional[EngineFactory] = None,
                        progress: Optional[Callable[[int, int, dict], None]] = None) -> FingerprintOutcome:
    """Run the twelve prompts, compare with the runtime's expectation, record the outcome.

    ``progress(done, total, info)`` is called after each prompt (the
    runner's progress signature; ``info`` names :data:`PROGRESS_LABEL` and
    the prompt), so a console can show the minutes a slow machine takes.
    """
    factory = engine_factory or default_engine_factory()
    runtime: dict = {}
    try:
        if isinstance(factory, ReferenceEngineFactory):
            factory = factory.pinned(paths)    # a model given by path alone: its file checked before the load
        engine = factory()
        refuse_changed(paths, engine)          # an engine built elsewhere from such a file: before any prompt
        runtime = dict(engine.runtime())
    except _RUN_FAILURES as exc:
        return _unavailable(paths, date, runtime, exc)
    results: list[Generated] = []
    for pid, prompt in FINGERPRINT_PROMPTS:
        try:
            results.append(engine.generate(pid, prompt, FINGERPRINT_MAX_TOKENS, TOP_LOGPROBS))
        except _RUN_FAILURES as exc:
            return _unavailable(paths, date, runtime, exc)
        # Outside the try: a progress report that fails is never the instrument failing.
        if progress is not None:
            progress(len(results), len(FINGERPRINT_PROMPTS), {"protocol_id": PROGRESS_LABEL, "prompt_id": pid,
                                                              "unit": "prompts"})

    digest = digest_of(results)
    data = [g.to_json() for g in results]
    key = runtime_key(runtime)
    key_sha = canonical_sha256(key)
    expectation = load_expectation(paths, key)
    if expectation is None:
        previous = other_expectations(paths, key)
        if not previous:
            write_json(_expectation_file(paths, key), _expectation_body(key, digest, date, runtime, results))
            reason = (f"first fingerprint of this archive: its digest is now the expectation for runtime "
                      f"{key_sha[:12]}; nothing was compared today")
            record = _record(paths, date, "established", digest, None, runtime, reason=reason, established=True)
            return FingerprintOutcome(record, None)
        changed = sorted({k for p in previous for k in RUNTIME_KEY_FIELDS
                          if (p.get("runtime_key") or {}).get(k) != key.get(k)})
        write_json(_candidate_file(paths, key), _expectation_body(key, digest, date, runtime, results))
        reason = (f"new runtime key {key_sha[:12]}: no accepted expectation for this runtime "
                  f"({', '.join(changed)} differ from the earlier expectation); its digest is kept as a candidate "
                  f"until a human core_change accepts it")
        record = _record(paths, date, "fail", digest, None, runtime, reason=reason, established=False,
                         first_difference=f"the runtime changed: {', '.join(changed)}")
        return FingerprintOutcome(record, raise_alarm(paths, date, "runtime_fingerprint", reason, runtime=runtime))

    if expectation.get("digest") == digest:
        _candidate_file(paths, key).unlink(missing_ok=True)   # an earlier difference did not last
        record = _record(paths, date, "pass", digest, expectation["digest"], runtime,
                         reason=f"identical to the expectation established on {expectation.get('established_on')}",
                         established=False)
        return FingerprintOutcome(record, None)

    where = first_difference(expectation.get("results") or [], data)
    write_json(_candidate_file(paths, key), _expectation_body(key, digest, date, runtime, results))
    reason = f"runtime fingerprint differs from the expectation of {expectation.get('established_on')}: {where}"
    record = _record(paths, date, "fail", digest, expectation.get("digest"), runtime, reason=reason,
                     established=False, first_difference=where)
    return FingerprintOutcome(record, raise_alarm(paths, date, "runtime_fingerprint", reason, runtime=runtime))
