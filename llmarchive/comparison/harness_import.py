"""``llmarchive comparison import LOG``: which harness wrote the log, and its importer.

One command turns any supported harness log into a submission; the kind of
log is told by the file (:func:`log_kind`) unless ``--format`` names it, and
each kind has one importer in :data:`IMPORTERS`, a function
``(log_path, panel_doc, *, submitted_by) -> ImportedRun`` that reads the log
with the harness's own reader and raises
:class:`llmarchive.comparison.log_submission.LogImportRefused` with every
reason.  Once the kind is told, the output path is checked before anything
else is read, by the one rule for a file a command writes
(:class:`llmarchive.archive.outputs.OutputFile`: never the log, the panel
file or another file the import reads, never a file of the archive home,
an existing file only when asked), then the panel file is verified (an
edited panel is refused before the log is read), and the submission is
written only when nothing was refused — its header held to the checks a
submitted header is held to (:func:`llmarchive.comparison.submission.header_problems`),
so an import never writes what ``comparison submit`` would refuse as
malformed.

Kinds: ``inspect`` — an Inspect AI eval log (``.eval``, or a ``.json`` log
whose top level carries ``eval`` and ``samples``;
:mod:`llmarchive.comparison.inspect_log`).  A new harness joins with one
entry in :data:`IMPORTERS` and one rule in :func:`log_kind`.
"""
from pathlib import Path
from typing import Callable, Mapping, Optional, Union

from llmarchive.archive import OutputFile
from llmarchive.comparison.inspect_log import KIND as INSPECT, submission_from_inspect_log
from llmarchive.comparison.log_bounds import LogTooLarge, read_json_log
from llmarchive.comparison.lmeval_log import KIND as LM_EVAL, is_lm_eval_log, results_file, submission_from_lm_eval
from llmarchive.comparison.log_submission import ImportedRun, LogImportRefused, write_submission
from llmarchive.comparison.submission import header_problems
from llmarchive.protocols import load_panel_file
from measure.errors import ArchiveError

Importer = Callable[..., ImportedRun]
IMPORTERS: dict[str, Importer] = {INSPECT: submission_from_inspect_log, LM_EVAL: submission_from_lm_eval}
"""Kind of log → its importer (see the module docstring for the contract)."""


class LogKindError(ArchiveError, ValueError):
    """A log whose kind cannot be told, or a kind no importer reads: one line, nothing written."""


def _json_head(path: Path) -> Optional[dict]:
    """The top level of a JSON log (None for a file that is not a JSON object); a file over the bounds of a log
    read whole (:func:`llmarchive.comparison.log_bounds.read_json_log`) is refused before it is parsed."""
    try:
        value = read_json_log(path)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        if isinstance(exc, LogTooLarge):
            raise
        return None
    return value if isinstance(value, dict) else None


def log_kind(path: Path) -> str:
    """Which harness wrote ``path``: by its suffix, and for ``.json`` by its top-level keys."""
    path = Path(path)
    if is_lm_eval_log(path):
        return LM_EVAL
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return INSPECT
    if suffix == ".json":
        head = _json_head(path)
        if head is not None and "eval" in head and "samples" in head:
            return INSPECT
    raise LogKindError(f"{path}: cannot tell which harness wrote this log; give --format "
                       f"({', '.join(sorted(IMPORTERS))}) — an Inspect AI log is a .eval file (or its .json form), an lm-eval "
                       "log the samples_<task>_<date>.jsonl file written by --log_samples")


def inputs(kind: str, log_path: Path, panel_file: Path) -> list[tuple[str, Optional[Path]]]:
    """Every file an import of ``kind`` reads, as ``(what it is, path)``: what its output may never replace."""
    read = [("the log being imported", Path(log_path)), ("the --panel file", Path(panel_file))]
    if kind == LM_EVAL:
        read.append(("the results file beside the log", results_file(Path(log_path))))
    return read


def import_log(log_path: Path, panel_file: Path, out: Union[OutputFile, Path], *, kind: Optional[str] = None,
               submitted_by: Optional[str] = None) -> ImportedRun:
    """Check ``out``, verify the panel, read the log with its harness's importer, and write ``out``; every
    refusal at once.  ``out`` given as a bare path may replace a file, never an input (:meth:`OutputFile.of`)."""
    kind = kind or log_kind(Path(log_path))
    importer = IMPORTERS.get(kind)
    if importer is None:
        raise LogKindError(f"--format {kind!r}: no importer; one of {', '.join(sorted(IMPORTERS))}")
    target = OutputFile.of(out).reading(*inputs(kind, log_path, panel_file))
    target.check()                             # refused before anything is read
    doc: Mapping = load_panel_file(Path(panel_file))
    made = importer(Path(log_path), doc, submitted_by=submitted_by)
    if not isinstance(made, ImportedRun):      # an importer may hand back (header, trials)
        made = ImportedRun(*made)
    malformed = [reason for _, reason in header_problems(made.header)]
    if malformed:
        raise LogImportRefused(malformed, Path(log_path))
    write_submission(target, made)
    return made
