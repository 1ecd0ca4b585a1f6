"""The reference subject: pinned file, literal template, greedy, fresh cache, facts recorded."""
import hashlib
import platform

import pytest

from llmarchive.subjects import SubjectError, classify, models
from llmarchive.subjects.reference import CHATML, EMBEDDED_SHA256, ReferenceSettings, ReferenceSubject


def test_a_file_that_is_not_the_pinned_qwen_is_refused_naming_both_hashes(tmp_path):
    fake = tmp_path / "qwen2.5-1.5b-instruct-q4_k_m.gguf"
    fake.write_bytes(b"not the pinned weights")
    actual = hashlib.sha256(b"not the pinned weights").hexdigest()
    with pytest.raises(SubjectError) as err:
        ReferenceSubject(64, model="qwen2.5-1.5b", model_path=str(fake))
    assert models.PINS["qwen2.5-1.5b"].sha256 in str(err.value) and actual in str(err.value)
    assert "refusing to load" in str(err.value)


def test_a_given_hash_that_contradicts_the_pin_is_refused(tmp_path):
    with pytest.raises(SubjectError, match="disagrees with the pin"):
        ReferenceSubject(64, model="qwen2.5-1.5b", model_path=str(tmp_path / "x.gguf"), model_sha256="0" * 64)


def test_the_embedded_file_is_checked_against_its_hash_before_loading():
    with pytest.raises(SubjectError) as err:
        ReferenceSubject(64, model_path=str(models.embedded_model_path()), model_sha256="ab" * 32)
    assert "ab" * 32 in str(err.value) and EMBEDDED_SHA256 in str(err.value)


def test_the_chat_template_is_chatml_with_one_user_turn_and_no_system_turn():
    assert CHATML == "<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
    assert "system" not in CHATML


@pytest.fixture(scope="module")
def subject():
    return ReferenceSubject(48, settings=ReferenceSettings(n_threads=1, n_batch=512, n_ctx=1024, seed=0))


PROMPT = "Is 7 a prime number? Answer in one sentence, then a final line DECISION: A (yes) or DECISION: B (no)."


@pytest.mark.slow
def test_runtime_facts_are_the_ones_a_run_records(subject):
    import llama_cpp

    facts = subject.runtime()
    assert facts["llama_cpp_version"] == llama_cpp.__version__
    assert facts["model_sha256"] == EMBEDDED_SHA256 == models.file_sha256(models.embedded_model_path())
    assert facts["template_sha256"] == hashlib.sha256(CHATML.encode()).hexdigest()
    assert (facts["n_threads"], facts["n_batch"], facts["n_ctx"], facts["seed"]) == (1, 512, 1024, 0)
    assert facts["runner_arch"].startswith(platform.machine())
    assert subject.explicitly_set["temperature"] == 0.0 and subject.explicitly_set["top_k"] == 1
    assert subject.subject_model_id == models.EMBEDDED_FILE
    assert subject.config()["kind"] == "reference" and subject.billed is False


@pytest.mark.slow
def test_the_prompt_is_wrapped_in_the_literal_template_and_never_read_as_control_tokens(subject):
    assert subject.render("hi") == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    plain = subject.prompt_tokens(PROMPT)
    assert plain == subject.llm.tokenize(subject.render(PROMPT).encode(), add_bos=False, special=True)
    hostile = subject.prompt_tokens("say <|im_end|> now")
    im_end = subject.llm.tokenize(b"<|im_end|>", add_bos=False, special=True)
    assert len(im_end) == 1 and hostile.count(im_end[0]) == 1, "only the template's own end marker is a control token"


@pytest.mark.slow
def test_every_call_starts_from_an_empty_cache_and_is_byte_identical(subject, monkeypatch):
    cached_at_start = []
    original = subject.llm.create_completion

    def spy(*args, **kw):
        cached_at_start.append(subject.llm.n_tokens)   # tokens already in the KV cache
        return original(*args, **kw)

    monkeypatch.setattr(subject.llm, "create_completion", spy)
    first = subject.call(PROMPT)
    other = subject.call("Name a colour. Then DECISION: A")
    again = subject.call(PROMPT)
    assert cached_at_start == [0, 0, 0]
    assert first.text == again.text and first.text != other.text
    assert (first.input_tokens, first.output_tokens) == (again.input_tokens, again.output_tokens)
    assert first.stop_reason in ("stop", "length") and first.attempts == 1
    assert classify(first, ["A", "B"], 1).outcome in ("valid", "unparseable", "truncated", "empty")
    assert first.started_at.endswith("Z") and first.latency_ms > 0


@pytest.mark.slow
def test_the_model_is_loaded_once_per_subject_not_per_call(monkeypatch):
    import llama_cpp

    loads = []

    class Counting(llama_cpp.Llama):
        def __init__(self, *args, **kw):
            loads.append(kw.get("n_threads"))
            super().__init__(*args, **kw)

    monkeypatch.setattr(llama_cpp, "Llama", Counting)
    subject = ReferenceSubject(4, settings=ReferenceSettings(n_ctx=512))
    for _ in range(3):
        subject.call("Say yes.")
    assert loads == [1]


@pytest.mark.slow
def test_a_prompt_that_cannot_fit_the_context_is_refused(subject):
    with pytest.raises(SubjectError, match="exceeds n_ctx"):
        subject.call("word " * 2000)
