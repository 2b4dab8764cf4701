"""Turns text into BM25 terms (Korean content morphemes, other words lower-cased) and a meaning signature."""

from __future__ import annotations

import functools
import re
import unicodedata
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from kiwipiepy import Kiwi

from npc_memory.text.meaning import signature
from npc_memory.text.words import ENGLISH_FUNCTION_WORDS, HONORIFICS, QUESTION_WORDS

# Content-bearing morpheme tags. Particles (J*), endings (E*), suffixes (XS*), pronouns (NP), bound nouns
# (NNB), auxiliaries (VX), adverbs, determiners and punctuation carry no topic, so they are not terms.
_KEEP_TAGS = frozenset({"NNG", "NNP", "NR", "VV", "VA", "XR", "SL", "SN", "SH"})
_VERB_TAGS = frozenset({"VV", "VA"})
_LINKING_ENDINGS = frozenset({"어", "아"})
# Kiwi cuts Latin text oddly: punctuation stays on ("now."), and "coffee." can come out as "c" + "offee.".
# With latin_words, a Latin token stands for the whole words (runs of letters and digits, Hangul excluded)
# of the text its span touches, each word taken once.
_WARM_UP = "서울에 살고 싶어 했던 고양이를 가끔 좋아해요. I like cats 3마리."
_LATIN_WORD = re.compile(r"[^\W_\uac00-\ud7a3\u3130-\u318f]+")


@dataclass(frozen=True)
class TextOptions:
    """How text becomes terms.

    Changing an option that applies to stored text changes the terms of new rows, so rows stored before
    need re-tokenising to match (``npc-memory retokenize``); ``question_words`` applies to queries only.
    The defaults are the options a new database records; ``PLAIN`` made the terms of databases older than
    that record (the conversation benchmark measures each: docs/explanation/benchmarks.md).
    """

    latin_words: bool = False
    """Split Latin tokens into their runs of letters and digits ("now." -> "now", not Kiwi's "now."; "coffee."
    -> "coffee", not "c" + "offee.")."""
    stem_latin: bool = True
    """Snowball English stems for Latin words ("traveled" -> "travel"); implies ``latin_words``."""
    function_words: bool = False
    """Drop English function words ("the", "did", "my") from stored and query terms alike (off: "I" and "my"
    tell the player's own lines apart, and updates lost 6 points R@10 with it on)."""
    honorifics: bool = True
    """Korean honorific lemmas as the plain word (드시다 -> 먹다, 생신 -> 생일), stored and query terms alike."""
    question_words: bool = True
    """Drop the words of asking ("remember", 기억나다, 말하다) from query terms only (on: no loss on the Korean
    fact set, a small gain on the conversation benchmark)."""

    def terms_label(self) -> str:
        """The options that shape stored terms, as recorded beside the rows they made (``plain``: none).

        ``stem_latin`` implies ``latin_words``, so both spell the same label; ``question_words`` is query-side.
        """
        effective = replace(self, latin_words=self.latin_words or self.stem_latin)
        return "+".join(name for name in STORED_SIDE if getattr(effective, name)) or PLAIN_TERMS

    @classmethod
    def from_label(cls, label: str, question_words: bool = True) -> TextOptions:
        """The options a ``terms_label`` names (with the query-side ``question_words`` given)."""
        names = set() if label == PLAIN_TERMS else set(label.split("+"))
        unknown = names - set(STORED_SIDE)
        if unknown:
            raise ValueError(f"unknown text option(s) {sorted(unknown)} in {label!r}")
        return cls(**{name: name in names for name in STORED_SIDE}, question_words=question_words)


PLAIN_TERMS = "plain"
"""The label of terms made with no stored-side option: every row stored before the label was recorded."""
STORED_SIDE = ("latin_words", "stem_latin", "function_words", "honorifics")
"""The options that shape stored terms (``question_words`` shapes queries only)."""
PLAIN = TextOptions(stem_latin=False, honorifics=False)
"""No stored-side option: how the terms of a database older than the recorded options were made."""


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


