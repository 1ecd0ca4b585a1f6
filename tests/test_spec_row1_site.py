"""Issue 28 §3, row 1 on the site: a ``bridge_incomplete`` is disclosed on the Results page's curve itself."""
import re

from publish.site import render as site
from publish.data import Inputs
from tests.test_spec_rows import BRIDGE_INCOMPLETE, FAMILY, point


def test_the_results_curve_of_a_family_with_a_bridge_incomplete_is_marked_at_its_date():
    points = [point("2027-01-05", "claude-sonnet-5", 90), point("2027-04-05", "claude-sonnet-6", 80)]
    other = {**BRIDGE_INCOMPLETE, "model_family": "gpt"}
    inputs = Inputs(measurements=points, runs=[], open_runs=[], headers=[], texts=None,
                    records={"bridge_incomplete": [BRIDGE_INCOMPLETE, other]})
    [curve] = site.curves(site.SiteContext(inputs, [], "2027-05-01T00:00:00Z", []))
    chart = str(curve["chart"])
    assert re.findall(r'data-break="bridge_incomplete" data-date="([^"]+)"', chart) == ["2027-03-10"]
    assert len(re.findall(r'<polyline class="curve"', chart)) == 2, "no line across the discontinuity"
    alone = site.curves(site.SiteContext(Inputs(measurements=points, runs=[], open_runs=[], headers=[], texts=None,
                                                records={}), [], "2027-05-01T00:00:00Z", []))
    assert "data-break" not in str(alone[0]["chart"])
