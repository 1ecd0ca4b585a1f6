"""The sealed-text check: no guard or sealed wording in any published byte.

A ``guard`` protocol is only worth anything while its wording has never been
public (method §3, §10): once it is, it cannot tell contamination from real
change any more.  So before a build is moved into ``public/``, every file it
would publish is searched for the wording of every protocol that is not in
the ``open`` lane (guard, sealed, and candidates without a lane), and the
build is refused if any of it appears — whole, or as any run of
:data:`WINDOW` consecutive words.

Words are compared after the same normalisation on both sides: text is
case-folded and split into ``\\w+`` runs, so punctuation, whitespace, HTML
escaping and JSON quoting cannot hide a copy.  Files are read the way a
reader would read them: JSON and JSONL by their string values, CSV by cell,
HTML with entities decoded and its embedded JSON parsed, SQLite by every
value of every table, anything else as UTF-8 text.

Two kinds of text are exempt because they are public by design: the wording
of ``open`` protocols (published whole in ``panels/<protocol_id>.json``, read
here like every other JSON file, so a private phrase in any of its fields is
still a leak), and the shared decision instruction.  A private run
of words that occurs in them is not a leak.  The error message names the
file, the protocol, the item and the version, and never quotes the words.

How the search stays fast on a ten-year archive: a 12-word run in a
published text always contains one 6-word window that starts at a multiple
of 6, so only those windows are looked up (in an index of every private
6-word window), and each hit is extended word by word in both directions to
measure the real overlap.
"""
import re
import signal
import sqlite3
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Optional

from publish.errors import LeakError
from publish.data import ProtocolText
from publish.boundary.memo import batch_key, key as memo_key
from publish.boundary.texts import SQLITE_SUFFIXES, data_texts, file_texts, row_sql, sqlite_parts, sqlite_texts
from publish.workers import pool

WINDOW = 12
HALF = WINDOW // 2
SEPARATOR_WORD = "qzx0sealedtextseparator0xzq"
BATCH_TEXTS = 256          # texts searched together (a CSV's rows, a JSONL file's lines, a table's rows)
BATCH_CHARS = 1 << 19
_WORD = re.compile(r"\w+")


# ASCII text (nearly every published text) takes a faster road to the same words: every ASCII character that
# is not a word character (``\w``: letters, digits, underscore) becomes a space and the capitals lower case
# (what case-folding does to ASCII), then the text is split on whitespace.  The check scans every published
# text, and splitting them into words was the largest part of its time on a ten-year archive
# (tests/test_publish_leak.py checks that both roads give the same words).
_ASCII_WORDS = str.maketrans({**{i: " " for i in range(128) if not (chr(i).isalnum() or chr(i) == "_")},
                              **{i: chr(i).lower() for i in range(ord("A"), ord("Z") + 1)}})


def words(text: str) -> list[str]:
    """The normalised words of ``text``: case-folded ``\\w+`` runs."""
    if text.isascii():
        return text.translate(_ASCII_WORDS).split()
    return _WORD.findall(text.casefold())


@dataclass(frozen=True)
class Leak:
    where: str
    protocol_id: str
    item_id: str
    version: str
    run_length: int

    def message(self) -> str:
        return (f"{self.where}: contains {self.run_length} consecutive words of the wording of protocol "
                f"{self.protocol_id}, item {self.item_id}, version {self.version} (lane is not open); "
                "refusing to publish")


