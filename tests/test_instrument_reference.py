"""The instrument on the real embedded reference model (slow: llama.cpp runs for real).

* the runtime fingerprint establishes an expectation, then reproduces it
  bit for bit;
* one logprob flipped in its last bit → ``fail``, an ``instrument_alarm``,
  and the day's measurements ``instrument_suspect``;
* a model file that is not the pinned one → ``unavailable`` (counts as a failure).

The guard rotation's logic is tested with a scripted subject
(test_instrument_rotation.py): one guard protocol on the embedded model is
120 calls of ~330-token prompts, which took 6 minutes here even at
``max_tokens`` 4 and 12 at the frozen 256 — ``bench/instrument_bench.py``
runs that one for real, and the runner's own end-to-end test already drives
the embedded model through a full protocol.
"""
import dataclasses
import math

import pytest

from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.instrument import day_verdict, default_engine_factory, runtime_fingerprint
from llmarchive.instrument.engine import LogprobEngine
from llmarchive.instrument.prompts import FINGERPRINT_MAX_TOKENS
from llmarchive.subjects import EMBEDDED_SHA256

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engine():
    return LogprobEngine(FINGERPRINT_MAX_TOKENS)


class Flipped:
    """The real engine, with one logprob of one step moved to the next float toward zero."""

    def __init__(self, engine, prompt_id, step):
        self.engine, self.prompt_id, self.step = engine, prompt_id, step

    def runtime(self):
        return self.engine.runtime()

    def generate(self, prompt_id, prompt, max_tokens, top=5):
        g = self.engine.generate(prompt_id, prompt, max_tokens, top)
        if prompt_id != self.prompt_id:
            return g
        steps = list(g.tokens)
        token, best = steps[self.step]
        best = list(best)
        i, lp = best[4]
        best[4] = (i, math.nextafter(lp, 0.0))
        steps[self.step] = (token, tuple(best))
        return dataclasses.replace(g, tokens=tuple(steps))


def test_the_reference_model_reproduces_its_fingerprint_and_a_flipped_logprob_raises_an_alarm(archive_home, engine):
    paths = ArchivePaths.from_env().ensure()
    first = runtime_fingerprint(paths, "2026-11-01", lambda: engine)
    assert first.status == "established"
    assert first.record["model_sha256"] == EMBEDDED_SHA256
    assert first.record["llama_cpp_version"] and first.record["template_sha256"]
    assert (first.record["n_threads"], first.record["n_batch"], first.record["seed"]) == (1, 512, 0)

    second = runtime_fingerprint(paths, "2026-11-02", lambda: engine)
    assert second.status == "pass", second.record["reason"]
    assert second.record["digest"] == first.record["digest"]
    assert day_verdict(paths, "2026-11-02").passing

    third = runtime_fingerprint(paths, "2026-11-03", lambda: Flipped(engine, "fp05", 2))
    assert third.status == "fail"
    assert "prompt fp05, token 2, top-5" in third.record["first_difference"]
    assert [a["date"] for a in records.read(paths, "instrument_alarm")] == ["2026-11-03"]
    assert day_verdict(paths, "2026-11-03").suspect


def test_a_model_file_that_is_not_the_pinned_one_makes_the_fingerprint_unavailable(archive_home, tmp_path):
    paths = ArchivePaths.from_env().ensure()
    impostor = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    impostor.write_bytes(b"GGUF but not the pinned weights")
    outcome = runtime_fingerprint(paths, "2026-11-04", default_engine_factory(model_path=str(impostor),
                                                                             model_sha256=EMBEDDED_SHA256))
    assert outcome.status == "unavailable" and outcome.record["digest"] is None
    assert EMBEDDED_SHA256 in outcome.record["reason"] and "refusing to load" in outcome.record["reason"]
    assert outcome.alarm is not None and day_verdict(paths, "2026-11-04").suspect
