"""Benchmark: what an oversized comparison submission costs the intake (method §4.2's caps).

Three submissions of one open v0 protocol, each given to ``python -m
llmarchive comparison submit`` in its own process under ``/usr/bin/time -v``
(wall time and peak resident memory), each in a fresh copy of one admitted home:

* **normal** — a complete, valid run (120 trials): the baseline;
* **170 MB** — the same trials repeated to 170 MB;
* **one 50 MB response** — the valid run with one response 50 MB long.

With the caps, both oversized files are refused with a clear reason in
about the time and memory of the normal one (the 170 MB file from its size
alone, the long response after reading one line's cap past it).  ``--tree``
runs another checkout's code against the same files (e.g. an export of the
previous commit: ``git archive HEAD | tar -x -C /tmp/before``), to compare.

Run: ``.venv/bin/python bench/intake_bench.py [--tree /tmp/before]``.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPEN = "risky_choice_framing__wording__v0"
SEED = "intake bench seed"


def admitted_home(home: Path) -> None:
    from llmarchive.protocols import registry
    from llmarchive.cli import main
    from llmarchive.archive import ArchivePaths
    from panels.build import all_protocol_ids
    from panels.lanes import planned_lane

    os.environ["LLMARCHIVE_HOME"] = str(home)
    os.environ["LLMARCHIVE_PANEL_SEED"] = SEED
    paths = ArchivePaths.from_env().ensure()
    registry.build_all(paths)
    for pid in all_protocol_ids():
        if pid.endswith("__v0"):
            lane, _ = planned_lane(pid)
            assert main(["panels", "promote", pid, "--lane", lane, "--human-reviewed", "--reviewer", "bench"]) == 0


def valid_trials(home: Path) -> list[dict]:
    from llmarchive.protocols import registry
    from llmarchive.archive import ArchivePaths
    from measure import extract
    from measure.schema import VERSIONS

    protocol = registry.load_protocol(ArchivePaths(home), OPEN)
    out = []
    for item in protocol["panel"]:
        for version in VERSIONS:
            text = item["versions"][version]
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            for replicate in range(protocol["n_per_scenario"]):
                letter = protocol["options"][(digest.encode()[0] + replicate) % len(protocol["options"])]
                response = f"An outside model weighs scenario {item['item_id']}.\nDECISION: {letter}"
                found = extract(response, protocol["options"], protocol["grammar_version"])
                out.append({"record_type": "trial", "run_id": "bench-outside-run", "protocol_id": OPEN,
                            "item_id": item["item_id"], "version": version, "replicate_index": replicate,
                            "prompt_sha256": digest, "outcome": found.outcome, "token": found.token,
                            "response_text": response, "returned_model_id": "bench-outside-model-1",
                            "started_at": "2026-11-10T10:00:00Z"})
    return out


def write_files(folder: Path, trials: list[dict]) -> dict[str, Path]:
    header = {"record_type": "comparison_submission", "submitted_by": "bench lab", "run_date": "2026-11-10"}
    lines = [json.dumps(header) + "\n"] + [json.dumps(t) + "\n" for t in trials]
    normal = folder / "normal.jsonl"
    normal.write_text("".join(lines), encoding="utf-8")
    big = folder / "170mb.jsonl"
    body = "".join(lines[1:]).encode("utf-8")
    with open(big, "wb") as fh:
        fh.write(lines[0].encode("utf-8"))
        while fh.tell() < 170 * 1000 * 1000:
            fh.write(body)
    long = folder / "50mb-response.jsonl"
    with open(long, "w", encoding="utf-8") as fh:
        fh.write(lines[0])
        first = dict(trials[0])
        first["response_text"] = "x" * (50 * 1000 * 1000) + "\n" + trials[0]["response_text"]
        fh.write(json.dumps(first) + "\n")
        fh.writelines(lines[2:])
    mid = folder / "10mb-response.jsonl"
    with open(mid, "w", encoding="utf-8") as fh:
        fh.write(lines[0])
        first = dict(trials[0])
        first["response_text"] = "x" * (10 * 1000 * 1000) + "\n" + trials[0]["response_text"]
        fh.write(json.dumps(first) + "\n")
        fh.writelines(lines[2:])
    return {"normal (120 trials)": (normal, False), "170 MB file": (big, False),
            "170 MB through a pipe": (big, True), "one 50 MB response": (long, False),
            "one 10 MB response": (mid, False)}


def measure(tree: Path, home: Path, file: Path, pipe: bool = False) -> tuple[int, float, int, str]:
    """(exit code, wall seconds, peak RSS in MB, what it said) of one submit in a fresh home copy.

    With ``pipe`` the file is given on standard input (``/dev/stdin``): its size is not known in advance,
    so only the running byte count can stop it.
    """
    env = {**os.environ, "LLMARCHIVE_HOME": str(home), "PYTHONPATH": str(tree)}
    cat = subprocess.Popen(["cat", str(file)], stdout=subprocess.PIPE) if pipe else None
    done = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "llmarchive", "comparison", "submit",
                           "/dev/stdin" if pipe else str(file)], env=env, capture_output=True,
                          cwd=str(tree), stdin=cat.stdout if cat else subprocess.DEVNULL)
    if cat is not None:
        cat.stdout.close()
        cat.kill()
        cat.wait()
    done.stdout, done.stderr = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    seconds = int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1)) // 1024
    said = [line for line in (done.stdout + done.stderr).splitlines()
            if line.strip() and not line.startswith("\t") and "Command being timed" not in line]
    # a refusal: its first reason (without the file name); an acceptance: its first line
    shown = said[1].split(": ", 1)[-1] if len(said) > 1 and "rejected" in said[0] else (said[0] if said else "")
    if "nothing stored: " in shown:          # an older intake's one-line refusal
        shown = shown.split("nothing stored: ", 1)[1]
    return done.returncode, seconds, rss, shown[:160]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the source tree whose intake is measured")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp) / "template"
        admitted_home(template)
        files = write_files(Path(tmp), valid_trials(template))
        print(f"intake of {args.tree}:")
        for label, (file, pipe) in files.items():
            home = Path(tmp) / "home"
            shutil.rmtree(home, ignore_errors=True)
            shutil.copytree(template, home)
            code, seconds, rss, said = measure(args.tree.resolve(), home, file, pipe)
            print(f"  {label:<22} {file.stat().st_size / 1e6:8.1f} MB  exit {code}  {seconds:6.2f} s  "
                  f"peak {rss:5d} MB  | {said}")


if __name__ == "__main__":
    main()