class _LatinSpans:
    """The Latin words of a text in order, handed out once each to the Kiwi tokens that touch them."""

    def __init__(self, text: str) -> None:
        self._words = [(m.start(), m.end(), m.group().lower()) for m in _LATIN_WORD.finditer(text)]
        self._next = 0

    def covering(self, start: int, end: int) -> list[str]:
        """The words not yet taken that overlap ``[start, end)`` (tokens come in text order)."""
        words = self._words
        while self._next < len(words) and words[self._next][1] <= start:
            self._next += 1
        out = []
        while self._next < len(words) and words[self._next][0] < end:
            out.append(words[self._next][2])
            self._next += 1
        return out


@dataclass(frozen=True)
class Analysis:
    """What the write path keeps of a text: its BM25 terms and its meaning signature (text/meaning.py)."""

    terms: tuple[str, ...]
    meaning: tuple[str, ...]


class Tokenizer:
    """Morpheme tokenizer built on kiwipiepy; create one per process and share it."""

    def __init__(self, cache_size: int = 4096, options: TextOptions = TextOptions()) -> None:
        self.options = options
        # No worker pool: texts are analysed one at a time, which Kiwi does on the calling thread as fast, and a
        # pool's threads would be more work beside a model call on every core.
        with warnings.catch_warnings():  # 0 means this (no pool) since kiwipiepy 0.21, which warns that it changed
            warnings.filterwarnings("ignore", message="behavior of `num_workers=0`", category=DeprecationWarning)
            self._kiwi = Kiwi(num_workers=0)
        self._stem: Any = None
        self._question_words = QUESTION_WORDS
        if options.stem_latin:
            import Stemmer

            self._stem = Stemmer.Stemmer("english")
            self._question_words = QUESTION_WORDS | {self._stem.stemWord(w) for w in QUESTION_WORDS}
        # A heroine's questions repeat (as the query-embedding cache assumes), and analysing each again was a
        # large share of the server's CPU under the Locust game-session load.
        self._cached = functools.lru_cache(maxsize=cache_size)(self._analyse)
        # Kiwi builds part of its model on the first analysis (seconds, holding the GIL): do it now, at start,
        # not inside the first request, where it stalled every other call.
        self._kiwi.tokenize(_WARM_UP)

    def terms(self, text: str) -> list[str]:
        """The terms of ``text`` in order, duplicates kept (BM25 needs term frequencies)."""
        return list(self._cached(text).terms)

    def query_terms(self, text: str) -> list[str]:
        """The terms of a search query: ``terms`` less the words of asking when ``question_words`` is on."""
        terms = self._cached(text).terms
        if not self.options.question_words:
            return list(terms)
        return [t for t in terms if t not in self._question_words]

    def analyse(self, text: str) -> Analysis:
        """The terms and the meaning signature of ``text``, from one morpheme analysis."""
        return self._cached(text)

    def _analyse(self, text: str) -> Analysis:
        normalised = unicodedata.normalize("NFKC", text)
        tokens = self._kiwi.tokenize(normalised)
        return Analysis(self._terms(normalised, tokens), signature(tokens))

    def _latin(self, words: list[str]) -> list[str]:
        opts = self.options
        if opts.function_words:
            words = [w for w in words if w not in ENGLISH_FUNCTION_WORDS]
        if self._stem is not None:
            words = [self._stem.stemWord(w) for w in words]
        return words

    def _terms(self, normalised: str, tokens: Sequence[Any]) -> tuple[str, ...]:
        honorifics = self.options.honorifics
        spans = _LatinSpans(normalised) if self.options.latin_words or self.options.stem_latin else None
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
            if tag == "SL":
                out += self._latin(spans.covering(token.start, token.start + token.len) if spans else [form])
                continue
            # Verb stems get the dictionary ending so "좋아하" reads as the word a person would search.
            term = form + "다" if tag in _VERB_TAGS else form
            out.append(HONORIFICS.get(term, term) if honorifics else term)
        return tuple(out)
