"""The Korean romance-sim vocabulary the quality data set is generated from: topics, heroines, events, world."""

from __future__ import annotations

from dataclasses import dataclass, field

HEROINES = ("letia", "lupames", "roco")
NAMES = {"letia": "레티아", "lupames": "루파메스", "roco": "로코"}


def batchim(word: str) -> bool:
    """Whether the last syllable of ``word`` has a final consonant (decides 을/를, 이/가, 은/는)."""
    last = word[-1]
    if "가" <= last <= "힣":
        return (ord(last) - 0xAC00) % 28 != 0
    return last in "0136789lmnLMN"


def josa(word: str, pair: str) -> str:
    """``word`` with the right form of a particle pair written "을/를", "이/가", "은/는", "과/와", "이라/라"."""
    with_final, without = pair.split("/")
    return word + (with_final if batchim(word) else without)


@dataclass(frozen=True)
class Topic:
    """A slot of the player's profile: values, how the fact is said, how it is asked about.

    Templates use ``{v}`` for the value and ``{v:을/를}``-style markers for the value with a particle.
    ``typos`` maps a value to the misspelling or variant a player might type.
    """

    slot: str
    content_type: str
    values: tuple[str, ...]
    fact: str
    paraphrases: tuple[str, ...]
    keyword_questions: tuple[str, ...]
    change: str = ""
    recent_question: str = ""
    typos: dict[str, str] = field(default_factory=dict)
    importance: int = 5


