"""``croissant.json``: MLCommons Croissant 1.0 metadata for the published files.

It describes ``stability.csv`` (the measurement fields, then the server builds beside
them), ``outcomes.csv``, ``changes.csv``, ``coverage.csv``,
the ``open-lane/*.jsonl`` file set and the ``panels`` file set (every open
protocol in full, ``panels/<protocol_id>.json``, one record per scenario): one ``cr:Field`` per column, its data type read off the type label
the schema already carries (method §10): ``pct`` / ``unit_interval`` (and a
trial's ``number``) → ``sc:Float``, ``int`` / ``count`` → ``sc:Integer``,
``bool`` → ``sc:Boolean``, a trial's timestamps → ``sc:DateTime``, everything
else → ``sc:Text``.  File objects
carry their sha256, so the metadata pins the exact bytes it describes.

The archive grows every month, so the dataset is marked live
(``isLiveDataset``) and versioned by its publication date, written as a
calendar version ``YYYY.M.D`` (the form Croissant's semantic-version check
accepts): two publications of different days are two versions, and the
file hashes say exactly which bytes each one describes.  ``changes.csv``
(the change rule's rows, :mod:`publish.data.changes`) and ``coverage.csv`` (every
scheduled job and period, ran or its one gap cause) are described beside the
measurements.  A description is written for a reader of the files: it names
columns and files, never a constant of this code.
"""
from typing import Optional

from llmarchive import __version__
from llmarchive.archive.dates import parse_date
from measure.canonical import sha256_hex
from measure.schema import (BESIDE_MEASUREMENT_FIELDS, MEASUREMENT_FIELDS, OUTCOME_FIELD_DESCRIPTIONS, OUTCOME_FIELDS,
                            TRIAL_DESCRIPTIONS)
from publish.data import changes, csvs, open_lane
from publish.words import numbers, wording
from publish.words.fields import PUBLISHED_DESCRIPTIONS
from publish.data.open_lane import OpenRun

CROISSANT_TYPES = {"pct": "sc:Float", "unit_interval": "sc:Float", "number": "sc:Float", "int": "sc:Integer",
                   "count": "sc:Integer", "bool": "sc:Boolean", "datetime": "sc:DateTime"}

# coverage.csv's columns are text, except when the row was recorded (its period is a day or a month: text).
COVERAGE_TYPES = {"recorded_at": "datetime"}

CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}


def data_type(label: str) -> str:
    return CROISSANT_TYPES.get(label, "sc:Text")


def _field(record_set: str, name: str, label: str, description: str, source: dict) -> dict:
    return {
        "@type": "cr:Field",
        "@id": f"{record_set}/{name}",
        "name": name,
        "description": description,
        "dataType": data_type(label),
        "source": {**source, "extract": {"column": name}},
    }


# One record per scenario of a panel file: where it sits in the document, and what it is.
PANEL_FIELDS = (
    ("item_id", "The scenario's id within its panel (s01…s15)."),
    ("versions/A", "Version A, the base wording, exactly as sent (the decision instruction is its last paragraph)."),
    ("versions/A_prime", "Version A′: A with whitespace and punctuation changed only, exactly as sent."),
    ("versions/B", "Version B: A plus exactly the protocol's rewording, exactly as sent."),
    ("versions/C", "Version C: A with one number changed so that one option dominates, exactly as sent."),
)


def _panel_field(name: str, description: str) -> dict:
    return {"@type": "cr:Field", "@id": f"open_panel_scenarios/{name.replace('/', '_')}",
            "name": name.replace("/", "_"), "description": description, "dataType": "sc:Text",
            "source": {"fileSet": {"@id": "panels"},
                       "extract": {"jsonPath": "$.panel[*]." + name.replace("/", ".")}}}


def calendar_version(date: str) -> str:
    """``2026-12-03`` → ``2026.12.3``: the publication date as a version string (a real calendar day only)."""
    year, month, day = parse_date(date[:10], "the publication date").split("-")
    return f"{int(year)}.{int(month)}.{int(day)}"


