"""The heaviest dependency works from day one: llama.cpp runs the embedded model."""
import pytest

from llmarchive.subjects.models import embedded_model_path, resolve_model


@pytest.mark.slow
def test_embedded_gguf_generates_identically_twice_when_greedy():
    from llama_cpp import Llama

    llm = Llama(model_path=str(embedded_model_path()), n_ctx=512, n_threads=1, n_batch=64, seed=0,
                verbose=False)
    prompt = "<|im_start|>user\nName one colour of the sky.<|im_end|>\n<|im_start|>assistant\n"
    outputs = []
    for _ in range(2):
        llm.reset()
        out = llm(prompt, max_tokens=24, temperature=0.0, top_k=1, seed=0)
        outputs.append(out["choices"][0]["text"])
    assert outputs[0] == outputs[1]
    assert outputs[0].strip() != ""


def test_a_pinned_model_with_the_wrong_hash_is_refused(tmp_path):
    fake = tmp_path / "qwen2.5-1.5b-instruct-q4_k_m.gguf"
    fake.write_bytes(b"not a model")
    from llmarchive.subjects.models import ModelFileError
    with pytest.raises(ModelFileError, match="6a1a2eb6") as err:
        resolve_model("qwen2.5-1.5b", path=str(fake))
    assert "refusing to load" in str(err.value)
