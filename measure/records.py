"""Typed records: a trial and a measurement as read back from the archive.

The schema (:mod:`measure.schema`) is the one definition of each record
kind; this module gives each a type whose fields come from it, so a reader
holds a :class:`Trial` or a :class:`Measurement` rather than "some dict":
``trial.outcome``, ``measurement.stability_pct``.  A record of either type
exists only after the schema's checks passed, and it cannot be changed.

**Why a read-only dict and not a dataclass.**  A trial is hash-chained and
a measurement is recomputed and compared field by field: both are judged as
the exact JSON object that was written (:func:`measure.chain.record_sha256`
over its canonical JSON).  A dataclass would have to invent a value for a
field an older record never had, or drop a key the schema does not know,
and the chain would no longer verify.  So the typed record *is* that object:
a ``dict`` with the record's own keys and values, attribute access for the
schema's fields, and every mutating method refused — code that means to
change a record builds a new one (``dict(trial)``), which is what the
writers do.  A copy or a pickle is a plain dict.
"""
from typing import Any, Iterable, Mapping, NoReturn, Optional

from measure import schema
from measure.errors import ArchiveError

# The Python type each schema label is read as (``json``: a list or an object).
LABEL_TYPES: dict[str, Any] = {"text": str, "int": int, "count": int, "bool": bool, "json": Any,
                               "pct": float, "unit_interval": float}


class MeasurementRecordError(ArchiveError, ValueError):
    """A stored measurement that breaks :data:`measure.schema.MEASUREMENT_FIELDS`; the message names where."""


class _Record(dict):
    """A schema record as written, read-only, its fields also readable as attributes."""

    __slots__ = ()
    FIELD_NAMES: tuple[str, ...] = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(f"a {type(self).__name__} read from the archive cannot be changed; "
                        f"build a new record (dict(record)) instead")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple:
        return dict, (dict(self),)

    def __copy__(self) -> dict:
        return dict(self)

    def __deepcopy__(self, memo: dict) -> dict:
        import copy

        return copy.deepcopy(dict(self), memo)

    def as_dict(self) -> dict:
        """A plain, changeable copy (what a writer starts from)."""
        return dict(self)


def _field(name: str, label: str, description: str) -> property:
    def read(self: _Record) -> Any:
        return dict.get(self, name)

    read.__name__ = name
    read.__annotations__ = {"return": Optional[LABEL_TYPES[label]]}
    return property(read, doc=f"{description} ({label}; None when the record lacks it)")


def _with_fields(cls: type, fields: Iterable[tuple[str, str, str]]) -> type:
    names = []
    for name, label, description in fields:
        if hasattr(dict, name):   # a field named like a dict method would shadow it: refuse at import
            raise TypeError(f"schema field {name!r} clashes with a dict method")
        setattr(cls, name, _field(name, label, description))
        names.append(name)
    cls.FIELD_NAMES = tuple(names)
    return cls


class Trial(_Record):
    """One trial record, checked by :func:`measure.schema.check_trial` as a reader checks it."""

    __slots__ = ()

    def __init__(self, record: Mapping, where: str, needs: Iterable[str] = schema.TRIAL_ESTIMATOR_FIELDS) -> None:
        """``where`` names the file and line for the error; ``needs`` the fields the reader computes from.

        A reader judges every schema field the record carries but keeps keys
        the schema does not know (only a writer may refuse them), and
        requires the estimator's fields, as :func:`check_trial` says.
        """
        schema.check_trial(record, where, needs=needs)
        super().__init__(record)


_with_fields(Trial, ((n, label, schema.TRIAL_DESCRIPTIONS[n]) for n, label, _, _ in schema.TRIAL_FIELDS))


def _fits_measurement(value: object, label: str) -> bool:
    # A measurement field is null where the data cannot give it (no valid answer, one item); a json cell
    # holds whatever structure the estimator wrote there.
    return value is None or label == "json" or schema.fits_label(value, label)


def measurement_problems(record: Mapping) -> list[str]:
    """Every way ``record`` breaks the measurement schema, as phrases; ``[]`` when it keeps it.

    A measurement written before :data:`measure.schema.LATER_MEASUREMENT_FIELDS`
    were appended lacks them and is whole; every other field must be there,
    no key the schema does not know, each value null or of its label's type.
    """
    labels = dict(schema.MEASUREMENT_FIELDS)
    problems = []
    if record.get("record_type") != "measurement":
        problems.append(f"record_type is {record.get('record_type')!r}, not 'measurement'")
    missing = [n for n in schema.MEASUREMENT_FIELD_NAMES
               if n not in record and n not in schema.LATER_MEASUREMENT_FIELDS]
    if missing:
        problems.append(f"missing {', '.join(missing)}")
    unknown = sorted(str(k) for k in record if k not in labels)
    if unknown:
        problems.append(f"fields no measurement has: {', '.join(unknown)}")
    for name, label in schema.MEASUREMENT_FIELDS:
        if name in record and not _fits_measurement(record[name], label):
            problems.append(f"field {name!r} should be {label}, got {schema.json_type_words(record[name])}")
    return problems


class Measurement(_Record):
    """One measurement record as written, checked against :data:`measure.schema.MEASUREMENT_FIELDS`."""

    __slots__ = ()

    def __init__(self, record: Mapping, where: str) -> None:
        if not isinstance(record, Mapping):
            raise MeasurementRecordError(f"{where}: a measurement must be a JSON object, "
                                         f"got {schema.json_type_words(record)}")
        problems = measurement_problems(record)
        if problems:
            more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
            raise MeasurementRecordError(f"{where}: not a measurement of this schema: {problems[0]}{more}")
        super().__init__(record)


_with_fields(Measurement, ((n, label, schema.FIELD_DESCRIPTIONS.get(n, n)) for n, label in schema.MEASUREMENT_FIELDS))
