"""Run ids: the one place that makes every kind of run id and reads one back.

A run id names a run folder (``private/experiments/<run_id>/`` and the same
layout under the held and the instrument roots) and, in the spend ledger,
the calls charged to one run.  Existing archives hold ids made by these
schemes, so every function here must keep making the same bytes for ever:
tests/test_run_ids.py pins one id of each kind.

==========================  ==============================================  =====================
who makes it                the id                                          ``RunId.job``
==========================  ==============================================  =====================
the monthly sweep           ``sweep_<YYYY-MM>_<protocol>_<model slug>``     ``full_sweep``
a generation bridge         ``bridge_<old>_to_<new>_<protocol>_<role>``     ``bridge``
``llmarchive run``          ``<YYYY-MM-DD>_<protocol>_<model slug>``        ``manual``
a comparison run            ``comparison_<protocol>_<api>_<model slug>``    ``comparison``
an open-weights generation  ``ow_<generation>_<protocol>``                  ``open_weights_series``
the guard rotation          ``rotation_<YYYY-MM-DD>_<protocol>``            ``guard_margin_rotation``
the subject fingerprint     ``subject_fingerprint_<day>_<model>@<n>``       ``subject_fingerprint``
                            (a ledger run: no folder; its launches
                            lock ``subject_fingerprint_<day>_<model>``)
an imported Inspect log     ``inspect-<eval id>``                           None (an outsider's)
an imported lm-eval log     ``lm-eval-<start>-<protocol>-<model slug>``     None (an outsider's)
==========================  ==============================================  =====================

Reading one back (:func:`parse`) gives a :class:`RunId`.  A protocol id has
a grammar of its own (``<family>__<type>__<series>``, :func:`panels.build`),
which is what lets a protocol be told apart from the model slug beside it.
Some schemes cannot be split whole: a model slug or a generation id may hold
underscores, ``_to_`` or a trailing ``-<k>`` of their own.  :func:`parse`
then leaves the parts it cannot place as None instead of guessing: it
always gives the job and the date or month; it gives a protocol and a model
only when the id splits one way alone.  What callers need beyond that is
asked of the scheme with the parts in hand (:func:`is_sweep_of`,
:func:`fingerprint_session`), never by splitting an id elsewhere.
"""
import hashlib
import re
from dataclasses import dataclass
from typing import Iterable, Optional, Union

from llmarchive.archive import jobs as job_table
from llmarchive.archive.paths import check_id

RUN_ID_MAX = 200           # the archive's limit on an id (llmarchive.archive.paths.check_id)
COMPARISON = "comparison"  # a comparison run is no job of the archive's: an outsider's run, made by them
ROLES = ("old", "new")
# The API word of a comparison run id: a provider's name (llmarchive.subjects.registry), which has no "_".
# Read as a word, not checked against the provider table: the archive's files sit below the subjects and name
# no provider; what `comparison run` accepts is the table's to say (llmarchive.comparison.run).
_API = r"[a-z0-9][a-z0-9.-]*"

_PROTOCOL = r"[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*__[A-Za-z0-9-]+__v[0-9]+"
_PROTOCOL_RE = re.compile(_PROTOCOL)
_DAY = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_MONTH = r"[0-9]{4}-[0-9]{2}"


@dataclass(frozen=True)
class RunId:
    """A run id read back: who made it and the parts its scheme could give without guessing.

    ``date`` is a day (``YYYY-MM-DD``) — a month (``YYYY-MM``) for the sweep;
    ``model`` is the model's slug as the id holds it (the old model's for a
    bridge, the generation id for an open-weights run, the model id as given
    for the subject fingerprint); ``suffix`` is what closes the id: the
    bridge's role, the comparison run's API, the fingerprint's session.
    """

    text: str
    job: Optional[str] = None           # None: an id no scheme made (a ``--run-id`` chosen by hand)
    date: Optional[str] = None
    protocol_id: Optional[str] = None
    model: Optional[str] = None
    new_model: Optional[str] = None     # a bridge's new model
    suffix: Optional[str] = None

    @property
    def month(self) -> Optional[str]:
        return self.date[:7] if self.date else None


# --------------------------------------------------------------------------
# making
# --------------------------------------------------------------------------

def slug(text: str) -> str:
    """``text`` as a run-id fragment (letters, digits, ``.``, ``_`` and ``-``; ``model`` when nothing is left)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "model"


def sweep_run_id(day: str, protocol_id: str, model_id: str) -> str:
    """The sweep's run of ``protocol_id`` on ``model_id`` in the month of ``day`` (a day or a month)."""
    return f"sweep_{day[:7]}_{protocol_id}_{slug(model_id)}"


