"""The benchmarks: ``python -m benchmarks SUITE`` runs a suite into docs/results/SUITE.json (benchmarks/__main__.py)."""

import os

# Before gRPC is imported: see service/npc_memory/__init__.py (pg_ctl forked from a gRPC process crashed).
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
