"""Issue 28 §3, row 3 in the publication: the instrument's coverage rows are published under no series."""
import re

from llmarchive.archive import record_logs as records
from publish.site import render as site
from publish.data.csvs import coverage_rows
from publish.data.protocols import ProtocolTexts
from publish.data import Inputs
from tests.test_spec_rows import instrument_day, instrument_rows


def test_a_row_recorded_under_the_old_label_is_published_once_under_no_series(paths):
    instrument_day(paths, "2026-11-01")
    rows = instrument_rows(paths)
    older = [{**r, "series": "open_weights"} for r in rows]
    records.append_many(paths, "coverage", older)          # an archive recorded before the fix, not recomputed
    published = coverage_rows(records.read(paths, "coverage"))
    assert [(r["job"], r["series"]) for r in published] == [("guard_margin_rotation", None),
                                                           ("runtime_fingerprint", None)]
    records.append_many(paths, "coverage", rows)           # then recomputed: still one row per job and day
    assert len(coverage_rows(records.read(paths, "coverage"))) == 2


def test_results_counts_the_instruments_jobs_as_the_instruments(paths):
    instrument_day(paths, "2026-11-01")
    instrument_day(paths, "2026-11-02")
    inputs = Inputs(measurements=[], runs=[], open_runs=[], headers=[], texts=ProtocolTexts([], [], {}), records={})
    page = site.results(site.SiteContext(inputs, instrument_rows(paths), "2026-11-03T00:00:00Z", []))
    coverage = re.search(r'<h2 id="coverage">.*?<h2 id="open-weights">', page, re.S).group(0)
    assert "The instrument's daily jobs (runtime fingerprint, guard rotation, revalidation): 4 ran, 0 did not." \
        in coverage
    assert "The open-weights series runs once per generation of the tracked model, not on a schedule." in coverage
