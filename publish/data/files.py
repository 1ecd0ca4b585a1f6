"""The published files, declared once: what ``public/`` holds, and everything that follows from it.

:data:`PUBLISHED` is the one table of the files publication writes.  Each
:class:`PublishedFile` gives the file's path under ``public/`` (a file set:
the pattern of its members), its encoding (the MIME type Croissant writes
as ``encodingFormat``), what writes it, its description (Croissant's words
for it), and for a file rendered from the records alone its renderer and
its columns as one Croissant record set.  What reads the table:

* the pipeline (:mod:`publish.pipeline.build`) renders every entry that has
  a renderer, and refuses to publish a file no entry declares
  (:func:`undeclared`);
* Croissant (:mod:`publish.data.croissant`) takes its distribution — every
  file's ``@id``, ``contentUrl``, ``encodingFormat`` and description — and
  the record sets of the rendered files from it, in the table's order;
* the readback (:func:`publish.readback.files.published_problems`) checks a
  copy of ``public/`` against it and the render manifest.

A new published file is therefore one renderer beside the others (in
:mod:`publish.data.csvs` or a module of its own) and one entry here
(:func:`register` adds one for a test).  The renderers stay in their
modules; the file names that other modules read by constant
(:data:`publish.data.csvs.STABILITY_FILE`, :data:`publish.data.status.STATUS_FILE`…)
are the ones the entries use, so a name is still written once.
"""
import fnmatch
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

from measure.schema import BESIDE_MEASUREMENT_FIELDS, MEASUREMENT_FIELDS, OUTCOME_FIELD_DESCRIPTIONS, OUTCOME_FIELDS
from publish.data import changes, csvs, database, open_lane, panels, status
from publish.data.sources import Inputs
from publish.words import PUBLISHED_DESCRIPTIONS, numbers

Column = tuple[str, str, str]
"""One column of a published table: its name, its type label (method §10) and its description."""

Renderer = Callable[[Inputs], bytes]
"""A file rendered from the records the build read, and nothing else (so the same records give the same bytes)."""


@dataclass(frozen=True)
class Records:
    """A file's rows as one Croissant record set: its ``@id``, its description and its columns."""

    id: str
    description: str
    columns: Sequence[Column]


@dataclass(frozen=True)
class PublishedFile:
    """One published file, or one set of files matched by a pattern (``set_id`` given).

    ``croissant``: whether ``croissant.json`` lists it (Croissant describes
    the data, not itself, the database or the site).  ``render``: given for
    a file the pipeline renders from the inputs alone; the others are
    written by their own stage (``writer`` says which).
    """

    name: str
    encoding: str
    writer: str
    description: str
    render: Optional[Renderer] = None
    records: Optional[Records] = None
    croissant: bool = True
    set_id: Optional[str] = None

    def matches(self, path: str) -> bool:
        """Whether ``path`` (relative to ``public/``) is this file, or a member of this file set."""
        return fnmatch.fnmatchcase(path, self.name) if self.set_id is not None else path == self.name


# coverage.csv's columns are text, except when the row was recorded (its period is a day or a month: text).
COVERAGE_TYPES = {"recorded_at": "datetime"}

STABILITY = PublishedFile(
    csvs.STABILITY_FILE, "text/csv", "publish.data.csvs.stability_csv",
    ("One row per measurement: its reading in words, then one column per measurement field, then "
     "the server builds that answered its run; both series."),
    render=lambda inputs: csvs.stability_csv(inputs.measurements),
    records=Records("stability",
                    (f"Measurements ({csvs.STABILITY_FILE}): first what each row can be read as, in words, then every "
                     "measurement field exactly as computed, then the server builds (system_fingerprint) "
                     "that answered its run."),
                    tuple(numbers.READING_COLUMNS)
                    + tuple((n, label, PUBLISHED_DESCRIPTIONS[n]) for n, label in MEASUREMENT_FIELDS)
                    + tuple(BESIDE_MEASUREMENT_FIELDS)))
OUTCOMES = PublishedFile(
    csvs.OUTCOMES_FILE, "text/csv", "publish.data.csvs.outcomes_csv",
    "Every measurement's outcome distribution: one row per run, version and outcome.",
    render=lambda inputs: csvs.outcomes_csv(inputs.measurements),
    records=Records("outcomes", f"Outcome counts ({csvs.OUTCOMES_FILE}).",
                    tuple((n, label, OUTCOME_FIELD_DESCRIPTIONS[n]) for n, label in OUTCOME_FIELDS)))
