"""The keyword tokenizer: Korean content morphemes, no particles or endings, other scripts as lower-cased words."""

from __future__ import annotations

import pytest
from npc_memory.text import Tokenizer


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    """One kiwipiepy tokenizer for the module (loading the model takes a second)."""
    return Tokenizer()


@pytest.mark.parametrize("text", ["고양이를", "고양이가", "고양이", "고양이는", "고양이도", "고양이한테"])
def test_a_noun_with_any_particle_is_the_bare_noun(tokenizer: Tokenizer, text: str) -> None:
    """고양이를 / 고양이가 / 고양이 all become the single term 고양이, so they match each other."""
    assert tokenizer.terms(text) == ["고양이"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("나는 고양이를 좋아해", ["고양이", "좋아하다"], id="pronoun-particle-ending"),
        pytest.param("고양이를 좋아함", ["고양이", "좋아하다"], id="nominal-ending"),
        pytest.param("고양이를 좋아했었어요", ["고양이", "좋아하다"], id="past-polite-ending"),
        pytest.param("매운 음식을 못 먹음", ["맵다", "음식", "먹다"], id="adjective-adverb"),
        pytest.param("레티아는 딸기 케이크를 좋아한다", ["레티아", "딸기", "케이크", "좋아하다"], id="proper-noun"),
    ],
)
def test_particles_and_endings_are_not_terms(tokenizer: Tokenizer, text: str, expected: list[str]) -> None:
    """Only content morphemes remain; verb and adjective stems read as dictionary forms."""
    assert tokenizer.terms(text) == expected


def test_conjugations_of_one_verb_share_a_term(tokenizer: Tokenizer) -> None:
    """좋아해 / 좋아함 / 좋아했어요 / 좋아하는 all carry the term 좋아하다."""
    forms = ["좋아해", "좋아함", "좋아했어요", "좋아하는 것", "고양이를 좋아함"]
    assert all("좋아하다" in tokenizer.terms(f) for f in forms)
    assert tokenizer.terms("무서워해") == tokenizer.terms("고양이를 무서워함")[1:] == ["무서워하다"]


def test_spacing_does_not_change_compound_nouns(tokenizer: Tokenizer) -> None:
    """딸기케이크 and 딸기 케이크 give the same terms."""
    assert tokenizer.terms("딸기케이크") == tokenizer.terms("딸기 케이크") == ["딸기", "케이크"]


def test_other_scripts_are_lower_cased_words(tokenizer: Tokenizer) -> None:
    """Latin words are lower-cased, punctuation dropped, no stemming."""
    assert tokenizer.terms("Coffee and TEA, café!") == ["coffee", "and", "tea", "café"]
    assert tokenizer.terms("Cats") == ["cats"]


def test_full_width_and_mixed_text(tokenizer: Tokenizer) -> None:
    """NFKC folds full-width letters; Korean and Latin mix in one text; numbers are terms."""
    assert tokenizer.terms("\uff23\uff2f\uff26\uff26\uff25\uff25") == ["coffee"]  # full-width COFFEE
    assert tokenizer.terms("레티아는 Java를 3년 배웠다") == ["레티아", "java", "3", "배우다"]


def test_repeated_terms_are_kept_for_term_frequency(tokenizer: Tokenizer) -> None:
    """A word said twice counts twice (BM25 needs term frequencies)."""
    assert tokenizer.terms("고양이 고양이 강아지") == ["고양이", "고양이", "강아지"]


def test_text_with_only_function_words_has_no_terms(tokenizer: Tokenizer) -> None:
    """Nothing searchable comes out of conjunctions, adverbs, pronouns and punctuation."""
    assert tokenizer.terms("그런데 정말 나는?!") == []


def test_repeated_text_is_served_from_the_cache_without_sharing_the_list() -> None:
    """A repeated text gives equal terms from the LRU; changing a returned list never changes the next answer."""
    tokenizer = Tokenizer(cache_size=2)
    first = tokenizer.terms("고양이를 좋아함")
    first.append("오염")
    assert tokenizer.terms("고양이를 좋아함") == ["고양이", "좋아하다"]
    tokenizer.terms("강아지")
    tokenizer.terms("라면")  # evicts the first text; it is tokenised again, identically
    assert tokenizer.terms("고양이를 좋아함") == ["고양이", "좋아하다"]
