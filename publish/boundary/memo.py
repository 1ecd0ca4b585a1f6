"""Published files both boundary checks found clean, so a build does not search the same bytes again.

Most of a ten-year publication's files do not change from one build to
the next (an open-lane year that has ended, a panel file), yet every build
searched every byte of them.  A file's verdict depends on its bytes, its
name (the name says how its texts are read), the checks' code, and what
the checks search for; so a clean file is recorded under the SHA-256 of its
name and bytes with digests of the rest, and the next build skips it only
when all of them are the same.  A changed byte is a new digest: the file is
searched as if never seen.

What the checks search for has two parts that change at different speeds:

* the sealed-text check's private and public wording, and the value
  check's paths of this machine and credentials (:func:`fingerprints`,
  ``base``) — change rarely;
* the value check's money rules — the budget's figures, which the spend
  ledger moves every month, and the amounts exempt as others' words
  (``money``).

A file in which the value check found nothing worth a look (no currency
word, no path, no credential: :meth:`publish.boundary.values.ValueCheck.may_refuse`
false for every text) is clean whatever the money rules hold, so its
record does not name them; a file where it looked is searched again when
they change.  The code of the checks is part of ``base``: a change to it
searches everything again.

The record is one digested file under ``private/``
(:func:`llmarchive.archive.jsonio.write_digested`): torn or edited, it is
no record, and every file is searched.
"""
import hashlib
import json
from pathlib import Path
from typing import Optional

from llmarchive.archive import ArchivePaths, REPO_ROOT, jsonio

VERSION = 1
CODE = ("publish/boundary/sealed.py", "publish/boundary/values.py", "publish/boundary/texts.py",
        "publish/boundary/memo.py", "llmarchive/archive/boundary_rules.py")


def record_file(paths: ArchivePaths) -> Path:
    return paths.private / "publication" / "scanned_clean.json"


def _sha(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")).hexdigest()


def _file_sha(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


def fingerprints(sealed_check, value_check) -> tuple[str, str]:
    """``(base, money)``: digests of what the two checks search for (see the module's words)."""
    code = [_file_sha(REPO_ROOT / name) for name in CODE]
    streams = sorted(" ".join(stream) for stream, _ in sealed_check._streams)
    public = sorted(sealed_check._public_joined)
    secrets = sorted(hashlib.sha256(value.encode("utf-8")).hexdigest() for _, value in value_check.secrets)
    base = _sha([VERSION, code, streams, public, sorted(value_check.paths), secrets])
    figures = {str(decimals): sorted(str(f) for f in found) for decimals, found in value_check.figures.items()}
    exempt = {number: sorted(contexts) for number, contexts in value_check.exempt.items()}
    return base, _sha([figures, exempt])


def key(name: str, data: bytes) -> str:
    return hashlib.sha256(name.encode("utf-8") + b"\0" + data).hexdigest()


def batch_key(joined: str) -> str:
    """A batch of texts searched as one (their texts joined by the sealed-text check's separator word)."""
    return hashlib.sha256(b"batch\0" + joined.encode("utf-8", "surrogatepass")).hexdigest()


class ScanMemo:
    """The files and batches found clean before, and the ones this build finds clean (kept by :func:`save`).

    A whole-history file changes at every build — the database gains a
    month's rows — so it is never skipped whole; but most of its batches of
    texts (:data:`publish.boundary.sealed.BATCH_TEXTS` rows of a table, of a
    CSV) are the batches the last build searched, and a batch is clean or
    not by its texts alone, under the same checks, as a file is by its bytes.
    """

    def __init__(self, entries: dict, base: str, money: str, batches: Optional[dict] = None) -> None:
        self._entries = entries
        self._batches = batches or {}
        self.base, self.money = base, money
        self.kept: dict[str, dict] = {}
        self.kept_batches: dict[str, dict] = {}
        self.skipped: list[str] = []

    def _holds(self, found: object) -> bool:
        return isinstance(found, dict) and found.get("base") == self.base and found.get("money") in (None, self.money)

    def clean_batches(self) -> dict[str, bool]:
        """The batch keys a search may skip now, each with whether its verdict needed the money rules (what the
        workers are given)."""
        return {k: found.get("money") is not None for k, found in self._batches.items() if self._holds(found)}

    def found_clean_batches(self, found: list[tuple[str, Optional[bool]]]) -> None:
        """Keep batches searched clean now (``looked``: whether the money rules were needed), or skipped as
        clean before (None)."""
        for k, looked in found:
            if looked is None:
                if k in self._batches:
                    self.kept_batches[k] = self._batches[k]
            else:
                self.kept_batches[k] = {"base": self.base, "money": self.money if looked else None}

    def clean(self, name: str, data: bytes) -> Optional[str]:
        """The file's key when it was found clean under these checks (it is then kept and not searched)."""
        k = key(name, data)
        found = self._entries.get(k)
        if self._holds(found):
            self.kept[k] = found
            self.skipped.append(name)
            return k
        return None

    def found_clean(self, k: str, looked: bool) -> None:
        self.kept[k] = {"base": self.base, "money": self.money if looked else None}


def load(paths: ArchivePaths, sealed_check, value_check) -> ScanMemo:
    base, money = fingerprints(sealed_check, value_check)
    found = jsonio.read_digested(record_file(paths))
    entries = found.get("files") if found and found.get("version") == VERSION else None
    batches = found.get("batches") if found and found.get("version") == VERSION else None
    return ScanMemo(entries if isinstance(entries, dict) else {}, base, money,
                    batches if isinstance(batches, dict) else {})


def save(paths: ArchivePaths, memo: ScanMemo) -> None:
    """Keep the files of this build found clean (the others are dropped: the record never outgrows a build)."""
    jsonio.write_digested(record_file(paths), {"version": VERSION, "files": dict(sorted(memo.kept.items())),
                                               "batches": dict(sorted(memo.kept_batches.items()))})
