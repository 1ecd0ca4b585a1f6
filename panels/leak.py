"""The 12-word rule: no guard wording may appear in an open item.

Publishing an ``open`` protocol must not publish its ``guard`` twin.  The
twin shares the open protocol's lotteries but not its words: no run of
:data:`LEAK_WORDS` consecutive words of any guard item — outside the
decision instruction every protocol shares — may occur in any open item.
The builder re-draws a guard item until this holds; :func:`check` proves it
on the built files (``llmarchive panels check``).

Words are compared case-folded, ignoring punctuation and line breaks
(:func:`panels.template.words`), so a run cannot hide behind a comma.
Failures name the protocols and items, never the words.
"""
from typing import Iterable, Mapping

from measure.invariants import Failure
from panels.template import words

LEAK_WORDS = 12


def strip_instruction(text: str, instruction: str) -> str:
    """The text without the shared instruction at its end."""
    return text[: len(text) - len(instruction)] if instruction and text.endswith(instruction) else text


def grams(text: str, length: int = LEAK_WORDS) -> set[tuple[str, ...]]:
    """Every run of ``length`` consecutive words of a text."""
    w = words(text)
    return {tuple(w[i:i + length]) for i in range(len(w) - length + 1)}


def is_open(protocol: Mapping) -> bool:
    """Open by lane, or built from the public seed (open by design)."""
    return protocol.get("lane") == "open" or protocol.get("wording_seed") == "public"


def check(protocols: Iterable[Mapping]) -> list[Failure]:
    """Every guard item against every open item; one failure per guard item that leaks."""
    protocols = [p for p in protocols if p.get("panel")]
    open_index: dict[tuple[str, ...], tuple[str, str]] = {}
    for protocol in protocols:
        if not is_open(protocol):
            continue
        for item in protocol["panel"]:
            for text in item["versions"].values():
                for gram in grams(strip_instruction(text, protocol.get("instruction", ""))):
                    open_index.setdefault(gram, (protocol["protocol_id"], item["item_id"]))
    failures: list[Failure] = []
    for protocol in protocols:
        if is_open(protocol):
            continue
        for item in protocol["panel"]:
            for version, text in sorted(item["versions"].items()):
                hit = next((open_index[g] for g in grams(strip_instruction(text, protocol.get("instruction", "")))
                            if g in open_index), None)
                if hit:
                    failures.append(Failure(
                        protocol["protocol_id"], item["item_id"], "leak_12_words",
                        f"version {version} shares a run of {LEAK_WORDS} words with open protocol "
                        f"{hit[0]} item {hit[1]}",
                    ))
                    break
    return failures
