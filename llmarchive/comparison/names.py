"""The names a submission gives itself (method §4.2): told apart as a reader sees them, and none of the archive's.

A model id and a ``submitted_by`` are read by people, on a page or in a
table, so two that *look* the same are the same to a reader whatever their
code points: ``simulated-reader-invаriant`` with a Cyrillic ``а``, a name in
fullwidth letters, or U+2011 where a hyphen belongs.  Names are therefore
compared by their **skeleton** (Unicode Technical Standard #39, §4): the text
folded by NFKC and case (which takes fullwidth and other compatibility forms
to their plain letters), then mapped character by character to the prototype
the Unicode confusables table gives it.  The mapping is ICU's own
(``uspoof_getSkeletonUTF8``), the reference implementation with current
Unicode data, from the ICU libraries the ``icu4py`` wheel ships — no table of
our own to fall behind.

Two rules follow (:func:`name_reasons`):

* a model id or submitter whose skeleton is that of a *different* name
  already filed (a comparison point's model id or submitter) or of one of the
  archive's own model ids (its subjects, its simulated readers) is refused,
  naming both; the identical name is not a look-alike — a lab may file two
  runs, and an outsider may run the archive's subject model;
* the archive's own labels are reserved (:data:`RESERVED_MODEL_WORDS`,
  :data:`RESERVED_SUBMITTER_WORDS`): a point is published as a known-answer
  reader or a bridge run because of *how* it was filed, recorded by the
  archive (the record's ``source``), and an outside name that borrows those
  words is refused, so no reader can take an outside run for the archive's.
  Only the archive's own known-answer step (:data:`KNOWN_ANSWER_SOURCE`,
  passed by the code that runs it, never read from a file) may use them.
"""
import ctypes
import functools
import glob
import os
import re
import unicodedata
from typing import Iterable, Optional

from llmarchive.archive import ArchivePaths, record_logs as records
from measure.errors import ArchiveError
from panels.readers import KNOWN_ANSWER_READERS, SIMULATED_MODEL_PREFIX, simulated_model_id, simulated_reader

KNOWN_ANSWER_SOURCE = "known_answer"
"""The ``source`` the intake records on a point filed by the archive's own known-answer step (``make demo``)."""
RESERVED_MODEL_WORDS = (SIMULATED_MODEL_PREFIX.rstrip("-"), "simulated reader")
RESERVED_SUBMITTER_WORDS = ("this archive", "generation bridge", "needs_review", "simulated reader",
                            "simulated-reader", "known answer", "make demo", "llm-archive", "llmarchive")


class SkeletonUnavailable(ArchiveError, RuntimeError):
    """ICU's confusable mapping could not be loaded (the ``icu4py`` wheel is missing or has no ICU libraries)."""


@functools.lru_cache(maxsize=1)
def _icu() -> tuple[ctypes.CDLL, int, object]:
    """ICU's spoof checker from the libraries ``icu4py`` ships: ``(library, checker, getSkeletonUTF8)``.

    The ICU C API names each symbol with the major version (``uspoof_open_78``),
    read here from the library's file name, so a newer pinned wheel needs no edit.
    """
    try:
        import icu4py
    except ImportError as exc:
        raise SkeletonUnavailable("the icu4py package is not installed (pip install -e .)") from exc
    base = os.path.dirname(os.path.dirname(icu4py.__file__))
    folders = [os.path.join(base, "icu4py.libs"), os.path.join(os.path.dirname(icu4py.__file__), ".dylibs")]

    def find(name: str) -> Optional[str]:
        found = sorted(p for folder in folders for p in glob.glob(os.path.join(folder, f"lib{name}*")))
        return found[0] if found else None

    i18n = find("icui18n")
    version = re.search(r"\.(\d+)(?:\.\d+)*$|(\d+)(?:\.\d+)*\.dylib$", i18n or "")
    if i18n is None or version is None:
        raise SkeletonUnavailable("icu4py ships no ICU i18n library here")
    major = version.group(1) or version.group(2)
    for name in ("icudata", "icuuc"):
        path = find(name)
        if path:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(i18n)
    status = ctypes.c_int(0)
    open_ = getattr(lib, f"uspoof_open_{major}")
    open_.restype = ctypes.c_void_p
    checker = open_(ctypes.byref(status))
    if status.value > 0 or not checker:
        raise SkeletonUnavailable(f"ICU's spoof checker did not open (error {status.value})")
    skeleton_utf8 = getattr(lib, f"uspoof_getSkeletonUTF8_{major}")
    skeleton_utf8.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_int32,
                              ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int)]
    skeleton_utf8.restype = ctypes.c_int32
    return lib, checker, skeleton_utf8


