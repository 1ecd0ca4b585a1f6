"""A harness log is read within a submission's kind of bounds, refused in one line before any large read.

Issue 36, item 1: a 459 KB ``.eval`` whose one sample member decompressed to
1 GiB of spaces took 2.2 GB and was accepted; a 200 MB ``--log-format json``
log imported with ``--format inspect`` took 925 MB.  Each import here runs
as a person runs it — ``llmarchive comparison import`` in a child process —
under an address-space limit of 512 MB (``RLIMIT_AS``), and its peak
resident memory is what the child's kernel counts for its own image
(``VmHWM``, read as it exits; ``wait4``'s figure would include the pytest
worker's memory at the fork, 539 MiB in CI late in the suite): a refusal
must be exit 2, one line naming the log and the bound, nothing written, and
the peak under the limit.  Under the limit, the old code failed with a
``MemoryError`` instead of a refusal naming a bound, so every test here
fails on it.  The logs are made from a real one (the published task run by
``inspect eval`` against the simulated readers, :func:`tests.inspect_helpers.reader_run`),
which still imports within the same limit.
"""
import os
import resource
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from llmarchive.comparison.log_bounds import LOG_BYTES, LOG_VALUES, SAMPLE_BYTES
from panels import readers
from tests.inspect_helpers import OPEN, reader_run

LIMIT = 512 * 1024 * 1024
# The child: the CLI, with its own peak resident size written to argv[1] as it exits (normally or not).
CHILD = """
import atexit, sys
peak_file = sys.argv.pop(1)
def _peak():
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(peak_file, "w") as out:
        out.write(kib)
atexit.register(_peak)
from llmarchive.cli import main
sys.exit(main())
"""
GIB = 1024 ** 3


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reader_run(tmp_path_factory)


def import_within_limit(log: Path, panel: Path, out: Path, tmp_path: Path, *extra: str
                        ) -> tuple[int, list[str], int]:
    """``llmarchive comparison import`` in a child held to :data:`LIMIT` of address space:
    (exit status, stderr lines, peak resident bytes of the child's own image).

    The peak is the kernel's high-water mark of the process image the child
    executes (``VmHWM`` from ``/proc/self/status``, which starts afresh at
    ``exec``), written by the child as it exits: the resource usage a parent
    reaps also counts the pages the child shared with this process when it
    was forked, so it measured the pytest worker, not the import."""
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    peak_file = tmp_path / f"peak-{os.getpid()}-{len(list(tmp_path.glob('peak-*')))}.kib"
    env = {**os.environ, "LLMARCHIVE_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-c", CHILD, str(peak_file),
               "comparison", "import", str(log), "--panel", str(panel), "--out", str(out), *extra]
    child = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           preexec_fn=limited)
    assert peak_file.exists(), f"the child wrote no peak (exit {child.returncode})"
    return child.returncode, child.stderr.decode("utf-8", "replace").splitlines(), int(peak_file.read_text()) * 1024


def padded_eval(source: Path, out: Path, pad: int) -> str:
    """``source`` rewritten as a deflated zip whose first sample member is followed by ``pad`` spaces (still valid
    JSON), written in 1 MiB pieces so the test never holds it; returns that member's name."""
    import inspect_ai.log  # noqa: F401  (Inspect's zstd support for zipfile, to read the real log's members)

    with zipfile.ZipFile(source) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as dst:
        victim = next(n for n in src.namelist() if n.startswith("samples/"))
        for name in src.namelist():
            if name != victim:
                dst.writestr(name, src.read(name))
                continue
            with dst.open(name, "w") as member:
                member.write(src.read(name))
                block = b" " * (1 << 20)
                for _ in range(pad // len(block)):
                    member.write(block)
    return victim


def understated(path: Path, name: str, size: int) -> None:
    """Make the zip's central directory (and the member's local header) say ``name`` holds ``size`` bytes."""
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + length] == name.encode():
            struct.pack_into("<L", data, at + 24, size)
            local = struct.unpack_from("<L", data, at + 42)[0]
            struct.pack_into("<L", data, local + 22, size)
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))


def assert_refused(code: int, err: list[str], peak: int, log: Path, out: Path, words: str) -> None:
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith(f"error: {log}: import refused before reading the log, nothing written: "), err
    assert words in err[0], err
    assert not out.exists(), "nothing written"
    assert peak < LIMIT, f"peak {peak / 2 ** 20:.0f} MiB"


def test_a_sample_member_that_decompresses_to_a_gib_is_refused_from_the_directory_in_one_line(run, tmp_path):
    panel = run.panels / f"{OPEN}.json"
    real = tmp_path / "real.jsonl"
    code, err, peak = import_within_limit(run.logs[readers.INVARIANT], panel, real, tmp_path)
    assert code == 0 and real.exists() and peak < LIMIT, err     # the log it is made from is imported
    bomb = tmp_path / "bomb.eval"
    victim = padded_eval(run.logs[readers.INVARIANT], bomb, GIB)
    assert bomb.stat().st_size < 8 * 2 ** 20, "a small file"
    out = tmp_path / "out.jsonl"
    code, err, peak = import_within_limit(bomb, panel, out, tmp_path)
    assert_refused(code, err, peak, bomb, out, f"the sample member {victim} decompresses to ")
    assert err[0].endswith(f"by the zip's directory; one sample may be at most {SAMPLE_BYTES:,} bytes (a real one "
                           "is about 12 kB)")


