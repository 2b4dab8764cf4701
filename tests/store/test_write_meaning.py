"""Facts that differ only in grammar (tense, auxiliaries, adverbs, negation, particles) are never merged.

The pairs here are written by hand (the measurement that set the rule used pairs generated from templates:
docs/decisions/duplicate-rule.md).
"""

from __future__ import annotations

import uuid

import pytest
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, StoreOutcome, Subject
from npc_memory.domain.write_rules import FactText, is_duplicate
from npc_memory.engine import MemoryEngine
from npc_memory.text import Tokenizer
from npc_memory.text.roles import is_role

# (a, b): two different facts whose BM25 terms are equal, embedded at cosine ~0.95-0.99.
DIFFERENT = [
    ("대구에 산다", "대구에 살고 싶어한다"),  # lives / wants to live
    ("김치를 자주 먹는다", "김치를 가끔 먹는다"),  # often / sometimes
    ("커피를 항상 마신다", "커피를 가끔 마신다"),
    ("펭귄을 매우 좋아함", "펭귄을 조금 좋아함"),  # degree
    ("부산에 살았다", "부산에 산다"),  # past / present
    ("서울로 이사할 것이다", "서울로 이사했다"),  # future / past
    ("수영을 배우고 싶다", "수영을 배운다"),  # wants to / does
    ("운동을 해야 한다", "운동을 한다"),  # must / does
    ("그림을 그리려고 한다", "그림을 그린다"),  # intends to / does
    ("매운 음식을 안 먹는다", "매운 음식을 먹는다"),  # negation
    ("술을 못 마신다", "술을 마신다"),
    ("밤에 자주 깨지 않는다", "밤에 자주 깬다"),
    ("학생이 아니다", "학생이다"),
    ("동생만 좋아함", "동생을 좋아함"),  # only
    ("레티아와 산책했다", "레티아가 산책했다"),  # with Letia / Letia walked
    ("토끼 두 마리를 키움", "토끼 세 마리를 키움"),  # counts
    ("비가 오면 우울해진다", "비가 오고 우울해진다"),  # if
    ("엄마가 나를 혼냈다", "내가 엄마를 혼냈다"),  # who did what to whom (tests/unit/test_role_reversal.py)
    ("레티아에게 고백했다", "레티아가 나에게 고백했다"),
    ("레티아를 좋아한다", "레티아가 나를 좋아한다"),
    ("펭귄을 좋아함", "펭귄이 좋아함"),  # likes penguins / the penguin likes (it)
]

# (a, b): the same fact re-told with other endings, particles, spacing or a synonym adverb.
REPEATS = [
    ("펭귄을 좋아함", "펭귄을 좋아한다"),
    ("펭귄을 좋아함", "펭귄을 좋아해"),
    ("펭귄을 좋아함", "펭귄 좋아함"),
    ("펭귄을 좋아함", "나는 펭귄을 좋아한다"),
    ("대구에 산다", "대구에서 산다"),
    ("대구에 산다", "대구에 살고 있다"),
    ("김치를 자주 먹는다", "김치를 자주 먹어"),
    ("부산에 살았다", "부산에 살았어"),
    ("수영을 배우고 싶다", "수영을 배우고 싶어 한다"),
    ("매운 음식을 안 먹는다", "매운 음식을 먹지 않는다"),
    ("펭귄을 정말 좋아함", "펭귄을 진짜 좋아해"),
    ("커피를 항상 마신다", "커피를 늘 마심"),
]


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    """One Kiwi for the module."""
    return Tokenizer()


