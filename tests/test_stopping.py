"""SIGTERM, as a scheduler stops a job (judge_rl/stopping.py): the main job finishes the RL step under way,
logs and checkpoints it, says "interrupted" in status.json, exits 143, and a re-run resumes from that step; the
eval app keeps every judgment it wrote and a re-run reuses them. On the main before this, both died with
status.json still "running" and a dead pid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge_rl import stopping
from judge_rl.jobs.train import run

from conftest import CACHE_DIR, REPO_ROOT, TINY_RUN, compose_config

ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONWARNINGS": "ignore"}


def start(module: str, overrides: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", module, *overrides], cwd=REPO_ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip


def wait_for(proc: subprocess.Popen, ready, timeout_s: float = 300) -> None:
    deadline = time.time() + timeout_s
    while not ready() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    if proc.poll() is not None or not ready():
        proc.kill()
        out = proc.communicate()[0]
        pytest.fail(f"the job ended or stalled before the point to stop it at:\n{out[-3000:]}")


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.usefixtures("cleans_up_after_kills")
def test_sigterm_mid_rl_checkpoints_the_step_under_way_and_the_rerun_resumes(tmp_path):
    overrides = [*TINY_RUN, "stages=[rl]", "trainer.total_steps=4", "trainer.save_every=10", "trainer.max_new_tokens=24",
                 f"cache_dir={CACHE_DIR}", f"run_dir={tmp_path}"]  # fmt: skip
    proc = start("judge_rl", overrides)
    wait_for(proc, lambda: len(lines(tmp_path / "metrics.jsonl")) >= 1)  # step 1 done, step 2 under way
    os.kill(proc.pid, signal.SIGTERM)
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == stopping.EXIT_CODE == 143, out[-3000:]
    assert "interrupted by SIGTERM" in out
    status = json.loads((tmp_path / "status.json").read_text())
    assert (status["status"], status["error"]) == ("interrupted", "SIGTERM")
    # save_every=10 would have written no checkpoint before step 4: the stop saved the step it let finish
    stopped_at = int((tmp_path / "checkpoints" / "latest_checkpointed_iteration.txt").read_text())
    assert 1 <= stopped_at < 4
    assert [r["step"] for r in lines(tmp_path / "metrics.jsonl")] == list(range(1, stopped_at + 1))
    assert not (tmp_path / "rl_model").exists()

    resumed = run(compose_config(overrides))
    assert resumed["training"]["rl"]["resumed_from"] == stopped_at
    assert [r["step"] for r in lines(tmp_path / "metrics.jsonl")] == [1, 2, 3, 4]
    assert json.loads((tmp_path / "status.json").read_text())["status"] == "finished"


# peak memory: 6.1 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.usefixtures("cleans_up_after_kills")
def test_sigterm_mid_evaluation_keeps_the_judgments_written_and_the_rerun_reuses_them(tmp_path):
    overrides = ["model=tiny-random", "benchmark=llmbar_natural", "benchmark.limit=16", "server.max_new_tokens=24",
                 "server.batch_size=2", "server.chunk_size=2", "logger=none", f"cache_dir={CACHE_DIR}",
                 f"run_dir={tmp_path}"]  # fmt: skip
    judgments = tmp_path / "judgments.jsonl"
    proc = start("judge_rl.eval", overrides)
    wait_for(proc, lambda: len(lines(judgments)) >= 2)
    os.kill(proc.pid, signal.SIGTERM)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 143, out[-3000:]
    assert json.loads((tmp_path / "status.json").read_text())["status"] == "interrupted"
    kept = lines(judgments)  # every line whole: the file was closed, not cut
    assert 2 <= len(kept) < 32

    again = start("judge_rl.eval", overrides)
    out = again.communicate(timeout=600)[0]
    assert again.returncode == 0, out[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"]["reused"] == len(kept) and summary["counts"]["items"] == 32
    assert json.loads((tmp_path / "status.json").read_text())["status"] == "finished"


# peak memory: 5.9 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.usefixtures("cleans_up_after_kills")
def test_a_second_sigterm_does_not_wait_for_the_step(tmp_path):
    """Inside `deferred()` the first SIGTERM only asks; a second one raises at once (a user who means it)."""
    code = ("import os, signal, time\n"
            "from judge_rl import stopping\n"
            "stopping.install()\n"
            "try:\n"
            "    with stopping.deferred():\n"
            "        os.kill(os.getpid(), signal.SIGTERM)\n"
            "        assert stopping.requested()\n"
            "        print('asked', flush=True)\n"
            "        os.kill(os.getpid(), signal.SIGTERM)\n"
            "        time.sleep(5)\n"
            "        print('not reached', flush=True)\n"
            "except stopping.Terminated as e:\n"
            "    print('stopped', e, flush=True)\n")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["asked", "stopped", "SIGTERM"], out.stderr
