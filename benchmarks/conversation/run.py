"""Conversation recall: every dialogue turn a memory, questions through the service's own search.

    python -m benchmarks.conversation.run [--topical] [--database-url URL] [--json out.json] [--configs default ...]

Loads benchmarks/conversation/dataset.json (``--topical``: dataset_topical.json, each fact beside a line of its
topic; ``generate.py`` says how the two differ) into a fresh embedded PostgreSQL (or the given empty database):
each session is one request, its turns dated by the session: a stated dialogue (StoreDialogue's use case,
``engine/dialogue.py store_dialogue``), or plain facts (``engine.store``, StoreMemories' use case), the real write
path either way. Every question is then asked through ``engine.search`` once per configuration (per-request
weights and fusion) and step (how the turns were stored, ``STEPS``), at one day after the conversation's last
session.
Prints R@5 / R@10 / MRR by question kind and configuration, search latency, the turns the write path
dropped as duplicates, and how confident the top hit of a never-said question looks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import numpy as np
from npc_memory.config import Config, DatabaseConfig, PeriodSearch, SearchConfig
from npc_memory.domain.dialogue import Line
from npc_memory.domain.model import (
    USER_SUBJECT_ID,
    ContentType,
    NewMemory,
    Scope,
    SearchQuery,
    Speaker,
    StoreOutcome,
    Subject,
    Tier,
    Vector,
)
from npc_memory.embedding.settings import EmbeddingSettings
from npc_memory.engine import MemoryEngine
from npc_memory.engine.dialogue import StatedDialogue, store_dialogue
from npc_memory.server.runtime import open_engine
from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory.text import PLAIN, TextOptions, Tokenizer

from benchmarks.conversation import metrics
from benchmarks.conversation.generate import DATASET, TOPICAL
from benchmarks.conversation.metrics import Answer
from benchmarks.conversation.metrics import SearchConfig as Asking


@dataclass(frozen=True)
class StepSettings:
    """How the turns are stored and the service settings the questions are asked under."""

    write: str
    """``dialogue``: each session one StoreDialogue request (its turns said at the session's date, no speaker names:
    the player's lines named "나" / "Me", the companion's by her id), the service's context vectors; ``dialogue-names``:
    the same with the names a game shows (the player's, the companion's); ``facts``: each session one StoreMemories
    request of plain facts (no tier: knowledge, the meaning duplicate rule, each embedded alone), at the session's
    date; ``source``: tier source, the turn's own vector given, a minute apart; ``knowledge``: the same as tier
    knowledge (the meaning duplicate rule)."""
    options: TextOptions
    period: PeriodSearch
    half_life_days: float = SearchConfig.recency_half_life_days


DEFAULT_TEXT = TextOptions()
"""The text options a new database records (English stems, Korean honorifics): stored and asked terms alike."""
STEPS: dict[str, StepSettings] = {
    "dialogue": StepSettings("dialogue", DEFAULT_TEXT, "first"),
    "facts": StepSettings("facts", DEFAULT_TEXT, "first"),
    "dialogue-names": StepSettings("dialogue-names", DEFAULT_TEXT, "first"),
    "dialogue-plain": StepSettings("dialogue", PLAIN, "first"),
}
"""Ways of storing measured side by side, each under the service's defaults otherwise. Each write mode stores the
conversations once more (under its own user ids), its terms made with its step's text options; the first step is
the defaults: a conversation stated as dialogues. ``dialogue-plain``: the text options of databases older than the
English and honorific ones (``PLAIN``), as the earlier rounds measured."""


LIMIT = 10
T = TypeVar("T")
DEFAULT_CONFIGS = ("default", "rel.7+kw.3")


@dataclass
class Loaded:
    """One conversation as stored: the memory of each turn, the turns dropped as duplicates, the vectors."""

    scope: Scope
    memory_of: dict[str, UUID] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)
    vectors: dict[UUID, Vector] = field(default_factory=dict)
    merged_unlike: int = 0
    """Dropped turns whose text differs from the memory they were merged into (not a plain repeat)."""


async def embed_turns(engine: MemoryEngine, data: dict[str, Any]) -> dict[str, Vector]:
    """Passage vectors of every turn, computed once (a run may store the same turns more than once)."""
    turns = [t for c in data["conversations"] for s in c["sessions"] for t in s["turns"]]
    vectors = await engine.embedder.embed_passages([t["text"] for t in turns])
    return {t["id"]: v for t, v in zip(turns, vectors, strict=True)}


def _memory(turn: dict[str, Any], companion: str, valid_at: datetime, vector: Vector | None, tier: Tier) -> NewMemory:
    """A turn as a fact: said by its speaker, about the speaker."""
    user = turn["speaker"] == "user"
    return NewMemory(
        speaker=Speaker.USER if user else Speaker.HEROINE, subject=Subject.USER if user else Subject.HEROINE,
        subject_id=USER_SUBJECT_ID if user else companion, content_type=ContentType.FACT, content=turn["text"],
        tier=tier, valid_at=valid_at, embedding=vector,
    )


async def stored_vectors(engine: MemoryEngine, scope: Scope) -> dict[UUID, Vector]:
    """The vectors the service stored for a scope (the modes whose vectors the service makes)."""
    async with engine.db.connection() as conn:
        cur = await conn.execute("SELECT id, embedding FROM user_memories WHERE user_id = %(u)s AND heroine_id = %(h)s",
                                 {"u": scope.user_id, "h": scope.heroine_id})
        return {r["id"]: np.asarray(r["embedding"].to_numpy(), dtype=np.float32) for r in await cur.fetchall()}


def _lines(conv: dict[str, Any], turns: list[dict[str, Any]], said_at: datetime, names: bool) -> tuple[Line, ...]:
    """A session's turns as a stated dialogue's lines, all said at the session's date; ``names``: as a game shows."""
    player = conv["user_id"].removeprefix("bench-").capitalize()
    return tuple(Line(Speaker.USER if t["speaker"] == "user" else Speaker.HEROINE, t["text"],
                      (player if t["speaker"] == "user" else conv["companion_name"]) if names else "", said_at)
                 for t in turns)


