"""An open-weights generation partition on the embedded model, through Dagster (slow: a real model)."""
import pytest
from dagster import BoolMetadataValue, DagsterInstance, FloatMetadataValue

from llmarchive.archive import load_run, open_weights_run_id
from llmarchive.schedule import open_weights as ow
from llmarchive.subjects import EMBEDDED_SHA256
from tests.dagster_helpers import materialization_metadata, resources, run
from tests.instrument_helpers import admitted_archive

OPEN = "risky_choice_framing__wording__v0"


@pytest.mark.slow
def test_an_open_weights_partition_runs_the_embedded_model_and_a_second_materialisation_calls_nothing(
        archive_home, monkeypatch):
    paths = admitted_archive(monkeypatch)
    generation = ow.generation_id_for_model("smollm2-135m", EMBEDDED_SHA256)
    # A short answer budget keeps the test quick; the run is then recorded as exploratory (off the curve).
    config = {"ops": {"open_weights_trials": {"config": {"protocols": [OPEN], "max_tokens": 12}},
                      "open_weights_measurements": {"config": {"protocols": [OPEN]}}}}
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("generation", [generation])
        first = run(["open_weights_trials", "open_weights_measurements"], resources(paths), instance,
                    partition_key=generation, run_config=config)
        trials = materialization_metadata(first, "open_weights_trials")
        assert trials["complete"] is True and trials["called_now"] == 120 and trials["spend_eur"] == 0.0
        folder = load_run(paths.run_dir(open_weights_run_id(generation, OPEN)))
        assert len(folder.trials) == 120 and folder.measurement is not None
        assert folder.measurement["on_curve"] is False, "a max_tokens override is exploratory"
        assert folder.measurement["subject_model_id"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
        [event] = [e for e in first.get_asset_materialization_events()
                   if e.asset_key.to_user_string() == "open_weights_measurements"]
        numbers = event.materialization.metadata
        for name in ("u_a", "u_a_prime", "u_b", "u_c", "drop_bound_pct_ab"):
            assert numbers[f"{OPEN}/{name}"] == FloatMetadataValue(folder.measurement[name]), name
        # 12 tokens leave most answers unreadable: a number the measurement does not have is not plotted as 0.
        assert (f"{OPEN}/stability_pct" in numbers) == (folder.measurement["stability_pct"] is not None)
        assert numbers[f"{OPEN}/on_curve"] == BoolMetadataValue(False)
        on_curve = [e for e in first.get_asset_check_evaluations() if e.check_name == "on_curve"]
        assert [e.passed for e in on_curve] == [False] and "exploratory" in on_curve[0].description

        again = run(["open_weights_trials"], resources(paths), instance, partition_key=generation, run_config={
            "ops": {"open_weights_trials": {"config": {"protocols": [OPEN], "max_tokens": 12}}}})
        repeat = materialization_metadata(again, "open_weights_trials")
        assert repeat["called_now"] == 0 and repeat["already_recorded"] == 120