def bridge_run_id(old: str, new: str, protocol_id: str, role: str) -> str:
    """A generation bridge's run of ``protocol_id`` on its ``old`` or ``new`` model (``role``)."""
    return f"bridge_{slug(old)}_to_{slug(new)}_{protocol_id}_{role}"


def manual_run_id(run_date: str, protocol_id: str, model: str) -> str:
    """``llmarchive run``'s default id: the run's date, the protocol and the model (or reference model name)."""
    return f"{run_date}_{protocol_id}_{slug(model)}"


def comparison_run_id(protocol_id: str, model: str, api: str) -> str:
    """The run folder one (panel, model, API) resumes into: no date in it, so a rerun on any day resumes it.

    A model id long enough to push the id past :data:`RUN_ID_MAX` characters
    is shortened, with a hash of the whole id kept, so two long ids never
    share a folder.
    """
    return _within_limit(f"{COMPARISON}_{protocol_id}_{api}_{slug(model)}", model)


def inspect_run_id(eval_id: str) -> str:
    """An imported Inspect AI log's run: the eval's own id (``comparison import``)."""
    return f"inspect-{eval_id}"


def lm_eval_run_id(start: str, protocol_id: str, model: str) -> str:
    """An imported lm-evaluation-harness log's run (its log names none): its UTC start
    (``YYYYMMDDTHHMMSS``), the protocol and the model, shortened like :func:`comparison_run_id`."""
    return _within_limit(f"lm-eval-{start}-{protocol_id}-{slug(model)}", model)


def _within_limit(run_id: str, model: str) -> str:
    """``run_id``, or past :data:`RUN_ID_MAX` cut short with a hash of the whole ``model`` kept."""
    if len(run_id) <= RUN_ID_MAX:
        return run_id
    digest = hashlib.sha256(model.encode("utf-8")).hexdigest()[:12]
    return run_id[:RUN_ID_MAX - 13].rstrip("-.") + "-" + digest


def retry_run_id(base: str, attempt: int) -> str:
    """``base`` for the first attempt, ``base-<attempt>`` after (a new run beside one left incomplete)."""
    return base if attempt == 1 else f"{base}-{attempt}"


def open_weights_run_id(generation_id: str, protocol_id: str) -> str:
    """An open-weights generation's run of ``protocol_id`` (refused when it could escape its folder)."""
    return check_id(f"ow_{generation_id}_{protocol_id}", "run_id")


def rotation_run_id(day: str, protocol_id: str) -> str:
    """The guard rotation's run of ``day`` (under the instrument's own run root)."""
    return f"rotation_{day}_{protocol_id}"


def fingerprint_run_id(day: str, model_id: str, session: Union[int, str]) -> str:
    """The subject fingerprint's ledger run: the day, the model as named, and the attempt (1, 2, …)."""
    return f"{_fingerprint_base(day, model_id)}@{session}"


def _fingerprint_base(day: str, model_id: str) -> str:
    return f"{job_table.SUBJECT_FINGERPRINT}_{day}_{model_id}"


def fingerprint_lock_id(day: str, model_id: str) -> str:
    """What every launch of the subject fingerprint of ``day`` on ``model_id`` collides on: its earmark's name.

    Not a ledger run (each attempt of the day is one, :func:`fingerprint_run_id`)
    but the day and the model alone, so two launches at the same moment share
    it whatever attempt each would be.  It names a file: a model id that is
    not a safe name is slugged with a hash of the whole id kept, so two models
    never share a lock.
    """
    name = slug(model_id)
    if name != model_id:
        name = f"{name}-{hashlib.sha256(model_id.encode('utf-8')).hexdigest()[:12]}"
    return _within_limit(f"{job_table.SUBJECT_FINGERPRINT}_{day}_{name}", model_id)


# --------------------------------------------------------------------------
# reading back
# --------------------------------------------------------------------------

def _protocol_then_model(rest: str) -> tuple[Optional[str], Optional[str]]:
    """``<protocol>_<model>`` split where a whole protocol id ends; (None, None) unless exactly one split works."""
    cuts = [i for i in range(len(rest)) if rest[i] == "_" and _PROTOCOL_RE.fullmatch(rest[:i]) and rest[i + 1:]]
    if len(cuts) != 1:
        return None, None
    return rest[:cuts[0]], rest[cuts[0] + 1:]


