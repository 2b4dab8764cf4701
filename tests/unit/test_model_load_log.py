"""Loading the bundled model is logged when it starts and when it is done, so a start is never silent."""

from __future__ import annotations

import logging

import pytest
from npc_memory.embedding import create_embedder
from npc_memory.embedding.settings import EmbeddingSettings


async def test_the_model_load_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Two INFO lines: 'loading the bundled embedding model', then 'loaded in N s'."""
    with caplog.at_level(logging.INFO, logger="npc_memory.embedding.factory"):
        embedder = await create_embedder(EmbeddingSettings())
    await embedder.aclose()
    messages = [r.getMessage() for r in caplog.records if r.name == "npc_memory.embedding.factory"]
    assert messages[0].startswith("loading the bundled embedding model")
    assert messages[1].startswith("embedding model multilingual-e5-small loaded in ")
