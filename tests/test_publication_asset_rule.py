"""The Dagster publication asset and `llmarchive publish` publish under one rule: publish_all's."""
import json

from llmarchive.cli import main
from tests import publish_helpers as ph
from tests.dagster_helpers import resources, run


def _failure_causes(result) -> str:
    """Every step failure's error and the errors under it (Dagster wraps the asset's own error)."""
    parts = []
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE" and event.step_failure_data.error:
            error = event.step_failure_data.error
            while error is not None:
                parts.append(error.message)
                error = error.cause
    return "\n".join(parts)


def _flag_on_curve(paths) -> None:
    """A hand edit the estimator never makes: a flagged measurement put on the curve."""
    p = ph.protocol(paths, "risky_choice_framing__wording__v0")
    ph.write_run(paths, p, "hand-edited", "2026-10-02")
    file = paths.run_dir("hand-edited") / "measurement.json"
    m = json.loads(file.read_text())
    m["on_curve"], m["flags"] = True, ["drop_confounded"]
    file.write_text(json.dumps(m))


def test_the_asset_and_the_cli_refuse_the_same_archive_for_the_same_reason(tmp_path, instance, capsys):
    template = ph.template_archive(tmp_path / "template")
    paths = ph.fresh_archive(template, tmp_path / "home")
    _flag_on_curve(paths)

    assert main(["--home", str(paths.home), "publish"]) == 2
    cli_error = capsys.readouterr().err
    assert "refusing to publish: no_flagged_measurement_on_curve" in cli_error and "hand-edited" in cli_error

    result = run(["public_archive"], resources(paths), instance, raise_on_error=False)
    assert not result.success
    assert "refusing to publish: no_flagged_measurement_on_curve" in _failure_causes(result)
    assert not (paths.public / "stability.csv").exists()