Part = tuple[list[dict], list[dict]]
"""What one published file or file set adds: its distribution entries and its record sets."""


def _csv_file(name: str, data: bytes, description: str) -> dict:
    return {"@type": "cr:FileObject", "@id": name, "name": name, "contentUrl": name, "encodingFormat": "text/csv",
            "sha256": sha256_hex(data), "description": description}


def _measurement_part(files: dict[str, bytes]) -> Part:
    """``stability.csv`` and ``outcomes.csv``, always published."""
    distribution = [
        _csv_file("stability.csv", files["stability.csv"],
                  ("One row per measurement: its reading in words, then one column per measurement field, then "
                   "the server builds that answered its run; both series.")),
        _csv_file("outcomes.csv", files["outcomes.csv"],
                  "Every measurement's outcome distribution: one row per run, version and outcome."),
    ]
    record_sets = [
        {"@type": "cr:RecordSet", "@id": "stability", "name": "stability",
         "description": ("Measurements (stability.csv): first what each row can be read as, in words, then every "
                         "measurement field exactly as computed, then the server builds (system_fingerprint) "
                         "that answered its run."),
         "field": [_field("stability", n, label, d, {"fileObject": {"@id": "stability.csv"}})
                   for n, label, d in numbers.READING_COLUMNS]
                  + [_field("stability", n, label, PUBLISHED_DESCRIPTIONS[n], {"fileObject": {"@id": "stability.csv"}})
                     for n, label in MEASUREMENT_FIELDS]
                  + [_field("stability", n, label, d, {"fileObject": {"@id": "stability.csv"}})
                     for n, label, d in BESIDE_MEASUREMENT_FIELDS]},
        {"@type": "cr:RecordSet", "@id": "outcomes", "name": "outcomes",
         "description": "Outcome counts (outcomes.csv).",
         "field": [_field("outcomes", n, label, OUTCOME_FIELD_DESCRIPTIONS[n], {"fileObject": {"@id": "outcomes.csv"}})
                   for n, label in OUTCOME_FIELDS]},
    ]
    return distribution, record_sets


def _changes_part(files: dict[str, bytes]) -> Part:
    if "changes.csv" not in files:
        return [], []
    return ([_csv_file("changes.csv", files["changes.csv"],
                       "The change rule between consecutive on-curve measurements of every curve.")],
            [{"@type": "cr:RecordSet", "@id": "changes", "name": "changes",
              "description": "Changes between consecutive on-curve measurements (changes.csv).",
              "field": [_field("changes", n, label, d, {"fileObject": {"@id": "changes.csv"}})
                        for n, label, d in numbers.CHANGE_READING_COLUMNS + changes.CHANGE_COLUMN_SPEC]}])


def _coverage_part(files: dict[str, bytes]) -> Part:
    if "coverage.csv" not in files:
        return [], []
    return ([_csv_file("coverage.csv", files["coverage.csv"],
                       "Every scheduled job and period: it ran, or the one cause of its gap from the closed list of "
                       "causes.")],
            [{"@type": "cr:RecordSet", "@id": "coverage", "name": "coverage",
              "description": "Coverage of the schedule, one row per job and period (coverage.csv).",
              "field": [_field("coverage", n, COVERAGE_TYPES.get(n, "text"), csvs.COVERAGE_DESCRIPTIONS[n],
                               {"fileObject": {"@id": "coverage.csv"}})
                        for n in csvs.COVERAGE_FIELDS]}])


def _open_lane_part(files: dict[str, bytes], open_runs: list[OpenRun]) -> Part:
    lane_files = sorted(name for name in files if name.startswith("open-lane/"))
    if not lane_files:
        return [], []
    return ([{"@type": "cr:FileSet", "@id": "open-lane", "name": "open-lane",
              "encodingFormat": "application/jsonlines", "includes": "open-lane/*.jsonl",
              "description": ("Every trial of every open-lane run, one JSON object per line, grouped by year: "
                              + ", ".join(lane_files) + ".")}],
            [{"@type": "cr:RecordSet", "@id": "open_lane_trials", "name": "open_lane_trials",
              "description": "Open-lane trials (open-lane/<year>.jsonl), copied from the runs' trial logs.",
              "field": [_field("open_lane_trials", n, label, _trial_description(n), {"fileSet": {"@id": "open-lane"}})
                        for n, label in open_lane.trial_fields(open_runs)]}])


