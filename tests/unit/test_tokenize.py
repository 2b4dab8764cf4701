"""The keyword tokenizer: Korean content morphemes, no particles or endings, other scripts as lower-cased words."""

from __future__ import annotations

from dataclasses import replace

import pytest
from npc_memory.text import PLAIN, TextOptions, Tokenizer


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    """One kiwipiepy tokenizer with the default options for the module (loading the model takes a second)."""
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


def test_other_scripts_are_lower_cased_stemmed_words(tokenizer: Tokenizer) -> None:
    """Latin words are lower-cased, punctuation dropped, and stemmed (Snowball English) by default."""
    assert tokenizer.terms("Coffee and TEA, café!") == ["coffe", "and", "tea", "café"]
    assert tokenizer.terms("Cats") == tokenizer.terms("cat") == ["cat"]


def test_full_width_and_mixed_text(tokenizer: Tokenizer) -> None:
    """NFKC folds full-width letters; Korean and Latin mix in one text; numbers are terms."""
    assert tokenizer.terms("\uff23\uff2f\uff26\uff26\uff25\uff25") == tokenizer.terms("coffee")  # full-width
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


@pytest.fixture(scope="module")
def english() -> Tokenizer:
    """A tokenizer with every keyword-side option of TextOptions on."""
    return Tokenizer(options=TextOptions(stem_latin=True, function_words=True, honorifics=True, question_words=True))


def test_plain_options_keep_latin_tokens_as_kiwi_cut_them(tokenizer: Tokenizer) -> None:
    """PLAIN (the terms of databases older than the recorded options) keeps "now." whole; the defaults do not."""
    assert Tokenizer(options=PLAIN).terms("I quit, it's tea now.") == ["i", "quit", "it", "s", "tea", "now."]
    assert tokenizer.options == TextOptions()
    assert tokenizer.terms("I quit, it's tea now.") == ["i", "quit", "it", "s", "tea", "now"]


def test_latin_words_drop_edge_punctuation() -> None:
    """latin_words: a sentence-final "now." is the word "now", as in the middle of a sentence."""
    words = Tokenizer(options=replace(PLAIN, latin_words=True))
    assert words.terms("It's tea now.") == ["it", "s", "tea", "now"]
    assert words.terms("now.") == words.terms("now")


def test_latin_words_are_whole_where_kiwi_splits_them() -> None:
    """latin_words: Kiwi reads "coffee." as "c" + "offee."; the term is the word "coffee", once."""
    words = Tokenizer(options=replace(PLAIN, latin_words=True))
    assert words.terms("I drink coffee.") == ["i", "drink", "coffee"]
    assert words.terms("U.S. e-mail, Java를") == ["u", "s", "e", "mail", "java"]


def test_stems_join_inflections_of_english_words(english: Tokenizer) -> None:
    """stem_latin: traveled / travels / traveling share one term, as Korean conjugations share a lemma."""
    assert english.terms("traveled") == english.terms("travels") == english.terms("traveling") == ["travel"]
    assert english.terms("My cats") == english.terms("a cat") == ["cat"]


def test_function_words_are_dropped_on_both_sides(english: Tokenizer) -> None:
    """function_words: "the", "did", "my" are neither stored nor searched; "May" the month stays."""
    assert english.terms("What did I eat last May?") == ["eat", "last", "may"]
    assert english.terms("I've quit the coffee.") == ["quit", "coffe"]


def test_mixed_text_keeps_korean_morphemes_and_stems_english(english: Tokenizer) -> None:
    """Korean runs through Kiwi as before; Latin words inside it are stemmed."""
    assert english.terms("레티아는 Java를 3년 배웠다 running") == ["레티아", "java", "3", "배우다", "run"]


@pytest.mark.parametrize(
    ("polite", "plain"),
    [
        pytest.param("뭘 드셨어요?", "뭘 먹었어?", id="드시다-먹다"),
        pytest.param("생신이 언제세요?", "생일이 언제야?", id="생신-생일"),
        pytest.param("일찍 주무세요", "일찍 자요", id="주무시다-자다"),
        pytest.param("댁에 계세요?", "집에 있어?", id="댁-집-계시다-있다"),
    ],
)
def test_honorific_lemmas_meet_the_plain_words(english: Tokenizer, polite: str, plain: str) -> None:
    """honorifics: a polite question and a casual line share their terms."""
    assert english.terms(polite) == english.terms(plain)


def test_honorifics_are_on_by_default(tokenizer: Tokenizer) -> None:
    """By default 드시다 reads as 먹다; without the option (PLAIN) it stays its own lemma (Kiwi's reading)."""
    assert tokenizer.terms("뭘 드셨어요?") == tokenizer.terms("뭘 먹었어?") == ["먹다"]
    assert Tokenizer(options=PLAIN).terms("뭘 드셨어요?") == ["드시다"]


def test_question_words_leave_query_terms_only(english: Tokenizer) -> None:
    """question_words: "remember" / 기억나 / 하다 leave the query terms but stay in the stored terms."""
    assert english.query_terms("Do you remember where I grew up?") == ["grew"]
    assert english.terms("Do you remember where I grew up?") == ["rememb", "grew"]
    assert english.query_terms("내가 무슨 일 하는 사람이라고 했지? 기억나?") == ["일", "하다", "사람", "하다"]
    assert english.terms("기억나?") == ["기억", "나다"]
    assert english.query_terms("기억나?") == []


def test_query_terms_equal_terms_without_the_option() -> None:
    """Without question_words a query is tokenised exactly like stored text."""
    plain = Tokenizer(options=TextOptions(question_words=False))
    text = "내가 무슨 일 하는 사람이라고 했지? 기억나?"
    assert plain.query_terms(text) == plain.terms(text)


def test_question_words_are_dropped_from_query_terms_by_default(tokenizer: Tokenizer) -> None:
    """The default tokenizer drops 기억나 from a question but keeps it in stored text."""
    assert "기억나다" in tokenizer.terms("제주도 갔던 거 기억나?")
    assert tokenizer.query_terms("제주도 갔던 거 기억나?") == ["제주도", "가다"]