CHANGES = PublishedFile(
    csvs.CHANGES_FILE, "text/csv", "publish.data.csvs.changes_csv",
    "The change rule between consecutive on-curve measurements of every curve.",
    render=lambda inputs: csvs.changes_csv(changes.change_rows(inputs.measurements, inputs.cells)),
    records=Records("changes", f"Changes between consecutive on-curve measurements ({csvs.CHANGES_FILE}).",
                    tuple(numbers.CHANGE_READING_COLUMNS + changes.CHANGE_COLUMN_SPEC)))
COVERAGE = PublishedFile(
    csvs.COVERAGE_FILE, "text/csv", "publish.data.csvs.coverage_csv",
    "Every scheduled job and period: it ran, or the one cause of its gap from the closed list of causes.",
    render=lambda inputs: csvs.coverage_csv(inputs.coverage_rows),
    records=Records("coverage", f"Coverage of the schedule, one row per job and period ({csvs.COVERAGE_FILE}).",
                    tuple((n, COVERAGE_TYPES.get(n, "text"), csvs.COVERAGE_DESCRIPTIONS[n])
                          for n in csvs.COVERAGE_FIELDS)))
OPEN_LANE = PublishedFile(
    open_lane.file_name("*"), "application/jsonlines", "publish.data.open_lane.files",
    "Every trial of every open-lane run, one JSON object per line, grouped by year",
    set_id="open-lane")
PANELS = PublishedFile(
    panels.file_name("*"), "application/json", "publish.data.panels.files",
    ("Every protocol of the open lane in full, one JSON document per protocol: every "
     "scenario's four versions exactly as sent, the options and frozen settings, "
     "panel_sha256, protocol_sha256 and each prompt's prompt_sha256"),
    set_id="panels")
PANEL_TASKS = PublishedFile(
    f"{panels.PANELS_DIR}/*", "text/plain", "publish.data.panels.files",
    "Beside each open panel, the same panel as an Inspect AI task and as an lm-evaluation-harness task.",
    croissant=False, set_id="panel-tasks")
CROISSANT = PublishedFile("croissant.json", "application/ld+json", "publish.data.croissant.build",
                          "Croissant metadata for the CSV and JSONL files and the open panels.", croissant=False)
DATABASE = PublishedFile(database.DB_FILE, "application/vnd.sqlite3", "publish.data.database.build",
                         "All of it as a read-only SQLite database, served by Datasette.", croissant=False)
SITE = PublishedFile("index.html", "text/html", "publish.site.render.render",
                     "The site: one page per view, every figure from the files above.", croissant=False)
STATUS = PublishedFile(status.STATUS_FILE, "application/json", "publish.data.status.status",
                       "The archive's state in one file.", croissant=False)
MANIFEST = PublishedFile(status.MANIFEST_FILE, "application/json", "publish.data.status.manifest",
                         "The sha256 of every published file and the build time.", croissant=False)

PUBLISHED: list[PublishedFile] = [STABILITY, OUTCOMES, CHANGES, COVERAGE, OPEN_LANE, PANELS, PANEL_TASKS,
                                  CROISSANT, DATABASE, SITE, STATUS, MANIFEST]
"""Every published file, in the order Croissant lists them (a file set's members: its own order)."""


def register(entry: PublishedFile) -> Callable[[], None]:
    """Add ``entry`` to the table (before the files Croissant does not list); return what takes it out again.

    For a test's toy file: the one place a new file is declared is an entry
    in :data:`PUBLISHED`, and this adds one without editing the module.
    """
    if any(existing.name == entry.name for existing in PUBLISHED):
        raise ValueError(f"{entry.name} is already published")
    PUBLISHED.insert(next((i for i, f in enumerate(PUBLISHED) if not f.croissant), len(PUBLISHED)), entry)
    return lambda: PUBLISHED.remove(entry)


def rendered() -> list[PublishedFile]:
    """The entries the pipeline renders from the inputs alone, in the table's order."""
    return [entry for entry in PUBLISHED if entry.render is not None]


def in_croissant() -> list[PublishedFile]:
    """The entries ``croissant.json`` lists, in the table's order."""
    return [entry for entry in PUBLISHED if entry.croissant]


def declared(path: str) -> Optional[PublishedFile]:
    """The entry that declares ``path`` (relative to ``public/``), or None."""
    return next((entry for entry in PUBLISHED if entry.matches(path)), None)


def undeclared(paths: Iterable[str]) -> list[str]:
    """The paths no entry declares, sorted: publication refuses them, so nothing is published unlisted."""
    return sorted(path for path in paths if declared(path) is None)
