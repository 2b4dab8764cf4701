"""Realistic Korean memories and questions for load tests, generated from templates, deterministic per seed."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

GAME_DAYS = 90
"""How far back the generated game history goes."""
HEROINES = ("letia", "lupames", "roco")
HEROINE_NAMES = {"letia": "레티아", "lupames": "루파메스", "roco": "로코"}

FOODS = ("김치찌개", "떡볶이", "삼겹살", "초밥", "라면", "딸기 케이크", "비빔밥", "마라탕", "팥빙수", "치킨",
         "된장찌개", "짜장면", "호떡", "붕어빵", "우동", "파스타", "감자탕", "냉면", "김밥", "순대")
ANIMALS = ("고양이", "강아지", "토끼", "햄스터", "앵무새", "거북이", "고슴도치", "여우", "부엉이", "판다")
PLACES = ("호수 공원", "도서관", "시장", "바닷가", "학교 옥상", "카페", "놀이공원", "성당", "기차역", "꽃집",
          "숲속 오두막", "영화관", "분수 광장", "항구", "온천 마을")
HOBBIES = ("그림 그리기", "피아노 연주", "낚시", "요리", "등산", "독서", "별 관찰", "사진 찍기", "뜨개질",
           "게임", "춤", "노래", "검술 연습", "정원 가꾸기", "일기 쓰기")
FEARS = ("천둥", "높은 곳", "어둠", "벌레", "깊은 물", "유령 이야기", "큰 개", "바늘", "좁은 곳", "폭죽 소리")
GIFTS = ("머리핀", "손수건", "목걸이", "꽃다발", "편지", "오르골", "책갈피", "향수", "반지", "인형", "팔찌")
TRAITS = ("수줍음이 많다", "고집이 세다", "눈물이 많다", "호기심이 많다", "승부욕이 강하다", "말수가 적다",
          "잘 웃는다", "걱정이 많다", "솔직하다", "덜렁거린다")
FEELINGS = ("기뻐했다", "부끄러워했다", "화를 냈다", "눈물을 보였다", "크게 웃었다", "조용히 고개를 끄덕였다",
            "놀라서 얼굴이 빨개졌다", "실망한 표정을 지었다")
WEATHER = ("비가 오는 날", "눈 오는 밤", "맑은 아침", "바람 부는 오후", "안개 낀 새벽", "무더운 여름날")
JOBS = ("마을 대장장이", "도서관 사서", "빵집 주인", "기사단 견습생", "약초상", "음유시인", "상인")
PERSONAL = ("여동생이 한 명 있다", "어릴 때 이 마을로 이사 왔다", "할머니와 함께 산다", "왼손잡이다",
            "생일이 겨울이다", "수영을 못 한다", "고향이 바닷가 마을이다", "안경을 쓰기 시작했다")

SLOTS = ("favorite_food", "favorite_animal", "favorite_place", "hobby", "fear")


def _has_final(word: str) -> bool:
    """Whether the last Hangul syllable of ``word`` ends in a consonant (받침), which picks the particle."""
    last = word.rstrip()[-1]
    code = ord(last) - 0xAC00
    return 0 <= code < 11172 and code % 28 != 0


def obj(word: str) -> str:
    """``word`` with the object particle 을/를."""
    return word + ("을" if _has_final(word) else "를")


def subj(word: str) -> str:
    """``word`` with the subject particle 이/가."""
    return word + ("이" if _has_final(word) else "가")


def topic(word: str) -> str:
    """``word`` with the topic particle 은/는."""
    return word + ("은" if _has_final(word) else "는")


def with_(word: str) -> str:
    """``word`` with the comitative particle 와/과."""
    return word + ("과" if _has_final(word) else "와")


@dataclass(frozen=True)
class Fact:
    """One generated memory: its text and the fields the API needs."""

    content: str
    speaker: str  # "user" | "heroine"
    subject: str  # "user" | "heroine" | "world"
    content_type: str
    importance: int
    slot: str | None = None


def _facts_about_user(heroine: str) -> list[Fact]:
    name = HEROINE_NAMES[heroine]
    out = [Fact(f"플레이어는 {obj(f)} 좋아한다", "user", "user", "preference", 6, "favorite_food") for f in FOODS]
    out += [Fact(f"플레이어는 {obj(f)} 싫어한다", "user", "user", "preference", 4) for f in FOODS]
    out += [Fact(f"플레이어는 {obj(a)} 키우고 싶어 한다", "user", "user", "preference", 5, "favorite_animal")
            for a in ANIMALS]
    out += [Fact(f"플레이어의 취미는 {h}이다", "user", "user", "preference", 5, "hobby") for h in HOBBIES]
    out += [Fact(f"플레이어는 {obj(f)} 무서워한다", "user", "user", "personal", 6, "fear") for f in FEARS]
    out += [Fact(f"플레이어는 {topic(p)} 제일 좋아하는 장소라고 말했다", "user", "user", "preference", 5,
                 "favorite_place") for p in PLACES]
    out += [Fact(f"플레이어의 직업은 {j}이다", "user", "user", "fact", 7) for j in JOBS]
    out += [Fact(f"플레이어는 {p}", "user", "user", "personal", 6) for p in PERSONAL]
    out += [Fact(f"플레이어가 {name}에게 {obj(g)} 선물했다", "user", "user", "event", 8) for g in GIFTS]
    return out


def _facts_about_heroine(heroine: str) -> list[Fact]:
    name = HEROINE_NAMES[heroine]
    out = [Fact(f"{topic(name)} {obj(f)} 좋아한다고 말했다", "heroine", "heroine", "preference", 6) for f in FOODS]
    out += [Fact(f"{topic(name)} {t}", "heroine", "heroine", "trait", 5) for t in TRAITS]
    out += [Fact(f"{topic(name)} {obj(h)} 배우고 싶어 한다", "heroine", "heroine", "preference", 4) for h in HOBBIES]
    out += [Fact(f"{topic(name)} {obj(f)} 무서워한다고 털어놓았다", "heroine", "heroine", "personal", 7)
            for f in FEARS]
    return out


def _events(heroine: str) -> list[Fact]:
    name = HEROINE_NAMES[heroine]
    out = []
    for w, p, h in itertools.product(WEATHER, PLACES, HOBBIES[:6]):
        out.append(Fact(f"{w} {with_(name)} {p}에서 {h} 이야기를 나눴다", "user", "user", "event", 5))
    for p, f in itertools.product(PLACES, FEELINGS):
        out.append(Fact(f"{p}에서 데이트했을 때 {topic(name)} {f}", "heroine", "heroine", "event", 6))
    for g, f in itertools.product(GIFTS, FEELINGS):
        out.append(Fact(f"{obj(g)} 받은 {topic(name)} {f}", "heroine", "heroine", "relationship", 7))
    return out


def _world() -> list[Fact]:
    out = [Fact(f"{p}에 새 가게가 생겼다", "heroine", "world", "fact", 3) for p in PLACES]
    out += [Fact(f"{w}에는 {subj(p)} 붐빈다", "heroine", "world", "fact", 2)
            for w, p in itertools.product(WEATHER, PLACES)]
    return out


def facts(heroine: str) -> list[Fact]:
    """Every distinct fact the generator knows for one heroine's scope (about 1,800 with events)."""
    return _facts_about_user(heroine) + _facts_about_heroine(heroine) + _events(heroine) + _world()


