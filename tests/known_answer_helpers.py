"""Known-answer comparison points for the publication tests, filed the way the intake files any outside run.

:func:`file_known_answer_points` takes each of :mod:`panels.readers`'
known-answer readers (an invariant reader, a framing-sensitive reader, a
reader that ignores the question), writes its complete run of an open
protocol as a submission file — trials shaped as ``llmarchive comparison
run`` writes them, each with the ``prompt_sha256`` of the published prompt
and the reader's model id ``simulated-reader-<name>`` — and submits it
through :func:`llmarchive.comparison.intake.submit`, so the point is checked and
recomputed by the real intake and estimator, nothing hand-made.
"""
import hashlib
import json
from pathlib import Path

from llmarchive.comparison import intake as comparison
from llmarchive.protocols import registry
from llmarchive.archive.paths import ArchivePaths
from measure.schema import VERSIONS
from panels import readers

PROTOCOL_ID = "risky_choice_framing__wording__v0"
SUBMITTER = "the archive's known-answer check"


def submission_lines(paths: ArchivePaths, name: str, protocol_id: str, run_date: str) -> list[str]:
    """The submission file of reader ``name``'s run of ``protocol_id``: a header line, then every trial."""
    protocol = registry.load_protocol(paths, protocol_id)
    texts = {(item["item_id"], v): item["versions"][v] for item in protocol["panel"] for v in VERSIONS}
    model_id = readers.simulated_model_id(name)
    header = {"record_type": comparison.HEADER_TYPE, "protocol_id": protocol_id, "model_id": model_id,
              "run_date": run_date, "submitted_by": SUBMITTER, "panel_sha256": protocol["panel_sha256"],
              "grammar_version": protocol["grammar_version"], "n": protocol["n"]}
    lines = [json.dumps(header)]
    for index, trial in enumerate(readers.trials(readers.KNOWN_ANSWER_READERS[name], protocol)):
        prompt = texts[(trial["item_id"], trial["version"])]
        lines.append(json.dumps({**trial, "run_id": f"known-{name}-{run_date}", "trial_index": index,
                                 "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
                                 "returned_model_id": model_id}))
    return lines


def file_known_answer_points(paths: ArchivePaths, folder: Path, run_date: str = "2026-11-25",
                             today: str = "2026-11-26", protocol_id: str = PROTOCOL_ID) -> dict[str, dict]:
    """File one known-answer point per reader; returns each reader's accepted ``comparison_point`` record."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in readers.KNOWN_ANSWER_READERS:
        file = folder / f"{name}.jsonl"
        file.write_text("\n".join(submission_lines(paths, name, protocol_id, run_date)) + "\n", encoding="utf-8")
        out[name] = comparison.submit(paths, file, today=today).record
    return out
