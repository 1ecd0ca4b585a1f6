"""OpenAI-compatible chat completions as a subject.

This is how an outside party runs an open panel on its own model: llama.cpp's
``llama-server``, vLLM, Ollama and OpenAI itself all answer ``POST
{base_url}/v1/chat/completions``.  The contract is the Anthropic subject's:
one user message, no system prompt, no tools, no sampling parameter the
protocol does not name — the body is ``model``, ``messages`` and
``max_tokens`` and nothing else, all of it recorded in ``explicitly_set``.
The key, when the server wants one, comes from ``OPENAI_API_KEY``.

A base URL given with a trailing ``/v1`` (as many servers document it) is
accepted: the suffix is removed before the paths are appended.

The server's build identity is read off every answer: OpenAI documents
``system_fingerprint`` as the backend configuration the model ran with, and
llama.cpp's ``llama-server`` fills it with its own build (``b<number>-<commit>``).
It is kept as given when it is a non-empty string; absent, null or anything
else is recorded as no build reported (the answer is still read).
"""
from typing import Any, Optional

from llmarchive.subjects.http import HttpSubject, MalformedResponse

DEFAULT_BASE_URL = "https://api.openai.com"


class OpenAICompatSubject(HttpSubject):
    """Any server speaking OpenAI chat completions; see the module docstring."""

    provider = "openai"
    chat_path = "/v1/chat/completions"

    def __init__(self, model: str, max_tokens: int, base_url: Optional[str] = None, **kwargs: Any) -> None:
        url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        if url.endswith("/v1"):
            url = url[: -len("/v1")]
        super().__init__(model, max_tokens, url, **kwargs)

    def request_body(self, prompt: str) -> dict:
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self.max_tokens,
        }

    def secret_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._key}"} if self._key else {}

    def parse(self, payload: Any) -> dict:
        if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list) or not payload["choices"]:
            raise MalformedResponse("a chat completion needs a non-empty 'choices' array")
        choice = payload["choices"][0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise MalformedResponse("choices[0] has no 'message' object")
        content = message.get("content")
        types: list[str] = []
        if isinstance(content, str):
            text, types = content, ["text"]
        elif content is None:
            text = ""
        elif isinstance(content, list):
            parts = [p for p in content if isinstance(p, dict)]
            types = [str(p.get("type")) for p in parts]
            text = "".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")
        else:
            raise MalformedResponse("message.content is neither text, a list of parts, nor null")
        if message.get("tool_calls"):
            types.append("tool_calls")
        if message.get("function_call"):
            types.append("function_call")
        refusal = message.get("refusal")
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
        return {
            "text": text,
            "stop_reason": choice.get("finish_reason"),
            "returned_model_id": payload.get("model"),
            "input_tokens": usage.get("prompt_tokens"),
            "output_tokens": usage.get("completion_tokens"),
            "refused": bool(refusal),
            "non_text": any(t != "text" for t in types),
            "content_types": tuple(types),
            "detail": f"refusal: {refusal}" if isinstance(refusal, str) and refusal else None,
            "system_fingerprint": build_identity(payload.get("system_fingerprint")),
        }


def build_identity(value: Any) -> Optional[str]:
    """A reported ``system_fingerprint`` as recorded: a non-empty string as given, anything else ``None``.

    A server that sends no build, or a value that is not one (a number, an
    object), says nothing about its build; that is no reason to refuse the
    answer it came with.
    """
    return value if isinstance(value, str) and value else None