async def load(engine: MemoryEngine, conv: dict[str, Any], vectors: dict[str, Vector], prefix: str = "",
               write: str = "source") -> Loaded:
    """Store the conversation session by session, one request per session.

    ``write`` is a ``StepSettings.write`` mode: StoreDialogue (``dialogue``, ``dialogue-names``), or StoreMemories
    with the tier the turns get and whether their vectors are given (``facts``, ``source``, ``knowledge``).
    """
    loaded = Loaded(Scope(prefix + conv["user_id"], conv["companion_id"]))
    stated = write.startswith("dialogue")
    tier = Tier.SOURCE if write == "source" else Tier.KNOWLEDGE
    made_here = stated or write == "facts"
    text_of: dict[UUID, str] = {}
    for k, session in enumerate(conv["sessions"]):
        start = datetime.fromisoformat(session["date"])
        turns = session["turns"]
        if stated:
            lines = _lines(conv, turns, start, write == "dialogue-names")
            results, _ = await store_dialogue(engine, loaded.scope, StatedDialogue(f"session-{k}", 0, lines))
        else:
            facts = [_memory(t, conv["companion_id"], start if made_here else start + timedelta(minutes=j),
                             None if made_here else vectors[t["id"]], tier) for j, t in enumerate(turns)]
            results = await engine.store(loaded.scope, facts)
        for turn, result in zip(turns, results, strict=True):
            loaded.memory_of[turn["id"]] = result.memory_id
            if result.outcome is StoreOutcome.DUPLICATE:
                loaded.dropped.add(turn["id"])
                loaded.merged_unlike += text_of.get(result.memory_id) != turn["text"]
            else:
                loaded.vectors[result.memory_id] = vectors[turn["id"]]
                text_of[result.memory_id] = turn["text"]
    if made_here:
        loaded.vectors = await stored_vectors(engine, loaded.scope)
    return loaded


def _stored_as(step: Step) -> str:
    """The key of the rows a step asks: its write mode and the text options its terms are made with."""
    return f"{step.write}/{step.engine.tokenizer.options.terms_label()}"


@dataclass(frozen=True)
class Step:
    """A step's name ("" for the engine as given), the engine with its settings, and its write mode."""

    name: str
    engine: MemoryEngine
    write: str


def column(config: Asking, step: str) -> str:
    """The result column of one configuration under one step."""
    return f"{config.name} {step}" if step else config.name