def _text(tokenizer: Tokenizer, content: str) -> FactText:
    analysis = tokenizer.analyse(content)
    return FactText.of(content, analysis.terms, analysis.meaning)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("펭귄을 좋아함", (), id="plain"),
        pytest.param("펭귄을 안 좋아함", ("not",), id="an"),
        pytest.param("펭귄을 좋아하지 않음", ("not",), id="anh"),
        pytest.param("회를 못 먹음", ("cannot",), id="mot"),
        pytest.param("군인이 아님", ("not",), id="ani"),
        pytest.param("금붕어 두 마리를 키움", ("unit:마리", "두"), id="count"),
        pytest.param("세번째 데이트", ("unit:번", "세"), id="ordinal-attached"),
        pytest.param("대구에 살고 싶어한다", ("고+싶",), id="want"),
        pytest.param("대구에 살고 있다", (), id="progressive"),
        pytest.param("좋아했어요", ("past",), id="past"),
        pytest.param("서울로 이사할 거야", ("to", "will"), id="future"),
        pytest.param("운동을 해야 한다", ("어야+하",), id="must"),
        pytest.param("김치를 자주 먹는다", ("자주",), id="often"),
        pytest.param("커피를 늘 마신다", ("always",), id="always-synonym"),
        pytest.param("좋아하셨다", ("past",), id="honorific-dropped"),
    ],
)
def test_signature_holds_the_morphemes_the_terms_drop(
    tokenizer: Tokenizer, text: str, expected: tuple[str, ...]
) -> None:
    """Negation, counts, auxiliaries, tense and adverbs are in the signature; honorifics and -고 있다 are not."""
    meaning = tokenizer.analyse(text).meaning
    assert tuple(m for m in meaning if not is_role(m)) == expected  # roles: test_role_reversal.py


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_different_facts_with_equal_terms_are_not_duplicates_at_any_cosine(
    tokenizer: Tokenizer, a: str, b: str
) -> None:
    """The terms are equal and the cosine is 1.0, yet the meaning signatures differ: not a duplicate."""
    assert tokenizer.terms(a) == tokenizer.terms(b)  # the pair tests the signature, not the terms
    assert not is_duplicate(_text(tokenizer, a), _text(tokenizer, b), 1.0, 0.93)
    assert not is_duplicate(_text(tokenizer, b), _text(tokenizer, a), 1.0, 0.93)


@pytest.mark.parametrize(("a", "b"), REPEATS)
def test_re_told_facts_are_duplicates_above_the_threshold(tokenizer: Tokenizer, a: str, b: str) -> None:
    """Other endings, particles or a synonym adverb keep terms and signature: a duplicate at cosine 0.95."""
    assert is_duplicate(_text(tokenizer, a), _text(tokenizer, b), 0.95, 0.93)


def test_row_written_before_the_signature_existed_is_only_a_duplicate_of_the_same_text(tokenizer: Tokenizer) -> None:
    """A stored row without a signature (NULL meaning) merges only an identical text, never a near one."""
    legacy = FactText.of("대구에 산다", tokenizer.terms("대구에 산다"), None)
    assert is_duplicate(_text(tokenizer, "대구에 산다."), legacy, 0.5, 0.93)
    assert not is_duplicate(_text(tokenizer, "대구에서 산다"), legacy, 0.99, 0.93)


def _fact(content: str) -> NewMemory:
    return NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, content)


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
async def test_storing_a_different_fact_after_another_creates_it(engine: MemoryEngine, a: str, b: str) -> None:
    """Through the real write path (bundled embedder, PostgreSQL), the second fact is CREATED, not dropped."""
    scope = Scope(f"player-{uuid.uuid4().hex[:10]}", "letia")
    (first,) = await engine.store(scope, [_fact(a)])
    (second,) = await engine.store(scope, [_fact(b)])
    assert first.outcome is second.outcome is StoreOutcome.CREATED
    (in_batch_a, in_batch_b) = await engine.store(Scope(scope.user_id, "roco"), [_fact(a), _fact(b)])
    assert in_batch_b.outcome is StoreOutcome.CREATED
    assert in_batch_b.memory_id != in_batch_a.memory_id


@pytest.mark.parametrize(("a", "b"), REPEATS)
async def test_storing_a_re_told_fact_returns_the_first(engine: MemoryEngine, a: str, b: str) -> None:
    """Through the real write path, a re-told fact is DUPLICATE of the stored one."""
    scope = Scope(f"player-{uuid.uuid4().hex[:10]}", "letia")
    (first,) = await engine.store(scope, [_fact(a)])
    (second,) = await engine.store(scope, [_fact(b)])
    assert second.outcome is StoreOutcome.DUPLICATE
    assert second.memory_id == first.memory_id
