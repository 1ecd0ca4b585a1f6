"""The reference model with log-probabilities: the runtime fingerprint's engine.

:class:`LogprobEngine` *is* a :class:`~llmarchive.subjects.reference.ReferenceSubject`
— same pinned file and sha256 check before the load, same literal chat
template and tokenisation, same fixed threads, batch and seed, same runtime
record — with one difference: llama.cpp is asked to keep the logits of
every evaluated position (``logits_all=True``), which is what reading
log-probabilities needs.  Nothing in ``reference.py`` changes; the subclass
only replaces the one method that constructs the ``Llama`` object.

Generation is greedy and done step by step here rather than through
``create_completion``: after the prompt is evaluated, each step takes the
logits of the last position, converts them with llama-cpp-python's own
``Llama.logits_to_logprobs``, keeps the five most probable tokens (ties
broken by the lower token id), appends the most probable one and evaluates
it.  Working on token ids keeps the record exact: two different tokens that
print the same text can never be confused, which a text-keyed
``top_logprobs`` dictionary cannot promise.

The context is kept small (``n_ctx`` 512 by default): keeping every
position's logits costs ``n_ctx × vocabulary`` floats, and the fingerprint
prompts are a few dozen tokens.
"""
from dataclasses import dataclass
from typing import Optional

from llmarchive.subjects import ReferenceSettings, ReferenceSubject, SubjectError, models

DEFAULT_N_CTX = 512


@dataclass(frozen=True)
class Generated:
    """One greedy generation: per step the chosen token and the top-k ``(token_id, logprob)`` pairs."""

    prompt_id: str
    tokens: tuple[tuple[int, tuple[tuple[int, float], ...]], ...]
    finish_reason: str            # "stop" (end-of-generation token) or "length"
    text: str

    def to_json(self) -> dict:
        """The part that is hashed (ids and logprobs, not the text, which follows from the ids)."""
        return {
            "prompt_id": self.prompt_id,
            "finish_reason": self.finish_reason,
            "tokens": [[token, [[i, lp] for i, lp in top]] for token, top in self.tokens],
        }


class LogprobEngine(ReferenceSubject):
    """A reference subject whose model keeps every position's logits."""

    def __init__(self, max_tokens: int, model: str = models.DEFAULT_MODEL, model_path: Optional[str] = None,
                 model_sha256: Optional[str] = None, n_threads: int = 1, n_batch: int = 512,
                 n_ctx: int = DEFAULT_N_CTX, seed: int = 0, pin_source: Optional[str] = None) -> None:
        super().__init__(max_tokens, model=model, model_path=model_path, model_sha256=model_sha256,
                         settings=ReferenceSettings(n_threads=n_threads, n_batch=n_batch, n_ctx=n_ctx, seed=seed),
                         pin_source=pin_source)

    def _load(self):
        # llama_cpp (and numpy below) are loaded where the model is, not above: importing the instrument for its
        # verdicts and records should not load llama.cpp's library (~0.2 s).  Not a cycle.
        from llama_cpp import Llama

        s = self.settings
        return Llama(model_path=str(self.path), n_ctx=s.n_ctx, n_threads=s.n_threads,
                     n_threads_batch=s.n_threads, n_batch=s.n_batch, seed=s.seed, verbose=False,
                     logits_all=True)

    def _is_end(self, token: int) -> bool:
        import llama_cpp

        vocab = getattr(getattr(self.llm, "_model", None), "vocab", None)
        if vocab is not None and hasattr(llama_cpp, "llama_vocab_is_eog"):
            return bool(llama_cpp.llama_vocab_is_eog(vocab, token))
        return token == self.llm.token_eos()

    def generate(self, prompt_id: str, prompt: str, max_tokens: int, top: int = 5) -> Generated:
        """Greedy generation from an empty cache, recording the top-``top`` logprobs of every step."""
        import numpy as np
        from llama_cpp import Llama

        tokens = self.prompt_tokens(prompt)
        if len(tokens) + max_tokens > self.settings.n_ctx:
            raise SubjectError(f"fingerprint prompt {prompt_id}: {len(tokens)} tokens plus {max_tokens} exceed "
                               f"n_ctx {self.settings.n_ctx}")
        llm = self.llm
        llm.reset()
        llm.eval(tokens)
        steps = []
        finish = "length"
        for _ in range(max_tokens):
            logprobs = Llama.logits_to_logprobs(llm.scores[llm.n_tokens - 1])
            order = np.argsort(-logprobs, kind="stable")[:top]
            best = [(int(i), float(logprobs[i])) for i in order]
            chosen = best[0][0]
            steps.append((chosen, tuple(best)))
            if self._is_end(chosen):
                finish = "stop"
                break
            llm.eval([chosen])
        ids = [token for token, _ in steps if not self._is_end(token)]
        text = llm.detokenize(ids).decode("utf-8", errors="replace")
        return Generated(prompt_id, tuple(steps), finish, text)