def step_engines(engine: MemoryEngine, names: Sequence[str]) -> list[Step]:
    """The engine under each named step of ``STEPS`` (same database and embedder)."""
    out = []
    for name in names:
        st = STEPS[name]
        search = replace(engine.search_settings, period_search=st.period, recency_half_life_days=st.half_life_days)
        out.append(Step(name, replace(engine, tokenizer=Tokenizer(options=st.options), search_settings=search),
                        st.write))
    return out


async def ask(conv: dict[str, Any], loaded: dict[str, Loaded], configs: Sequence[Asking],
              steps: Sequence[Step]) -> dict[str, list[Answer]]:
    """Every question under every configuration and step (interleaved, so machine noise hits all alike).

    ``loaded`` is the conversation as stored by each write mode.
    """
    now = datetime.fromisoformat(conv["now"])
    questions = conv["questions"]
    qvecs = await steps[0].engine.embedder.embed_queries([q["text"] for q in questions])
    out: dict[str, list[Answer]] = {column(c, s.name): [] for s in steps for c in configs}
    for q, vec in zip(questions, qvecs, strict=True):
        for st, c in ((s, c) for s in steps for c in configs):
            lo = loaded[_stored_as(st)]
            evidence = [None if t in lo.dropped else lo.memory_of[t] for t in q["evidence"]]
            stale = {lo.memory_of[t] for t in q["stale"]}
            # The recency scale as the API sets it from the service's settings (api/requests.py).
            # The service's defaults weigh the turns (tier source) apart, as the API does for a request without
            # weights; a named configuration's weights weigh every memory, as a request's own do.
            turns = st.engine.search_settings.turn_weights_for(lo.scope.heroine_id) if c.name == "default" else None
            query = SearchQuery(scope=lo.scope, text=q["text"], limit=LIMIT, weights=c.weights, now=now,
                                fusion=c.fusion, embedding=vec, turn_weights=turns,
                                recency_days=st.engine.search_settings.recency_days_for(lo.scope.heroine_id))
            started = time.perf_counter()
            hits = await st.engine.search(query)
            seconds = time.perf_counter() - started
            ranked = [h.memory.id for h in hits]
            top_cosine = float(np.dot(vec, lo.vectors[ranked[0]])) if ranked else 0.0
            top_score = hits[0].scores.final if hits else 0.0
            out[column(c, st.name)].append(Answer(q["kind"], q["shape"], conv["language"], ranked, evidence, stale,
                                           top_cosine, top_score, seconds))
    return out


def dedup_figures(data: dict[str, Any], loaded: Sequence[Loaded]) -> dict[str, Any]:
    """Turns the write path dropped as duplicates, and the evidence among them."""
    dropped = set().union(*(lo.dropped for lo in loaded))
    turns = sum(len(s["turns"]) for c in data["conversations"] for s in c["sessions"])
    evidence = {t for c in data["conversations"] for q in c["questions"] for t in q["evidence"]}
    hit: dict[str, int] = {}
    for c in data["conversations"]:
        for q in c["questions"]:
            if any(t in dropped for t in q["evidence"]):
                hit[q["kind"]] = hit.get(q["kind"], 0) + 1
    return {"turns": turns, "dropped": len(dropped), "dropped_unlike_text": sum(lo.merged_unlike for lo in loaded),
            "evidence_turns": len(evidence),
            "evidence_dropped": len(evidence & dropped), "questions_with_dropped_evidence": hit}


async def warm_up(engine: MemoryEngine, loaded: Loaded, configs: Sequence[Asking], now: datetime) -> None:
    """One untimed search per configuration (prepared statements, the embedder's first call)."""
    for c in configs:
        await engine.search(SearchQuery(scope=loaded.scope, text="안녕 hello", limit=LIMIT, weights=c.weights,
                                        now=now, fusion=c.fusion))


