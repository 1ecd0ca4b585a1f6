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

Which files, under which names and with which descriptions and columns, is
:data:`publish.data.files.PUBLISHED`'s to say; this module writes the
Croissant form of it (the open lane's trial fields and the panels'
scenario records, which are not columns of one file, are described here).
"""
from typing import Callable, Optional

from llmarchive import __version__
from llmarchive.archive import parse_date
from measure.canonical import sha256_hex
from measure.schema import TRIAL_DESCRIPTIONS
from publish.data import files as published
from publish.data import open_lane, panels
from publish.data.files import PublishedFile
from publish.data.open_lane import OpenRun
from publish.words import wording

CROISSANT_TYPES = {"pct": "sc:Float", "unit_interval": "sc:Float", "number": "sc:Float", "int": "sc:Integer",
                   "count": "sc:Integer", "bool": "sc:Boolean", "datetime": "sc:DateTime"}

COVERAGE_TYPES = published.COVERAGE_TYPES

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
            "source": {"fileSet": {"@id": published.PANELS.set_id},
                       "extract": {"jsonPath": "$.panel[*]." + name.replace("/", ".")}}}


def calendar_version(date: str) -> str:
    """``2026-12-03`` → ``2026.12.3``: the publication date as a version string (a real calendar day only)."""
    year, month, day = parse_date(date[:10], "the publication date").split("-")
    return f"{int(year)}.{int(month)}.{int(day)}"


Part = tuple[list[dict], list[dict]]
"""What one published file or file set adds: its distribution entries and its record sets."""


def _file_object(entry: PublishedFile, data: bytes) -> dict:
    return {"@type": "cr:FileObject", "@id": entry.name, "name": entry.name, "contentUrl": entry.name,
            "encodingFormat": entry.encoding, "sha256": sha256_hex(data), "description": entry.description}


def _file_part(entry: PublishedFile, files: dict[str, bytes], open_runs: list[OpenRun]) -> Part:
    """One published file and, when the table gives its columns, its record set (nothing when it is absent)."""
    if entry.name not in files:
        return [], []
    records = entry.records
    return ([_file_object(entry, files[entry.name])],
            [] if records is None else
            [{"@type": "cr:RecordSet", "@id": records.id, "name": records.id, "description": records.description,
              "field": [_field(records.id, n, label, d, {"fileObject": {"@id": entry.name}})
                        for n, label, d in records.columns]}])


def _file_set_part(entry: PublishedFile, files: dict[str, bytes], open_runs: list[OpenRun]) -> Part:
    """A set of files the table declares by a pattern, without a record set of its own."""
    if not any(entry.matches(name) for name in files):
        return [], []
    return [{"@type": "cr:FileSet", "@id": entry.set_id, "name": entry.set_id, "encodingFormat": entry.encoding,
             "includes": entry.name, "description": entry.description}], []


def _open_lane_part(entry: PublishedFile, files: dict[str, bytes], open_runs: list[OpenRun]) -> Part:
    lane_files = sorted(name for name in files if entry.matches(name))
    if not lane_files:
        return [], []
    return ([{"@type": "cr:FileSet", "@id": entry.set_id, "name": entry.set_id,
              "encodingFormat": entry.encoding, "includes": entry.name,
              "description": entry.description + ": " + ", ".join(lane_files) + "."}],
            [{"@type": "cr:RecordSet", "@id": "open_lane_trials", "name": "open_lane_trials",
              "description": f"Open-lane trials ({open_lane.file_name('<year>')}), copied from the runs' trial logs.",
              "field": [_field("open_lane_trials", n, label, _trial_description(n), {"fileSet": {"@id": entry.set_id}})
                        for n, label in open_lane.trial_fields(open_runs)]}])


# Trial fields described in the schema's own words beside the ones publish.data.open_lane describes so: the server's
# build is a fact about who answered (method §10.1), not transport detail.
SCHEMA_DESCRIBED_TRIAL_FIELDS = ("system_fingerprint",)


def _trial_description(name: str) -> str:
    return TRIAL_DESCRIPTIONS[name] if name in SCHEMA_DESCRIBED_TRIAL_FIELDS else open_lane.describe(name)


def _panels_part(entry: PublishedFile, files: dict[str, bytes], open_runs: list[OpenRun]) -> Part:
    # the panels themselves; the harness task files published beside them are not records of this set
    panel_files = sorted(name for name in files if entry.matches(name))
    if not panel_files:
        return [], []
    return ([{"@type": "cr:FileSet", "@id": entry.set_id, "name": entry.set_id, "encodingFormat": entry.encoding,
              "includes": entry.name,
              "description": (entry.description + " ("
                              + ", ".join(f"{name} sha256 {sha256_hex(files[name])}" for name in panel_files)
                              + "). `llmarchive panels verify FILE` recomputes the hashes from the file alone.")}],
            [{"@type": "cr:RecordSet", "@id": "open_panel_scenarios", "name": "open_panel_scenarios",
              "description": (f"The scenarios of the open panels ({panels.file_name('<protocol_id>')}), one record "
                              "per scenario."),
              "field": [{"@type": "cr:Field", "@id": "open_panel_scenarios/protocol_id", "name": "protocol_id",
                         "description": "The open protocol the scenario belongs to (the file's name).",
                         "dataType": "sc:Text",
                         "source": {"fileSet": {"@id": entry.set_id}, "extract": {"fileProperty": "filename"},
                                    "transform": {"regex": "^(.*)\\.json$"}}}]
                       + [_panel_field(name, description) for name, description in PANEL_FIELDS]}])


# The file sets whose records Croissant describes in their own way (the open lane's trial fields depend on the
# runs; a panel's records are its scenarios); every other entry of the table is one file object, or one file set.
SET_PARTS: dict[str, Callable[[PublishedFile, dict[str, bytes], list[OpenRun]], Part]] = {
    published.OPEN_LANE.set_id: _open_lane_part,
    published.PANELS.set_id: _panels_part,
}


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
        "url": published.SITE.name,
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
    """The Croissant document for ``files`` (``{path under public/: bytes}``).

    One part per entry of the published-file table that Croissant lists
    (:func:`publish.data.files.in_croissant`), in the table's order: the
    measurements and outcomes, the changes, the coverage, the open lane,
    the open panels, then any file registered after them; an entry with no
    file in ``files`` adds nothing.  Names, encodings, descriptions and
    columns are the table's, so a file is never named here by a string of
    its own.  ``publication_date`` (``YYYY-MM-DD``, the build's
    date) gives the version; without it the code version is used.
    """
    distribution: list[dict] = []
    record_sets: list[dict] = []
    for entry in published.in_croissant():
        part = _file_part if entry.set_id is None else SET_PARTS.get(entry.set_id, _file_set_part)
        files_of_part, sets_of_part = part(entry, files, open_runs)
        distribution += files_of_part
        record_sets += sets_of_part
    return _document(distribution, record_sets, date_published, publication_date)
