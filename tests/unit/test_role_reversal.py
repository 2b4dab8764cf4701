"""Who did what to whom is part of a fact: a swap of roles around 나/내가 is never a duplicate, a re-telling is.

The pairs are generated over people and verbs (the bundled model puts each swap at cosine ~0.99, so the duplicate
rule is checked here at cosine 1.0: only the terms and the meaning signature can tell the two facts apart).
"""

from __future__ import annotations

import itertools

import pytest
from npc_memory.domain.write_rules import FactText, is_duplicate
from npc_memory.text import Tokenizer
from npc_memory.text.roles import is_role

from loadtest.korean import obj, subj, topic

PEOPLE = ("엄마", "아빠", "레티아", "선생님", "친구", "동생")
VERBS = ("혼냈다", "좋아한다", "칭찬했다", "불렀다", "속였다", "믿는다", "기다렸다", "때렸다")
GIFTS = ("고백했다", "편지를 보냈다", "선물을 줬다", "거짓말을 했다")


def _swaps() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for x, v in itertools.product(PEOPLE, VERBS):
        out += [
            (f"{subj(x)} 나를 {v}", f"내가 {obj(x)} {v}"),  # x did it to me / I did it to x
            (f"{obj(x)} {v}", f"{subj(x)} 나를 {v}"),  # (I) did it to x / x did it to me
            (f"나는 {obj(x)} {v}", f"{topic(x)} 나를 {v}"),
            (f"{obj(x)} {v}", f"{subj(x)} {v}"),  # (I) did it to x / x did it
        ]
    for x, g in itertools.product(PEOPLE, GIFTS):
        out += [
            (f"{x}에게 {g}", f"{subj(x)} 나에게 {g}"),  # to x / x to me
            (f"{x}한테 {g}", f"{subj(x)} 나한테 {g}"),
            (f"{subj(x)} 나에게 {g}", f"내가 {x}에게 {g}"),
        ]
    return out


def _retellings() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for x, v in itertools.product(PEOPLE, VERBS):
        out += [
            (f"{obj(x)} {v}", f"내가 {obj(x)} {v}"),  # the speaker as subject, said or left out
            (f"{obj(x)} {v}", f"나는 {obj(x)} {v}"),
            (f"{obj(x)} {v}", f"제가 {obj(x)} {v}"),
            (f"{subj(x)} 나를 {v}", f"{topic(x)} 나를 {v}"),  # a topic is the subject when none is marked
            (f"{subj(x)} 나를 {v}", f"{subj(x)} 날 {v}"),
        ]
    for x, g in itertools.product(PEOPLE, GIFTS):
        out += [(f"{x}에게 {g}", f"{x}한테 {g}"), (f"{x}에게 {g}", f"내가 {x}에게 {g}")]
    return out


SWAPS = _swaps()
RETELLINGS = _retellings()


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    """One Kiwi for the module."""
    return Tokenizer()


def _text(tokenizer: Tokenizer, content: str) -> FactText:
    analysis = tokenizer.analyse(content)
    return FactText.of(content, analysis.terms, analysis.meaning)


def test_the_pair_sets_are_large() -> None:
    """Hundreds of generated pairs, not a handful of examples the rule was tuned on."""
    assert len(SWAPS) >= 200
    assert len(RETELLINGS) >= 200


def test_a_swap_of_roles_is_never_a_duplicate(tokenizer: Tokenizer) -> None:
    """엄마가 나를 혼냈다 / 내가 엄마를 혼냈다 and every pair like it: different facts at cosine 1.0."""
    merged = [(a, b) for a, b in SWAPS
              if is_duplicate(_text(tokenizer, a), _text(tokenizer, b), 1.0, 0.93)
              or is_duplicate(_text(tokenizer, b), _text(tokenizer, a), 1.0, 0.93)]
    assert merged == []


def test_a_re_telling_with_the_same_roles_is_a_duplicate(tokenizer: Tokenizer) -> None:
    """The speaker said or left out, 에게/한테, 가/는, 나를/날: the same fact, still merged."""
    kept_apart = [(a, b) for a, b in RETELLINGS
                  if not is_duplicate(_text(tokenizer, a), _text(tokenizer, b), 0.95, 0.93)]
    assert kept_apart == []


@pytest.mark.parametrize(("text", "roles"), [
    ("엄마가 나를 혼냈다", ("obj:나", "subj:엄마")),
    ("내가 엄마를 혼냈다", ("obj:엄마",)),
    ("레티아가 나에게 고백했다", ("subj:레티아", "to:나")),
    ("레티아한테서 선물을 받았다", ("from:레티아", "obj:선물")),
    ("고양이 좋아함", ("obj:고양이",)),
    ("동생 있음", ("subj:동생",)),
])
def test_the_signature_names_each_role(tokenizer: Tokenizer, text: str, roles: tuple[str, ...]) -> None:
    """A noun's role comes from its case particle, or from its verb when the particle is left out."""
    meaning = tokenizer.analyse(text).meaning
    assert tuple(m for m in meaning if is_role(m)) == roles
