"""The published open panel: one protocol of the ``open`` lane, in full, as a file an outsider can run.

Admission to the ``open`` lane publishes the panel (method §4.2): anyone may
run it on their own model and set the result beside the archive's trail.
The file ``public/panels/<protocol_id>.json`` therefore carries everything a
run needs and everything its hashes cover, so both hashes are recomputed
from the file alone (method §3.9):

* every key of the protocol record that ``protocol_sha256`` covers, under
  its own name and with its own value — the fifteen scenarios with their
  four versions exactly as sent (the decision instruction is the last
  paragraph of each text; the runner sends the text and nothing else), the
  structure of each scenario, the options, ``n``, ``n_per_scenario``,
  ``grammar_version``, ``generation`` (``max_tokens``) and the rest;
* ``panel_sha256`` (inside ``protocol_sha256``, as in the protocol file)
  and ``protocol_sha256``;
* ``prompt_sha256``: ``{item_id: {version: hex}}``, the SHA-256 of each
  text's UTF-8 bytes — the value each trial of a run records;
* keys outside both hashes (:data:`FILE_ONLY_KEYS`): the file format,
  the lane, status and twin (admission facts), and ``how_to_send``, the
  frozen call settings an outsider must copy.

``protocol_sha256`` is the canonical-JSON SHA-256 of every key of the file
except :data:`FILE_ONLY_KEYS` — the same rule :func:`panels.build.protocol_hash`
applies to the protocol file, whose unhashed keys (status, lane, twin, the
derived design figures) are either carried here outside the hash or left
out.  Nothing of a guard or sealed protocol can enter: :func:`panel_file`
refuses any protocol whose current lane is not ``open``.

This module is pure (no store, no network): ``llmarchive comparison run``
and ``llmarchive panels verify`` read a file with it, and publication
writes the files with :func:`panel_file` and :func:`panel_file_text`.
"""
import copy
import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Union

from measure.canonical import canonical_sha256
from measure.errors import ArchiveError
from measure.schema import VERSIONS
from panels.build import protocol_hash  # the builder's rule, to refuse a protocol that does not match it

FORMAT = "llmarchive-open-panel"
FORMAT_VERSION = 1

# Keys of the published file that no hash covers.
# ``panel_sha256`` is not among them: the builder records it before hashing the protocol, so
# ``protocol_sha256`` covers it (and through it, once more, the panel).
FILE_ONLY_KEYS = ("format", "format_version", "status", "lane", "twin_id", "protocol_sha256", "prompt_sha256",
                  "how_to_send")

# Keys of the protocol record left out of the published file: derived descriptions of the
# instrument (recomputed by `llmarchive panels check`), outside protocol_sha256 already.
LEFT_OUT_KEYS = ("design_readers", "reader_models")

# Hashed keys a run cannot do without; each is type-checked by read_panel_file.
REQUIRED_KEYS = ("record_type", "schema_version", "protocol_id", "series", "family", "rewording_type", "options",
                 "n", "n_per_scenario", "n_items", "item_ids", "grammar_version", "generation", "instruction",
                 "panel")

SCHEDULE_TEXT = ("Blocks of four calls, one block per (replicate, scenario): replicate by replicate, scenarios in "
                 "panel order; block b sends the versions in the order VERSIONS[(b + j) mod 4], j = 0..3, with "
                 "VERSIONS = A, A_prime, B, C.")


class OpenPanelFileError(ArchiveError, ValueError):
    """A published open-panel file that cannot be read or does not match its own hashes; names file and field."""


