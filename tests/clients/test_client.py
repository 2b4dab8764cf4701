"""The Python client (npc_memory_client) against the live server: typed values, errors, deadlines, retries."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio
from npc_memory.domain.model import Scope
from npc_memory.engine import MemoryEngine
from npc_memory.server import create_server
from npc_memory_client import (
    AsyncClient,
    Client,
    CloseReason,
    ContentType,
    DeadlineExceededError,
    Fact,
    FailedPreconditionError,
    InvalidArgumentError,
    MemoryFilter,
    NotFoundError,
    RetryPolicy,
    ScoredMemory,
    Speaker,
    StoreOutcome,
    Subject,
    Tier,
    UnavailableError,
)
from ports import free_port

# Reconnect fast after a refused connection, so retry tests do not wait on gRPC's default 1 s backoff.
FAST_RECONNECT = (
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 100),
)


@pytest_asyncio.fixture(loop_scope="session")
async def client(server_port: int) -> AsyncIterator[AsyncClient]:
    """An async client connected to the live server (generous deadline: the first store loads the embedding model)."""
    async with AsyncClient(f"127.0.0.1:{server_port}", timeout=60) as c:
        yield c


async def test_korean_store_and_search_return_typed_values(client: AsyncClient, scope: Scope) -> None:
    """Plain strings and Facts go in; domain dataclasses with enums, UUIDs and scores come out, best first."""
    u, h = scope.user_id, scope.heroine_id
    stored = await client.store(u, h, [
        Fact("고양이를 좋아함", importance=7, content_type=ContentType.PREFERENCE, metadata={"scene": "카페"}),
        "매운 음식을 못 먹음",
        Fact("마을이 평화로움", subject=Subject.WORLD),
    ])
    assert [r.outcome for r in stored] == [StoreOutcome.CREATED] * 3
    assert all(isinstance(r.memory_id, uuid.UUID) for r in stored)
    hits = await client.search(u, h, "고양이 좋아해?", limit=2)
    assert len(hits) == 2
    top = hits[0]
    assert isinstance(top, ScoredMemory)
    assert top.memory.id == stored[0].memory_id
    assert (top.memory.content, top.memory.speaker, top.memory.content_type) == (
        "고양이를 좋아함", Speaker.USER, ContentType.PREFERENCE
    )
    assert top.memory.metadata == {"scene": "카페"}
    assert top.memory.valid_at.tzinfo is not None
    assert top.scores.importance == pytest.approx(0.7)
    assert top.scores.final >= hits[1].scores.final


async def test_filters_and_paging_reach_the_server(client: AsyncClient, scope: Scope) -> None:
    """A subject filter and a page size given as plain values restrict what comes back."""
    u, h = scope.user_id, scope.heroine_id
    await client.store(u, h, ["산책을 좋아함", "비 오는 날을 좋아함", Fact("축제가 열림", subject=Subject.WORLD)])
    world = await client.search(u, h, "축제", filter=MemoryFilter(subjects=(Subject.WORLD,)))
    assert [m.memory.content for m in world] == ["축제가 열림"]
    first = await client.list_memories(u, h, page_size=2)
    assert len(first.memories) == 2
    assert first.next_page_token
    rest = await client.list_memories(u, h, page_size=2, page_token=first.next_page_token)
    assert len(rest.memories) == 1
    assert rest.next_page_token == ""


async def test_slot_history_update_and_invalidate(client: AsyncClient, scope: Scope) -> None:
    """A newer fact in a slot supersedes the old one; history, update and invalidate return typed rows."""
    u, h = scope.user_id, scope.heroine_id
    day1 = datetime(2025, 5, 1, tzinfo=UTC)
    (old,) = await client.store(u, h, [Fact("좋아하는 동물은 고양이", slot="favorite_animal", valid_at=day1)])
    (new,) = await client.store(
        u, h, [Fact("좋아하는 동물은 강아지", slot="favorite_animal", valid_at=day1 + timedelta(days=3))]
    )
    assert new.outcome == StoreOutcome.SUPERSEDED
    assert new.superseded_ids == (old.memory_id,)
    page = await client.history(u, h, subject_id="user", slot="favorite_animal")
    rows = page.memories
    assert not page.next_page_token
    first = await client.history(u, h, subject_id="user", slot="favorite_animal", page_size=1)
    rest = await client.history(u, h, subject_id="user", slot="favorite_animal", page_token=first.next_page_token)
    assert [r.id for r in first.memories + rest.memories] == [r.id for r in rows]
    assert [r.content for r in rows] == ["좋아하는 동물은 고양이", "좋아하는 동물은 강아지"]
    assert rows[0].close_reason == CloseReason.SUPERSEDED
    assert rows[0].invalid_at == day1 + timedelta(days=3)
    assert rows[0].superseded_by == new.memory_id
    updated = await client.update(u, h, new.memory_id, importance=9, tier=Tier.GIST)
    assert (updated.importance, updated.tier) == (9, Tier.GIST)
    closed = await client.invalidate(u, h, str(new.memory_id))
    assert closed.close_reason == CloseReason.INVALIDATED
    assert (await client.get(u, h, new.memory_id)).invalid_at is not None


async def test_bad_fields_are_named_in_the_exception(client: AsyncClient, scope: Scope) -> None:
    """INVALID_ARGUMENT becomes InvalidArgumentError carrying each bad field's proto path and reason."""
    with pytest.raises(InvalidArgumentError) as err:
        await client.store(scope.user_id, "Bad Heroine", ["", Fact("ok", importance=11)])
    fields = err.value.fields
    assert {"scope.heroine_id", "memories[0].content", "memories[1].importance"} <= set(fields)
    assert "between 1 and 10" in fields["memories[1].importance"]
    assert "memories[0].content" in str(err.value)
    assert re.fullmatch(r"[0-9a-f]{32}", err.value.request_id)  # the id the server made: its log lines carry it


