"""Turns text into BM25 terms: Korean content morphemes (particles and endings dropped), other words lower-cased."""

from __future__ import annotations

import unicodedata

from kiwipiepy import Kiwi

# Content-bearing morpheme tags. Particles (J*), endings (E*), suffixes (XS*), pronouns (NP), bound nouns
# (NNB), auxiliaries (VX), adverbs, determiners and punctuation carry no topic, so they are not terms.
_KEEP_TAGS = frozenset({"NNG", "NNP", "NR", "VV", "VA", "XR", "SL", "SN", "SH"})
_VERB_TAGS = frozenset({"VV", "VA"})


class Tokenizer:
    """Morpheme tokenizer built on kiwipiepy; create one per process and share it."""

    def __init__(self) -> None:
        self._kiwi = Kiwi(num_workers=-1)

    def terms(self, text: str) -> list[str]:
        """The terms of ``text`` in order, duplicates kept (BM25 needs term frequencies)."""
        normalised = unicodedata.normalize("NFKC", text)
        out: list[str] = []
        for token in self._kiwi.tokenize(normalised):
            tag = token.tag.split("-")[0]  # irregular conjugations come tagged "VV-I"
            if tag not in _KEEP_TAGS:
                continue
            form = token.form.lower()
            # Verb stems get the dictionary ending so "좋아하" reads as the word a person would search.
            out.append(form + "다" if tag in _VERB_TAGS else form)
        return out
