"""The meaning signature: the grammatical morphemes that change what a Korean sentence states.

BM25 terms keep content words only, so "대구에 산다" and "대구에 살고 싶어한다" (lives in / wants to live in
Daegu), or "자주 먹는다" and "가끔 먹는다" (often / sometimes eats) have the same terms, and the bundled model puts
them at cosine 0.96-0.99: the duplicate rule needs these morphemes too. The signature holds, from Kiwi's
analysis: adverbs (frequency, degree, negation 안/못), determiners (counts), auxiliary verbs with the ending
that links them (-고 싶다, -어야 하다, -지 않다), tense (past 었, future 겠 and -ㄹ 것), the negative copula, and
the particles of "only", "than", "like", "with", "to", "from", "until" and "if"; and the role of each noun a case
particle marks (text/roles.py), so "엄마가 나를 혼냈다" and "내가 엄마를 혼냈다" differ. Endings of politeness or
mood are left out, so a fact re-told with other endings keeps its signature.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from npc_memory.text.roles import roles

# Words of one meaning spelled differently: a re-told fact may use either.
_ADVERBS = {
    "안": "not", "못": "cannot",
    **dict.fromkeys(("아주", "매우", "무척", "굉장히", "몹시", "엄청", "되게", "너무", "정말", "진짜", "참",
                     "정말로", "진짜로", "완전", "대단히"), "very"),
    **dict.fromkeys(("조금", "좀", "약간", "살짝", "다소"), "a-little"),
    **dict.fromkeys(("항상", "늘", "언제나", "맨날", "항시"), "always"),
    **dict.fromkeys(("가끔", "가끔씩", "때때로", "이따금", "간혹"), "sometimes"),
    **dict.fromkeys(("별로", "그다지"), "not-much"),
}
_NEGATING_AUXILIARIES = {"않": "not", "말": "not", "못하": "cannot"}
_PARTICLES = {
    "만": "only", "밖에": "only", "보다": "than", "처럼": "like", "같이": "like", "만큼": "like",
    "와": "with", "과": "with", "랑": "with", "이랑": "with", "하고": "with", "로": "to", "으로": "to",
    "부터": "from", "에서부터": "from", "까지": "until", "조차": "even", "마저": "even",
}
_CONDITIONS = {"면": "if", "으면": "if", "어도": "even-if", "아도": "even-if", "더라도": "even-if"}
_LINKS = {"아": "어", "여": "어", "아야": "어야", "여야": "어야", "으려고": "려고"}
_PAST = ("었", "았", "였")


def _tag(token: Any) -> str:
    return str(token.tag).split("-")[0]  # irregular conjugations come tagged "VV-I"


def _form(tokens: Sequence[Any], i: int) -> str:
    return str(tokens[i].form)


def _auxiliary(tokens: Sequence[Any], i: int) -> str | None:
    """An auxiliary verb with the ending before it: 고+싶 (want), 어야+하 (must), 려고+하 (intend), 어+보 (try)."""
    form = _form(tokens, i)
    if form in _NEGATING_AUXILIARIES:
        return _NEGATING_AUXILIARIES[form]
    before = tokens[i - 1] if i > 0 and _tag(tokens[i - 1]) == "EC" else None
    link = _LINKS.get(before.form, before.form) if before is not None else ""
    if (link, form) == ("어", "하"):
        return None  # 좋아하다, 싶어하다: -어하다 makes a verb of what precedes it, it adds no meaning
    if (link, form) == ("고", "있"):
        return None  # 살고 있다 says what 산다 says
    return f"{link}+{form}"


def _unit(tokens: Sequence[Any], i: int) -> str | None:
    """A counter after a number: 두 마리 / 두 번, 3월 / 3일."""
    return "unit:" + _form(tokens, i) if i > 0 and _tag(tokens[i - 1]) in ("SN", "NR", "MM") else None


def _tense(tokens: Sequence[Any], i: int) -> str | None:
    form = _form(tokens, i)
    return "past" if any(p in form for p in _PAST) else "will" if form == "겠" else None  # 시 is honorific


def _future(tokens: Sequence[Any], i: int) -> str | None:
    """-ㄹ 것 / -ㄹ 거: 살 것이다, 먹을게."""
    after = _form(tokens, i + 1) if i + 1 < len(tokens) else ""
    return "will" if _form(tokens, i) in ("ᆯ", "을") and after in ("것", "거") else None


_BY_TAG: dict[str, Callable[[Sequence[Any], int], str | None]] = {
    "MAG": lambda tokens, i: _ADVERBS.get(_form(tokens, i), _form(tokens, i)),
    "MM": _form,
    "NNB": _unit,
    "VX": _auxiliary,
    "EP": _tense,
    "ETM": _future,
    "VCN": lambda tokens, i: "not",
    "JX": lambda tokens, i: _PARTICLES.get(_form(tokens, i)),
    "JKB": lambda tokens, i: _PARTICLES.get(_form(tokens, i)),
    "JC": lambda tokens, i: _PARTICLES.get(_form(tokens, i)),
    "EC": lambda tokens, i: _CONDITIONS.get(_form(tokens, i)),
}


def signature(tokens: Sequence[Any]) -> tuple[str, ...]:
    """The meaning markers of a Kiwi token sequence, sorted (word order does not change them)."""
    found = (_BY_TAG[tag](tokens, i) for i, tag in enumerate(map(_tag, tokens)) if tag in _BY_TAG)
    return tuple(sorted([*(m for m in found if m is not None), *roles(tokens)]))
