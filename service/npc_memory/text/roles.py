"""Who did what to whom: the role of each noun in a Korean sentence, from the case particle that marks it.

BM25 terms drop pronouns and particles, and the bundled model puts a swap of roles at cosine 0.99, so without
this "엄마가 나를 혼냈다" (mum scolded me) and "내가 엄마를 혼냈다" (I scolded mum) were one fact to the duplicate
rule, and the second was dropped. Each noun a particle marks gives a marker such as ``subj:엄마`` / ``obj:나``.

Two readings keep a re-told fact equal to itself: a noun with no particle right before its verb has the role the
particle would have given it (``고양이 좋아함`` is ``고양이를 좋아함``; ``동생 있음`` is ``동생이 있음``), and the
speaker as subject is left out, as Korean leaves it out (``나는 고양이를 좋아한다`` is ``고양이를 좋아한다``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

ROLES = ("subj", "obj", "to", "from", "topic")
"""The roles a marker names, as ``role:noun``."""


def is_role(marker: str) -> bool:
    """Whether a signature marker is a role (``subj:엄마``), not a grammatical one (``past``, ``to``)."""
    role, sep, _ = marker.partition(":")
    return bool(sep) and role in ROLES


_NOUNS = frozenset({"NNG", "NNP", "NP", "NR", "SL", "SH"})
_TO = frozenset({"에게", "한테", "께", "더러", "보고"})
_FROM = frozenset({"에게서", "한테서", "께로부터", "에게로부터", "로부터", "으로부터"})
_TOPIC = frozenset({"은", "는", "ᆫ"})
_SPEAKER = {"저": "나", "제": "나", "내": "나"}
"""First-person forms as one word: 저/제 (polite), 내 (before 가)."""


def _tag(token: Any) -> str:
    return str(token.tag).split("-")[0]  # irregular conjugations come tagged "VV-I"


def _predicate(tokens: Sequence[Any], i: int) -> str | None:
    """``obj`` before a verb, ``subj`` before an adjective; an adjective + 어 + 하 (좋아하다) is a verb."""
    if i >= len(tokens):
        return None
    tag = _tag(tokens[i])
    if tag == "VA" and i + 2 < len(tokens) and _tag(tokens[i + 2]) == "VX" and tokens[i + 2].form == "하":
        return "obj"
    return {"VV": "obj", "VA": "subj"}.get(tag)


def _role(tokens: Sequence[Any], i: int, topic_is_subject: bool) -> str | None:
    """The role the token after the noun at ``i`` gives it, if that token is a case particle (or a verb)."""
    if i + 1 >= len(tokens):
        return None
    after, tag = tokens[i + 1], _tag(tokens[i + 1])
    if tag == "JKS":
        return "subj"
    if tag == "JKO":
        return "obj"
    if tag == "JKB":
        return "to" if after.form in _TO else "from" if after.form in _FROM else None
    if tag == "JX" and after.form in _TOPIC:
        return "subj" if topic_is_subject else "topic"
    return _predicate(tokens, i + 1)


def roles(tokens: Sequence[Any]) -> Iterator[str]:
    """``role:noun`` for each noun a case particle (or its verb) marks, the speaker as subject left out."""
    # A topic (는) is the subject unless another noun is marked as one: "나는 레티아가 좋다".
    topic_is_subject = not any(_tag(t) == "JKS" for t in tokens)
    for i, token in enumerate(tokens):
        if _tag(token) not in _NOUNS:
            continue
        noun = _SPEAKER.get(token.form, token.form) if _tag(token) == "NP" else token.form
        if i + 1 < len(tokens) and _tag(tokens[i + 1]) == "XSN":  # 선생+님, 친구+들: the particle follows
            noun += tokens[i + 1].form
            i += 1  # noqa: PLW2901
        role = _role(tokens, i, topic_is_subject)
        if role is None:
            continue
        if noun == "나" and role == "subj":
            continue
        yield f"{role}:{noun}"