TOPICS = (
    Topic("favorite_food", "preference", ("떡볶이", "김치찌개", "초밥", "마라탕", "삼겹살", "냉면", "짜장면", "돈가스"),
          "{v:을/를} 제일 좋아함",
          ("배고플 때 오빠가 제일 먹고 싶어 하는 건 뭐야?", "내가 제일 좋아하는 음식이 뭐였지?"),
          ("{v} 좋아한다고 했던가?", "{v:이/가} 그렇게 맛있어?"),
          "요즘은 {v:이/가} 제일 맛있다고 함", "요즘 제일 좋아하는 음식은?",
          {"떡볶이": "떡뽁이", "김치찌개": "김치찌게", "짜장면": "자장면", "돈가스": "돈까스"}, 6),
    Topic("favorite_animal", "preference", ("고양이", "강아지", "햄스터", "토끼", "앵무새", "거북이"),
          "{v:을/를} 정말 좋아함",
          ("오빠는 어떤 동물을 귀여워해?", "키우고 싶은 반려동물 있어?"),
          ("{v} 좋아해?", "{v:은/는} 어때?"),
          "요즘은 {v:이/가} 더 좋아졌다고 함", "요즘 제일 좋아하는 동물이 뭐야?", {"앵무새": "앵무", "거북이": "거북"}),
    Topic("pet_name", "personal", ("초코", "우유", "보리", "콩이", "두부", "호두"),
          "집에서 키우는 반려견 이름은 {v}",
          ("집에서 키우는 개 이름이 뭐였더라?", "오빠네 강아지 이름 다시 알려줘"),
          ("{v:은/는} 잘 지내?", "{v:이/가} 누구였지?"), importance=7),
    Topic("hometown", "personal", ("여수", "강릉", "전주", "부산", "춘천", "제주"),
          "고향은 {v:이라/라}고 함",
          ("어디서 자랐다고 했지?", "오빠가 태어난 동네는 어디야?"),
          ("{v} 출신이었나?", "{v:에/에} 가 본 적 있어?"), typos={"춘천": "춘쳔", "강릉": "강능"}, importance=6),
    Topic("job", "fact", ("편의점 야간 근무", "카페 아르바이트", "학원 강사", "택배 상하차", "도서관 사서 보조"),
          "{v} 일을 하고 있음",
          ("무슨 일 하면서 돈 벌어?", "오빠 직장 생활은 어때?"),
          ("{v} 일은 힘들지 않아?",), importance=6),
    Topic("fear", "personal", ("높은 곳", "깊은 바다", "벌레", "천둥", "귀신 이야기"),
          "{v:을/를} 무서워함",
          ("오빠가 겁내는 게 뭐였지?", "오빠도 무서운 게 있어?"),
          ("{v} 무서워해?",), typos={"높은 곳": "높은데", "귀신 이야기": "귀신얘기", "깊은 바다": "깊은바다"},
          importance=6),
    Topic("hobby", "preference", ("기타 연주", "사진 찍기", "등산", "낚시", "요리", "보드게임"),
          "취미는 {v}",
          ("쉬는 날에는 주로 뭐 하면서 시간 보내?", "한가할 때 뭐 해?"),
          ("{v} 아직도 해?",),
          "요즘은 {v:에/에} 푹 빠져 있음", "요즘 빠져 있는 취미는?", {"보드게임": "보드 게임"}),
    Topic("birthday", "personal", ("3월 14일", "5월 2일", "7월 21일", "10월 9일", "12월 24일"),
          "생일은 {v}",
          ("오빠가 태어난 날이 언제야?", "선물 챙겨 줄게, 그날이 며칠이었지?"),
          ("생일이 언제였지?",), importance=8),
    Topic("sibling", "personal", ("지은", "수아", "하린", "민서", "서윤"),
          "여동생 이름은 {v}",
          ("오빠 동생 이름 기억나?", "오빠 가족 중에 누가 있었지?"),
          ("{v} 씨는 잘 지내?",), importance=6),
    Topic("favorite_drink", "preference", ("아이스 아메리카노", "딸기 라떼", "녹차", "유자차", "핫초코"),
          "{v:을/를} 자주 마심",
          ("카페 가면 뭐 시켜 줄까?", "목마를 때 즐겨 마시는 거 있어?"),
          ("{v} 좋아해?",),
          "요즘은 {v:을/를} 즐겨 마신다고 함", "요즘 즐겨 마시는 음료는?",
          {"아이스 아메리카노": "아아", "딸기 라떼": "딸기 라테", "핫초코": "핫쵸코"}),
    Topic("allergy", "fact", ("복숭아", "땅콩", "새우", "우유"),
          "{v} 알레르기가 있음",
          ("먹으면 안 되는 음식 있었지?", "몸에 안 맞는 음식이 뭐였더라?"),
          ("{v} 먹어도 괜찮아?",), typos={"복숭아": "복숭화", "새우": "새우깡"}, importance=9),
    Topic("dream", "personal", ("제빵사", "웹툰 작가", "소방관", "여행 작가", "수의사"),
          "꿈은 {v:이/가} 되는 것",
          ("나중에 뭐가 되고 싶다고 했어?", "오빠 장래 희망이 뭐야?"),
          ("{v:이/가} 되고 싶은 거 맞지?",), typos={"제빵사": "파티시에", "수의사": "동물 병원 의사"}, importance=7),
    Topic("music", "preference", ("재즈", "발라드", "록 음악", "클래식", "아이돌 노래"),
          "{v:을/를} 즐겨 들음",
          ("이어폰으로 주로 어떤 걸 들어?", "좋아하는 노래 장르가 뭐야?"),
          ("{v} 좋아해?",),
          "요즘은 {v:을/를} 더 자주 들음", "요즘 자주 듣는 음악은?"),
)

# What each heroine says about herself (speaker and subject: the heroine). Other heroines' lines are gossip
# the player repeats elsewhere: stored about that heroine, they are the distractors.
PROFILES = {
    "letia": (
        ("해바라기를 좋아함", "preference", "어떤 꽃을 좋아해?", "해바라기"),
        ("천둥 치는 밤을 무서워함", "personal", "무서워하는 게 있어?", "천둥"),
        ("뜨개질이 취미임", "preference", "한가할 때 뭐 하고 지내?", "뜨개질"),
        ("마카롱 같은 단 디저트를 좋아함", "preference", "좋아하는 간식은 뭐야?", "마카롱"),
        ("마을 도서관에서 사서로 일함", "fact", "평소에 어디서 일해?", "도서관"),
    ),
    "lupames": (
        ("장미를 좋아함", "preference", "어떤 꽃을 좋아해?", "장미"),
        ("고양이를 무서워함", "personal", "무서워하는 게 있어?", "고양이"),
        ("매일 새벽에 검술 훈련을 함", "fact", "아침마다 뭐 해?", "검술"),
        ("매운 음식을 잘 먹음", "preference", "좋아하는 음식은 뭐야?", "매운"),
        ("고향은 북쪽 설원", "personal", "어디 출신이야?", "설원"),
    ),
    "roco": (
        ("별 관측이 취미임", "preference", "한가할 때 뭐 하고 지내?", "별"),
        ("바다를 무서워함", "personal", "무서워하는 게 있어?", "바다"),
        ("딸기 우유를 좋아함", "preference", "좋아하는 음료가 뭐야?", "딸기 우유"),
        ("발명품 만드는 걸 좋아함", "preference", "요즘 뭐 만들고 있어?", "발명품"),
        ("아침잠이 많음", "trait", "아침에 일찍 일어나?", "아침잠"),
    ),
}

