"""human_model_gap: real published results only, comparable only, secondary only — and an empty archive."""
import json
import sqlite3
from fractions import Fraction

import pytest

from publish import publish_all
from publish.data import human_gap
from tests import publish_helpers as ph


def test_every_row_is_a_multi_lab_or_meta_analytic_result_with_its_collection_year():
    rows = human_gap.rows()
    assert rows, "the Many Labs row is expected"
    for row in rows:
        assert row["design"] in ("multi_lab", "meta_analysis")
        assert 1900 < row["year"] < 2100
        assert 0 <= row["effect_pct"] <= 100
        assert row["citation"] and row["source"] and row["effect_definition"]


def test_the_many_labs_effect_is_the_difference_of_the_published_shares_in_points():
    row = next(r for r in human_gap.rows() if r["gap_id"] == "ml1_gain_loss_framing")
    expected = 100 * abs(Fraction(1974, 3174) - Fraction(1038, 3097))
    assert row["effect_pct"] == round(float(expected), 2) == 28.68
    assert row["n_participants"] == 3174 + 3097 and row["year"] == 2013


def test_a_row_applies_only_to_its_own_family_and_rewording_type():
    assert human_gap.for_protocol({"family": "risky_choice_framing", "rewording_type": "wording"})
    for family, rtype in (("risky_choice_framing", "anchoring"), ("sunk_cost_fallacy", "wording"),
                          ("base_rate_neglect", "wording"), ("risky_choice_framing", "order"),
                          ("risky_choice_framing", "default")):
        assert human_gap.for_protocol({"family": family, "rewording_type": rtype}) == []


def test_a_row_with_an_unknown_design_is_refused(monkeypatch):
    bad = dict(human_gap.ROWS[0], design="single_study")
    monkeypatch.setattr(human_gap, "ROWS", (bad,))
    with pytest.raises(ValueError, match="design must be one of"):
        human_gap.rows()


@pytest.fixture
def empty_archive(tmp_path):
    return ph.template_archive(tmp_path / "home")


def test_an_archive_with_no_run_yet_publishes_empty_files_and_says_so(empty_archive):
    manifest = publish_all(empty_archive, build_time="2026-12-03T00:00:00Z")
    public = empty_archive.public
    assert (public / "stability.csv").read_text().count("\n") == 1
    assert not (public / "open-lane").exists()
    page = (public / "index.html").read_text()
    assert "no scheduled job recorded yet" in page and "No measurement in this series yet." in page
    status = json.loads((public / "status.json").read_text())
    assert status["measurements"]["commercial"]["total"] == 0
    db = sqlite3.connect(public / "archive.db")
    assert db.execute("select count(*) from protocols").fetchone()[0] == 24
    assert db.execute("select count(*) from human_model_gap").fetchone()[0] == 1
    assert "croissant.json" in manifest["files"]
