"""The simulated readers' OpenAI-compatible server: the real protocol over HTTP, and known answers recovered.

The server answers from a published open-panel file exactly as publication
writes it.  The archive's own OpenAI-compatible subject talks to it over
real HTTP on 127.0.0.1; then each known-answer reader is run through the
outsider's whole route — ``llmarchive comparison run`` in an outsider's
empty home, ``llmarchive comparison submit`` in the archive — and the
archive's recomputation must come back with the figures the reader is
known to have: the invariant reader at the noise floor, the
framing-sensitive reader's gap inside its interval, the reader that ignores
the question flagged ``not_reading``.
"""
import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.cli import main
from llmarchive.comparison import load_panel
from llmarchive.comparison.reader_server import ReaderServer, ReaderServerError
from llmarchive.subjects import make_subject
from panels import readers
from tests.known_answer_helpers import published_panel

OPEN = "risky_choice_framing__wording__v0"
FRAMING = readers.simulated_model_id(readers.FRAMING_SENSITIVE)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """(the admitted archive's home, the open panel file exactly as publication writes it)."""
    return published_panel(tmp_path_factory.mktemp("reader-server"), OPEN)


@pytest.fixture
def server(published, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ReaderServer([published[1]]) as running:
        yield running


def test_the_archives_openai_subject_gets_a_readers_whole_answer_over_http(published, server):
    protocol = load_panel(published[1])
    item = protocol["panel"][0]
    subject = make_subject("openai", max_tokens=protocol["generation"]["max_tokens"], model=FRAMING,
                           base_url=server.url)
    [letter] = readers.replicate_answers("biased", protocol, item, "B")[:1]
    result = subject.call(item["versions"]["B"])
    assert result.failure is None and result.text == readers.response_text(readers.FRAMING_SENSITIVE, letter)
    assert result.returned_model_id == FRAMING and result.stop_reason == "stop"
    assert result.input_tokens > 50 and result.output_tokens == len(result.text.split())

    raw = httpx.post(server.base_url + "/chat/completions", json={
        "model": FRAMING, "max_tokens": 5, "messages": [{"role": "user", "content": [
            {"type": "text", "text": item["versions"]["A"]}]}]}).json()
    assert raw["object"] == "chat.completion" and raw["id"].startswith("chatcmpl-") and isinstance(raw["created"], int)
    [choice] = raw["choices"]
    assert choice["message"]["role"] == "assistant" and choice["finish_reason"] == "length", "cut at max_tokens"
    assert len(choice["message"]["content"].split()) == 5 and raw["usage"]["completion_tokens"] == 5
    assert raw["usage"]["total_tokens"] == raw["usage"]["prompt_tokens"] + 5 and raw["system_fingerprint"]
    models = httpx.get(server.base_url + "/models").json()
    assert [m["id"] for m in models["data"]] == [readers.simulated_model_id(n) for n in readers.KNOWN_ANSWER_READERS]
    text = httpx.post(server.base_url + "/completions", json={"model": FRAMING, "prompt": item["versions"]["C"]}).json()
    assert text["object"] == "text_completion" and "DECISION:" in text["choices"][0]["text"]


def test_bad_requests_get_clean_4xx_answers_in_openais_error_shape(published, server):
    prompt = load_panel(published[1])["panel"][0]["versions"]["A"]
    url = server.base_url + "/chat/completions"

    def post(body=None, **kwargs):
        return httpx.post(url, json=body, **kwargs) if body is not None else httpx.post(url, **kwargs)

    cases = {
        "model_not_found": (404, post({"model": "gpt-5", "messages": [{"role": "user", "content": prompt}]})),
        "unknown_prompt": (400, post({"model": FRAMING, "messages": [{"role": "user", "content": prompt + " "}]})),
        "not_a_panel_call": (400, post({"model": FRAMING, "messages": [{"role": "system", "content": "Be brief."},
                                                                        {"role": "user", "content": prompt}]})),
        "invalid_json": (400, post(content=b"{not json", headers={"content-type": "application/json"})),
        "unsupported_value": (400, post({"model": FRAMING, "stream": True,
                                         "messages": [{"role": "user", "content": prompt}]})),
        "missing_model": (400, post({"messages": [{"role": "user", "content": prompt}]})),
        "not_found": (404, httpx.get(server.base_url + "/nothing-here")),
        "method_not_allowed": (405, httpx.put(url, json={})),
    }
    for code, (status, response) in cases.items():
        assert response.status_code == status, (code, response.text)
        error = response.json()["error"]
        assert error["code"] == code and error["message"] and error["type"], error
    assert post({"model": FRAMING, "n": 2, "messages": [{"role": "user", "content": prompt}]}).status_code == 400
    with pytest.raises(ReaderServerError, match="loopback"):
        ReaderServer([published[1]], host="0.0.0.0")


def test_the_replicates_of_a_tie_come_back_split_whatever_order_the_calls_arrive_in(published, server):
    """The invariant reader splits A's tie between the two options: concurrent calls still get one of each."""
    protocol = load_panel(published[1])
    item = protocol["panel"][4]
    want = readers.replicate_answers("normative", protocol, item, "A")
    assert sorted(set(want)) == ["A", "B"], "a tie on A by construction"
    model = readers.simulated_model_id(readers.INVARIANT)
    body = {"model": model, "messages": [{"role": "user", "content": item["versions"]["A"]}]}

    def ask(_):
        return httpx.post(server.base_url + "/chat/completions", json=body).json()["choices"][0]["message"]["content"]

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(ask, range(4 * len(want))))
    assert Counter(line.rsplit(" ", 1)[-1] for line in got) == Counter(want * 4)


