"""Loaded by pytest before tests/conftest.py imports gRPC: see service/npc_memory/__init__.py."""

import os

# pg_ctl, forked from a process with gRPC threads to run as the embedded PostgreSQL's user, crashed in gRPC's fork
# handlers (SIGSEGV) when the database was stopped or started under load (tests/resilience/test_db_outage.py).
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
