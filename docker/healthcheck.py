"""The image's health probe: exit 0 when the service answers grpc.health.v1 Check with SERVING, else 1.

Used by the Dockerfile's HEALTHCHECK (Kubernetes probes gRPC health natively, see deploy/kubernetes/).
It asks for the memory service by name, so it fails while the database or the embedder is down.

    python healthcheck.py [PORT]    (default: $NPC_MEMORY_PORT, else 50051)
"""

from __future__ import annotations

import os
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

SERVICE = "npc_memory.v1.MemoryService"
TIMEOUT_SECONDS = 2.0


def check(port: int) -> bool:
    """Whether the service on localhost:``port`` reports SERVING."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=TIMEOUT_SECONDS)
        except grpc.RpcError as exc:
            print(f"unhealthy: {exc.code().name}", file=sys.stderr)
            return False
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        print(f"unhealthy: {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}", file=sys.stderr)
        return False
    return True


def main(argv: list[str]) -> int:
    """Probe the port named on the command line or in the environment."""
    port = int(argv[1]) if len(argv) > 1 else int(os.environ.get("NPC_MEMORY_PORT") or 50051)
    return 0 if check(port) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