def test_three_known_answer_readers_run_and_submitted_as_outsiders_recover_their_known_figures(
        published, server, tmp_path):
    home, panel = published
    protocol = load_panel(panel)
    outsider = tmp_path / "outsider-home"
    points = {}
    for name in readers.KNOWN_ANSWER_READERS:
        model, out = readers.simulated_model_id(name), tmp_path / f"{name}.jsonl"
        assert main(["--home", str(outsider), "comparison", "run", "--panel", str(panel), "--base-url", server.url,
                     "--model", model, "--out", str(out), "--submitted-by", "test", "--quiet"]) == 0
        assert main(["--home", str(home), "comparison", "submit", str(out), "--known-answer"]) == 0
        header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
        assert header["model_id"] == model
        [point] = [p for p in records.read(ArchivePaths(home), "comparison_point") if p["model_id"] == model]
        points[name] = point["measurement"]
    for name, m in points.items():
        known = readers.known_answer(name, protocol)
        assert m["gap_pct"] == pytest.approx(known["figures"]["gap_ab_pct"]), name
        assert m["gap_positive_pct"] == pytest.approx(known["figures"]["gap_ac_pct"]), name
        assert m["null_floor_pct"] is not None and "exploratory" in m["flags"]
    invariant, framing, blind = (points[n] for n in readers.KNOWN_ANSWER_READERS)
    assert invariant["gap_pct"] == 0 and invariant["at_noise_floor"] is True and "not_reading" not in invariant["flags"]
    gap = readers.known_answer(readers.FRAMING_SENSITIVE, protocol)["figures"]["gap_ab_pct"]
    assert gap > 20 and 100 - framing["ci_high_pct"] <= gap <= 100 - framing["ci_low_pct"]
    assert "not_reading" not in framing["flags"] and framing["null_floor_pct"] < gap
    assert "not_reading" in blind["flags"] and blind["gap_positive_pct"] == 0



def test_a_simulated_readers_model_id_names_it_and_no_other_id_does():
    ids = {name: readers.simulated_model_id(name) for name in readers.KNOWN_ANSWER_READERS}
    assert ids == {"invariant": "simulated-reader-invariant",
                   "framing-sensitive": "simulated-reader-framing-sensitive",
                   "ignores-question": "simulated-reader-ignores-question"}
    assert all(readers.simulated_reader(model) == name for name, model in ids.items())
    for other in ("simulated-reader-", "simulated-reader-oracle", "gpt-5", "simulated-normative-reader", None, 7):
        assert readers.simulated_reader(other) is None