class SealedTextCheck:
    """An index of private wording that published text is searched against."""

    def __init__(self, private: Iterable[ProtocolText], public: Iterable[str]) -> None:
        public_words = [words(t) for t in public]
        self._allowed: set[tuple[str, ...]] = set()
        for w in public_words:
            for i in range(len(w) - WINDOW + 1):
                self._allowed.add(tuple(w[i:i + WINDOW]))
        self._public_joined = [" " + " ".join(w) + " " for w in public_words]
        streams: dict[tuple[str, ...], ProtocolText] = {}
        for text in private:
            streams.setdefault(tuple(words(text.text)), text)
        self._streams: list[tuple[tuple[str, ...], ProtocolText]] = list(streams.items())
        # Texts are searched many at a time, joined by a word no private text has: no run of private words
        # can cross it, so a batch with no run has none in any of its texts (:func:`_first_refusal`).
        self.separator: Optional[str] = None
        if not any(SEPARATOR_WORD in stream for stream, _ in self._streams):
            self.separator = f" {SEPARATOR_WORD} "
        self._index: dict[tuple[str, ...], list[tuple[int, int]]] = {}
        self._short: list[tuple[str, ProtocolText]] = []
        for number, (stream, text) in enumerate(self._streams):
            if len(stream) < WINDOW:
                phrase = " " + " ".join(stream) + " "
                if stream and not any(phrase in p for p in self._public_joined):
                    self._short.append((phrase, text))
                continue
            secret_windows = [tuple(stream[s:s + WINDOW]) not in self._allowed
                              for s in range(len(stream) - WINDOW + 1)]
            for j in range(len(stream) - HALF + 1):
                # keep position j only if some 12-word window around it is not public
                lo, hi = max(0, j + HALF - WINDOW), min(j, len(stream) - WINDOW)
                if any(secret_windows[s] for s in range(lo, hi + 1)):
                    self._index.setdefault(tuple(stream[j:j + HALF]), []).append((number, j))

    @property
    def empty(self) -> bool:
        return not self._index and not self._short

    def _extend(self, w: list[str], p: int, number: int, j: int) -> Optional[int]:
        stream = self._streams[number][0]
        left = 0
        while p - left - 1 >= 0 and j - left - 1 >= 0 and w[p - left - 1] == stream[j - left - 1]:
            left += 1
        right = 0
        while p + HALF + right < len(w) and j + HALF + right < len(stream) and \
                w[p + HALF + right] == stream[j + HALF + right]:
            right += 1
        length = left + HALF + right
        if length < WINDOW:
            return None
        start = j - left
        for s in range(start, start + length - WINDOW + 1):
            if tuple(stream[s:s + WINDOW]) not in self._allowed:
                return length
        return None

    def scan_text(self, text: str, where: str) -> Optional[Leak]:
        """The first leak in ``text``, or ``None``."""
        if self.empty or not text:
            return None
        w = words(text)
        index = self._index
        # fast path, at C speed: the aligned 6-word windows of a clean text share nothing with the index
        if index.keys().isdisjoint(zip(*(w[i::HALF] for i in range(HALF)))) and not self._short:
            return None
        for p in range(0, len(w) - HALF + 1, HALF):
            hits = index.get(tuple(w[p:p + HALF]))
            if not hits:
                continue
            for number, j in hits:
                length = self._extend(w, p, number, j)
                if length:
                    t = self._streams[number][1]
                    return Leak(where, t.protocol_id, t.item_id, t.version, length)
        if self._short:
            joined = " " + " ".join(w) + " "
            for phrase, t in self._short:
                if phrase in joined:
                    return Leak(where, t.protocol_id, t.item_id, t.version, len(phrase.split()))
        return None

    def check_texts(self, texts: Iterable[tuple[str, str]]) -> None:
        """Raise :class:`LeakError` on the first ``(where, text)`` that leaks."""
        for where, text in texts:
            leak = self.scan_text(text, where)
            if leak:
                raise LeakError(leak.message())

    def check_file(self, path: Path, name: Optional[str] = None) -> None:
        self.check_texts(file_texts(path, name or str(path)))

    def check_tree(self, root: Path, workers: int = 2, also=None) -> None:
        """Check every file under ``root`` (a build's staging folder or a release).

        The files (and a database's tables) are independent, so they are
        searched by ``workers`` processes, each given this index once; clean
        ones, never forked from the caller (:mod:`publish.workers`).

        ``also`` is a second check (the value check) searched in the same pass over the same
        texts (:class:`publish.boundary.values.ValueCheck`: its ``scan_text``,
        ``scan_file_bytes`` and ``error``), so every file is read once for
        both; its refusal raises its own error class.
        """
        tasks = []
        for path in sorted((p for p in root.rglob("*") if p.is_file()), key=lambda p: -p.stat().st_size):
            name = str(path.relative_to(root))
            if path.suffix.lower() in SQLITE_SUFFIXES:
                tasks.extend((str(path), name, part) for part in sqlite_parts(path))
                if also is not None:
                    tasks.append((str(path), name, RAW))
            else:
                tasks.append((str(path), name, None))
        if workers <= 1 or len(tasks) < 2:
            for task in tasks:
                _raise(_check_task(task, self, also), also)
            return
        with pool(workers, initializer=_adopt, initargs=(self, also)) as executor:
            for future in as_completed([executor.submit(_check_task, task) for task in tasks]):
                found = future.result()
                if found:
                    executor.shutdown(wait=False, cancel_futures=True)
                    _raise(found, also)


