"""Issue 28 §3, row 4 end to end: a run answered under two ids records both, publishes words that say so,
and ``llmarchive verify`` reports a record that names only one of them."""
import json

import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import write_json
from llmarchive.subjects.returned_model import DESCRIPTION
from llmarchive.cli import main
from llmarchive.run import RunSettings, run_protocol
from llmarchive.subjects.http import RetryPolicy
from llmarchive.subjects.openai_compat import OpenAICompatSubject
from publish import publish_all
from tests import publish_helpers as ph
from tests.fake_provider import FakeProvider, Reply
from tests.test_system_fingerprint import OPEN, plan_responder

FIRST, SECOND = "local-model-q4", "local-model-q4-rev2"


@pytest.fixture(autouse=True)
def no_openai_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def test_a_run_answered_under_two_ids_records_both_and_verify_refuses_a_record_naming_one(archive, capsys):
    protocol = ph.protocol(archive, OPEN)
    answer = plan_responder(protocol, ph.healthy_plan(list(protocol["item_ids"])))

    def respond(request) -> Reply:
        reply = answer(request)       # the provider serves the last 20 calls under another id
        return Reply.text(reply.content, model=SECOND if len(fake.chat_requests) > 100 else FIRST)

    with FakeProvider(respond, system_fingerprint="b4000-1a2b3c4") as fake:
        subject = OpenAICompatSubject(FIRST, protocol["generation"]["max_tokens"], base_url=fake.base_url + "/v1",
                                      retry=RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02))
        result = run_protocol(archive, protocol, subject, RunSettings(run_id="two-ids", run_date="2026-11-01",
                                                                      concurrency=1),
                              authorization=budget_mod.unbudgeted("manual"))
    run = json.loads((result.run_dir / "run.json").read_text())
    assert run["returned_model_ids"] == {FIRST: 100, SECOND: 20}
    assert run["returned_model_id"] == result.measurement["returned_model_id"] == f"{FIRST},{SECOND}"
    assert main(["--home", str(archive.home), "verify", str(result.run_dir)]) == 0

    publish_all(archive, build_time="2026-11-02T00:00:00Z")
    assert main(["verify", "--public", str(archive.public), "two-ids"]) == 0
    croissant = json.loads((archive.public / "croissant.json").read_text())
    described = {f["name"]: f.get("description") for rs in croissant["recordSet"] for f in rs.get("field", [])
                 if rs.get("name") == "stability"}
    assert described["returned_model_id"] == DESCRIPTION
    assert DESCRIPTION in (archive.public / "index.html").read_text()

    edited = dict(result.measurement, returned_model_id=FIRST)     # "the most frequent one over the run"
    write_json(result.run_dir / "measurement.json", edited)
    capsys.readouterr()
    assert main(["--home", str(archive.home), "verify", str(result.run_dir)]) == 1
    assert f"DIFFERS returned_model_id: recorded '{FIRST}', recomputed '{FIRST},{SECOND}'" in capsys.readouterr().out
