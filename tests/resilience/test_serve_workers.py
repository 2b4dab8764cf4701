"""``npc-memory serve --workers 2`` as a real process tree: both workers serve one port, SIGTERM stops them all.

Each worker is a process of its own (its pool, its model) bound to the same port with SO_REUSEPORT; the kernel
spreads new connections over them. A fact stored through one connection is found through fresh connections
(whichever worker answers reads the same database), and SIGTERM to the parent leaves no worker behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import grpc
import httpx
import psutil
from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from ports import free_port

BIN = Path(sys.executable).parent
START_TIMEOUT = 180.0
CONNECTIONS = 16
"""Fresh connections searched through: all landing on one of two workers has odds 2 / 2**16."""


def wait_serving(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until the port's health check says SERVING (or the parent died)."""
    deadline = time.monotonic() + START_TIMEOUT
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                reply = health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.5)
    raise AssertionError(f"--workers 2 did not serve in {START_TIMEOUT}s: {log.read_text()[-3000:]}")


def searches_answered(metrics_port: int) -> int:
    """SearchMemories calls one worker answered OK, from its /metrics."""
    text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
    line = 'npc_memory_rpc_seconds_count{code="OK",method="SearchMemories"} '
    return sum(int(float(row.removeprefix(line))) for row in text.splitlines() if row.startswith(line))


def listening_lines(log: Path) -> list[str]:
    """The workers' start lines so far."""
    return [line for line in log.read_text().splitlines() if "npc-memory listening" in line]


def test_two_workers_share_the_port_the_data_and_the_stop(database_url: str, tmp_path: Path) -> None:
    """Both workers start (each on uvloop), every fresh connection finds the stored fact, SIGTERM ends the tree."""
    port, metrics, log = free_port(), free_port(), tmp_path / "workers.log"
    env = {**os.environ, "NPC_MEMORY_TOKENIZE_PROCESSES": "0", "NPC_MEMORY_POOL_MAX": "4"}
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(BIN / "npc-memory"), "serve", "--workers", "2", "--port", str(port), "--host", "127.0.0.1",
             "--database-url", database_url, "--metrics-port", str(metrics)],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )
    try:
        wait_serving(port, proc, log)
        deadline = time.monotonic() + START_TIMEOUT
        while len(listening_lines(log)) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        lines = listening_lines(log)
        assert len(lines) == 2, log.read_text()[-3000:]
        assert all("event loop uvloop)" in line for line in lines), lines
        # The spawned workers (multiprocessing's resource tracker is a child too, not a worker).
        workers = [c for c in psutil.Process(proc.pid).children() if "spawn_main" in " ".join(c.cmdline())]
        assert len(workers) == 2, psutil.Process(proc.pid).children()

        user_id, secret = "workers-" + uuid.uuid4().hex[:8], "등대 옆 빵집의 " + uuid.uuid4().hex[:6]
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            store = svc.StoreMemoriesRequest(scope=pb.Scope(user_id=user_id, heroine_id="letia"))
            store.memories.add(content=secret, importance=5, speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER)
            svc_grpc.MemoryServiceStub(channel).StoreMemories(store, timeout=60)
        for _ in range(CONNECTIONS):  # fresh connections: the kernel hands each to one worker or the other
            with grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)]) as ch:
                search = svc.SearchMemoriesRequest(scope=pb.Scope(user_id=user_id, heroine_id="letia"),
                                                   query=secret, limit=3)
                reply = svc_grpc.MemoryServiceStub(ch).SearchMemories(search, timeout=60)
                assert [r.memory.content for r in reply.results] == [secret]
        # Each worker serves its own /metrics on metrics_port + i: both answered some of the searches.
        answered = [searches_answered(metrics + i) for i in range(2)]
        assert sum(answered) == CONNECTIONS, answered
        assert min(answered) > 0, answered

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
        _gone, alive = psutil.wait_procs(workers, timeout=10)
        assert not alive, alive
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
