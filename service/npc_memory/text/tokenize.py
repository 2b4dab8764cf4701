"""Turns text into BM25 terms (Korean content morphemes, other words lower-cased) and a meaning signature."""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kiwipiepy import Kiwi

from npc_memory.text.meaning import signature

# Content-bearing morpheme tags. Particles (J*), endings (E*), suffixes (XS*), pronouns (NP), bound nouns
# (NNB), auxiliaries (VX), adverbs, determiners and punctuation carry no topic, so they are not terms.
_KEEP_TAGS = frozenset({"NNG", "NNP", "NR", "VV", "VA", "XR", "SL", "SN", "SH"})
_VERB_TAGS = frozenset({"VV", "VA"})
_LINKING_ENDINGS = frozenset({"어", "아"})
_WARM_UP = "서울에 살고 싶어 했던 고양이를 가끔 좋아해요. I like cats 3마리."


def _tag(token: Any) -> str:
    return str(token.tag).split("-")[0]  # irregular conjugations come tagged "VV-I"


def _feeling_verb(text: str, tokens: Sequence[Any], i: int) -> str | None:
    """``좋아함`` as one verb: Kiwi reads it alone as 좋(VA)+어(EC)+하(VX) but in a sentence as 좋아하(VV).

    Both readings must give the same term, so adjective + 어/아 + 하 becomes the verb's dictionary form,
    spelled from the surface text (``좋아`` + ``하다``, ``무서워`` + ``하다``).
    """
    if i + 2 >= len(tokens) or _tag(tokens[i]) not in _VERB_TAGS:
        return None
    ending, aux = tokens[i + 1], tokens[i + 2]
    if not (_tag(ending) == "EC" and ending.form in _LINKING_ENDINGS and _tag(aux) == "VX" and aux.form == "하"):
        return None
    start = tokens[i].start
    end = max(tokens[i].start + tokens[i].len, ending.start + ending.len)
    return text[start:end] + "하다"


@dataclass(frozen=True)
class Analysis:
    """What the write path keeps of a text: its BM25 terms and its meaning signature (text/meaning.py)."""

    terms: tuple[str, ...]
    meaning: tuple[str, ...]


class Tokenizer:
    """Morpheme tokenizer built on kiwipiepy; create one per process and share it."""

    def __init__(self, cache_size: int = 4096) -> None:
        self._kiwi = Kiwi(num_workers=-1)
        # A heroine's questions repeat (as the query-embedding cache assumes): ~0.35 ms of Kiwi and per-token
        # Python per text was ~14% of the server's CPU under the Locust game-session load.
        self._cached = functools.lru_cache(maxsize=cache_size)(self._analyse)
        # Kiwi builds part of its model on the first analysis (~1.7 s holding the GIL): do it now, at start,
        # not inside the first request, where it stalled every other call.
        self._kiwi.tokenize(_WARM_UP)

    def terms(self, text: str) -> list[str]:
        """The terms of ``text`` in order, duplicates kept (BM25 needs term frequencies)."""
        return list(self._cached(text).terms)

    def analyse(self, text: str) -> Analysis:
        """The terms and the meaning signature of ``text``, from one morpheme analysis."""
        return self._cached(text)

    def _analyse(self, text: str) -> Analysis:
        normalised = unicodedata.normalize("NFKC", text)
        tokens = self._kiwi.tokenize(normalised)
        return Analysis(_terms(normalised, tokens), signature(tokens))


def _terms(normalised: str, tokens: Sequence[Any]) -> tuple[str, ...]:
    out: list[str] = []
    i = 0
    while i < len(tokens):
        merged = _feeling_verb(normalised, tokens, i)
        if merged is not None:
            out.append(merged)
            i += 3
            continue
        token, tag = tokens[i], _tag(tokens[i])
        i += 1
        if tag not in _KEEP_TAGS:
            continue
        form = token.form.lower()
        # Verb stems get the dictionary ending so "좋아하" reads as the word a person would search.
        out.append(form + "다" if tag in _VERB_TAGS else form)
    return tuple(out)
