"""verl across a Ray cluster of two nodes on this machine (issue 38): a head and a second raylet started with
`ray start`, each declaring one logical GPU, and `cluster=cpu_verl cluster.nnodes=2 cluster.ray_address=...`: one
FSDP rank on each node over gloo, vLLM-CPU rollouts, two steps checkpointed. Torn down whatever happens."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from judge_rl.rollouts.vllm_engine import vllm_installed
from vllm_support import free_port, processes_with

RAY = Path(sys.executable).with_name("ray")


@pytest.fixture
def two_nodes():
    """(address, environment, Ray's temp dir) of a two-node cluster; every Ray process of it gone afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="jr2n", dir="/tmp"))  # short: Ray's Unix sockets live under it
    # one machine, no token: a joining `ray start` does not send the head's auth token unless RAY_AUTH_MODE=token
    env = {**os.environ, "RAY_TMPDIR": str(scratch), "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    port = free_port()
    node = ["--num-cpus=8", "--num-gpus=1", "--object-store-memory=800000000"]
    try:
        subprocess.run([str(RAY), "start", "--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={scratch}",
                        f"--ray-client-server-port={free_port()}", *node], env=env, check=True, capture_output=True,
                       timeout=120)  # fmt: skip
        subprocess.run([str(RAY), "start", f"--address=127.0.0.1:{port}", *node], env=env, check=True,
                       capture_output=True, timeout=120)  # fmt: skip
        deadline = time.monotonic() + 120  # the second raylet registers with the head after `ray start` returns
        while True:
            status = subprocess.run([str(RAY), "status", f"--address=127.0.0.1:{port}"], env=env, capture_output=True,
                                    text=True, timeout=60)  # fmt: skip
            if status.stdout.count(" node_") == 2 and "0.0/2.0 GPU" in status.stdout or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert status.stdout.count(" node_") == 2 and "0.0/2.0 GPU" in status.stdout, status.stdout + status.stderr
        yield f"127.0.0.1:{port}", env, scratch
    finally:
        subprocess.run([str(RAY), "stop", "--force"], env=env, capture_output=True, timeout=120)
        deadline = time.monotonic() + 30
        while processes_with(str(scratch)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert processes_with(str(scratch)) == [], "Ray processes of the two-node cluster outlived `ray stop`"


@pytest.mark.slow
@pytest.mark.alone  # 19.1 GB used at its peak: a vLLM engine and an FSDP rank on each node
@pytest.mark.skipif(not vllm_installed(), reason="needs vLLM's CPU build (make install installs it)")
def test_a_verl_job_places_one_fsdp_rank_on_each_node_of_a_two_node_ray_cluster(two_nodes, tmp_path):
    address, env, scratch = two_nodes
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "judge_rl", "cluster=cpu_verl", "cluster.nnodes=2", f"cluster.ray_address={address}",
               "stages=[rl]", "trainer.total_steps=2", "trainer.save_every=1", "trainer.max_new_tokens=32",
               "logger=none", f"run_dir={run_dir}", f"hydra.run.dir={tmp_path / 'hydra'}"]  # fmt: skip
    out = subprocess.run(command, cwd=tmp_path, env={**env, "PYTHONWARNINGS": "ignore"}, capture_output=True,
                         text=True, timeout=1200)  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    ckpts = run_dir / "verl" / "checkpoints"
    assert (ckpts / "global_step_2" / "actor").is_dir() and (ckpts / "latest_checkpointed_iteration.txt").read_text().strip() == "2"
    # each node's raylet started one of verl's training workers (WorkerDict): the ranks sit on both nodes
    logs = sorted((scratch / "session_latest" / "logs").glob("raylet*.out"))
    assert len(logs) == 2, logs
    assert all("WorkerDict.__init__" in log.read_text(errors="ignore") for log in logs), [log.name for log in logs]
