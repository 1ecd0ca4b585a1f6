"""Lists of names said in a sentence, one way everywhere (an error, a help text, a published description).

Why a module of its own: the closed lists the archive names to a person — providers, key variables,
record kinds — are joined the same way in the CLI, Dagster's resources and publication, and two spellings
of "a, b or c" would drift apart.
"""
from collections.abc import Sequence


def either(words: Sequence[str]) -> str:
    """``a or b``, ``a, b or c``: a list of names in a sentence (one name as it is; none, empty)."""
    words = tuple(words)
    if len(words) < 2:
        return "".join(words)
    return ", ".join(words[:-1]) + " or " + words[-1]