def prompt_sha256(text: str) -> str:
    """A prompt's hash exactly as the runner records it per trial: SHA-256 of the text's UTF-8 bytes (not JSON)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hashed_part(doc: Mapping) -> dict:
    """What ``protocol_sha256`` covers: every key of the file but :data:`FILE_ONLY_KEYS`."""
    return {k: v for k, v in doc.items() if k not in FILE_ONLY_KEYS}


def how_to_send(protocol: Mapping) -> dict:
    """The frozen call settings, as the archive's own subjects send them (llmarchive.subjects)."""
    max_tokens = protocol["generation"]["max_tokens"]
    n_items, reps = protocol["n_items"], protocol["n_per_scenario"]
    return {
        "prompt": "panel[i].versions[V], exactly: one user message whose content is the text, no system prompt, "
                  "no tools, no other turn; nothing is added, trimmed or re-encoded",
        "fresh_session_per_call": True,
        "calls": n_items * len(VERSIONS) * reps,
        "calls_per_version": n_items * reps,
        "replicates_per_scenario": reps,
        "max_tokens": max_tokens,
        "sampling": "no sampling parameter is set (no temperature, top_p, seed or stop); the server's defaults "
                    "apply, and a submission records only what the client set",
        "openai_chat_completions_body": {"model": "<model id>", "messages": [{"role": "user", "content": "<prompt>"}],
                                         "max_tokens": max_tokens},
        "anthropic_messages_body": {"model": "<model id>", "max_tokens": max_tokens,
                                    "messages": [{"role": "user", "content": "<prompt>"}],
                                    "thinking": {"type": "disabled"}},
        "decision": f"the last line of the answer is read with decision grammar {protocol['grammar_version']} "
                    f"(method §5) over the options {', '.join(protocol['options'])}",
        "schedule": SCHEDULE_TEXT,
    }


def panel_file(protocol: Mapping) -> dict:
    """The published document of one open protocol, from its full protocol record (text included).

    Refuses a protocol that is not in the ``open`` lane, one without its text,
    and one whose own hashes do not match it — a file that could not verify
    is never written.
    """
    pid = protocol.get("protocol_id", "<no protocol_id>")
    if protocol.get("lane") != "open":
        raise OpenPanelFileError(f"protocol {pid}: lane is {protocol.get('lane')!r}; only an admitted open protocol "
                                 f"is published in full")
    if not isinstance(protocol.get("panel"), list) or not protocol["panel"]:
        raise OpenPanelFileError(f"protocol {pid}: no panel text (a hash-only record cannot be published in full)")
    if canonical_sha256(protocol["panel"]) != protocol.get("panel_sha256") or \
            protocol_hash(protocol) != protocol.get("protocol_sha256"):
        raise OpenPanelFileError(f"protocol {pid}: its panel_sha256/protocol_sha256 do not match its content")
    # A copy: the document is the caller's to change (a test, a renderer) without touching the protocol.
    doc: dict[str, Any] = copy.deepcopy({k: v for k, v in protocol.items()
                                         if k not in FILE_ONLY_KEYS and k not in LEFT_OUT_KEYS})
    doc.update({
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "status": protocol.get("status"),
        "lane": "open",
        "twin_id": protocol.get("twin_id"),
        "protocol_sha256": protocol["protocol_sha256"],
        "prompt_sha256": {item["item_id"]: {v: prompt_sha256(item["versions"][v]) for v in VERSIONS}
                          for item in protocol["panel"]},
        "how_to_send": how_to_send(protocol),
    })
    problems = verify_panel_file(doc)
    if problems:  # the builder's rule and this file's rule disagree: never publish a file that cannot verify
        raise OpenPanelFileError(f"protocol {pid}: the panel file would not verify: {'; '.join(problems)}")
    return doc


