"""The Dagster partitions start where this archive started, read when the definitions load.

The definitions are loaded the way ``dagster dev -f definitions.py`` loads
them — a fresh process whose ``$LLMARCHIVE_HOME`` is the home — so what the UI
offers is what is checked: the first day and month partitions are the home's
first admission (its day; the 1st of its month), and the design's start
date only for a home where nothing was ever admitted.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

from llmarchive.protocols import admissions as lanes

ROOT = Path(__file__).resolve().parent.parent

FIRST_KEYS = """
import json, sys
sys.path.insert(0, ".")
import definitions
defs = definitions.defs
def first(asset):
    return defs.get_assets_def(asset).partitions_def
commercial = first("commercial_trials")
months = commercial.get_partitions_def_for_dimension("month")
print(json.dumps({
    "day": first("runtime_fingerprint").get_first_partition_key(),
    "coverage_month": first("coverage").get_first_partition_key(),
    "commercial_month": months.get_first_partition_key(),
    "months": months.get_partition_keys(),
}))
"""


def first_keys(home: Path, tmp_path: Path) -> dict:
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir(exist_ok=True)
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    env = {**os.environ, "LLMARCHIVE_HOME": str(home), "DAGSTER_HOME": str(dagster_home)}
    done = subprocess.run([sys.executable, "-c", FIRST_KEYS], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_first_partition_is_the_first_admission_of_this_home(admitted, tmp_path):
    start = min(row["reviewed_at"] for row in lanes.read_admissions(admitted))[:10]
    keys = first_keys(admitted.home, tmp_path)
    assert keys["day"] == start
    assert keys["coverage_month"] == keys["commercial_month"] == start[:8] + "01"
    assert keys["months"][0] == start[:8] + "01", "no month before the archive began is offered"


def test_an_empty_home_starts_at_the_designs_date(tmp_path):
    from assets.partitions import DESIGN_START

    keys = first_keys(tmp_path / "nothing-admitted-yet", tmp_path)
    assert keys["day"] == DESIGN_START and keys["commercial_month"] == DESIGN_START[:8] + "01"