class TreeScan:
    """Both boundary checks' search over a build's files while the build goes on (:mod:`publish.pipeline.build`).

    Each file is handed over as soon as it exists — its bytes from memory
    before they are written (:func:`data_texts`, the same texts
    :func:`file_texts` reads), the database from its file once built — and
    searched by ``workers`` clean processes while the build renders and
    writes the rest.  :meth:`finish` then searches, from disk, any file of
    the staging folder not handed over, so every byte that is published has
    been searched, and raises the first refusal found, as :meth:`SealedTextCheck.check_tree`
    does.  Use it as a context manager: leaving it stops the workers.
    """

    def __init__(self, check: "SealedTextCheck", also=None, workers: int = 2, memo=None) -> None:
        self._check, self._also = check, also
        # The memo's batches go to each worker once: a batch of a changed file (a table's rows, a CSV's) found
        # clean by an earlier build under the same checks is not searched again (publish.boundary.memo).
        seen = memo.clean_batches() if memo is not None else None
        self._executor = pool(workers, initializer=_adopt, initargs=(check, also, seen))
        self._futures: list = []
        self._searched: set[str] = set()
        # publish.boundary.memo.ScanMemo: a file handed over whose name and bytes both checks found clean before,
        # under the same checks, is not searched again; one found clean now is kept for the next build.
        self._memo = memo

    def __enter__(self) -> "TreeScan":
        return self

    def __exit__(self, *exc_info) -> None:
        self._executor.shutdown(wait=not any(exc_info), cancel_futures=True)

    def data(self, name: str, data: bytes) -> None:
        """Search ``data``, the bytes the build is about to publish as ``name`` (unless the memo vouches for them)."""
        self._searched.add(name)
        if self._memo is None:
            self._futures.append((self._executor.submit(_search_data, name, data), None))
        elif self._memo.clean(name, data) is None:
            self._futures.append((self._executor.submit(_search_data, name, data), memo_key(name, data)))

    def file(self, path: Path, name: str) -> None:
        """Search the file at ``path``, published as ``name`` (a database in parts, and its raw bytes)."""
        self._searched.add(name)
        if path.suffix.lower() in SQLITE_SUFFIXES:
            tasks = [(str(path), name, part) for part in sqlite_parts(path)]
            if self._also is not None:
                tasks.append((str(path), name, RAW))
        else:
            tasks = [(str(path), name, None)]
        self._futures.extend((self._executor.submit(_search_task, task), None) for task in tasks)

    def finish(self, root: Path) -> None:
        """Search what is under ``root`` and was not handed over, wait for every search, raise the first refusal."""
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            name = str(path.relative_to(root))
            if name not in self._searched:
                self.file(path, name)
        clean: list = []
        batches: list = []
        # Every search is waited for in the order it was handed out, so the refusal named is the same whichever
        # worker finishes first: a published file's own, before the database's raw bytes searched after it.
        for future, k in self._futures:
            found, looked, clean_batches = future.result()
            if found:
                _raise(found, self._also)
            if k is not None:
                clean.append((k, looked))
            batches.extend(clean_batches)
        if self._memo is not None:           # remembered only once every search of the build came back clean
            for k, looked in clean:
                self._memo.found_clean(k, looked)
            self._memo.found_clean_batches(batches)