def skeleton(text: str) -> str:
    """The UTS #39 skeleton of ``text`` after NFKC and case folding: equal skeletons look alike to a reader."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    data = folded.encode("utf-8", "surrogatepass")
    _, checker, skeleton_utf8 = _icu()
    size = 4 * len(data) + 64
    while True:
        out, status = ctypes.create_string_buffer(size), ctypes.c_int(0)
        length = skeleton_utf8(checker, 0, data, len(data), out, size, ctypes.byref(status))
        if status.value == 15 and length >= size:      # U_BUFFER_OVERFLOW_ERROR: ask again with room
            size = length + 1
            continue
        if status.value > 0:
            raise SkeletonUnavailable(f"ICU could not compute a skeleton (error {status.value})")
        return out.raw[:length].decode("utf-8", "replace")


def _compact(text: str) -> str:
    """The skeleton with everything but letters and digits taken out: how a reserved word is looked for."""
    return "".join(ch for ch in skeleton(text) if ch.isalnum())


def own_model_ids(paths: ArchivePaths) -> set[str]:
    """The archive's own model ids: its simulated readers and every subject model its records name."""
    own = {simulated_model_id(name) for name in KNOWN_ANSWER_READERS}
    for kind in ("subject_model", "needs_review"):
        for record in records.read(paths, kind):
            for key in ("model_id", "previous_model_id"):
                if isinstance(record.get(key), str) and record[key]:
                    own.add(record[key])
    return own


def _look_alike(name: str, known: Iterable[str]) -> Optional[str]:
    """A different name in ``known`` that looks like ``name`` (the same skeleton); None when there is none."""
    mine = skeleton(name)
    return next((k for k in sorted(set(known)) if k != name and skeleton(k) == mine), None)


def _reserved(name: str, words: Iterable[str]) -> Optional[str]:
    mine = _compact(name)
    return next((w for w in words if _compact(w) in mine), None)


ALIKE = "(the same letters to a reader, other code points)"


def _model_reason(paths: ArchivePaths, points: list[dict], model_id: str, source: Optional[str]) -> Optional[str]:
    """The first thing wrong with a model id, in this order: not a reader (for the known-answer step), a
    look-alike of the archive's own id, a reserved name, a look-alike of a filed point's id."""
    alike_own = _look_alike(model_id, own_model_ids(paths))
    if source == KNOWN_ANSWER_SOURCE and simulated_reader(model_id) is None:
        return f"model id {model_id!r} is not one of the archive's simulated readers; the known-answer step " \
               "files only those"
    if alike_own is not None:
        return f"model id {model_id!r} looks like the archive's own model id {alike_own!r} {ALIKE}"
    reserved = None if source == KNOWN_ANSWER_SOURCE else _reserved(model_id, RESERVED_MODEL_WORDS)
    if reserved is not None:
        return f"model id {model_id!r} uses the archive's reserved name {reserved!r} (its own simulated " \
               "readers); an outside run names its own model"
    filed = {p["model_id"] for p in points if isinstance(p.get("model_id"), str)}
    if (alike := _look_alike(model_id, filed)) is not None:
        return f"model id {model_id!r} looks like {alike!r}, the model id of a filed comparison point {ALIKE}"
    return None


def _submitter_reason(points: list[dict], who: str, source: Optional[str]) -> Optional[str]:
    """The first thing wrong with a submitter: a reserved word (outside the known-answer step), or a look-alike."""
    reserved = None if source == KNOWN_ANSWER_SOURCE else _reserved(who, RESERVED_SUBMITTER_WORDS)
    if reserved is not None:
        return f"submitted_by {who!r} uses the archive's reserved words {reserved!r}; only the archive files its " \
               "own runs under them"
    filed = {str(p["submitted_by"]).strip() for p in points if isinstance(p.get("submitted_by"), str)}
    if (alike := _look_alike(who, filed)) is not None:
        return f"submitted_by {who!r} looks like {alike!r}, the submitter of a filed comparison point {ALIKE}"
    return None


def name_reasons(paths: ArchivePaths, points: list[dict], model_id: Optional[str], submitted_by: Optional[str],
                 source: Optional[str] = None) -> list[tuple[str, str]]:
    """Why a submission's model id or submitter cannot be filed: a look-alike of a known name, or a reserved word.

    ``points`` are the comparison points already filed; ``source`` is
    :data:`KNOWN_ANSWER_SOURCE` only when the archive's own known-answer step
    files the point, which alone may carry a simulated reader's id.
    """
    found = [("model_id", _model_reason(paths, points, model_id, source) if isinstance(model_id, str) and model_id
              else None),
             ("submitted_by", _submitter_reason(points, submitted_by.strip(), source)
              if isinstance(submitted_by, str) and submitted_by.strip() else None)]
    return [(condition, message) for condition, message in found if message is not None]
