"""Helpers for the instrument, coverage, sweep, succession and comparison tests.

* :func:`admitted_archive` — an archive home with every protocol built and the
  v0 protocols promoted by the human gate to method §3's lanes (guard wording
  from a secret test seed);
* :func:`paid_archive` — the same with an API key set and a budget written;
* :func:`preregister` — a pre-registration manifest for chosen protocols with a
  real OpenTimestamps proof carrying a pending attestation (built offline);
* :class:`ScriptedSubject` — a free, synchronous subject answering by a rule
  (for rotation logic where the answer itself must be controlled);
* :func:`webhook_server` — a tiny HTTP server that keeps every POSTed JSON body.
"""
import contextlib
import hashlib
import http.server
import json
import threading
from typing import Callable, Iterable, Optional

from llmarchive.protocols import prereg, registry
from llmarchive.budget import Budget
from llmarchive.cli import main
from llmarchive.archive import ArchivePaths, utc_now_millis
from llmarchive.subjects import CallResult
from panels.build import all_protocol_ids
from panels.lanes import planned_lane
from tests.panels_helpers import built_paths

SEED = "issue six seed number one"


def admitted_archive(monkeypatch, series: str = "v0") -> ArchivePaths:
    paths = built_paths(monkeypatch, SEED)
    paths.ensure()
    for pid in all_protocol_ids():
        if pid.endswith(f"__{series}"):
            lane, _ = planned_lane(pid)
            assert main(["panels", "promote", pid, "--lane", lane, "--human-reviewed", "--reviewer", "T"]) == 0
    return paths


def paid_archive(monkeypatch, budget, key: str = "fake-credential-test") -> ArchivePaths:
    """:func:`admitted_archive` with an API key in the environment and ``budget`` written (the paid paths)."""
    from llmarchive import budget as budget_mod

    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    paths = admitted_archive(monkeypatch)
    budget_mod.write_budget(paths, budget)
    return paths


PAID_BUDGET = Budget(100.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001})
"""The budget conftest's ``paid_paths`` archive is written with (€100 general pool)."""


def preregister(paths: ArchivePaths, protocol_ids: Iterable[str], date: str = "2026-10-01"):
    """Write a manifest listing ``protocol_ids`` and an offline .ots proof for it."""
    from opentimestamps.core.notary import PendingAttestation
    from opentimestamps.core.op import OpSHA256
    from opentimestamps.core.serialize import StreamSerializationContext
    from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

    wanted = set(protocol_ids)
    chosen = [p for p in registry.load_all(paths) if p["protocol_id"] in wanted]
    manifest, _ = prereg.write_manifest(paths, chosen, date=date, commit="0" * 40)
    timestamp = Timestamp(hashlib.sha256(manifest.read_bytes()).digest())
    timestamp.attestations.add(PendingAttestation("https://calendar.invalid"))
    with open(prereg.proof_path(manifest), "wb") as fh:
        DetachedTimestampFile(OpSHA256(), timestamp).serialize(StreamSerializationContext(fh))
    return manifest


class ScriptedSubject:
    """A free local subject whose answer is ``rule(prompt) -> text``; it speaks the subject contract."""

    provider = "llama.cpp"
    is_async = False
    billed = False
    default_series = "open_weights"

    def __init__(self, rule: Callable[[str], str], max_tokens: int, name: str = "scripted-model",
                 model_sha256: str = "5" * 64) -> None:
        self.rule = rule
        self.max_tokens = max_tokens
        self.name = name
        self.model_sha256 = model_sha256
        self.calls = 0

    @property
    def subject_model_id(self) -> str:
        return self.name

    @property
    def explicitly_set(self) -> dict:
        return {"max_tokens": self.max_tokens, "temperature": 0.0}

    def runtime(self) -> dict:
        return {"model_sha256": self.model_sha256, "llama_cpp_version": "scripted", "template_sha256": "t" * 64,
                "runner_arch": "test", "n_threads": 1, "n_batch": 512}

    @property
    def api_surface_sha(self) -> str:
        return "a" * 64

    @property
    def condition_profile(self) -> str:
        return "scripted"

    def config(self) -> dict:
        return {"kind": "reference", "model": self.name}

    def call(self, prompt: str, key: str = "") -> CallResult:
        self.calls += 1
        now = utc_now_millis()
        return CallResult(provider=self.provider, text=self.rule(prompt), stop_reason="stop",
                          returned_model_id=self.name, input_tokens=1, output_tokens=1, latency_ms=0, attempts=1,
                          explicitly_set=self.explicitly_set, started_at=now, finished_at=now)


@contextlib.contextmanager
def webhook_server():
    """Yield ``(url, received)``: every JSON body POSTed to ``url`` lands in ``received``."""
    received: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            received.append(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        server.shutdown()
        server.server_close()


def answer_for(options: Optional[dict] = None) -> Callable[[str], str]:
    """A rule answering ``DECISION: A`` unless a marker from ``options`` is in the prompt."""
    def rule(prompt: str) -> str:
        for marker, token in (options or {}).items():
            if marker in prompt:
                return f"DECISION: {token}"
        return "DECISION: A"
    return rule