async def test_a_failure_names_the_callers_request_id(server_port: int, scope: Scope) -> None:
    """A client whose metadata carries an x-request-id gets it back on the error (the server's trailers)."""
    async with AsyncClient(f"127.0.0.1:{server_port}", metadata=(("x-request-id", "letia-turn-7"),)) as client:
        with pytest.raises(NotFoundError) as err:
            await client.get(scope.user_id, scope.heroine_id, uuid.uuid4())
    assert err.value.request_id == "letia-turn-7"


async def test_missing_memory_raises_not_found(client: AsyncClient, scope: Scope) -> None:
    """NOT_FOUND becomes NotFoundError."""
    with pytest.raises(NotFoundError):
        await client.get(scope.user_id, scope.heroine_id, uuid.uuid4())


async def test_deadline_is_enforced(client: AsyncClient, scope: Scope) -> None:
    """A call that cannot finish within its timeout raises DeadlineExceededError."""
    with pytest.raises(DeadlineExceededError):
        # A text never embedded before: the server cannot answer from its query cache within the deadline.
        await client.search(scope.user_id, scope.heroine_id, f"고양이 {uuid.uuid4()}", timeout=0.0005)


async def test_naive_datetimes_are_refused_before_sending(client: AsyncClient, scope: Scope) -> None:
    """A datetime without a time zone is a ValueError on the client, not a guess."""
    with pytest.raises(ValueError, match="time zone"):
        await client.store(scope.user_id, scope.heroine_id, [Fact("x", valid_at=datetime(2025, 1, 1))])


async def test_repeated_request_id_returns_the_first_answer(client: AsyncClient, scope: Scope) -> None:
    """Store with the same request_id twice writes once and answers with the same ids."""
    key = f"req-{uuid.uuid4().hex}"
    first = await client.store(scope.user_id, scope.heroine_id, ["첫 데이트는 바닷가"], request_id=key)
    again = await client.store(scope.user_id, scope.heroine_id, ["첫 데이트는 바닷가"], request_id=key)
    assert again == first
    assert len((await client.list_memories(scope.user_id, scope.heroine_id)).memories) == 1


async def test_unavailable_is_retried_only_when_idempotent(engine: MemoryEngine, scope: Scope) -> None:
    """While the server is down: search and keyed store retry until it is up; an unkeyed store fails at once."""
    port = free_port()
    policy = RetryPolicy(attempts=200, initial_backoff=0.02, max_backoff=0.1)
    async with AsyncClient(f"127.0.0.1:{port}", timeout=20, retry=policy, options=FAST_RECONNECT) as c:
        u, h = scope.user_id, scope.heroine_id
        search = asyncio.create_task(c.search(u, h, "아무거나"))
        keyed = asyncio.create_task(c.store(u, h, ["재시도된 기억"], request_id=f"k-{uuid.uuid4().hex}"))
        with pytest.raises(UnavailableError):
            await c.store(u, h, ["재시도되지 않는 기억"])
        await asyncio.sleep(0.5)
        assert not search.done()
        assert not keyed.done()
        server, bound, _ = await create_server(engine, f"127.0.0.1:{port}")
        assert bound == port
        await server.start()
        try:
            stored = await keyed
            await search
            listed = await c.list_memories(u, h)
        finally:
            await server.stop(0)
    assert stored[0].outcome == StoreOutcome.CREATED
    assert [m.content for m in listed.memories] == ["재시도된 기억"]


