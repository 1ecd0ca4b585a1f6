"""The frozen estimator of LLM-Archive — pure Python standard library.

Everything that turns recorded trials into a published number lives here and
imports nothing outside the standard library, so that the estimator can be
read, re-run and re-implemented decades from now without a numerical
library whose own version might no longer build.  A test parses every module
and fails on any other import.

The public entry point for extraction is :func:`extract`, which dispatches on
the protocol's declared ``grammar_version``; version 1 is never replaced by
a newer grammar, only joined by it.
"""
from typing import Sequence

from measure import grammar, grammar_v2
from measure.errors import ArchiveError
from measure.grammar import Extraction

GRAMMARS = {1: grammar, 2: grammar_v2}

__all__ = ["Extraction", "GRAMMARS", "GrammarError", "extract"]


class GrammarError(ArchiveError, ValueError):
    """A grammar_version no grammar answers to.

    Defined here rather than in the grammar modules: their bytes are frozen
    (``extractor_sha`` hashes them, method §13.6), so the grammars keep raising
    plain ``ValueError`` for options they cannot read.
    """


def extract(text: str, options: Sequence[str], grammar_version: int) -> Extraction:
    """Extract one decision with the grammar the protocol declares."""
    module = GRAMMARS.get(grammar_version) if isinstance(grammar_version, int) else None
    if module is None:
        raise GrammarError(
            f"unknown grammar_version {grammar_version!r}; known versions: {sorted(GRAMMARS)}"
        )
    return module.extract(text, options)
