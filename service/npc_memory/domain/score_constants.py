"""The constants of the search score (domain/scoring.py), apart so the model can name its defaults."""

from __future__ import annotations

import math

RECENCY_HALF_LIFE_DAYS = 365.0
"""Days after which recency has halved by default. A relationship's memories span months: with 30 days
(``exp(-age / 30)``, the former default) recency buried last spring under last week's small talk; a year
raised the conversation benchmark's R@10 and the Korean fact set's R@5 (docs/decisions/recency-half-life.md)."""
RECENCY_DAYS = RECENCY_HALF_LIFE_DAYS / math.log(2)
"""Recency decays by 1/e every this many days of a fact's age (~527)."""
SECONDS_PER_DAY = 86_400.0
RECENCY_EXPONENT_CAP = 700.0
"""Largest ``age / RECENCY_DAYS`` used: exp(-700) ~ 1e-304 is still a normal float8, so PostgreSQL's exp()
never underflows (it errors where the result would be 0), whatever the fact's age."""
RRF_K = 60
"""The rank offset of reciprocal-rank fusion: a side contributes weight / (RRF_K + rank)."""
FLAT_RANGE = 1e-6
"""Cosines spread less than this are not min-max stretched (the clipped cosine is kept)."""
BM25_K1 = 1.2
"""BM25's term-frequency saturation (Lucene's default)."""
BM25_B = 0.75
"""BM25's document-length normalisation (Lucene's default)."""