Searched = tuple[Optional[tuple[str, bool]], bool, list]
"""What a worker's search found: ``(message, is_leak)`` for the first refusal (None: clean), whether the value
check looked closer at any text (then the verdict depends on its money rules: :mod:`publish.boundary.memo`),
and the batches it found clean or skipped as clean before (``(key, looked)``; looked None: skipped)."""


def _search_data(name: str, data: bytes) -> Searched:
    """The texts of ``data`` (published as ``name``) searched by a worker."""
    looked: list[bool] = []
    batches: list = []
    found = _first_refusal(data_texts(data, name), _WORKER_CHECK, _WORKER_ALSO, looked, _WORKER_SEEN, batches)
    return found, bool(looked), batches


def _search_task(task: tuple) -> Searched:
    """One task of a file on disk (a database's part, its raw bytes, or a whole file) searched by a worker."""
    batches: list = []
    # (a file on disk is not remembered whole, so whether the money rules were needed is not asked: True)
    return _check_task(task, seen=_WORKER_SEEN, batches=batches), True, batches


def _first_refusal(texts: Iterable[tuple[str, str]], check: "SealedTextCheck", also,
                   looked: Optional[list] = None, seen: Optional[Mapping[str, bool]] = None,
                   batches: Optional[list] = None) -> Optional[tuple[str, bool]]:
    """``(message, is_leak)`` for the first text, in order, that either check refuses, else None.

    Texts are taken in batches (:data:`BATCH_TEXTS`), each searched first as
    one text, its texts joined by the check's separator word: a batch in which
    the sealed-text check finds no run and the value check nothing worth a
    look (its substring tests, :meth:`publish.boundary.values.ValueCheck.may_refuse`)
    holds no refusal in any of its texts, and most batches are such.  Only
    a batch that is not is searched text by text, by the check that looked,
    so the refusal and the text it names are the same as one by one.  The
    per-text calls, not the searching, were most of the checks' time on a
    ten-year archive's 170,000 open-lane lines and database rows.

    With ``seen`` (the batch keys an earlier build found clean under the
    same checks, each with whether the money rules were needed:
    :mod:`publish.boundary.memo`), a batch whose key is there is skipped;
    every batch found clean is put in ``batches`` for the next build.
    """
    batch: list[tuple[str, str]] = []
    size = 0
    for where, text in texts:
        batch.append((where, text))
        size += len(text)
        if len(batch) >= BATCH_TEXTS or size >= BATCH_CHARS:
            found = _remembered_batch(batch, check, also, looked, seen, batches)
            if found:
                return found
            batch, size = [], 0
    return _remembered_batch(batch, check, also, looked, seen, batches) if batch else None


def _remembered_batch(batch: list[tuple[str, str]], check: "SealedTextCheck", also, looked: Optional[list],
                      seen: Optional[Mapping[str, bool]], batches: Optional[list]) -> Optional[tuple[str, bool]]:
    """:func:`_batch_refusal`, skipped for a batch found clean before (``seen``), and kept in ``batches`` when clean."""
    if seen is None or batches is None or check.separator is None or len(batch) < 2:
        return _batch_refusal(batch, check, also, looked=looked)
    k = batch_key(check.separator.join(text for _, text in batch))
    if k in seen:
        if seen[k] and looked is not None:     # its verdict needed the money rules (the same ones still)
            looked.append(True)
        batches.append((k, None))
        return None
    here: list[bool] = []
    found = _batch_refusal(batch, check, also, looked=here)
    if looked is not None and here:
        looked.append(True)
    if not found:
        batches.append((k, bool(here)))
    return found


def _batch_refusal(batch: list[tuple[str, str]], check: "SealedTextCheck", also, leaks: Optional[bool] = None,
                   money: Optional[bool] = None, looked: Optional[list] = None) -> Optional[tuple[str, bool]]:
    """The first refusal in ``batch``; ``leaks`` and ``money`` say which check found the batch worth a look
    when the caller already searched it whole (None: search it here first)."""
    if leaks is None and (check.separator is None or len(batch) < 2):
        leaks, money = True, also is not None
    elif leaks is None:
        # ASCII texts apart from the others, so one text that is not ASCII does not send the whole batch
        # down the slower road to its words (:func:`words`)
        ascii_joined = check.separator.join(text for _, text in batch if text.isascii())
        other_joined = check.separator.join(text for _, text in batch if not text.isascii())
        leaks = check.scan_text(ascii_joined, "") is not None or check.scan_text(other_joined, "") is not None
        money = also is not None and (also.may_refuse(ascii_joined) or also.may_refuse(other_joined))
        if not leaks and not money:
            return None
    if money and looked is not None:
        looked.append(True)
    for where, text in batch:
        leak = check.scan_text(text, where) if leaks else None
        if leak:
            return leak.message(), True
        if money:
            message = also.scan_text(text, where)
            if message:
                return message, False
    return None


