"""Word lists of the keyword side: function words, question words, Korean honorific lemmas and their plain words."""

from __future__ import annotations

_FUNCTION_WORDS = """
a an the and or but nor so if then than as of to in on at by for with from into onto about over under up down
out off per via i me my mine myself you your yours yourself he him his himself she her hers herself it its itself
we us our ours they them their theirs this that these those there here who whom whose which what when where why
how am is are was were be been being do does did done doing have has had having will would shall should can could
might must not no s t d ll m re ve don doesn didn isn aren wasn weren haven hasn hadn won wouldn
just very too also again all any some such only own same other each both few more most
"""
ENGLISH_FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
"""Words that carry no topic in a stored line or a question (the usual English stop list, contractions split;
not "may", a month)."""

QUESTION_WORDS = frozenset({
    # English: how a player asks to be reminded
    "remember", "recall", "tell", "told", "say", "said", "mention", "mentioned", "know", "again", "ever",
    # Korean content morphemes of "do you remember / did I say ...": 기억나?, 말했지?, 얘기했더라? Not 하다 / 되다:
    # they are the most common words of questions, but dropping them cost the Korean fact set (되고 싶다 is "become").
    "기억", "기억나다", "나다", "말하다", "얘기", "이야기", "알다", "그동안", "지금", "전부", "혹시",
})
"""Dropped from a query only: the words of asking, which every question has and no answer needs."""

# Kiwi reads an honorific verb as its own lemma (드셨어 -> 드시다), so a polite question never meets the plain
# word of the line that answers it. Each honorific lemma maps to the plain one; "주무" and "계세" are Kiwi's
# noun readings of 주무세요 and 계세요.
HONORIFICS = {
    "드시다": "먹다", "잡수다": "먹다", "잡수시다": "먹다", "주무시다": "자다", "주무": "자다", "계시다": "있다",
    "계세": "있다", "편찮다": "아프다", "뵙다": "보다", "여쭙다": "묻다", "여쭈다": "묻다", "여쭤보다": "물어보다",
    "말씀": "말", "댁": "집", "연세": "나이", "성함": "이름", "생신": "생일", "진지": "밥",
}
"""Korean honorific lemma -> the plain word a casual line uses."""

LINK_NEUTRAL = frozenset({
    # predicates that say nothing about what two facts are about ("likes rain" / "likes football")
    "좋아하다", "싫어하다", "좋다", "싫다", "하다", "되다", "이다", "아니다", "있다", "없다", "같다", "싶다",
    "가다", "오다", "보다", "주다", "받다", "많다", "적다", "크다", "작다",
    # the player, whom every fact of a scope is about one way or another
    "플레이어", "주인공", "player",
})
"""Terms that are no evidence of a link between two facts (ExpandMemory, store/links.py): sharing 좋아하다 or
플레이어 does not make "likes rain" and "likes football" related. 먹다, 키우다, 고양이 and the like stay evidence;
a heroine's name is no evidence where it is frequent in her scope (a fifth of the rows or more)."""
