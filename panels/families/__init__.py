"""The family table: every scenario family's :class:`~panels.family.Family` row, in its fixed order.

The order is part of the archive: protocol ids, the builder's loop and so
every published listing run through the families in this order, so a new
family is appended, never inserted.  Adding one is a new module beside these
(its ``SCENARIOS`` and its ``FAMILY`` row) and one entry below; every list
or lookup keyed by family name (:func:`names`, a row's roles and numbers
through :func:`get`, the lanes, the reader citations, the author's check)
reads :data:`TABLE` when it is called, never a copy taken at import.

:func:`register` and :func:`unregister` exist for a test that proves
everything keyed by family sees a new row
(``tests/test_extending_family.py``); the archive's own families are fixed
at import.
"""
from typing import Optional

from panels.families import base_rate_neglect, risky_choice_framing, sunk_cost_fallacy
from panels.family import Family

TABLE: list[Family] = [
    risky_choice_framing.FAMILY,
    sunk_cost_fallacy.FAMILY,
    base_rate_neglect.FAMILY,
]


def names() -> tuple[str, ...]:
    """The family names in table order."""
    return tuple(row.name for row in TABLE)


def find(name: str) -> Optional[Family]:
    """The family's row, or None for a name the table does not hold."""
    return next((row for row in TABLE if row.name == name), None)


def get(name: str) -> Family:
    """The family's row; a :class:`KeyError` naming the known families otherwise."""
    row = find(name)
    if row is None:
        raise KeyError(f"unknown family {name!r}; families: {', '.join(names())}")
    return row


def register(row: Family) -> None:
    """Append a family row (a test's toy family); its name must be new."""
    if find(row.name) is not None:
        raise ValueError(f"family {row.name!r} is already in the table")
    TABLE.append(row)


def unregister(name: str) -> None:
    """Remove a row :func:`register` added."""
    TABLE.remove(get(name))