def _head_then_protocol(rest: str) -> tuple[Optional[str], Optional[str]]:
    """``<head>_<protocol>`` split where a whole protocol id begins; (None, None) unless exactly one split works."""
    cuts = [i for i in range(len(rest)) if rest[i] == "_" and rest[:i] and _PROTOCOL_RE.fullmatch(rest[i + 1:])]
    if len(cuts) != 1:
        return None, None
    return rest[:cuts[0]], rest[cuts[0] + 1:]


PREFIXES = {"sweep_": job_table.FULL_SWEEP, "bridge_": job_table.BRIDGE, f"{COMPARISON}_": COMPARISON,
            "ow_": job_table.OPEN_WEIGHTS_SERIES, "rotation_": job_table.GUARD_MARGIN_ROTATION,
            f"{job_table.SUBJECT_FINGERPRINT}_": job_table.SUBJECT_FINGERPRINT}


def parse(text: str) -> RunId:
    """Read ``text`` back as the run id of its scheme; an id no scheme made gives ``job`` None.

    The job is told by the scheme's prefix (a manual id by its leading day and
    a protocol after it); the date (or the sweep's month) is read wherever the
    scheme has one; a protocol, a model and a suffix only where the scheme
    places them one way alone (see the module docstring): the bridge's models
    when ``_to_`` appears once, a comparison id's model as it stands (a
    shortened id keeps its hash), and never the ``-<k>`` of
    :func:`retry_run_id`, which a model slug can end in too.
    """
    text = str(text)
    job = next((job for prefix, job in PREFIXES.items() if text.startswith(prefix)), None)
    if job == job_table.FULL_SWEEP:
        match = re.fullmatch(rf"sweep_({_MONTH})_(.+)", text)
        return RunId(text, job, match[1], *_protocol_then_model(match[2])) if match else RunId(text, job)
    if job == job_table.BRIDGE:
        match = re.fullmatch(r"bridge_(.+)_(old|new)", text)
        if match is None:
            return RunId(text, job)
        models, protocol = _head_then_protocol(match[1])
        pair = models.split("_to_") if models is not None and models.count("_to_") == 1 else (None, None)
        return RunId(text, job, None, protocol, pair[0], pair[1], match[2])
    if job == COMPARISON:
        match = re.fullmatch(rf"{COMPARISON}_({_PROTOCOL})_({_API})_(.+)", text)
        return RunId(text, job, None, match[1], match[3], suffix=match[2]) if match else RunId(text, job)
    if job == job_table.OPEN_WEIGHTS_SERIES:
        generation, protocol = _head_then_protocol(text[len("ow_"):])
        return RunId(text, job, None, protocol, generation)
    if job == job_table.GUARD_MARGIN_ROTATION:
        match = re.fullmatch(rf"rotation_({_DAY})_(.+)", text)
        return RunId(text, job, match[1], match[2]) if match else RunId(text, job)
    if job == job_table.SUBJECT_FINGERPRINT:
        match = re.fullmatch(rf"{job_table.SUBJECT_FINGERPRINT}_({_DAY})_(.+?)(?:@([0-9]+))?", text)
        return RunId(text, job, match[1], None, match[2], suffix=match[3]) if match else RunId(text, job)
    match = re.fullmatch(rf"({_DAY})_(.+)", text)
    protocol, model = _protocol_then_model(match[2]) if match else (None, None)
    return RunId(text, job_table.MANUAL, match[1], protocol, model) if protocol else RunId(text)


def is_sweep_id(text: str) -> bool:
    """Whether ``text`` is an id the sweep made (what a run recorded before runs named their job has to go by)."""
    return parse(text).job == job_table.FULL_SWEEP


def is_sweep_of(text: str, month: str, protocol_id: str) -> bool:
    """Whether ``text`` is the sweep's id for ``protocol_id`` in ``month``, whatever the model.

    Exact whatever the protocol id looks like: the month and the protocol are
    given, so only the model's slug is left after them.
    """
    return text.startswith(f"sweep_{month[:7]}_{protocol_id}_")


def fingerprint_session(ledger_run_ids: Iterable[str], day: str, model_id: str) -> int:
    """The next attempt at the day's subject fingerprint: 1 + the ledger runs it already has for ``day``/``model_id``.

    An attempt of the first ledgers carried no ``@<n>``; it counts too.
    """
    base = _fingerprint_base(day, model_id)
    return 1 + sum(r == base or r.startswith(base + "@") for r in set(map(str, ledger_run_ids)))
