"""The Python client takes what a caller means: one text is one fact, a misspelt option is refused."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mypy import api as mypy_api
from npc_memory.domain.model import Scope
from npc_memory_client import AsyncClient, Client, Fact, InvalidArgumentError, MemoryFilter, Turn
from npc_memory_client._requests import memory_filter
from npc_memory_client._requests import store as store_request
from npc_memory_client.extraction import extract_request

ROOT = Path(__file__).resolve().parents[2]


def test_one_text_is_one_fact_on_the_wire() -> None:
    """A bare str (or one Fact) is a batch of one, never one fact per character."""
    one = store_request("p", "letia", "고양이좋아함", None)
    assert [m.content for m in one.memories] == ["고양이좋아함"]
    fact = store_request("p", "letia", Fact("비를 좋아함", importance=7), None)
    assert [(m.content, m.importance) for m in fact.memories] == [("비를 좋아함", 7)]
    many = store_request("p", "letia", ("a", Fact("b")), None)
    assert [m.content for m in many.memories] == ["a", "b"]


def test_one_id_is_one_supersedes_entry() -> None:
    """Fact.supersedes/related/parents take one id as well as a list; a str id is not split into characters."""
    target = "0f8fad5b-d9cb-469f-a165-70867728950e"
    request = store_request("p", "letia", Fact("x", supersedes=target, related=0, parents=[target]), None)
    memory = request.memories[0]
    assert list(memory.supersedes) == [target]
    assert [r.batch_index for r in memory.related] == [0]
    assert [r.memory_id for r in memory.parents] == [target]


def test_one_line_is_one_turn() -> None:
    """extract() takes one line as a dialogue of one turn."""
    request = extract_request("p", "letia", "d-1", "나 고양이 좋아해", wait=False)
    assert [t.text for t in request.dialogue.turns] == ["나 고양이 좋아해"]
    request = extract_request("p", "letia", "d-1", Turn("안녕"), wait=False)
    assert [t.text for t in request.dialogue.turns] == ["안녕"]


@pytest.mark.parametrize(("facts", "said"), [
    ([1, 2], r"facts\[0\]: expected a Fact"),
    (b"bytes", "facts: expected a Fact"),
    ({"content": "x"}, "facts: expected a Fact"),
])
def test_other_shapes_are_refused_with_what_to_pass(facts: Any, said: str) -> None:
    """Anything but a Fact, a str or a list of them is a TypeError saying what to pass."""
    with pytest.raises(TypeError, match=said):
        store_request("p", "letia", facts, None)


def test_a_bare_str_where_a_tuple_is_meant_is_refused() -> None:
    """A MemoryFilter field given one str is refused instead of becoming one filter value per character."""
    with pytest.raises(TypeError, match=r"MemoryFilter\.subject_ids: expected a tuple of str"):
        memory_filter(MemoryFilter(subject_ids="letia"))  # type: ignore[arg-type]


def test_sync_client_refuses_an_unknown_keyword_before_sending() -> None:
    """search(..., limt=3) is a TypeError naming the keyword and the likely one (no server needed: nothing is sent)."""
    with Client("127.0.0.1:1", timeout=1) as client:
        calls: list[Callable[[], object]] = [
            lambda: client.search("p", "letia", "q", limt=3),  # type: ignore[call-arg]
            lambda: client.list_memories("p", "letia", page_sise=3),  # type: ignore[call-arg]
            lambda: client.get("p", "letia", "x", timeline=1),  # type: ignore[call-arg]
            lambda: client.update("p", "letia", "x", importanse=3),  # type: ignore[call-arg]
            lambda: client.history("p", "letia", subject="x"),  # type: ignore[call-arg]
            lambda: client.build_context("p", "letia", "q", budget=3),  # type: ignore[call-arg]
        ]
        for call in calls:
            with pytest.raises(TypeError, match="unexpected keyword argument"):
                call()
        with pytest.raises(TypeError, match=r"'limt' \(did you mean 'limit'\?\)"):
            client.search("p", "letia", "q", limt=3)  # type: ignore[call-arg]


async def test_async_client_refuses_an_unknown_keyword_before_sending() -> None:
    """The asyncio client refuses the same misspelt keyword the same way."""
    async with AsyncClient("127.0.0.1:1", timeout=1) as client:
        with pytest.raises(TypeError, match=r"'limt' \(did you mean 'limit'\?\)"):
            await client.search("p", "letia", "q", limt=3)  # type: ignore[call-arg]


async def test_a_text_stores_one_memory_through_both_clients(server_port: int, scope: Scope) -> None:
    """store(u, h, "고양이좋아함") stores that one text, with the blocking and the asyncio client alike."""
    u = scope.user_id
    async with AsyncClient(f"127.0.0.1:{server_port}", timeout=60) as client:
        results = await client.store(u, "letia", "고양이좋아함")
        page = await client.list_memories(u, "letia")
    assert len(results) == 1
    assert [m.content for m in page.memories] == ["고양이좋아함"]

    def blocking() -> list[str]:
        with Client(f"127.0.0.1:{server_port}", timeout=60) as client:
            client.store(u, "mina", "매운 음식을 못 먹음")
            return [m.content for m in client.list_memories(u, "mina").memories]

    assert await asyncio.to_thread(blocking) == ["매운 음식을 못 먹음"]


async def test_a_validation_error_says_each_field_once(server_port: int, scope: Scope) -> None:
    """The server's message already names the field; the exception's text does not repeat it in brackets."""
    async with AsyncClient(f"127.0.0.1:{server_port}", timeout=60) as client:
        with pytest.raises(InvalidArgumentError) as err:
            await client.search(scope.user_id, "letia", "q", limit=100_000)
    text = str(err.value)
    assert text.startswith("limit: must be between 1 and")
    assert text.count("limit:") == 1
    assert err.value.fields["limit"].startswith("must be between 1 and")


def test_the_types_flag_what_the_client_refuses(tmp_path: Path) -> None:
    """Mypy strict accepts one text or Fact for store and flags a misspelt option and a list of non-facts."""
    good = tmp_path / "good.py"
    good.write_text(textwrap.dedent("""
        from npc_memory_client import Client, Fact
        def use(c: Client) -> None:
            c.store("p", "letia", "고양이좋아함")
            c.store("p", "letia", Fact("x", supersedes="0f8fad5b-d9cb-469f-a165-70867728950e"))
            c.store("p", "letia", ["a", Fact("b")])
            c.search("p", "letia", "q", limit=3)
    """))
    bad = tmp_path / "bad.py"
    bad.write_text(textwrap.dedent("""
        from npc_memory_client import Client
        def use(c: Client) -> None:
            c.store("p", "letia", [1, 2])
            c.search("p", "letia", "q", limt=3)
    """))
    flags = ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
             "--config-file", str(ROOT / "pyproject.toml")]
    out, _, status = mypy_api.run([*flags, str(good)])
    assert status == 0, out
    out, _, status = mypy_api.run([*flags, str(bad)])
    assert status == 1
    assert 'Unexpected keyword argument "limt"' in out
    assert "bad.py:4: error" in out
