"""The Anthropic Messages API as a subject (method §5).

One call is ``POST {base_url}/v1/messages`` with a body of exactly four
parameters — ``model``, ``max_tokens``, ``messages`` (one user turn, the
prompt) and ``thinking: {"type": "disabled"}``.  Thinking is sent explicitly
because the API's own default is adaptive thinking, not off; ``temperature``
is not sent because it is no longer client-controllable, and there is no
system prompt, no tool and no retrieval.  The key comes from
``ANTHROPIC_API_KEY`` and nowhere else.

The Messages API documents no build identity of the serving system (its
response carries ``id``, ``type``, ``role``, ``model``, ``content``,
``stop_reason``, ``stop_sequence`` and ``usage``; nothing like OpenAI's
``system_fingerprint``), so every trial records ``system_fingerprint`` as
null: the returned ``model`` is all this API says about what answered.
"""
from typing import Any, Optional

from llmarchive.subjects.http import HttpSubject, MalformedResponse

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
MODELS_PAGE_LIMIT = 1000


class AnthropicSubject(HttpSubject):
    """Claude over the Messages API; see the module docstring for the contract."""

    provider = "anthropic"
    chat_path = "/v1/messages"
    models_query = {"limit": MODELS_PAGE_LIMIT}

    def __init__(self, model: str, max_tokens: int, base_url: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(model, max_tokens, base_url or DEFAULT_BASE_URL, **kwargs)

    def request_body(self, prompt: str) -> dict:
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": [{"role": "user", "content": prompt}],
            "thinking": {"type": "disabled"},
        }

    def public_headers(self) -> dict[str, str]:
        return {"anthropic-version": ANTHROPIC_VERSION}

    def secret_headers(self) -> dict[str, str]:
        return {"x-api-key": self._key} if self._key else {}

    def parse(self, payload: Any) -> dict:
        if not isinstance(payload, dict) or not isinstance(payload.get("content"), list):
            raise MalformedResponse("a Messages response needs a 'content' array")
        blocks = payload["content"]
        if any(not isinstance(b, dict) for b in blocks):
            raise MalformedResponse("a content block is not an object")
        types = [str(b.get("type")) for b in blocks]
        texts = [b.get("text") for b in blocks if b.get("type") == "text"]
        if any(not isinstance(t, str) for t in texts):
            raise MalformedResponse("a text block without a text string")
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
        return {
            "text": "".join(texts),
            "stop_reason": payload.get("stop_reason"),
            "returned_model_id": payload.get("model"),
            "input_tokens": usage.get("input_tokens"),
            "output_tokens": usage.get("output_tokens"),
            "non_text": any(t != "text" for t in types),
            "content_types": tuple(types),
            "system_fingerprint": None,      # the API reports no build (module docstring)
        }

    def parse_models(self, payload: Any) -> tuple[list[dict], Optional[dict]]:
        page, _ = super().parse_models(payload)
        if payload.get("has_more") and payload.get("last_id"):
            return page, {"limit": MODELS_PAGE_LIMIT, "after_id": payload["last_id"]}
        return page, None
