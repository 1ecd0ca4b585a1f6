"""The fake provider itself: the API other tests (model watch, Dagster) rely on."""
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from llmarchive.subjects import list_models
from tests.fake_provider import Fault, FakeProvider, Reply

ROOT = Path(__file__).resolve().parent.parent


def test_list_models_reads_both_dialects_and_sees_changes(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-watch")
    with FakeProvider(models=["claude-sonnet-5"]) as fake:
        assert [m["id"] for m in list_models("anthropic", fake.base_url)] == ["claude-sonnet-5"]
        fake.set_models(["claude-sonnet-5", {"id": "claude-sonnet-5-5", "display_name": "Sonnet 5.5"}])
        models = list_models("anthropic", fake.base_url)
        assert [m["id"] for m in models] == ["claude-sonnet-5", "claude-sonnet-5-5"]
        assert models[1]["display_name"] == "Sonnet 5.5" and models[1]["type"] == "model"
        assert [m["id"] for m in list_models("openai", fake.base_url)] == ["claude-sonnet-5", "claude-sonnet-5-5"]


def test_the_script_comes_first_then_the_responder_and_requests_are_kept():
    with FakeProvider(lambda request: Reply.text(f"echo {request.prompt}")) as fake:
        fake.script(Fault.status(500))
        first = httpx.post(fake.base_url + "/v1/chat/completions",
                           json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        second = httpx.post(fake.base_url + "/v1/chat/completions",
                            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert first.status_code == 500 and first.json()["error"]["type"] == "api_error"
        assert second.json()["choices"][0]["message"]["content"] == "echo hi"
        assert [r.prompt for r in fake.chat_requests] == ["hi", "hi"]
        assert fake.stats()["chat_requests"] == 2 and fake.max_in_flight == 1


def test_the_fake_provider_runs_in_its_own_process_with_counters_over_http():
    server = subprocess.Popen([sys.executable, "-m", "tests.fake_provider", "--latency", "0"], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        base_url = server.stdout.readline().strip()
        answer = httpx.post(base_url + "/v1/messages", headers={"anthropic-version": "2023-06-01"},
                            json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})
        assert answer.json()["content"][0]["text"].endswith(("DECISION: A", "DECISION: B"))
        assert httpx.get(base_url + "/_fake/stats").json()["chat_requests"] == 1
    finally:
        server.stdin.close()
        server.wait(timeout=10)
    assert server.returncode == 0


def test_the_fake_provider_serves_a_named_port_with_its_stdin_closed_until_it_is_stopped():
    """An owner's dry run: ``--port`` and a background job's closed stdin; it serves until SIGTERM, and a port
    in use is one line, not a traceback."""
    import signal
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "tests.fake_provider", "--port", str(port)], cwd=ROOT,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == f"http://127.0.0.1:{port}"
        assert httpx.get(f"http://127.0.0.1:{port}/_fake/stats").json()["requests"] == 0
        assert server.poll() is None, "still serving with its stdin closed"
        taken = subprocess.run([sys.executable, "-m", "tests.fake_provider", "--port", str(port)], cwd=ROOT,
                               stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert taken.returncode == 1 and len(taken.stderr.strip().splitlines()) == 1
        assert f"cannot listen on 127.0.0.1:{port}" in taken.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
    assert server.returncode == 0


@pytest.mark.slow
def test_the_fake_provider_can_answer_with_the_embedded_model(monkeypatch):
    from llmarchive.subjects.anthropic import AnthropicSubject
    from tests.fake_provider import embedded_model_responder

    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-x")
    with FakeProvider(embedded_model_responder(max_tokens=16)) as fake:
        subject = AnthropicSubject("claude-local", 16, base_url=fake.base_url)
        first, second = subject.call("Say yes."), subject.call("Say yes.")
    assert first.text == second.text and first.text.strip() != ""
    assert first.returned_model_id == "smollm2-135m-fake"
    assert first.stop_reason in ("end_turn", "max_tokens")