def test_a_member_the_directory_understates_is_stopped_at_the_cap_while_it_is_decompressed(run, tmp_path):
    panel = run.panels / f"{OPEN}.json"
    bomb = tmp_path / "lying.eval"
    victim = padded_eval(run.logs[readers.INVARIANT], bomb, 64 * 2 ** 20)
    understated(bomb, victim, 12_000)
    out = tmp_path / "out.jsonl"
    code, err, peak = import_within_limit(bomb, panel, out, tmp_path)
    assert_refused(code, err, peak, bomb, out, f"the sample member {victim} decompresses to more than "
                                               f"{SAMPLE_BYTES:,} bytes (the zip's directory says 12,000)")


def test_a_200_mb_json_log_with_format_inspect_is_refused_by_its_size_before_it_is_parsed(run, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    panel = run.panels / f"{OPEN}.json"
    real = tmp_path / "real.json"
    write_eval_log(read_eval_log(str(run.logs[readers.INVARIANT])), str(real))
    big = tmp_path / "big.json"
    with open(real, "rb") as src, open(big, "wb") as dst:
        data = src.read()
        dst.write(data[:-1])
        for _ in range(200):
            dst.write(b" " * (1 << 20))
        dst.write(data[-1:])
    out = tmp_path / "out.jsonl"
    code, err, peak = import_within_limit(big, panel, out, tmp_path, "--format", "inspect")
    assert_refused(code, err, peak, big, out, f"the log is {big.stat().st_size:,} bytes; a log read whole may be at "
                                              f"most {LOG_BYTES:,} bytes")


def test_a_json_log_of_millions_of_tiny_values_is_refused_by_their_count_before_it_is_parsed(run, tmp_path):
    """Bytes alone do not bound memory: 9 MB of ``{},`` parses into three million objects."""
    panel = run.panels / f"{OPEN}.json"
    tiny = tmp_path / "tiny.json"
    tiny.write_bytes(b'{"eval": {}, "samples": [' + b"{}," * 3_000_000 + b"{}]}")
    out = tmp_path / "out.jsonl"
    code, err, peak = import_within_limit(tiny, panel, out, tmp_path)
    assert_refused(code, err, peak, tiny, out, f"the log holds up to 3,000,005 JSON values; a log may hold at most "
                                               f"{LOG_VALUES:,}")


def test_a_log_just_under_every_bound_is_read_within_the_limit_and_one_value_more_is_refused(run, tmp_path):
    """The bounds are what bound memory: a real log grown to just under the bytes and the values a log may hold
    (each sample's metadata padded with text and empty objects, as any file may be) is still read — and, being
    the panel's run, imported — within the limit; with values past the bound it is refused unread."""
    import json

    from inspect_ai.log import read_eval_log, write_eval_log

    real = tmp_path / "real.json"
    write_eval_log(read_eval_log(str(run.logs[readers.INVARIANT])), str(real))
    doc = json.loads(real.read_bytes())
    spare_values = LOG_VALUES - 1 - sum(real.read_bytes().count(c) for c in (b"[", b",", b":"))
    spare_bytes = LOG_BYTES - real.stat().st_size
    for sample in doc["samples"]:
        sample["metadata"]["objects"] = [{}] * (int(spare_values * 0.95) // len(doc["samples"]))
        sample["metadata"]["text"] = "y" * (int(spare_bytes * 0.85) // len(doc["samples"]))
    full = tmp_path / "full.json"
    full.write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
    data = full.read_bytes()
    assert 0.9 * LOG_BYTES < len(data) <= LOG_BYTES
    assert 0.9 * LOG_VALUES < 1 + sum(data.count(c) for c in (b"[", b",", b":")) <= LOG_VALUES
    past = LOG_VALUES - sum(data.count(c) for c in (b"[", b",", b":"))
    doc["samples"][0]["metadata"]["objects"] += [{}] * past
    over = tmp_path / "over.json"
    over.write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
    del doc, data
    out = tmp_path / "out.jsonl"
    code, err, peak = import_within_limit(full, run.panels / f"{OPEN}.json", out, tmp_path)
    assert code == 0, err
    assert out.exists() and peak < LIMIT, f"peak {peak / 2 ** 20:.0f} MiB"
    refused = tmp_path / "refused.jsonl"
    code, err, peak = import_within_limit(over, run.panels / f"{OPEN}.json", refused, tmp_path)
    assert_refused(code, err, peak, over, refused, f"the log holds up to {LOG_VALUES + 1:,} JSON values; a log may "
                                                   f"hold at most {LOG_VALUES:,}")


def test_import_help_states_the_bounds_the_import_enforces(capsys):
    """A person learns the bounds before a log is refused for passing one; the help reads them from the code."""
    from llmarchive.cli import main
    from llmarchive.comparison import lmeval_log, log_bounds

    with pytest.raises(SystemExit):
        main(["comparison", "import", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert f"at most {LOG_BYTES // 2**20} MiB and {LOG_VALUES:,} JSON values" in said
    assert f"{log_bounds.MAX_MEMBERS:,} members and {log_bounds.MAX_SAMPLES:,} samples of at most " \
           f"{SAMPLE_BYTES // 2**20} MiB each" in said
    assert f"samples file at most {lmeval_log.MAX_LOG_BYTES // 2**20} MiB, {lmeval_log.MAX_RECORDS:,} lines" in said