def panel_file_text(doc: Mapping) -> str:
    """The file's bytes as published (sorted keys, one-space indent, UTF-8 as itself, final newline)."""
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _check_shape(doc: Any, where: str) -> None:
    """Raise a one-line error naming the first malformed field (types only; hashes are verify's)."""
    def bad(field: str, why: str) -> OpenPanelFileError:
        return OpenPanelFileError(f"{where}: field '{field}' {why}")

    if not isinstance(doc, dict):
        raise OpenPanelFileError(f"{where}: not an open-panel file (the top level must be a JSON object)")
    if doc.get("format") != FORMAT:
        raise bad("format", f"must be {FORMAT!r}, got {doc.get('format')!r}")
    if doc.get("format_version") != FORMAT_VERSION:
        raise bad("format_version", f"must be {FORMAT_VERSION}, got {doc.get('format_version')!r}")
    for key in REQUIRED_KEYS + ("panel_sha256", "protocol_sha256", "prompt_sha256", "how_to_send"):
        if key not in doc:
            raise bad(key, "is missing")
    for key in ("protocol_id", "series", "family", "rewording_type", "instruction", "record_type"):
        if not isinstance(doc[key], str) or not doc[key]:
            raise bad(key, "must be a non-empty string")
    for key in ("n", "n_per_scenario", "n_items", "grammar_version"):
        if not _is_int(doc[key]):
            raise bad(key, f"must be a positive integer, got {doc[key]!r}")
    for key in ("panel_sha256", "protocol_sha256"):
        value = doc[key]
        if not isinstance(value, str) or len(value) != 64 or set(value) - set("0123456789abcdef"):
            raise bad(key, "must be 64 lowercase hexadecimal characters")
    options = doc["options"]
    if not isinstance(options, list) or len(options) < 2 or not all(isinstance(o, str) and o for o in options):
        raise bad("options", "must be a list of at least two option letters")
    if not isinstance(doc["generation"], dict) or not _is_int(doc["generation"].get("max_tokens")):
        raise bad("generation.max_tokens", "must be a positive integer")
    if not isinstance(doc["item_ids"], list) or not all(isinstance(i, str) for i in doc["item_ids"]):
        raise bad("item_ids", "must be a list of strings")
    panel = doc["panel"]
    if not isinstance(panel, list) or not panel:
        raise bad("panel", "must be a non-empty list of scenarios")
    for index, item in enumerate(panel):
        if not isinstance(item, dict) or not isinstance(item.get("item_id"), str):
            raise bad(f"panel[{index}].item_id", "must be a string")
        versions = item.get("versions")
        if not isinstance(versions, dict):
            raise bad(f"panel[{index}].versions", "must be an object of the four versions")
        for version in VERSIONS:
            if not isinstance(versions.get(version), str) or not versions[version].strip():
                raise bad(f"panel[{index}].versions.{version}", f"must be the non-empty prompt text "
                                                                f"({item['item_id']})")
    hashes = doc["prompt_sha256"]
    if not isinstance(hashes, dict) or not all(isinstance(v, dict) for v in hashes.values()):
        raise bad("prompt_sha256", "must be an object {item_id: {version: sha256}}")
    if not isinstance(doc["how_to_send"], dict):
        raise bad("how_to_send", "must be an object")


