"""``panels/<protocol_id>.json``: every protocol of the ``open`` lane, published in full.

Admission to the open lane is what makes a panel public (method §3.9, §4.2):
its file carries every scenario's four versions exactly as sent, the frozen
settings and the hashes, so anyone can check it (``llmarchive panels verify
FILE``) and run it on their own model (``llmarchive comparison run --panel
FILE``).  The document is :func:`llmarchive.protocols.open_panels.panel_file`'s; this
module picks the protocols — those whose *current* lane is ``open``, read
through the registry like every other protocol publication sees — and turns
them into bytes.  A guard twin shares its open twin's lotteries (the
``structure`` block), never its wording; the sealed-text check still reads every
byte of these files against every private text before anything is moved
into ``public/`` (:mod:`publish.boundary.sealed`).

:func:`published_problems` is the after-the-fact check on ``public/`` as it
stands (:func:`publish.pipeline.checks.leak_problems` runs it): a panel file for a
protocol that is not open, one that does not verify, one whose hashes are
not the registry's, and an open protocol without its file.

Beside each panel file, :mod:`publish.tasks.inspect_task` renders the same panel
as an Inspect AI task (``panels/<protocol_id>.py``, found by its name, run
with ``inspect eval``): :func:`files` writes both, and
:func:`task_file_problems` checks that each task file is the one its panel
file renders.
"""
from pathlib import Path
from typing import Iterable, Mapping

from llmarchive.protocols import open_panels
from publish.tasks import inspect_task, lmeval_task
from publish.errors import PublishError
from publish.data.protocols import load_full

PANELS_DIR = "panels"


def file_name(protocol_id: str) -> str:
    """Where an open protocol's panel file is published, relative to ``public/``."""
    return f"{PANELS_DIR}/{protocol_id}.json"


def open_ids(headers: Iterable[Mapping]) -> list[str]:
    """The protocols whose current lane is ``open`` (v0 and v1 alike), sorted."""
    return sorted(h["protocol_id"] for h in headers if h.get("lane") == "open")


def files(paths, headers: Iterable[Mapping]) -> dict[str, bytes]:
    """``{panels/<id>.json: bytes}`` for every open protocol; refuses one that cannot be published whole."""
    out: dict[str, bytes] = {}
    for protocol_id in open_ids(headers):
        protocol = load_full(paths, protocol_id)
        if protocol is None:
            raise PublishError(f"protocol {protocol_id} is in the open lane but its text is not here; an open "
                               f"protocol is published in full")
        try:
            doc = open_panels.panel_file(protocol)
        except open_panels.OpenPanelFileError as exc:
            raise PublishError(str(exc)) from None
        out[file_name(protocol_id)] = open_panels.panel_file_text(doc).encode("utf-8")
        # Beside it, the same panel as an Inspect AI task (publish.tasks.inspect_task): found by its name, run as is.
        out[inspect_task.file_name(protocol_id)] = inspect_task.task_file_text(doc).encode("utf-8")
        # And as an lm-evaluation-harness task: its YAML and the documents it reads (publish.tasks.lmeval_task).
        out.update({f"{PANELS_DIR}/{name}": text.encode("utf-8") for name, text in lmeval_task.task_files(doc).items()})
    return out


def published_problems(public: Path, headers: Iterable[Mapping]) -> list[str]:
    """What is wrong with ``public/panels/`` as it stands, against the registry's current headers."""
    by_id = {h["protocol_id"]: h for h in headers}
    wanted = set(open_ids(by_id.values()))
    problems = []
    folder = public / PANELS_DIR
    present = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for file in present:
        protocol_id = file.stem
        where = f"{PANELS_DIR}/{file.name}"
        if protocol_id not in wanted:
            lane = by_id.get(protocol_id, {}).get("lane")
            problems.append(f"{where}: protocol {protocol_id} is not in the open lane (lane {lane!r}); only open "
                            f"panels are published")
            continue
        try:
            doc = open_panels.read_panel_file(file)
        except open_panels.OpenPanelFileError as exc:
            problems.append(str(exc))
            continue
        problems += [f"{where}: {p}" for p in open_panels.verify_panel_file(doc)]
        header = by_id[protocol_id]
        for key in ("protocol_id", "panel_sha256", "protocol_sha256"):
            if doc.get(key) != header.get(key):
                problems.append(f"{where}: {key} {doc.get(key)!r} is not the registry's {header.get(key)!r}")
    for protocol_id in sorted(wanted - {f.stem for f in present}):
        problems.append(f"{file_name(protocol_id)}: missing; protocol {protocol_id} is in the open lane")
    return (problems + task_file_problems(public, wanted)
            + lmeval_task.published_problems(public / PANELS_DIR, wanted))


def task_file_problems(public: Path, wanted: set[str]) -> list[str]:
    """What is wrong with the Inspect task files beside the panel files: each is the one its panel renders.

    A task file is generated from its panel file alone, so it must be byte
    for byte what :func:`publish.tasks.inspect_task.task_file_text` makes of the
    panel beside it; one for a protocol that is not open, or one missing
    beside an open panel, is a problem too.
    """
    folder = public / PANELS_DIR
    present = sorted(folder.glob(f"*{inspect_task.SUFFIX}")) if folder.is_dir() else []
    problems = []
    for file in present:
        where = inspect_task.file_name(file.stem)
        if file.stem not in wanted:
            problems.append(f"{where}: protocol {file.stem} is not in the open lane; only open panels have a task")
            continue
        try:
            expected = inspect_task.task_file_text(open_panels.read_panel_file(file.with_suffix(".json")))
        except open_panels.OpenPanelFileError as exc:
            problems.append(f"{where}: its panel file cannot be read ({exc})")
            continue
        if file.read_bytes() != expected.encode("utf-8"):
            problems.append(f"{where}: not the task its panel file renders (edited, or of another panel)")
    for protocol_id in sorted(wanted - {f.stem for f in present}):
        problems.append(f"{inspect_task.file_name(protocol_id)}: missing; the open panel {protocol_id} is published "
                        "with its Inspect task")
    return problems
