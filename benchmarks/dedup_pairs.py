"""Labelled Korean pairs for the duplicate threshold: the same fact said twice, or two different facts.

Built from templates over a game's vocabulary (deterministic). ``same`` pairs are what an extractor emits when a
player repeats a fact in other words; ``different`` pairs must never merge — above all the contradictions
(좋아함/싫어함, 좋아함/안 좋아함), which a supersession, not a duplicate, has to handle. The grammar pairs differ
only in what BM25 terms drop: an auxiliary (삶 / 살고 싶어 함), tense, a frequency or degree adverb, a particle
of "only" or "with". The tests (tests/store/test_write_meaning.py) use their own hand-written sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

FOODS = ("김치찌개", "떡볶이", "삼겹살", "초밥", "라면", "딸기 케이크", "비빔밥", "마라탕", "팥빙수", "치킨")
ANIMALS = ("고양이", "강아지", "토끼", "햄스터", "앵무새", "거북이", "고슴도치", "여우", "부엉이", "판다")
HOBBIES = ("그림 그리기", "피아노 연주", "낚시", "요리", "등산", "독서", "별 관찰", "사진 찍기", "뜨개질", "검술 연습")
PLACES = ("서울", "부산", "대구", "광주", "바닷가 마을", "산골 마을", "항구 도시", "왕도")
SIBLINGS = ("여동생", "남동생", "언니", "오빠", "누나", "형")
SKILLS = ("수영", "요리", "노래", "춤", "운전", "검술", "그림")


@dataclass(frozen=True)
class Pair:
    """Two texts about the same subject and whether they state the same fact."""

    a: str
    b: str
    same: bool
    kind: str


def _final(word: str) -> bool:
    code = ord(word.rstrip()[-1]) - 0xAC00
    return 0 <= code < 11172 and code % 28 != 0


def obj(word: str) -> str:
    """``word`` with 을/를."""
    return word + ("을" if _final(word) else "를")


def subj(word: str) -> str:
    """``word`` with 이/가."""
    return word + ("이" if _final(word) else "가")


def _rotate(items: tuple[str, ...], k: int = 1) -> list[tuple[str, str]]:
    return [(x, items[(i + k) % len(items)]) for i, x in enumerate(items)]


def _same() -> list[Pair]:
    out: list[Pair] = []
    for x in FOODS + ANIMALS:
        out += [
            Pair(f"{obj(x)} 좋아함", f"{obj(x)} 좋아한다", True, "ending"),
            Pair(f"{obj(x)} 좋아함", f"{obj(x)} 좋아해", True, "ending"),
            Pair(f"{obj(x)} 좋아함", f"{x} 좋아함", True, "particle"),
            Pair(f"{obj(x)} 정말 좋아함", f"{obj(x)} 진짜 좋아함", True, "adverb"),
            Pair(f"{obj(x)} 좋아함", f"{obj(x)} 좋아함.", True, "punctuation"),
            Pair(f"{obj(x)} 싫어함", f"{obj(x)} 싫어한다", True, "ending"),
            Pair(f"{obj(x)} 좋아함", f"플레이어는 {obj(x)} 좋아한다", True, "reworded"),
            Pair(f"{obj(x)} 좋아함", f"{subj(x)} 좋다고 함", True, "reworded"),
        ]
    for h in HOBBIES:
        out += [
            Pair(f"취미는 {h}임", f"취미는 {h}이다", True, "ending"),
            Pair(f"취미는 {h}임", f"{obj(h)} 취미로 함", True, "reworded"),
        ]
    for p in PLACES:
        out += [Pair(f"{p}에 삶", f"{p}에 살고 있음", True, "ending")]
    for s in SIBLINGS:
        out += [Pair(f"{subj(s)} 한 명 있음", f"{subj(s)} 하나 있다", True, "reworded")]
    for k in SKILLS:
        out += [Pair(f"{obj(k)} 못함", f"{obj(k)} 못한다", True, "ending"),
                Pair(f"{obj(k)} 잘함", f"{obj(k)} 잘한다", True, "ending")]
    return out


def _different() -> list[Pair]:
    out: list[Pair] = []
    for x in FOODS + ANIMALS:
        out += [
            Pair(f"{obj(x)} 좋아함", f"{obj(x)} 싫어함", False, "opposite"),
            Pair(f"{obj(x)} 좋아함", f"{obj(x)} 안 좋아함", False, "negation"),
            Pair(f"{obj(x)} 좋아함", f"{obj(x)} 좋아하지 않음", False, "negation"),
        ]
    for x, y in _rotate(FOODS) + _rotate(ANIMALS) + _rotate(FOODS, 3) + _rotate(ANIMALS, 3):
        out += [Pair(f"{obj(x)} 좋아함", f"{obj(y)} 좋아함", False, "other-object")]
    for x, y in _rotate(ANIMALS):
        out += [Pair(f"{obj(x)} 좋아함", f"요즘은 {subj(y)} 더 좋아", False, "changed")]
    for h, g in _rotate(HOBBIES):
        out += [Pair(f"취미는 {h}임", f"취미는 {g}임", False, "other-object")]
    for p, q in _rotate(PLACES):
        out += [Pair(f"{p}에 삶", f"{q}에 삶", False, "other-object")]
    for s, t in _rotate(SIBLINGS):
        out += [Pair(f"{subj(s)} 있음", f"{subj(t)} 있음", False, "other-object")]
    for k in SKILLS:
        out += [Pair(f"{obj(k)} 잘함", f"{obj(k)} 못함", False, "negation"),
                Pair(f"{obj(k)} 할 수 있음", f"{obj(k)} 할 수 없음", False, "negation")]
    for n in range(17, 27):
        out += [Pair(f"나이는 {n}살임", f"나이는 {n + 1}살임", False, "number")]
    for m in range(1, 13):
        out += [Pair(f"생일은 {m}월 5일", f"생일은 {m}월 6일", False, "number"),
                Pair(f"생일은 {m}월 5일", f"생일은 {m % 12 + 1}월 5일", False, "number")]
    names = ("레티아", "로코", "루파메스", "플레이어")
    for x, y in _rotate(names):
        out += [Pair(f"{subj(x)} {obj(y)} 좋아함", f"{subj(y)} {obj(x)} 좋아함", False, "role-swap"),
                Pair(f"{subj(x)} {y}에게 꽃을 줌", f"{subj(y)} {x}에게 꽃을 줌", False, "role-swap")]
    for a, b in (("한", "두"), ("두", "세"), ("세", "네")):
        out += [Pair(f"고양이 {a} 마리를 키움", f"고양이 {b} 마리를 키움", False, "number"),
                Pair(f"{a} 번째 데이트에서 고백함", f"{b} 번째 데이트에서 고백함", False, "number")]
    out += [Pair("첫 번째 데이트는 바닷가였음", "두 번째 데이트는 바닷가였음", False, "number")]
    out += [Pair("여자친구가 있음", "여자친구가 없음", False, "negation"),
            Pair("학생임", "학생이 아님", False, "negation"),
            Pair("매운 음식을 못 먹음", "매운 음식을 잘 먹음", False, "negation"),
            Pair("비 오는 날을 좋아함", "맑은 날을 좋아함", False, "other-object")]
    return out


NAMES = ("레티아", "로코", "루파메스")


def _with(word: str) -> str:
    """``word`` with 와/과."""
    return word + ("과" if _final(word) else "와")


def _grammar_different() -> list[Pair]:
    out: list[Pair] = []
    for p in PLACES:
        out += [Pair(f"{p}에 삶", f"{p}에 살고 싶어 함", False, "want"),
                Pair(f"{p}에 살았음", f"{p}에 삶", False, "tense"),
                Pair(f"{p}에 살 것임", f"{p}에 살았음", False, "tense")]
    for f in FOODS:
        out += [
            Pair(f"{obj(f)} 자주 먹음", f"{obj(f)} 가끔 먹음", False, "frequency"),
            Pair(f"{obj(f)} 항상 먹음", f"{obj(f)} 가끔 먹음", False, "frequency"),
            Pair(f"{obj(f)} 자주 먹음", f"{obj(f)} 전혀 안 먹음", False, "frequency"),
            Pair(f"{obj(f)} 먹음", f"{obj(f)} 먹고 싶어 함", False, "want"),
            Pair(f"{obj(f)} 먹었음", f"{obj(f)} 먹음", False, "tense"),
            Pair(f"{obj(f)} 먹어야 함", f"{obj(f)} 먹음", False, "modality"),
            Pair(f"{obj(f)} 먹으려고 함", f"{obj(f)} 먹음", False, "modality"),
            Pair(f"{obj(f)} 먹어 봄", f"{obj(f)} 먹음", False, "modality"),
            Pair(f"{obj(f)} 먹지 않음", f"{obj(f)} 먹음", False, "negation"),
        ]
    for x in ANIMALS:
        out += [Pair(f"{obj(x)} 매우 좋아함", f"{obj(x)} 조금 좋아함", False, "degree"),
                Pair(f"{obj(x)} 좋아함", f"{obj(x)} 정말 좋아함", False, "degree-added"),
                Pair(f"{obj(x)} 좋아함", f"{x}만 좋아함", False, "only")]
    for x, y in _rotate(ANIMALS):
        out += [Pair(f"{x}보다 {obj(y)} 좋아함", f"{_with(x)} {obj(y)} 좋아함", False, "comparison")]
    for n in NAMES:
        for h in HOBBIES[:4]:
            out += [Pair(f"{_with(n)} {h} 했음", f"{subj(n)} {h} 했음", False, "with")]
    return out


def _grammar_same() -> list[Pair]:
    out: list[Pair] = []
    for p in PLACES:
        out += [Pair(f"{p}에 살고 싶어 함", f"{p}에 살고 싶음", True, "ending"),
                Pair(f"{p}에 살았음", f"{p}에 살았었음", True, "ending")]
    for f in FOODS:
        out += [
            Pair(f"{obj(f)} 자주 먹음", f"{obj(f)} 자주 먹는다", True, "ending"),
            Pair(f"{obj(f)} 먹었음", f"{obj(f)} 먹었다", True, "ending"),
            Pair(f"{obj(f)} 먹어야 함", f"{obj(f)} 먹어야 한다", True, "ending"),
            Pair(f"{obj(f)} 먹지 않음", f"{obj(f)} 안 먹음", True, "negation-form"),
            Pair(f"{obj(f)} 항상 먹음", f"{obj(f)} 늘 먹는다", True, "adverb"),
        ]
    for x in ANIMALS:
        out += [Pair(f"{x}만 좋아함", f"{x}만 좋아한다", True, "ending")]
    return out


def pairs() -> list[Pair]:
    """Every labelled pair."""
    return _same() + _grammar_same() + _different() + _grammar_different()
