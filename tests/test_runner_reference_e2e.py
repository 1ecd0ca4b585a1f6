"""End to end on real components: a built open v0 protocol, the embedded model, 120 calls.

The protocol comes from the registry and is promoted to the open lane by
the human gate (``llmarchive panels promote … --human-reviewed``).  The run
goes through ``llmarchive run --subject reference``; the budget is at 99 %
to show the free reference model is never gated.  ``--max-tokens 64``
keeps the suite quick (the protocol freezes 256): the runner records the
override and the measurement is therefore ``exploratory`` — a real run of
every component, not a number for any curve.  Its speed is measured by
``bench/runner_bench.py --part a``, not here.
"""
import json

import pytest

from llmarchive import budget as budget_mod
from llmarchive.protocols import registry
from llmarchive.cli import main
from llmarchive.archive import ArchivePaths, load_run, measurement_run, read_jsonl
from llmarchive.subjects import EMBEDDED_SHA256
from measure import chain
from measure.measurement import build
from measure.schema import OUTCOMES

PROTOCOL = "risky_choice_framing__wording__v0"


@pytest.mark.slow
def test_an_open_v0_protocol_runs_end_to_end_on_the_embedded_model(built, capsys):
    paths = ArchivePaths.from_env().ensure()
    assert main(["panels", "promote", PROTOCOL, "--lane", "open", "--human-reviewed",
                 "--reviewer", "e2e-test"]) == 0
    protocol = registry.load_protocol(paths, PROTOCOL)
    assert (protocol["status"], protocol["lane"]) == ("admitted", "open")

    budget = budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001})
    budget_mod.write_budget(paths, budget)
    meter = budget_mod.SpendMeter(paths, budget_mod.Authorization("manual", "scenario", "general", 0.1),
                                  "filler", "anthropic", "m")
    for i in range(124):   # 12.4 € of 12.5 €: the ladder allows only subject_fingerprint
        meter.charge([(f"c{i}", {"answered": True})])
    assert budget_mod.ladder_state(paths, budget).rung.max_protocols == 0
    ledger_before = len(budget_mod.ledger(paths))

    code = main(["run", PROTOCOL, "--subject", "reference", "--max-tokens", "64", "--run-date", "2026-11-06",
                 "--run-id", "e2e", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out

    folder = load_run(paths.run_dir("e2e"))
    trials = read_jsonl(paths.run_dir("e2e") / "trials.jsonl")
    assert chain.verify(trials) == 120 and len(folder.trials) == 120
    assert len({(t["item_id"], t["version"], t["replicate_index"]) for t in trials}) == 120
    assert all(t["outcome"] in OUTCOMES and isinstance(t["response_text"], str) for t in trials)
    assert {t["returned_model_id"] for t in trials} == {"SmolLM2-135M-Instruct.Q4_1.gguf"}

    run = folder.run
    assert run["status"] == "complete" and run["series"] == "open_weights" and run["lane"] == "open"
    assert run["protocol_sha256"] == protocol["protocol_sha256"]
    assert run["runtime"]["model_sha256"] == EMBEDDED_SHA256
    assert run["runtime"]["n_threads"] == 1 and run["runtime"]["n_batch"] == 512
    assert run["explicitly_set"]["max_tokens"] == 64 and run["generation_override"] == {"max_tokens": 64}
    assert run["cost_eur"] == 0.0 and run["budget"] is None
    assert len(budget_mod.ledger(paths)) == ledger_before, "the reference model is never billed"

    measurement = folder.measurement
    assert measurement == build(folder.protocol_header, folder.trials, measurement_run(run))
    assert measurement["lane"] == "open" and measurement["protocol_status"] == "admitted"
    assert measurement["n"] == 30 and sum(sum(v.values()) for v in measurement["outcomes"].values()) == 120
    assert "exploratory" in measurement["flags"] and measurement["on_curve"] is False
    assert "generation override" in measurement["flag_reasons"]["exploratory"]

    assert main(["measure", str(paths.run_dir("e2e"))]) == 0
    assert json.loads(capsys.readouterr().out) == measurement
    assert "stability_pct" in out and "status: complete" in out
