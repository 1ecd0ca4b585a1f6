"""A file a person names for a command to write (``--out``): never the archive's, never an input, never by surprise.

``comparison import --out`` and ``comparison run --out`` write a submission
at whatever path they are given, and a path can name anything: a file that
is already there, the log being imported, the ``--panel`` file, or the
archive's own hash-chained record logs (after which every ``publish``
refuses the broken chain).  One rule, :meth:`OutputFile.refusal`, says
whether a path may be written:

* never a file inside an archive home (the home the command works on and
  ``$LLMARCHIVE_HOME``), whatever the flags: the path is compared as written
  (made absolute, ``..`` folded) and with every symlink resolved, so no
  spelling reaches the archive's files;
* never one of the command's input files, whatever the flags: the same
  path either way, or the same file (a hard link);
* never a folder, and never into a folder that is not there (a mistyped
  path would otherwise make folders nobody asked for): the person makes it;
* a file that is already there only with ``--force``.

A refusal is one line naming the path and why (:class:`OutputRefused`,
exit 2), and nothing is written.  The write is atomic
(:func:`llmarchive.archive.jsonio.write_bytes`: a temporary file in the
same folder, fsynced, renamed into place), and the rule is checked again
just before it, so a file that appeared during a long run is not replaced
either.
"""
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Union

from llmarchive.archive.jsonio import write_bytes
from llmarchive.archive.textsafe import terminal
from measure.errors import ArchiveError


class OutputRefused(ArchiveError, ValueError):
    """A path a command may not write: the message names it and why; nothing was written."""


def _spellings(path: Path) -> set[Path]:
    """``path`` as written (absolute, ``..`` folded) and with every symlink resolved (a loop: as written only)."""
    found = {Path(os.path.abspath(path))}
    try:
        found.add(path.resolve())
    except (OSError, RuntimeError):
        pass
    return found


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file on disk (both there, same device and inode: a hard link too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@dataclass(frozen=True)
class OutputFile:
    """A path a command writes, with what it must never replace: the archive homes and the command's inputs.

    ``inputs`` holds ``(what it is, path)`` pairs, added by the function
    that reads them (:meth:`reading`); ``option`` is the flag the refusal
    names.
    """

    path: Path
    force: bool = False
    homes: tuple[Path, ...] = ()
    inputs: tuple[tuple[str, Path], ...] = ()
    option: str = "--out"

    @classmethod
    def of(cls, out: Union["OutputFile", Path, str]) -> "OutputFile":
        """``out`` as an :class:`OutputFile`; a bare path is the calling code's own choice (the demo's
        submissions inside its home), so it may replace a file, but never an input."""
        return out if isinstance(out, OutputFile) else cls(Path(out), force=True)

    def reading(self, *named: tuple[str, Optional[Union[Path, str]]]) -> "OutputFile":
        """This output with the files the command reads added to what it may not replace (a None path skipped)."""
        return replace(self, inputs=self.inputs + tuple((what, Path(p)) for what, p in named if p is not None))

    def refusal(self) -> Optional[str]:
        """Why this path may not be written (one line), or None when it may: the module's rule."""
        shown = f"{self.option} {terminal(str(self.path))}"
        written = _spellings(self.path)
        for home in self.homes:
            for folder in _spellings(Path(home)):
                if any(p == folder or p.is_relative_to(folder) for p in written):
                    return (f"{shown} is inside the archive home {terminal(str(home))}; the archive's own files are "
                            "never replaced, not even with --force: write it outside the home; nothing written")
        for what, source in self.inputs:
            if written & _spellings(source) or _same_file(self.path, source):
                return (f"{shown} is {what} ({terminal(str(source))}), which this command reads; an input is never "
                        "replaced, not even with --force: give another path; nothing written")
        if self.path.is_dir():
            return f"{shown} is a folder; give the path of a file; nothing written"
        folder = self.path.parent
        if not folder.is_dir():
            state = "is not a folder" if os.path.lexists(folder) else "does not exist"
            return (f"{shown}: the folder {terminal(str(folder))} {state}; a command makes no folder it is not asked "
                    "for: create it first (mkdir -p), or give another path; nothing written")
        if os.path.lexists(self.path) and not self.force:
            return f"{shown} already exists; give --force to replace it, or another path; nothing written"
        return None

    def check(self) -> Path:
        """The path, once the rule allows it (:class:`OutputRefused` otherwise)."""
        reason = self.refusal()
        if reason is not None:
            raise OutputRefused(reason)
        return self.path

    def write(self, data: bytes) -> None:
        """Check the rule again (a file may have appeared since) and replace the path with ``data`` atomically."""
        write_bytes(self.check(), data)
