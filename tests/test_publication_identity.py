"""A publication of one fixed archive has the same bytes it had before the refactors of issue 19.

``tests/golden/publication_sha256.json`` holds the sha256 of every file that
``publish_all`` wrote for the archive built by :func:`publication_digests`,
recorded by running this module's builder against the code of the commit
named in the file (a plain export of that commit, ``git archive``, so the
digests come from the code as it was, not from the code under test).  The
test rebuilds the same archive with the current code and names every file
whose bytes differ, appeared or went missing.

The archive is fully determined: the publication tests' template (24 real
protocols, fixed secret guard seed, the v0 protocols promoted) and
:func:`tests.publish_helpers.populate`'s runs and records, all built with the
clock frozen at ``CLOCK`` (so nothing recorded can vary with the day the test
runs), and published with the fixed ``BUILD_TIME``.  No file is left out:
the build time is written into the site, ``status.json``,
``render_manifest.json`` and ``croissant.json``'s version, and is fixed here
for exactly that reason.

One field of the archive's records is the code's identity rather than a
result: a measurement's ``analysis_code_sha`` hashes every ``measure/*.py``
source (method §13.2), so splitting an estimator module changes it for every
measurement made afterwards while an archive measured before keeps the hash
it recorded.  "The same archive" is the one measured by the recorded commit,
so its measurements are stamped with that commit's ``analysis_code_sha``
(recorded in the golden file) where the estimator writes it; every other
field is computed by the code under test, and every published byte is
compared.

To record the digests again (only when a change to the published bytes is
intended and reviewed)::

    .venv/bin/python -m tests.test_publication_identity --write <commit>
"""
import contextlib
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Optional
from unittest import mock

import time_machine

GOLDEN = Path(__file__).resolve().parent / "golden" / "publication_sha256.json"
CLOCK = "2026-12-03T00:00:00Z"
"""The frozen instant while the archive is built and published (admission and registration times)."""
BUILD_TIME = "2026-12-03T00:00:00Z"
"""The build time passed to ``publish_all`` (written into the site, status, manifest and Croissant version)."""


def publication_digests(root: Path, analysis_code_sha: Optional[str] = None) -> dict[str, str]:
    """Build the fixed archive under ``root``, publish it, and return {public path: sha256 of its bytes}.

    ``analysis_code_sha``: the hash of the estimator the archive's records were measured by, stamped on
    every measurement the fixture makes (its runs' and the comparison point's); None: the current code's.
    """
    from measure import measurement
    from publish import publish_all
    from tests import publish_helpers as ph

    code = contextlib.nullcontext() if analysis_code_sha is None else \
        mock.patch.object(measurement, "analysis_code_sha", lambda: analysis_code_sha)
    with time_machine.travel(CLOCK, tick=False), code:
        template = ph.template_archive(root / "template" / "home")
        paths = ph.fresh_archive(template, root / "home")
        ph.populate(paths)
        publish_all(paths, build_time=BUILD_TIME)
    return {path.relative_to(paths.public).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(paths.public.rglob("*")) if path.is_file()}


def differences(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    """One line per file that changed, appeared or disappeared (empty: byte-identical)."""
    lines = [f"{name}: bytes differ" for name in sorted(expected.keys() & actual.keys())
             if expected[name] != actual[name]]
    lines += [f"{name}: no longer published" for name in sorted(expected.keys() - actual.keys())]
    lines += [f"{name}: newly published" for name in sorted(actual.keys() - expected.keys())]
    return lines


def test_the_fixed_archive_publishes_byte_identical_to_the_recorded_publication(tmp_path):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    actual = publication_digests(tmp_path, golden["analysis_code_sha"])
    problems = differences(golden["files"], actual)
    assert not problems, (f"the publication differs from the one recorded at commit {golden['commit']}:\n"
                          + "\n".join(problems))


def _write(commit: str) -> None:
    from measure.measurement import analysis_code_sha

    with tempfile.TemporaryDirectory() as folder:
        files = publication_digests(Path(folder))
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    record = {"commit": commit, "clock": CLOCK, "build_time": BUILD_TIME, "analysis_code_sha": analysis_code_sha(),
              "fixture": "tests.test_publication_identity.publication_digests "
                         "(publish_helpers.template_archive + populate, clock frozen, fixed build time)",
              "files": files}
    GOLDEN.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(files)} files recorded in {GOLDEN}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--write":
        sys.exit("usage: python -m tests.test_publication_identity --write <commit>")
    _write(sys.argv[2])