RAW = ("raw",)   # the task part that searches a database's raw bytes (the value check's paths and credentials)


def _raise(found: Optional[tuple[str, bool]], also) -> None:
    if found:
        message, is_leak = found
        raise LeakError(message) if is_leak else also.error(message)


_WORKER_CHECK: Optional[SealedTextCheck] = None
_WORKER_ALSO = None
_WORKER_SEEN: Optional[Mapping[str, bool]] = None


def _adopt(check: "SealedTextCheck", also=None, seen: Optional[Mapping[str, bool]] = None) -> None:
    global _WORKER_CHECK, _WORKER_ALSO, _WORKER_SEEN
    _WORKER_CHECK, _WORKER_ALSO, _WORKER_SEEN = check, also, seen
    # A worker never runs its caller's signal handlers; an orchestrator's
    # (Dagster installs one) would turn the pool's routine shutdown into a
    # traceback in every worker.  Workers take the defaults.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _check_task(task: tuple, check: Optional[SealedTextCheck] = None, also=None, seen: Optional[Mapping[str, bool]] = None,
                batches: Optional[list] = None) -> Optional[tuple[str, bool]]:
    """``(message, is_leak)`` for the first refusal in one task's texts, else None (``seen``, ``batches``: the
    batch memo, :func:`_first_refusal`)."""
    path, name, part = task
    check = check or _WORKER_CHECK
    also = also if also is not None else _WORKER_ALSO
    if part == RAW:
        message = also.scan_file_bytes(Path(path), name)
        return (message, False) if message else None
    if part is not None:
        return _sqlite_refusal(Path(path), name, part, check, also, seen, batches)
    return _first_refusal(file_texts(Path(path), name), check, also, seen=seen, batches=batches)


def _sqlite_refusal(path: Path, where: str, part: tuple, check: "SealedTextCheck", also,
                    seen: Optional[Mapping[str, bool]] = None, batches: Optional[list] = None) -> Optional[tuple[str, bool]]:
    """:func:`_first_refusal` over one part of a database, its batches joined by SQLite.

    Each :data:`BATCH_TEXTS` rows are fetched as one text, their texts
    joined by the check's separator word (``group_concat``: in whatever
    order, a batch with a refusal in one row is not clean); only a batch
    that is not clean, or holds a blob, is read and searched row by row.
    """
    if part[0] == "" or check.separator is None:
        return _first_refusal(sqlite_texts(path, where, part), check, also)
    table, low, high = part
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        joined, blob = row_sql(connection, table)
        query = (f"select group_concat(t, ?), max(b) from (select {joined} as t, ({blob}) as b "
                 f'from "{table}" where rowid between ? and ?)')
        for start in range(low, high + 1, BATCH_TEXTS):
            end = min(start + BATCH_TEXTS - 1, high)
            text, has_blob = connection.execute(query, (check.separator, start, end)).fetchone()
            if text is None:
                continue
            k = None if has_blob or seen is None or batches is None else batch_key(f"{table}\0{text}")
            if k is not None and k in seen:
                batches.append((k, None))
                continue
            if has_blob:
                leaks, money = True, also is not None
            else:
                leaks = check.scan_text(text, "") is not None
                money = also is not None and also.may_refuse(text)
            if leaks or money:
                found = _batch_refusal(list(sqlite_texts(path, where, (table, start, end))), check, also,
                                       leaks, money)
                if found:
                    return found
            if k is not None:
                batches.append((k, bool(money)))
    finally:
        connection.close()
    return None
