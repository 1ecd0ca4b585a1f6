"""``llmarchive release VERSION``: assemble the public payload of a release into one folder.

What goes in (method §10, "The private / public boundary"):

* the generated files, rebuilt by :func:`publish.publish_all` just before,
  so the release never carries a stale build;
* the public code: the estimator (``measure/`` with its vectors), the
  library, the renderers, the Dagster assets, ``Makefile``,
  ``pyproject.toml``, ``README.md``, ``metadata.yml``, the method document
  (``docs/method.md``, which the code's citations point into), and the one public
  piece of ``panels/`` — the decision instruction;
* ``CITATION.cff`` and ``.zenodo.json`` with this version and date filled in;
* a copy of the specification (``SPEC.md``);
* the licences (:data:`LICENCE_FILES`): ``LICENSE`` (AGPL-3.0, the code) and
  ``LICENSES/`` (CC-BY-4.0 for the data, CC-BY-SA-4.0 for the prose, and
  which part each covers).

Every listed file must exist: a missing one stops the release with its name
(a release once listed ``LICENSE`` and skipped it, silently, because it did
not exist).

What never goes in: anything under the archive home's ``private/``, the
protocol builders and scenario families (``panels/`` except the
instruction: they generate guard wording), the budget code, tests and
benchmarks (they need the private builders), and git history — the folder
is fresh content, not an export of commits.  Before returning, the
sealed-text check searches every file of the folder, code included.

The version number, the date, pushing, tagging and minting the DOI stay
human decisions; :data:`CHECKLIST` lists them and is printed and written
into the release as ``RELEASE_CHECKLIST.md``.
"""
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

from llmarchive.archive import ArchivePaths, REPO_ROOT, parse_date, read_json, utc_today
from measure.canonical import sha256_hex
from publish.data import files as published, sources
from publish.boundary import sealed_text_check
from publish.pipeline.build import publish_all
from publish.errors import PublishError

VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$")
CODE_DIRS = ("measure", "llmarchive", "publish", "assets")
# The licences (LICENSES/README.md says which part each covers): the AGPL's full text for the code, and the
# Creative Commons legal code for the data and the prose, which those licences let a copy carry by its URI
# alone; the full texts ship anyway.
LICENCE_FILES = ("LICENSE", "LICENSES/README.md", "LICENSES/CC-BY-4.0.txt", "LICENSES/CC-BY-SA-4.0.txt")
CODE_FILES = ("definitions.py", "Makefile", "pyproject.toml", "README.md", "metadata.yml", "cadence.yaml",
              "subject_models.yaml", "docs/method.md", "panels/__init__.py", "panels/instruction.py") + LICENCE_FILES
# Kept private with its data (method §10, point 2): the budget mechanism is not a secret, but its files carry
# the project's real figures, so code and data stay private together.
PRIVATE_NAMES = re.compile(r"(^|/)[^/]*(budget|spend)[^/]*(/|$)")   # a file or a folder (llmarchive/budget/)
SKIP = re.compile(r"(^|/)(__pycache__|\.pytest_cache|\.mypy_cache)(/|$)|\.pyc$|(^|/)\.")

CHECKLIST = """\
# Release checklist — what stays a human decision

The folder was assembled, rebuilt and leak-checked by `llmarchive release`. These steps are not automated, on purpose:

1. **The version and the date.** Confirm that {version} is the right number (a schema or protocol-series change is
   more than a patch) and that today is the day to release it.
2. **Read the changes.** Compare this release's `render_manifest.json` and `stability.csv` with the previous
   release's; every difference should be explained by new runs or a disclosed correction.
3. **Lanes.** Any protocol whose lane changed since the last release (a declassification) was an editorial act —
   confirm it was meant, and that what it now publishes (per-trial traces, its whole panel in
   `panels/<protocol_id>.json`) is intended.
4. **Open panels.** Check that `panels/` holds one file per open protocol and no other, that each passes
   `llmarchive panels verify FILE` with the `panel_sha256` and `protocol_sha256` the protocols table lists, and that
   the Design and Data pages still say what is published (open panels in full) and what is not (guard and sealed
   wording).
5. **Timestamps.** If new protocols were admitted, check that their pre-registration manifest's OpenTimestamps proof
   was upgraded and verifies (`ots verify`, run by a maintainer).
6. **Authors and citation.** Check the authors in `CITATION.cff` and `.zenodo.json`.
7. **Publish.** Make a fresh commit of this folder's content in the public repository (no shared history with the
   private one), tag it `v{version}`, push, and publish a GitHub Release from the tag.
8. **DOI.** The GitHub–Zenodo webhook (enabled once, by hand, on zenodo.org) archives the release and mints a DOI;
   add the DOI to `CITATION.cff` for the next release.
"""