async def measure(engine: MemoryEngine, data: dict[str, Any], vectors: dict[str, Vector],
                  configs: Sequence[Asking], prefix: str = "", query_tokenizer: Tokenizer | None = None,
                  steps: Sequence[str] = (), write: str = "dialogue") -> dict[str, Any]:
    """Load every conversation under ``prefix`` (once per write mode) and score every configuration and step.

    ``query_tokenizer``, when given, tokenises the questions in place of the one the turns were stored with;
    ``write`` is the write mode without steps.
    """
    asked = replace(engine, tokenizer=query_tokenizer) if query_tokenizer is not None else engine
    engines = step_engines(asked, steps) or [Step("", asked, write)]
    loaded: dict[str, list[Loaded]] = {}
    for st in engines:  # a write mode's terms are made as its (first) step asks them
        key = _stored_as(st)
        if key not in loaded:
            writer = replace(engine, tokenizer=st.engine.tokenizer) if st.name else engine
            loaded[key] = [await load(writer, c, vectors, f"{prefix}{key}:", st.write) for c in data["conversations"]]
    for st in engines:
        await warm_up(st.engine, loaded[_stored_as(st)][0], configs,
                      datetime.fromisoformat(data["conversations"][0]["now"]))
    answers: dict[str, list[Answer]] = {column(c, s.name): [] for s in engines for c in configs}
    for i, conv in enumerate(data["conversations"]):
        for name, got in (await ask(conv, {m: lo[i] for m, lo in loaded.items()}, configs, engines)).items():
            answers[name] += got
    first = next(iter(answers.values()))
    return {"dedup": {mode: dedup_figures(data, lo) for mode, lo in loaded.items()},
            "questions": {k: sum(1 for a in first if a.kind == k) for k in sorted({a.kind for a in first})},
            "configs": {name: metrics.figures(got) for name, got in answers.items()}}


async def run(url: str, data: dict[str, Any], configs: Sequence[Asking], candidates: int, steps: Sequence[str],
              embedding: EmbeddingSettings | None = None) -> dict[str, Any]:
    """Open the engine on ``url`` (stored text tokenised as ``PLAIN``; steps name their own), embed, load, measure.

    ``embedding``: another embedder than the bundled model (an OpenAI-compatible endpoint serving a stronger one).
    """
    config = Config(database=DatabaseConfig(url=url, pool_min=1, pool_max=2), text=PLAIN, text_set=True,
                    search=SearchConfig(candidates=candidates), embedding=embedding or EmbeddingSettings())
    async with open_engine(config) as engine:
        vectors = await embed_turns(engine, data)
        return {"embedder": engine.embedder.name} | await measure(engine, data, vectors, configs, steps=steps)


def embedding_settings(args: argparse.Namespace) -> EmbeddingSettings | None:
    """The ``--embedding-*`` options as the service's settings; None (the bundled model) without a URL."""
    if not args.embedding_url:
        return None
    return EmbeddingSettings(kind="openai", url=args.embedding_url, model=args.embedding_model,
                             api_key=args.embedding_api_key, query_prefix=args.embedding_query_prefix,
                             passage_prefix=args.embedding_passage_prefix)


def on_embedded(prefix: str, work: Callable[[str], Coroutine[Any, Any, T]]) -> T:
    """``work(url)`` run against a temporary embedded PostgreSQL, stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        pg = EmbeddedPostgres(Path(tmp))
        try:
            return asyncio.run(work(pg.url))
        finally:
            pg.stop()


def experiment_main(doc: str, prefix: str, work: Callable[[str, dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]],
                    report: Callable[[dict[str, Any]], str]) -> None:
    """An emulation command: ``work(url, dataset)`` on a temporary database, ``report`` printed, ``--json``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    data = json.loads(DATASET.read_text(encoding="utf-8"))
    results = on_embedded(prefix, lambda url: work(url, data))
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


def _row(name: str, cells: Sequence[str]) -> str:
    return f"| {name} | " + " | ".join(cells) + " |"


