"""The duplicate guard before the meaning signature, kept only to measure the new one against it in one run.

It compared the ordered BM25 terms and a few negation/count words found in the surface text (안 못 않 없 아니
n't, 한 두 세 네 첫 몇). It missed auxiliaries (-고 싶다), tense, adverbs of frequency and degree: "X에 삶" and
"X에 살고 싶어 함", or "자주 먹음" and "가끔 먹음", passed it and were merged (the new fact dropped).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from npc_memory.domain.write_rules import content_key

_NEGATION_WORDS = {"안": "안", "못": "못", "not": "not", "no": "not", "never": "not", "없이": "없"}
_NEGATION_PARTS = (("않", "않"), ("없", "없"), ("아니", "아니"), ("아닌", "아니"), ("아님", "아니"), ("n't", "not"))
_COUNT = re.compile(
    r"^(한|두|세|네|첫|몇)(?:번째|째|번|마리|명|개|살|시|달|해|잔|권|벌|대|그릇|송이|가지|시간|주|날)?$"
)


def markers(content: str) -> tuple[str, ...]:
    """The negation and count words of a text, sorted, as the old guard found them."""
    found: list[str] = []
    for word in content_key(content).split(" "):
        if word in _NEGATION_WORDS:
            found.append(_NEGATION_WORDS[word])
            continue
        count = _COUNT.match(word)
        if count:
            found.append(count.group(1))
            continue
        if word[:1] in ("안", "못") and len(word) > 1:
            found.append(word[0])
        found += [marker for part, marker in _NEGATION_PARTS if part in word]
    return tuple(sorted(found))


def old_guard(a: str, terms_a: Sequence[str], b: str, terms_b: Sequence[str]) -> bool:
    """Whether the old rule let two texts merge above the threshold: same ordered terms and markers."""
    return bool(terms_a) and list(terms_a) == list(terms_b) and markers(a) == markers(b)
