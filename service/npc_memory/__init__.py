"""npc-memory: long-term memory for game NPCs, served over gRPC."""

import os

__version__ = "0.1.0"

# Before anything imports gRPC (it reads this once, at import): its fork handlers run in every child forked from
# a process with gRPC threads, and a child forked to run as another user (pg_ctl starting or stopping the
# embedded PostgreSQL, run as its own user when the service runs as root) crashed in them with SIGSEGV. The
# service never forks a child that uses gRPC (its worker processes are spawned), so it needs none of them.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
