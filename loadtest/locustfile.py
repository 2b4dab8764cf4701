"""Locust users for npc-memory's scoring path: search-heavy, store-heavy and a mixed game session.

    locust -f loadtest/locustfile.py --host 127.0.0.1:50051                 # web UI on :8089
    locust -f loadtest/locustfile.py --host 127.0.0.1:50051 --headless -u 32 -r 8 -t 1m --csv out/run
    locust -f loadtest/locustfile.py --host 127.0.0.1:50051 --processes 2   # distributed on one machine

Name the profile(s) after the options: ``GameSessionUser`` (mixed), ``SearchUser``, ``StoreUser``;
none named runs all three.
Options of our own (also in the web UI): ``--vectors caller|server``, ``--scopes-file``, ``--think-time``,
``--samples-file``; see docs/guide/load-testing.md. The caller vectors are read from loadtest/data/vectors.npz (shipped,
rebuilt by ``python -m loadtest.vectors``), so a run starts at once.
"""

from __future__ import annotations

import csv
import os
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

# Locust puts only this folder on sys.path; the suite imports itself as the ``loadtest`` package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from locust import events, task
from locust.env import Environment
from locust.runners import WorkerRunner
from npc_memory_client.v1 import memory_pb2 as pb

from loadtest.grpc_user import GrpcUser
from loadtest.pool import Pool, load_pool
from loadtest.requests import Requests
from loadtest.seed import ScopeInfo, read_manifest

SEARCH_KINDS = ("plain", "weights", "filter", "as_of", "game_clock", "rrf")
SEARCH_KIND_WEIGHTS = (5, 2, 2, 1, 1, 1)
OWN_SCOPE_ROWS = 20


def _options(parser: Any) -> None:
    parser.add_argument("--vectors", choices=["caller", "server"], default="caller", env_var="NPC_LOADTEST_VECTORS",
                        help="caller: send real e5 query vectors from the pool; server: the service embeds")
    parser.add_argument("--scopes-file", default="", env_var="NPC_LOADTEST_SCOPES",
                        help="manifest from loadtest.seed; empty: each user builds its own small scope")
    parser.add_argument("--pool-passages", type=int, default=0, env_var="NPC_LOADTEST_POOL_PASSAGES",
                        help="use the first N passages of the shipped vectors only (0: all)")
    parser.add_argument("--pool-queries", type=int, default=0, env_var="NPC_LOADTEST_POOL_QUERIES",
                        help="use the first N questions of the shipped vectors only (0: all)")
    parser.add_argument("--think-time", type=float, default=0.0, env_var="NPC_LOADTEST_THINK_TIME",
                        help="max seconds a player pauses between calls (0: flat out)")
    parser.add_argument("--samples-file", default="", env_var="NPC_LOADTEST_SAMPLES", include_in_web_ui=False,
                        help="write every request (rpc, scope rows, ms, ok) to PREFIX.<pid>.csv")


class _Shared:
    """What every user of a process shares: the embedding pool, the scopes, the raw samples."""

    pool: ClassVar[Pool | None] = None
    scopes: ClassVar[list[ScopeInfo] | None] = None
    samples: ClassVar[list[tuple[str, int, float, int]]] = []


def _shared_pool(env: Environment) -> Pool | None:
    opts = env.parsed_options
    if opts is None or opts.vectors != "caller":
        return None
    if _Shared.pool is None:
        _Shared.pool = load_pool(opts.pool_passages, opts.pool_queries)
    return _Shared.pool


def _shared_scopes(env: Environment) -> list[ScopeInfo]:
    if _Shared.scopes is None:
        path = env.parsed_options.scopes_file if env.parsed_options else ""
        _Shared.scopes = read_manifest(Path(path)) if path else []
    return _Shared.scopes


def _sample(request_type: str, name: str, response_time: float, exception: Exception | None,
            context: dict[str, Any], **_kw: Any) -> None:
    _Shared.samples.append((name, int(context.get("scope_rows", 0)), response_time, int(exception is None)))


def _write_samples(environment: Environment, **_kw: Any) -> None:
    prefix = environment.parsed_options.samples_file if environment.parsed_options else ""
    if not prefix or not _Shared.samples:
        return
    path = Path(f"{prefix}.{os.getpid()}.csv")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(("rpc", "scope_rows", "ms", "ok"))
        writer.writerows(_Shared.samples)
    _Shared.samples = []


def _fail_if_idle(environment: Environment, **_kw: Any) -> None:
    """A run that made no request measured nothing: say so and exit non-zero (workers leave it to the master)."""
    if isinstance(environment.runner, WorkerRunner) or environment.stats.total.num_requests > 0:
        return
    print("npc-memory load run: no request completed, so nothing was measured (is the service reachable and "
          "answering within the run? with --vectors server, each store waits for the model)", file=sys.stderr)
    environment.process_exit_code = 1