def read_panel_file(path: Union[str, Path]) -> dict:
    """Read a published open-panel file; a one-line :class:`OpenPanelFileError` naming file and field if malformed.

    Checks the shape only; :func:`verify_panel_file` checks the hashes.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise OpenPanelFileError(f"{file}: no such open-panel file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise OpenPanelFileError(f"{file}: cannot be read as UTF-8 text ({type(exc).__name__})") from None
    try:
        doc = json.loads(text)        # one JSON document: a published open-panel file
    except json.JSONDecodeError as exc:
        raise OpenPanelFileError(f"{file}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    _check_shape(doc, str(file))
    return doc


def verify_panel_file(doc: Mapping) -> list[str]:
    """Every way the file disagrees with itself, recomputed from the file alone; ``[]`` when it verifies."""
    problems: list[str] = []
    try:
        if canonical_sha256(doc.get("panel")) != doc.get("panel_sha256"):
            problems.append(f"panel_sha256: the file says {doc.get('panel_sha256')}, the panel hashes to "
                            f"{canonical_sha256(doc.get('panel'))}")
        computed = canonical_sha256(hashed_part(doc))
    except (TypeError, ValueError) as exc:  # a value canonical JSON cannot carry (NaN, a non-string key)
        return [f"the file cannot be hashed as canonical JSON ({exc})"]
    if computed != doc.get("protocol_sha256"):
        problems.append(f"protocol_sha256: the file says {doc.get('protocol_sha256')}, its hashed keys hash to "
                        f"{computed}")
    if doc.get("lane") != "open":
        problems.append(f"lane: {doc.get('lane')!r}, but only an open protocol is published in full")
    panel = doc.get("panel") if isinstance(doc.get("panel"), list) else []
    ids = [item.get("item_id") for item in panel if isinstance(item, dict)]
    if doc.get("item_ids") != ids:
        problems.append("item_ids: does not list the panel's scenarios in panel order")
    if doc.get("n_items") != len(panel):
        problems.append(f"n_items: {doc.get('n_items')!r}, but the panel has {len(panel)} scenarios")
    if isinstance(doc.get("n"), int) and isinstance(doc.get("n_per_scenario"), int) and \
            doc["n"] != len(panel) * doc["n_per_scenario"]:
        problems.append(f"n: {doc['n']} is not n_items × n_per_scenario ({len(panel)} × {doc['n_per_scenario']})")
    hashes = doc.get("prompt_sha256") if isinstance(doc.get("prompt_sha256"), dict) else {}
    instruction = doc.get("instruction")
    for item in panel:
        if not isinstance(item, dict):
            continue
        item_id, versions = item.get("item_id"), item.get("versions") or {}
        given = hashes.get(item_id) if isinstance(hashes.get(item_id), dict) else {}
        for version in VERSIONS:
            text = versions.get(version) if isinstance(versions, dict) else None
            if not isinstance(text, str):
                problems.append(f"panel {item_id} {version}: the version's text is missing")
                continue
            if given.get(version) != prompt_sha256(text):
                problems.append(f"prompt_sha256.{item_id}.{version}: the file says {given.get(version)}, the text "
                                f"hashes to {prompt_sha256(text)}")
            if isinstance(instruction, str) and not text.endswith(instruction):
                problems.append(f"panel {item_id} {version}: the text does not end with the decision instruction")
        extra = sorted(set(given) - set(VERSIONS))
        if extra:
            problems.append(f"prompt_sha256.{item_id}: versions {', '.join(extra)} are not in the panel")
    extra_items = sorted(set(hashes) - set(ids))
    if extra_items:
        problems.append(f"prompt_sha256: scenarios {', '.join(map(str, extra_items))} are not in the panel")
    send = doc.get("how_to_send") if isinstance(doc.get("how_to_send"), dict) else {}
    generation = doc.get("generation") if isinstance(doc.get("generation"), dict) else {}
    if send.get("max_tokens") != generation.get("max_tokens"):
        problems.append(f"how_to_send.max_tokens: {send.get('max_tokens')!r}, but the protocol's "
                        f"generation.max_tokens is {generation.get('max_tokens')!r}")
    return problems


def protocol_from_panel_file(doc: Mapping) -> dict:
    """The runnable protocol record a verified file describes (what :func:`llmarchive.run.runner.run_protocol` takes).

    The hashed keys, the two hashes and the admission facts, exactly as the
    protocol file holds them: a run from it records the same
    ``protocol_sha256`` and, per trial, the same ``prompt_sha256`` as the
    archive's own runs.
    """
    out = dict(hashed_part(doc))
    out.update({"protocol_sha256": doc["protocol_sha256"],
                "status": doc.get("status"), "lane": doc.get("lane"), "twin_id": doc.get("twin_id")})
    return out


def load_panel_file(path: Union[str, Path]) -> dict:
    """Read and verify in one step; every problem in one line, or the document."""
    doc = read_panel_file(path)
    problems = verify_panel_file(doc)
    if problems:
        raise OpenPanelFileError(f"{path}: the open-panel file does not verify ({len(problems)} problem"
                                 f"{'s' if len(problems) != 1 else ''}): {'; '.join(problems)}")
    return doc