# Shared moments with the heroine of the scope ({h}: her name); each with a paraphrased and a keyword question.
EVENTS = (
    ("여름 축제에서 {h:에게/에게} 머리핀을 선물함", "내가 준 선물 기억나?", "머리핀 아직 가지고 있어?", 8),
    ("{h:과/와} 처음 만난 곳은 도서관", "우리 처음 어디서 봤더라?", "도서관에서 처음 만났던 거 기억해?", 9),
    ("비 오는 날 {h:에게/에게} 우산을 빌려줌", "비 맞을 뻔했을 때 내가 뭐 해 줬지?", "우산 빌려줬던 날 기억나?", 6),
    ("{h:과/와} 함께 등대까지 산책함", "같이 바닷가 걸었던 날 생각나?", "등대 갔던 날 기억나?", 6),
    ("{h:과/와} 시장에서 붕어빵을 나눠 먹음", "같이 길에서 간식 사 먹었던 거 기억나?", "붕어빵 먹었던 날 기억나?", 5),
    ("{h:의/의} 생일에 손편지를 써 줌", "내가 써 준 글 읽어 봤어?", "손편지 아직 있어?", 8),
)

WORLD = (
    ("마을 광장에 새 빵집이 생김", "요즘 마을에 새로 생긴 가게 있어?", "빵집 가 봤어?"),
    ("다음 주에 불꽃 축제가 열림", "곧 마을에 행사 있지 않아?", "불꽃 축제 언제야?"),
    ("북쪽 다리가 폭풍으로 무너짐", "폭풍 때문에 망가진 데가 어디였지?", "다리 무너진 거 고쳤어?"),
    ("시장에서 사과 값이 많이 오름", "요즘 과일 값이 어때?", "사과 값 올랐다며?"),
)

# Day-to-day small talk the game also logs (importance 2-3): the realistic bulk of a scope, and hard
# negatives (a lunch is not a favourite food, a street cat is not a favourite animal).
DAILY = (
    ("점심으로 {x:을/를} 먹었다고 함", ("김밥", "라면", "샌드위치", "비빔밥", "떡볶이", "초밥", "냉면", "돈가스")),
    ("{x:을/를} 사 들고 광장을 걸었음", ("아이스 아메리카노", "녹차", "딸기 라떼", "레모네이드", "핫초코")),
    ("오늘은 {x}에서 하루를 보냈다고 함", ("시장", "항구", "숲", "도서관", "광장", "강가")),
    ("길에서 {x:을/를} 봤다고 함", ("고양이", "강아지", "토끼", "앵무새", "까마귀")),
    ("친구와 {x} 이야기를 오래 함", ("등산", "낚시", "요리", "보드게임", "사진 찍기", "기타 연주")),
    ("광장에서 {x} 공연 포스터를 봄", ("재즈", "발라드", "록 음악", "클래식")),
    ("{x} 때문에 잠을 설쳤다고 함", ("천둥", "모기", "옆집 소음", "더위")),
    ("{x:을/를} 사러 시장에 다녀옴", ("복숭아", "사과", "새우", "땅콩", "꽃다발")),
    ("오늘은 {x} 기분이라고 함", ("좋은", "피곤한", "우울한", "들뜬")),
    ("{x:에서/에서} 일하는 친구를 만남", ("편의점", "카페", "학원", "빵집")),
)