events.init_command_line_parser.add_listener(_options)  # type: ignore[no-untyped-call]
events.quitting.add_listener(_fail_if_idle)  # type: ignore[no-untyped-call]
events.request.add_listener(_sample)  # type: ignore[no-untyped-call]
events.test_stop.add_listener(_write_samples)  # type: ignore[no-untyped-call]


class MemoryUser(GrpcUser):
    """A player: one scope at a time, requests built from generated Korean text."""

    abstract = True

    def on_start(self) -> None:
        """Load the shared pool and scopes, then pick (or build) a scope."""
        self.rng = random.Random()
        self.requests = Requests(self.rng, _shared_pool(self.environment))
        self.day = 1
        self.scope = pb.Scope()
        self.scope_rows = 0
        self.own_scope: pb.Scope | None = None
        self.pick_scope()

    def context(self) -> dict[str, Any]:
        """The current scope's size, for per-scope-size latency."""
        return {"scope_rows": getattr(self, "scope_rows", 0)}

    def pick_scope(self) -> None:
        """A seeded scope at random; without a manifest, this user's own scope, built on first use."""
        scopes = _shared_scopes(self.environment)
        if scopes:
            info = self.rng.choice(scopes)
            self.scope, self.scope_rows = pb.Scope(user_id=info.user_id, heroine_id=info.heroine_id), info.rows
            return
        if self.own_scope is None:
            heroine = self.rng.choice(("letia", "lupames", "roco"))
            self.own_scope = pb.Scope(user_id=f"lt-own-{uuid.uuid4().hex[:12]}", heroine_id=heroine)
            self.scope = self.own_scope
            self.stub.StoreMemories(self.requests.store(self.own_scope, OWN_SCOPE_ROWS, day=0))
            self.scope_rows = OWN_SCOPE_ROWS
        self.scope = self.own_scope

    def think(self) -> None:
        """Pause like a player reading a reply (``--think-time``)."""
        opts = self.environment.parsed_options
        if opts is not None and opts.think_time > 0:
            time.sleep(self.rng.uniform(0, opts.think_time))  # gevent-patched: yields to other users

    def search(self, kind: str | None = None) -> None:
        """One search of the current scope."""
        kind = kind or self.rng.choices(SEARCH_KINDS, SEARCH_KIND_WEIGHTS)[0]
        self.stub.SearchMemories(self.requests.search(self.scope, kind))

    def store(self, count: int, repeat: bool = False) -> None:
        """One StoreMemories call with ``count`` facts."""
        self.day += 1
        self.stub.StoreMemories(self.requests.store(self.scope, count, self.day, repeat))
        self.scope_rows += count


class GameSessionUser(MemoryUser):
    """The mixed profile: a player talks to one heroine — several searches, then a few stores — then moves on."""

    @task
    def conversation(self) -> None:
        """One conversation: 3-8 searches (one per line the heroine says), then 1-3 stores of what was learnt."""
        self.pick_scope()
        for _ in range(self.rng.randint(3, 8)):
            self.search()
            self.think()
        for _ in range(self.rng.randint(1, 3)):
            self.store(self.rng.randint(1, 3))
            self.think()


class SearchUser(MemoryUser):
    """Search-heavy: plain searches, per-request weights, filters, as_of, the game's clock and RRF."""

    @task(5)
    def plain(self) -> None:
        """Default weights."""
        self.search("plain")

    @task(2)
    def weights(self) -> None:
        """Per-request weights."""
        self.search("weights")

    @task(2)
    def filtered(self) -> None:
        """A filter on speaker, subject, content type, tier or importance."""
        self.search("filter")

    @task(1)
    def as_of(self) -> None:
        """What the heroine knew some days ago."""
        self.search("as_of")

    @task(1)
    def game_clock(self) -> None:
        """Recency measured on the game's clock."""
        self.search("game_clock")

    @task(1)
    def rrf(self) -> None:
        """Reciprocal-rank fusion."""
        self.search("rrf")

    @task(1)
    def next_scope(self) -> None:
        """Move to another player."""
        self.pick_scope()


class StoreUser(MemoryUser):
    """Store-heavy: new facts in small batches, slot updates (supersession) and exact repeats (duplicates)."""

    @task(5)
    def new_facts(self) -> None:
        """1-4 new facts."""
        self.store(self.rng.randint(1, 4))

    @task(1)
    def repeat(self) -> None:
        """A fact the heroine may already know word for word."""
        self.store(1, repeat=True)

    @task(1)
    def next_scope(self) -> None:
        """Move to another player."""
        self.pick_scope()

