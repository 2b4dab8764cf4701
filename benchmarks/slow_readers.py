"""Slow readers: does a client that asks for the largest page and never reads it pin the server's memory.

    python -m benchmarks.slow_readers [--readers 30] [--memories 500] [--database-url DSN]

Starts a real ``npc-memory serve`` subprocess (``--embedder none``), seeds one scope with memories of 2,000 Korean
characters, then opens ``--readers`` raw TCP connections that speak just enough HTTP/2 to ask ListMemories for
its largest page (500) and then never read a byte: HTTP/2 flow control lets the server send 64 KB per stream,
so the rest of each response waits in the server. Prints the server's RSS fresh, with the readers connected and
after they have gone.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import struct
import tempfile
import time
import uuid
from pathlib import Path

import grpc
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.stall import big_batch, served

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
LIST_PATH = "/npc_memory.v1.MemoryService/ListMemories"


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _literal(name: str, value: str) -> bytes:
    """An HPACK literal header without indexing, plain strings (lengths below 127)."""
    n, v = name.encode(), value.encode()
    return b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v


def list_call_bytes(port: int, request: svc.ListMemoriesRequest) -> bytes:
    """The bytes of an HTTP/2 connection that makes one ListMemories call: preface, SETTINGS, HEADERS, DATA."""
    headers = b"".join(_literal(k, v) for k, v in (
        (":method", "POST"), (":scheme", "http"), (":path", LIST_PATH), (":authority", f"127.0.0.1:{port}"),
        ("content-type", "application/grpc"), ("te", "trailers"),
    ))
    body = request.SerializeToString()
    message = b"\x00" + struct.pack(">I", len(body)) + body
    return PREFACE + _frame(4, 0, 0, b"") + _frame(1, 4, 1, headers) + _frame(0, 1, 1, message)


def rss_mib(pid: int) -> float:
    """The resident set size of ``pid`` in MiB, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def main_async(args: argparse.Namespace) -> None:
    """Seed, then RSS fresh / with slow readers / after them."""
    with tempfile.TemporaryDirectory(prefix="npc-slow-") as tmp:
        async with served(Path(tmp), args.database_url) as (port, pid):
            scope = pb.Scope(user_id=f"slow-{uuid.uuid4().hex[:8]}", heroine_id="letia")
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = svc_grpc.MemoryServiceStub(channel)
                for b in range(0, args.memories, 250):
                    batch = big_batch(scope, f"s{b}")
                    del batch.memories[min(250, args.memories - b):]
                    await stub.StoreMemories(batch, timeout=300)
                page = await stub.ListMemories(svc.ListMemoriesRequest(scope=scope, page_size=500))
            print(f"seeded {args.memories} memories; one ListMemories page of 500 is "
                  f"{page.ByteSize() / 1e6:.2f} MB with {len(page.memories)} memories")
            await asyncio.sleep(1)
            fresh = rss_mib(pid)
            call = list_call_bytes(port, svc.ListMemoriesRequest(scope=scope, page_size=500))
            readers = []
            for _ in range(args.readers):
                sock = socket.create_connection(("127.0.0.1", port))
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.sendall(call)
                readers.append(sock)
            await asyncio.sleep(5)
            during = rss_mib(pid)
            for sock in readers:
                sock.close()
            await asyncio.sleep(5)
            after = rss_mib(pid)
            print(f"server RSS: fresh {fresh:.0f} MiB, with {args.readers} slow readers {during:.0f} MiB "
                  f"(+{during - fresh:.0f}), after they left {after:.0f} MiB  ({time.strftime('%H:%M:%S')})")


def main() -> None:
    """Parse flags and run."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readers", type=int, default=30)
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--database-url")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
