"""What a build checked, kept for the publication job's asset checks so they report it rather than repeat it.

:func:`publish.publish_all` runs every check before it swaps a build into
``public/`` (the blocking checks on the store, both boundary checks on every
byte it publishes) and refuses the build if one fails; the Dagster asset
checks that follow it in the same job used to run all of them again, over
the same records and the same bytes, minutes later.  So a build that is
swapped in records its verdicts here with the SHA-256 of every file it
put in ``public/``, and the asset checks take them only while every file
under ``public/`` hashes to those digests and no other file is there
(hashing runs at disk speed; the checks do not).  A published file changed,
added or removed since — by hand, by another tool — and the checks run again
over ``public/`` as it stands.

One digested file under ``private/`` (:func:`llmarchive.archive.jsonio.write_digested`):
torn or edited, it reads as no report, and the checks run.
"""
import hashlib
from pathlib import Path
from typing import Mapping, Optional

from llmarchive.archive import ArchivePaths, jsonio

VERSION = 1


def report_file(paths: ArchivePaths) -> Path:
    return paths.private / "publication" / "checks.json"


def digests_of(files: Mapping[str, bytes]) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}


def public_digests(public: Path) -> dict[str, str]:
    """Every file under ``public/`` by its path there, with the SHA-256 of its bytes as they are now."""
    out = {}
    for path in sorted(p for p in public.rglob("*") if p.is_file()):
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        out[path.relative_to(public).as_posix()] = digest.hexdigest()
    return out


def record(paths: ArchivePaths, build_time: str, published: Mapping[str, bytes], results: Mapping[str, list],
           reverified: list[str]) -> None:
    """Keep a swapped-in build's verdicts, the digests of what it published, and the runs it verified whole."""
    jsonio.write_digested(report_file(paths), {
        "version": VERSION, "build_time": build_time, "public": digests_of(published),
        "results": {name: list(found) for name, found in results.items()}, "reverified": sorted(reverified)})


def read(paths: ArchivePaths) -> Optional[dict]:
    """The last report as written (None when missing, torn, edited or of another version)."""
    found = jsonio.read_digested(report_file(paths))
    return found if found and found.get("version") == VERSION else None


def still_holds(paths: ArchivePaths) -> Optional[dict]:
    """The last report, when ``public/`` holds exactly the files it recorded, byte for byte; else None."""
    found = read(paths)
    if found is None or not paths.public.is_dir() or public_digests(paths.public) != found.get("public"):
        return None
    return found
