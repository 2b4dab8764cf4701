"""The text options behind stored terms are recorded; start-up refuses others; `npc-memory retokenize` re-makes them.

Each test runs on a database of its own: re-tokenising rewrites every row of a database and its record.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime

import psycopg
import pytest
from npc_memory.cli import main
from npc_memory.config import Config
from npc_memory.domain.model import ContentType, NewMemory, Scope, SearchQuery, Speaker, Subject, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.errors import ConfigError
from npc_memory.server.runtime import build_engine, open_database
from npc_memory.store.migrate import migrate
from npc_memory.store.settings import TERMS_KEY
from npc_memory.text import PLAIN, TextOptions, Tokenizer
from own_database import separate_database

STEMS = TextOptions(stem_latin=True, honorifics=False)
TRIP = "We traveled to Busan last spring, and the cats there followed us."
SCOPE = Scope("retokenize-player", "letia")


@asynccontextmanager
async def _engine(config: Config, shared: MemoryEngine, url: str, options: TextOptions | None
                  ) -> AsyncIterator[MemoryEngine]:
    """An engine on ``url`` built as ``serve`` builds it (the shared model): ``options`` set, or None for unset."""
    configured = replace(config, text=options or TextOptions(), text_set=options is not None)
    async with open_database(replace(config.database, url=url)) as db:
        yield await build_engine(configured, db, shared.embedder)


async def _recorded(url: str) -> str | None:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute("SELECT value FROM service_settings WHERE key = %(k)s", {"k": TERMS_KEY})
        row = await cur.fetchone()
    return None if row is None else str(row[0])


async def _terms(url: str) -> list[str]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute("SELECT terms FROM user_memories WHERE content = %(c)s", {"c": TRIP})
        row = await cur.fetchone()
    assert row is not None
    return list(row[0])


async def _keyword_hits(engine: MemoryEngine, text: str) -> list[str]:
    """The hits the query's terms met (keyword score above 0)."""
    query = SearchQuery(scope=SCOPE, text=text, limit=5, weights=Weights(0, 0, 0, 1), now=datetime.now(UTC))
    return [h.memory.content for h in await engine.search(query) if h.scores.keyword > 0]


def test_the_label_names_what_shapes_stored_terms() -> None:
    """Stems imply whole Latin words; question words are query-side; no stored-side option reads as plain."""
    assert PLAIN.terms_label() == "plain"
    assert replace(PLAIN, question_words=False).terms_label() == "plain"
    assert STEMS.terms_label() == replace(STEMS, latin_words=True).terms_label() == "latin_words+stem_latin"
    assert TextOptions().terms_label() == "latin_words+stem_latin+honorifics"
    for options in (PLAIN, STEMS, TextOptions(), replace(PLAIN, function_words=True, honorifics=True)):
        assert TextOptions.from_label(options.terms_label()).terms_label() == options.terms_label()
    with pytest.raises(ValueError, match="stemming"):
        TextOptions.from_label("latin_words+stemming")


async def test_retokenize_remakes_every_row_and_start_up_follows_the_record(
    config: Config, engine: MemoryEngine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows stored plain refuse a stemming start; the command re-makes their terms; then the other way round."""
    with separate_database(database_url, "npc_retokenize") as url:
        async with _engine(config, engine, url, PLAIN) as plain:
            await plain.store(SCOPE, [NewMemory(speaker=Speaker.USER, subject=Subject.USER, subject_id="user",
                                                content_type=ContentType.EVENT, content=TRIP)])
            assert await _keyword_hits(plain, "travelling") == []  # "traveled" was stored as it is written
        assert await _recorded(url) == "plain"
        with pytest.raises(ConfigError, match="npc-memory retokenize"):
            async with _engine(config, engine, url, STEMS):
                pass

        monkeypatch.setenv("NPC_MEMORY_TEXT_STEM_LATIN", "true")
        monkeypatch.setenv("NPC_MEMORY_TEXT_HONORIFICS", "false")
        assert await asyncio.to_thread(main, ["retokenize", "--database-url", url, "--batch-size", "1"]) == 0
        assert await _recorded(url) == STEMS.terms_label()
        expected = Tokenizer(options=STEMS).analyse(TRIP)
        assert await _terms(url) == list(expected.terms)
        assert {"travel", "cat"} <= set(expected.terms)
        async with _engine(config, engine, url, STEMS) as stemmed:
            assert await _keyword_hits(stemmed, "travelling") == [TRIP]
        with pytest.raises(ConfigError, match="latin_words\\+stem_latin"):
            async with _engine(config, engine, url, PLAIN):
                pass

        monkeypatch.setenv("NPC_MEMORY_TEXT_STEM_LATIN", "false")
        assert await asyncio.to_thread(main, ["retokenize", "--database-url", url]) == 0
        assert await _recorded(url) == "plain"
        assert await _terms(url) == list(Tokenizer(options=PLAIN).analyse(TRIP).terms)


async def test_unset_options_follow_the_database_and_a_new_one_records_the_defaults(
    config: Config, engine: MemoryEngine, database_url: str
) -> None:
    """An upgraded database keeps the options its terms were made with until retokenized; a new one takes today's."""
    with separate_database(database_url, "npc_terms_follow") as url:
        async with _engine(config, engine, url, PLAIN):
            pass
        async with _engine(config, engine, url, None) as upgraded:
            assert upgraded.tokenizer.options == PLAIN
        assert await _recorded(url) == "plain"
    with separate_database(database_url, "npc_terms_fresh") as url:
        async with _engine(config, engine, url, None) as fresh:
            assert fresh.tokenizer.options == TextOptions()
        assert await _recorded(url) == TextOptions().terms_label()


def test_a_database_with_rows_from_before_the_record_reads_as_plain(database_url: str) -> None:
    """Migration 0011 records 'plain' where rows exist (they were made with no option); an empty one waits."""
    with (separate_database(database_url, "npc_terms_old") as old,
          separate_database(database_url, "npc_terms_new") as new):
        migrate(old, target=10)
        with psycopg.connect(old, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO user_memories (id, user_id, heroine_id, speaker, subject, subject_id, content_type,"
                " content, content_key, importance, tier, embedding, embedding_model, valid_at)"
                " VALUES (gen_random_uuid(), 'p', 'letia', 'user', 'user', 'user', 'fact', 'cats', 'cats', 5,"
                " 'knowledge', '[1,0]', 'm', now())"
            )
        migrate(old)
        migrate(new)
        assert asyncio.run(_recorded(old)) == "plain"
        assert asyncio.run(_recorded(new)) is None