def queries(heroine: str) -> list[str]:
    """Questions a heroine asks her memory before she speaks: paraphrased, with particles and endings."""
    name = HEROINE_NAMES[heroine]
    out = [f"{obj(f)} 좋아해?" for f in FOODS]
    out += [f"{subj(a)} 좋아?" for a in ANIMALS]
    out += [f"{p}에 같이 갈래?" for p in PLACES]
    out += [f"요즘 {h} 하고 있어?" for h in HOBBIES]
    out += [f"{subj(f)} 무서워?" for f in FEARS]
    out += [f"내가 준 {g} 기억나?" for g in GIFTS]
    out += ["무슨 일 해?", "가족은 어떻게 돼?", f"{name} 생일 기억해?", "지난번에 우리 어디 갔었지?",
            "오늘 뭐 먹을까?", "주말에 뭐 할 거야?", "나에 대해 뭘 알고 있어?", f"{topic(name)} 어떤 사람이야?"]
    return out


def all_passages() -> list[str]:
    """The distinct memory texts across heroines, in a stable order (the embedding pool's passages)."""
    seen: dict[str, None] = {}
    for heroine in HEROINES:
        for fact in facts(heroine):
            seen.setdefault(fact.content, None)
    return list(seen)


def all_queries() -> list[str]:
    """The distinct question texts across heroines, in a stable order."""
    seen: dict[str, None] = {}
    for heroine in HEROINES:
        for q in queries(heroine):
            seen.setdefault(q, None)
    return list(seen)


def fresh_fact(rng: random.Random, heroine: str, day: int) -> Fact:
    """A new fact as a game would store after a conversation: a known template, made distinct by its game day."""
    base = rng.choice(facts(heroine))
    return Fact(f"{day}일차: {base.content}", base.speaker, base.subject, base.content_type, base.importance,
                base.slot)
