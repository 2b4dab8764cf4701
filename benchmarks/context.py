"""BuildContext latency beside a plain search, over gRPC, in the same run.

    python -m benchmarks.context [--scopes 10] [--memories 60] [--queries 200] [--budget 400]

An embedded PostgreSQL in a temporary folder; ``npc-memory serve`` in its own process. Each scope (a player
with one heroine) gets ``--memories`` facts from the load-test pool (real Korean sentences with their real e5
vectors, sent as caller vectors), spread over the subjects, content types and importances BuildContext sorts
by, with a quarter stored as shared. Every question is searched once first, so both calls find its vector in
the server's query cache: the embedder's cost is the same for both and is measured by benchmarks.search_speed.
Then, question by question, a SearchMemories (limit 10) and a BuildContext (the same utterance) alternate, once with
include_shared (the player's shared rows of other heroines) and once without (the scope's own rows); either way a
scope held in memory (with the shared rows, for the first) answers both the search and the block's profile.
``--pause`` waits between calls, as a lone player's game does. Printed: p50/p95/p99/mean in ms of each and the
ratio context / search.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from functools import partial
from pathlib import Path

from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory_client.v1 import context_pb2 as ctx
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.search_speed_parts import percentiles, served, timed
from loadtest.pool import load_pool

SUBJECTS = [(pb.SUBJECT_USER, ""), (pb.SUBJECT_HEROINE, ""), (pb.SUBJECT_WORLD, "")]
TYPES = [pb.CONTENT_TYPE_FACT, pb.CONTENT_TYPE_PREFERENCE, pb.CONTENT_TYPE_OPINION, pb.CONTENT_TYPE_EVENT,
         pb.CONTENT_TYPE_PERSONAL]


def main() -> None:
    """Seed, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scopes", type=int, default=10)
    parser.add_argument("--memories", type=int, default=60)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--budget", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between calls (default: none)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pool = load_pool(max_passages=args.scopes * args.memories, max_queries=args.queries)
    heroines = ["letia", "lupames", "roco"]
    scopes = [pb.Scope(user_id=f"bench-{i // 3}", heroine_id=heroines[i % 3]) for i in range(args.scopes)]
    with tempfile.TemporaryDirectory() as folder:
        pg = EmbeddedPostgres(Path(folder) / "pg")
        try:
            with served(pg.url, Path(folder) / "server.log") as channel:
                stub = svc_grpc.MemoryServiceStub(channel)
                for n, scope in enumerate(scopes):
                    rows = range(n * args.memories, (n + 1) * args.memories)
                    stub.StoreMemories(svc.StoreMemoriesRequest(scope=scope, memories=[
                        pb.MemoryInput(
                            speaker=rng.choice([pb.SPEAKER_USER, pb.SPEAKER_HEROINE]),
                            subject=rng.choice(SUBJECTS)[0], content=pool.passages[r],
                            content_type=rng.choice(TYPES), importance=rng.randint(1, 10),
                            embedding=pool.passage_vectors[r].tolist(),
                            visibility=pb.VISIBILITY_SHARED if rng.random() < 0.25 else pb.VISIBILITY_PRIVATE,
                        ) for r in rows
                    ]))
                asks = [(rng.choice(scopes), q) for q in pool.queries[: args.queries]]
                for scope, q in asks:  # warm-up, and every question's vector into the query cache
                    stub.SearchMemories(svc.SearchMemoriesRequest(scope=scope, query=q, limit=10))
                ms: dict[tuple[str, bool], list[float]] = {}
                for scope, q in asks:
                    for shared in (True, False):
                        for name, call in (
                            ("SearchMemories (limit 10)", partial(stub.SearchMemories, svc.SearchMemoriesRequest(
                                scope=scope, query=q, limit=10, include_shared=shared))),
                            ("BuildContext", partial(stub.BuildContext, ctx.BuildContextRequest(
                                scope=scope, utterance=q, token_budget=args.budget, include_shared=shared))),
                        ):
                            time.sleep(args.pause)
                            ms.setdefault((name, shared), []).extend(timed([call]))
        finally:
            pg.stop()
    print(f"{args.scopes} scopes x {args.memories} memories, {len(asks)} questions, budget {args.budget} tokens, "
          f"{args.pause} s between calls")
    print(f"{'ms':<44}{'p50':>8}{'p95':>8}{'p99':>8}{'mean':>8}")
    for shared, label in ((True, "include_shared"), (False, "own rows")):
        s, c = (percentiles(ms[(name, shared)]) for name in ("SearchMemories (limit 10)", "BuildContext"))
        for name, p in (("SearchMemories (limit 10)", s), ("BuildContext", c)):
            print(f"{name + ', ' + label:<44}{p['p50']:>8.2f}{p['p95']:>8.2f}{p['p99']:>8.2f}{p['mean']:>8.2f}")
        print(f"{'ratio context / search, ' + label:<44}"
              + "".join(f"{c[k] / s[k]:>8.2f}" for k in ("p50", "p95", "p99", "mean")))


if __name__ == "__main__":
    main()
