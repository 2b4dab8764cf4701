"""A client for any OpenAI-compatible ``/chat/completions`` endpoint with JSON-schema structured output."""

from __future__ import annotations

from typing import Any

import httpx
from npc_memory.config.extraction import ExtractionSettings
from npc_memory.errors import UnavailableError
from npc_memory.ops.tracing import span

_DETAIL_CHARS = 200

_FACT_PROPERTIES: dict[str, Any] = {
    "speaker": {"type": "string", "enum": ["user", "heroine"]},
    "subject": {"type": "string", "enum": ["user", "heroine", "world"]},
    "subject_id": {"type": "string"},
    "content_type": {
        "type": "string",
        "enum": ["fact", "preference", "trait", "event", "opinion", "personal", "relationship"],
    },
    "content": {"type": "string"},
    "importance": {"type": "integer", "minimum": 1, "maximum": 10},
    "slot": {"type": "string"},
}

# The answer's shape, sent as response_format so servers with structured output (OpenAI, vLLM, llama.cpp,
# Ollama) constrain the model to it. The service checks every fact again: a server may ignore the schema.
FACTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": _FACT_PROPERTIES,
                "required": [name for name in _FACT_PROPERTIES if name != "slot"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["facts"],
    "additionalProperties": False,
}


class ChatClient:
    """POSTs one prompt to ``{url}/chat/completions`` and returns the answer's text."""

    def __init__(self, settings: ExtractionSettings) -> None:
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self._client = httpx.AsyncClient(
            base_url=settings.url.rstrip("/"), headers=headers, timeout=settings.timeout_seconds
        )
        self._settings = settings

    async def complete(self, prompt: str) -> str:
        """The model's answer to ``prompt``; UnavailableError when the endpoint fails or times out."""
        payload: dict[str, Any] = {
            "model": self._settings.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "extracted_facts", "strict": True, "schema": FACTS_SCHEMA},
            },
        }
        url = self._settings.url
        try:
            with span("chat", prompt_chars=len(prompt)):
                response = await self._client.post("/chat/completions", json=payload)
        except httpx.HTTPError as exc:
            raise UnavailableError(f"chat endpoint {url}: {exc!r}") from exc
        if response.status_code >= 400:
            raise UnavailableError(f"chat endpoint {url} answered {response.status_code} "
                                   f"{response.text[:_DETAIL_CHARS]}")
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise UnavailableError(f"chat endpoint {url} sent no chat completion: {exc!r}") from exc
        if not isinstance(content, str):
            raise UnavailableError(f"chat endpoint {url} sent a non-text message")
        return content

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()