async def test_no_retry_policy_fails_fast(scope: Scope) -> None:
    """With retries disabled an idempotent call against a dead port raises UnavailableError on the first try."""
    async with AsyncClient(f"127.0.0.1:{free_port()}", retry=RetryPolicy(attempts=1)) as c:
        with pytest.raises(UnavailableError):
            await c.search(scope.user_id, scope.heroine_id, "q")


async def test_sync_client_round_trip(server_port: int, scope: Scope) -> None:
    """The blocking client stores, searches and names bad fields the same way (run in a thread)."""

    def scenario() -> tuple[list[ScoredMemory], dict[str, str]]:
        with Client(f"127.0.0.1:{server_port}", timeout=60) as c:
            facts: list[Fact | str] = ["바다를 무서워함", Fact("레티아는 노래를 잘함", subject=Subject.HEROINE)]
            c.store(scope.user_id, scope.heroine_id, facts)
            hits = c.search(scope.user_id, scope.heroine_id, "바다 무서워?", limit=1)
            try:
                c.store(scope.user_id, scope.heroine_id, [Fact("ok", importance=-1)])
            except InvalidArgumentError as exc:
                return hits, exc.fields
            raise AssertionError("the bad store was accepted")

    hits, fields = await asyncio.to_thread(scenario)
    assert [h.memory.content for h in hits] == ["바다를 무서워함"]
    assert list(fields) == ["memories[0].importance"]


async def test_save_points_through_both_clients(client: AsyncClient, server_port: int, scope: Scope) -> None:
    """Save, write, load and drop with the async client; the blocking client lists the same state."""
    u, h = scope.user_id, scope.heroine_id
    await client.store(u, h, ["첫 만남은 도서관에서였음"])
    saved = await client.create_save_point(u, "slot-1")
    await client.store(u, h, ["레티아의 비밀을 알게 됨"])
    timeline = await client.load_save_point(u, "slot-1")
    assert (saved.timeline_id, timeline.parent_id, timeline.live) == (1, 1, True)
    assert [m.content for m in (await client.list_memories(u, h)).memories] == ["첫 만남은 도서관에서였음"]

    def listed() -> tuple[list[str], list[int], int]:
        with Client(f"127.0.0.1:{server_port}", timeout=60) as c:
            state = c.list_save_points(u)
            return [s.save_id for s in state.save_points], [t.timeline_id for t in state.timelines], \
                state.live_timeline_id

    assert await asyncio.to_thread(listed) == (["slot-1"], [1, timeline.timeline_id], timeline.timeline_id)
    with pytest.raises(FailedPreconditionError):
        await client.drop_timeline(u, 1)


async def test_game_days_and_timelines_through_the_client(client: AsyncClient, scope: Scope) -> None:
    """Game days in and out, and reads of an older timeline or an earlier system time, with the async client."""
    u, h = scope.user_id, scope.heroine_id
    await client.store(u, h, [Fact("나는 고양이를 좋아해", slot="favorite_animal", valid_game_day=1)])
    saved = await client.create_save_point(u, "day-1")
    (dog,) = await client.store(u, h, [Fact("요즘은 강아지가 더 좋아", slot="favorite_animal", valid_game_day=15)])
    day10 = await client.search(u, h, "좋아하는 동물", as_of_game_day=10)
    day30 = await client.search(u, h, "좋아하는 동물", as_of_game_day=30, now_game_day=30)
    assert day10[0].memory.content == "나는 고양이를 좋아해"
    assert day10[0].memory.invalid_game_day == pytest.approx(15)
    assert day30[0].memory.content == "요즘은 강아지가 더 좋아"
    assert day30[0].memory.valid_game_day == pytest.approx(15)
    await client.load_save_point(u, "day-1")
    live = [m.content for m in (await client.list_memories(u, h)).memories]
    old = [m.content for m in (await client.list_memories(u, h, timeline_id=saved.timeline_id)).memories]
    assert (live, old) == (["나는 고양이를 좋아해"], ["요즘은 강아지가 더 좋아"])
    before = datetime.now(UTC) - timedelta(hours=1)
    with pytest.raises(NotFoundError):
        await client.get(u, h, dog.memory_id, timeline_id=saved.timeline_id, known_at=before)
    got = await client.get(u, h, dog.memory_id, timeline_id=saved.timeline_id)
    assert got.valid_game_day == pytest.approx(15)
    chain = await client.history(u, h, subject_id="user", slot="favorite_animal", timeline_id=saved.timeline_id)
    assert [m.content for m in chain.memories] == ["나는 고양이를 좋아해", "요즘은 강아지가 더 좋아"]
    closed = await client.invalidate(u, h, (await client.list_memories(u, h)).memories[0].id, invalid_game_day=20)
    assert closed.invalid_game_day == pytest.approx(20)
