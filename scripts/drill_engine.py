"""The drill's scripted reference engine: a fingerprint that changes on the days the script says.

Named ``scripted:scripts.drill_engine:REFERENCE`` in the drill's resources
(:mod:`llmarchive.instrument.scripted` wraps it so every record says it was
scripted).  ``engine()`` is the runtime fingerprint's engine: token ids and
log-probabilities derived from each prompt's hash, like the engine of
tests/test_instrument.py, plus an *epoch* — the number of
:data:`REFERENCE` ``.changes`` dates on or before the moved clock's day —
mixed into every log-probability, so from a change date on the digest
differs from the expectation (an instrument alarm) until a person accepts
it.  ``subject(max_tokens)`` is the guard rotation's subject: the tests'
:class:`~tests.instrument_helpers.ScriptedSubject`, answering a decision
derived from the prompt's hash, the same every day (greedy and pinned: the
rotation stays ``flat``).
"""
import hashlib
from dataclasses import dataclass, field

from llmarchive.archive import utc_today
from llmarchive.instrument import Generated
from tests.instrument_helpers import ScriptedSubject

RUNTIME = {"model_sha256": "d" * 64, "llama_cpp_version": "scripted", "template_sha256": "t" * 64,
           "runner_arch": "drill", "n_threads": 1, "n_batch": 512, "n_ctx": 512, "seed": 0,
           "model_file": "scripted.gguf", "container_digest": None}


def decide_by_hash(prompt: str) -> str:
    """A decision that is a fixed function of the prompt (varied across items, stable across days)."""
    return f"Weighing it.\nDECISION: {'AB'[hashlib.sha256(prompt.encode('utf-8')).digest()[0] % 2]}"


class DrillEngine:
    """The fingerprint's engine for one day: its epoch is fixed when it is made (see the module docstring)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def runtime(self) -> dict:
        return dict(RUNTIME)

    def generate(self, prompt_id: str, prompt: str, max_tokens: int, top: int = 5) -> Generated:
        digest = hashlib.sha256(prompt.encode("utf-8")).digest()
        steps = []
        for step in range(4):
            ids = [(digest[step] + k) % 97 for k in range(top)]
            logprobs = [-(k + 1) * 0.25 - step / 7 - self.epoch / 1024 for k in range(top)]
            steps.append((ids[0], tuple(zip(ids, logprobs))))
        return Generated(prompt_id, tuple(steps), "length", "scripted")


@dataclass
class DrillReference:
    """``engine()`` and ``subject(max_tokens)`` for :mod:`llmarchive.instrument.scripted`."""

    changes: list[str] = field(default_factory=list)    # YYYY-MM-DD: the fingerprint changes on each

    def epoch(self) -> int:
        today = utc_today()
        return sum(1 for day in self.changes if day <= today)

    def engine(self) -> DrillEngine:
        return DrillEngine(self.epoch())

    def subject(self, max_tokens: int) -> ScriptedSubject:
        return ScriptedSubject(decide_by_hash, max_tokens, name="drill-reference", model_sha256=RUNTIME["model_sha256"])


REFERENCE = DrillReference()
