"""The local model's idle OpenMP threads stop spinning when the service says (GOMP_SPINCOUNT, set before it loads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from npc_memory.cli import build_parser
from npc_memory.config import load_config
from npc_memory.embedding.local import spin_before_load

# In a fresh process (libgomp reads its spin count once, when the model's library loads): the service's embedder
# with the given spin count, one call forced onto two OpenMP threads, then how much CPU the process spends in the
# next 0.2 s while it only sleeps: that is the team's other thread spinning at the dock before it sleeps.
PROBE = """
import json, os, sys, time
from npc_memory.embedding.local import LocalE5Embedder
e = LocalE5Embedder(threads=2, spin_count=int(sys.argv[1]))
e._set_threads(2)
after = []
for i in range(5):
    e._model.encode(["레티아가 좋아하는 꽃은 장미라고 했어 " + str(i)], True)
    t = time.process_time()
    time.sleep(0.2)
    after.append((time.process_time() - t) * 1000)
print(json.dumps({"after_ms": sorted(after)[2], "env": os.environ.get("GOMP_SPINCOUNT")}))
"""


def probe(spin_count: int) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", PROBE, str(spin_count)], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a team of two threads needs two cores")
def test_a_short_spin_count_stops_the_idle_thread_soon_after_a_call() -> None:
    short, default = probe(1000), probe(0)
    assert short["env"] == "1000"
    assert default["env"] is None
    assert isinstance(short["after_ms"], float)
    assert isinstance(default["after_ms"], float)
    # OpenMP's default (300,000 rounds) spins ~10 ms of CPU after a call on this VM; 1,000 rounds ~0.1 ms.
    assert short["after_ms"] < 2.0, short
    assert default["after_ms"] > short["after_ms"] + 2.0, (short, default)


def test_an_operators_own_openmp_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv("GOMP_SPINCOUNT", "5")
    spin_before_load(100_000)
    assert os.environ["GOMP_SPINCOUNT"] == "5"
    monkeypatch.delenv("GOMP_SPINCOUNT")
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")
    spin_before_load(100_000)
    assert "GOMP_SPINCOUNT" not in os.environ
    monkeypatch.delenv("OMP_WAIT_POLICY")
    spin_before_load(0)
    assert "GOMP_SPINCOUNT" not in os.environ
    spin_before_load(100_000)
    assert os.environ["GOMP_SPINCOUNT"] == "100000"


def test_the_spin_count_is_a_setting() -> None:
    flags = vars(build_parser().parse_args(["serve"]))
    assert load_config(flags, {}).embedding.spin_count == 100_000
    assert load_config(flags, {"NPC_MEMORY_EMBEDDING_SPIN_COUNT": "0"}).embedding.spin_count == 0
