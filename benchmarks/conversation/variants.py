"""Keyword-side steps measured side by side on the conversation benchmark and the Korean fact set.

    python -m benchmarks.conversation.variants [--variants base stem ...] [--configs default keyword ...]

Each variant is a tokenizer for stored text and one for questions (text/tokenize.TextOptions). The
conversations are stored once per variant in one embedded PostgreSQL (scopes prefixed by the variant), the
Korean fact set (benchmarks/quality) in a database of its own per variant; embeddings are computed once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psycopg
from npc_memory.config import Config, DatabaseConfig
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import build_engine, open_database, open_engine
from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory.text import PLAIN, TextOptions, Tokenizer
from psycopg import sql

from benchmarks.conversation import metrics
from benchmarks.conversation.generate import DATASET
from benchmarks.conversation.run import embed_turns, measure
from benchmarks.quality import run as quality
from benchmarks.quality.generate import DATASET as QUALITY_DATASET


class QueryTokenizer(Tokenizer):
    """A tokenizer whose ``terms`` are its ``query_terms``: what the search path sees for a question."""

    def terms(self, text: str) -> list[str]:
        """The query terms of ``text``."""
        return self.query_terms(text)


@dataclass(frozen=True)
class Variant:
    """Options of the stored text; ``stored_as_query`` drops the words of asking from stored text too."""

    options: TextOptions
    stored_as_query: bool = False


_OFF = replace(PLAIN, question_words=False)
_WORDS = replace(_OFF, latin_words=True)
_STEM = replace(_WORDS, stem_latin=True)
_FUNCTION = replace(_STEM, function_words=True)
_QUESTION = replace(_FUNCTION, question_words=True)
VARIANTS = {
    "base": Variant(_OFF),
    "latin-words": Variant(_WORDS),
    "stem": Variant(_STEM),
    "stem+function-words": Variant(_FUNCTION),
    "+question-words (query only)": Variant(_QUESTION),
    "+question-words (both sides)": Variant(_QUESTION, stored_as_query=True),
    "question-words only (query)": Variant(PLAIN),
    "+honorifics": Variant(replace(_QUESTION, honorifics=True)),
}


def tokenizers(v: Variant) -> tuple[Tokenizer, Tokenizer]:
    """The tokenizer for stored text and the one for questions."""
    query = QueryTokenizer(options=v.options)
    return (query if v.stored_as_query else Tokenizer(options=v.options)), query


async def quality_variant(url: str, name: str, v: Variant, engine: MemoryEngine, data: dict[str, Any],
                          ) -> dict[str, dict[str, float]]:
    """The Korean fact set in a fresh database with this variant's tokenizers."""
    db = "quality_" + "".join(c if c.isalnum() else "_" for c in name).lower()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db)))
    db_url = psycopg.conninfo.make_conninfo(url, dbname=db)
    config = Config(database=DatabaseConfig(url=db_url, pool_min=1, pool_max=2))
    store_tok, query_tok = tokenizers(v)
    async with open_database(config.database) as q_db:
        q_engine = replace(await build_engine(config, q_db, engine.embedder), tokenizer=store_tok)
        ids = await quality.load(q_engine, data)
        asked = await quality.gather(replace(q_engine, tokenizer=query_tok), data, ids)
    main_modes, _ = quality.modes(quality.learned_floor(asked))
    return {m.name: quality.score(asked, m) for m in main_modes}


async def run(url: str, data: dict[str, Any], qdata: dict[str, Any], names: Sequence[str],
              configs: Sequence[metrics.SearchConfig]) -> dict[str, Any]:
    """Every variant on both data sets."""
    results: dict[str, Any] = {}
    async with open_engine(Config(database=DatabaseConfig(url=url, pool_min=1, pool_max=2))) as engine:
        vectors = await embed_turns(engine, data)
        for i, name in enumerate(names):
            v = VARIANTS[name]
            store_tok, query_tok = tokenizers(v)
            conv = await measure(replace(engine, tokenizer=store_tok), data, vectors, configs, f"v{i}:", query_tok,
                                 write="source")
            results[name] = {"conversation": conv, "quality": await quality_variant(url, name, v, engine, qdata)}
            print(f"measured {name}", flush=True)
    return results


def report(results: dict[str, Any]) -> str:
    """One row per variant: conversation R@5/R@10 per configuration, by language, and the fact set."""
    names = list(results)
    configs = list(results[names[0]]["conversation"]["configs"])
    modes = list(results[names[0]]["quality"])
    head = ["variant"] + [f"{c} R@5 / R@10" for c in configs] + [f"fact set {m} R@1 / R@5" for m in modes]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for n in names:
        cfg = results[n]["conversation"]["configs"]
        cells = [f"{cfg[c]['all']['R@5']:.3f} / {cfg[c]['all']['R@10']:.3f}" for c in configs]
        cells += [f"{results[n]['quality'][m]['R@1']:.3f} / {results[n]['quality'][m]['R@5']:.3f}" for m in modes]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines += ["", "| variant | " + " | ".join(f"{c} ko / en R@10" for c in configs) + " |",
              "|---|" + "---:|" * len(configs)]
    for n in names:
        cfg = results[n]["conversation"]["configs"]
        lines.append(f"| {n} | " + " | ".join(
            f"{cfg[c]['by_language']['ko']['R@10']:.3f} / {cfg[c]['by_language']['en']['R@10']:.3f}"
            for c in configs) + " |")
    return "\n".join(lines)


def main() -> None:
    """Parse options, run every variant against a temporary embedded PostgreSQL, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--configs", nargs="+", default=["default", "keyword", "rel.7+kw.3"])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    data = json.loads(DATASET.read_text(encoding="utf-8"))
    qdata = json.loads(QUALITY_DATASET.read_text(encoding="utf-8"))
    configs = [metrics.parse_config(s) for s in args.configs]
    with tempfile.TemporaryDirectory(prefix="npc-variants-") as tmp:
        pg = EmbeddedPostgres(Path(tmp))
        try:
            results = asyncio.run(run(pg.url, data, qdata, args.variants, configs))
        finally:
            pg.stop()
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