@dataclass
class Release:
    folder: Path
    version: str
    files: dict[str, str]
    checklist: str


def _copy(src: Path, dest: Path, rel: str, files: dict[str, str]) -> None:
    if SKIP.search(rel) or PRIVATE_NAMES.search(rel):
        return
    target = dest / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, target)
    files[rel] = sha256_hex(target.read_bytes())


def citation(version: str, date: str) -> str:
    data = yaml.safe_load((REPO_ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    data["version"] = version
    data["date-released"] = date
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def zenodo(version: str, date: str) -> str:
    data = read_json(REPO_ROOT / ".zenodo.json")
    data["version"] = version
    data["publication_date"] = date
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def check_listed_files(repo: Path = REPO_ROOT) -> None:
    """Refuse, naming it, a listed file that is missing: a release never drops a licence or a document silently."""
    for name in CODE_FILES:
        if not (repo / name).is_file():
            what = "licence file" if name in LICENCE_FILES else "file"
            raise PublishError(f"the release lists the {what} {name}, which is missing at {repo / name}; "
                               "restore it before releasing")


def assemble(paths: ArchivePaths, version: str, out: Path, spec: Optional[Path] = None,
             date: Optional[str] = None, repo: Path = REPO_ROOT) -> Release:
    """Rebuild the publication and assemble release ``version`` into ``out`` (which must not exist).

    ``repo`` is the source tree the code and the listed files are copied from (this repository; a test
    passes a copy of it).
    """
    if not VERSION_RE.match(version):
        raise PublishError(f"release version {version!r} is not of the form MAJOR.MINOR.PATCH")
    out = Path(out).resolve()
    if out.exists():
        raise PublishError(f"{out} already exists; a release folder is always assembled fresh")
    private = paths.private.resolve()
    if out == private or private in out.parents:
        raise PublishError(f"{out} is inside the private folder {private}; choose another --out")
    if spec is not None:
        spec = Path(spec)
        if not spec.is_file():
            what = "a folder" if spec.is_dir() else "missing"
            raise PublishError(f"--spec {spec} is {what}: the release must carry a copy of the specification; "
                               "give its file")
    else:
        spec = REPO_ROOT / "SPEC.md"
        if not spec.is_file():
            raise PublishError(f"the release must carry a copy of the specification: put it at {spec} "
                               "or pass --spec FILE")
    date = parse_date(date, "the release date (--date)") if date is not None else utc_today()
    check_listed_files(repo)

    manifest = publish_all(paths)
    files: dict[str, str] = {}
    try:
        out.mkdir(parents=True)
        for name in manifest["files"]:
            _copy(paths.public / name, out / "data", name, files)
        manifest_name = published.MANIFEST.name        # the one file the manifest does not list: itself
        _copy(paths.public / manifest_name, out / "data", manifest_name, files)
        files = {f"data/{k}": v for k, v in files.items()}
        for folder in CODE_DIRS:
            base = repo / folder
            if base.is_dir():
                for src in sorted(p for p in base.rglob("*") if p.is_file()):
                    _copy(src, out, str(src.relative_to(repo)), files)
        for name in CODE_FILES:
            _copy(repo / name, out, name, files)
        _copy(spec, out, "SPEC.md", files)
        for name, text in (("CITATION.cff", citation(version, date)), (".zenodo.json", zenodo(version, date)),
                           ("RELEASE_CHECKLIST.md", CHECKLIST.format(version=version))):
            (out / name).write_text(text, encoding="utf-8")
            files[name] = sha256_hex(text.encode("utf-8"))
        record = {"record_type": "release", "version": version, "date": date,
                  "build_time": manifest["build_time"], "files": dict(sorted(files.items()))}
        (out / "RELEASE.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        sealed_text_check(sources.gather(paths)).check_tree(out)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return Release(out, version, files, CHECKLIST.format(version=version))