def _table(head: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    return [_row(head[0], head[1:]), "|---|" + "---:|" * (len(head) - 1)] + [_row(n, c) for n, c in rows]


def step_table(cfg: dict[str, Any]) -> list[str]:
    """One row per column: overall, cross-turn (multi) and its shapes, the other kinds, latency (the README's)."""
    cols = [("all", "R@5"), ("all", "R@10"), ("by_kind", "multi"), ("by_shape", "multi/pair"),
            ("by_shape", "multi/sessions"), ("by_kind", "single"), ("by_kind", "time"), ("by_kind", "update")]
    return _table(["column", "R@5", "R@10", "multi R@10", "pairs", "across sessions", "single", "time", "update",
                   "p50 ms", "p95 ms"], [
        (n, [f"{f['all'][key]:.3f}" if group == "all" else f"{f[group][key]['R@10']:.2f}" if key in f[group] else "-"
             for group, key in cols]
         + [f"{f['latency']['p50_ms']:.1f}", f"{f['latency']['p95_ms']:.1f}"]) for n, f in cfg.items()])


def report(results: dict[str, Any]) -> str:
    """The tables printed by the command (docs/benchmarks.md shows them from docs/results/conversation.json)."""
    cfg: dict[str, Any] = results["configs"]
    names = list(cfg)
    out = [f"embedder: {results['embedder']}", f"questions: {results['questions']}"]
    for mode, d in results["dedup"].items():
        out.append(f"write {mode}: {d['turns']} turns stored, {d['dropped']} dropped as duplicates "
                   f"({d['dropped_unlike_text']} of them merged into a different text; {d['evidence_dropped']} of "
                   f"{d['evidence_turns']} evidence turns; questions hit: {d['questions_with_dropped_evidence']})")
    out += ["", *step_table(cfg), ""]
    out += _table(["configuration", "R@5", "R@10", "MRR", "p50 ms", "p95 ms"], [
        (n, [f"{f['all']['R@5']:.3f}", f"{f['all']['R@10']:.3f}", f"{f['all']['MRR']:.3f}",
             f"{f['latency']['p50_ms']:.1f}", f"{f['latency']['p95_ms']:.1f}"]) for n, f in cfg.items()])
    for group, title in (("by_kind", "R@5 / R@10 by kind"), ("by_shape", "R@10 by kind/shape"),
                         ("by_language", "R@5 / R@10 by language")):
        keys = list(cfg[names[0]][group])
        out += ["", *_table([title, *names], [
            (f"{k} ({cfg[names[0]][group][k]['n']})",
             [(f"{cfg[n][group][k]['R@10']:.2f}" if group == "by_shape" else
               f"{cfg[n][group][k]['R@5']:.2f} / {cfg[n][group][k]['R@10']:.2f}") for n in names]) for k in keys])]
    out += ["", *_table(["never-said and update checks", *names], [
        ("update: newer turn above the old one", [f"{cfg[n]['update_newer_first']:.2f}" for n in names]),
        ("top cosine, answerable / never said", [
            f"{cfg[n]['adversarial']['answerable_top_cosine']:.3f} / {cfg[n]['adversarial']['never_top_cosine']:.3f}"
            for n in names]),
        ("AUROC of top cosine (answerable vs never)", [f"{cfg[n]['adversarial']['auroc_cosine']:.2f}" for n in names]),
        ("AUROC of top final score", [f"{cfg[n]['adversarial']['auroc_score']:.2f}" for n in names]),
    ])]
    return "\n".join(out)


def main() -> None:
    """Parse options, run against an embedded or given PostgreSQL, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", help="an empty database to load into (default: embedded, temporary)")
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--topical", action="store_const", dest="dataset", const=TOPICAL,
                        help=f"the topical data set ({TOPICAL.name})")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--configs", nargs="+", default=list(DEFAULT_CONFIGS),
                        help=f"named {sorted(metrics.NAMED)} or name=recency,importance,relevance,keyword[,rrf]")
    parser.add_argument("--candidates", type=int, default=SearchConfig.candidates,
                        help="candidates per side (the service's search_candidates)")
    parser.add_argument("--steps", nargs="*", default=list(STEPS), choices=list(STEPS),
                        help="service settings to measure, each on the same stored rows (none: the defaults)")
    endpoint = parser.add_argument_group("another embedding model, served by an OpenAI-compatible endpoint")
    endpoint.add_argument("--embedding-url", help="the endpoint's base URL (default: the bundled model in-process)")
    endpoint.add_argument("--embedding-model", default=EmbeddingSettings.model, help="the model name sent")
    endpoint.add_argument("--embedding-api-key", default="", help="a bearer token, if the endpoint needs one")
    endpoint.add_argument("--embedding-query-prefix", default="", help="e.g. 'query: ' for e5 models")
    endpoint.add_argument("--embedding-passage-prefix", default="", help="e.g. 'passage: ' for e5 models")
    args = parser.parse_args()
    configs = [metrics.parse_config(s) for s in args.configs]
    embedding = embedding_settings(args)
    data = json.loads(args.dataset.read_text(encoding="utf-8"))

    def work(url: str) -> Coroutine[Any, Any, dict[str, Any]]:
        return run(url, data, configs, args.candidates, args.steps, embedding)

    results = asyncio.run(work(args.database_url)) if args.database_url else on_embedded("npc-conversation-", work)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