# Trial fields described in the schema's own words beside the ones publish.data.open_lane describes so: the server's
# build is a fact about who answered (method §10.1), not transport detail.
SCHEMA_DESCRIBED_TRIAL_FIELDS = ("system_fingerprint",)


def _trial_description(name: str) -> str:
    return TRIAL_DESCRIPTIONS[name] if name in SCHEMA_DESCRIBED_TRIAL_FIELDS else open_lane.describe(name)


def _panels_part(files: dict[str, bytes]) -> Part:
    # the panels themselves; the harness task files published beside them are not records of this set
    panel_files = sorted(name for name in files if name.startswith("panels/") and name.endswith(".json"))
    if not panel_files:
        return [], []
    return ([{"@type": "cr:FileSet", "@id": "panels", "name": "panels", "encodingFormat": "application/json",
              "includes": "panels/*.json",
              "description": ("Every protocol of the open lane in full, one JSON document per protocol: every "
                              "scenario's four versions exactly as sent, the options and frozen settings, "
                              "panel_sha256, protocol_sha256 and each prompt's prompt_sha256 ("
                              + ", ".join(f"{name} sha256 {sha256_hex(files[name])}" for name in panel_files)
                              + "). `llmarchive panels verify FILE` recomputes the hashes from the file alone.")}],
            [{"@type": "cr:RecordSet", "@id": "open_panel_scenarios", "name": "open_panel_scenarios",
              "description": "The scenarios of the open panels (panels/<protocol_id>.json), one record per scenario.",
              "field": [{"@type": "cr:Field", "@id": "open_panel_scenarios/protocol_id", "name": "protocol_id",
                         "description": "The open protocol the scenario belongs to (the file's name).",
                         "dataType": "sc:Text",
                         "source": {"fileSet": {"@id": "panels"}, "extract": {"fileProperty": "filename"},
                                    "transform": {"regex": "^(.*)\\.json$"}}}]
                       + [_panel_field(name, description) for name, description in PANEL_FIELDS]}])


def _document(distribution: list[dict], record_sets: list[dict], date_published: Optional[str],
              publication_date: Optional[str]) -> dict:
    """The dataset around its files: what it is, its licence, its version and dates."""
    document = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "name": "llm-archive",
        "description": f"{wording.ONE_SENTENCE} {wording.SCOPE} {wording.NOT_AN_EVALUATION}",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "license": wording.LICENCES["data"][1],
        "url": "index.html",
        "version": calendar_version(publication_date) if publication_date else __version__,
        "isLiveDataset": True,
        "citeAs": "LLM-Archive contributors. LLM-Archive: a dated record of decision stability under rewording.",
        "distribution": distribution,
        "recordSet": record_sets,
    }
    if date_published:
        document["datePublished"] = date_published
    if publication_date:
        document["dateModified"] = publication_date[:10]
    return document


def build(files: dict[str, bytes], open_runs: list[OpenRun], date_published: Optional[str],
          publication_date: Optional[str] = None) -> dict:
    """The Croissant document for ``files`` (which must hold the CSVs and the open-lane files).

    One part per published file or file set, in a fixed order: the
    measurements and outcomes, the changes, the coverage, the open lane,
    the open panels.  ``publication_date`` (``YYYY-MM-DD``, the build's
    date) gives the version; without it the code version is used.
    """
    distribution: list[dict] = []
    record_sets: list[dict] = []
    for files_of_part, sets_of_part in (_measurement_part(files), _changes_part(files), _coverage_part(files),
                                        _open_lane_part(files, open_runs), _panels_part(files)):
        distribution += files_of_part
        record_sets += sets_of_part
    return _document(distribution, record_sets, date_published, publication_date)
