"""`python -m judge_rl.policy judge=vllm policy_debug=tiny` end to end (slow; where vllm imports: vLLM's CPU build
here): the job starts `vllm serve` of the embedded SmolLM2-135M itself, the tiny policy's samples are graded by it
(judged rewards, not failures only), and the server is stopped when the job ends."""

from __future__ import annotations

import json
import os
import sys

import pytest
from hydra import compose, initialize_config_dir

from vllm_support import require_vllm, free_port, port_free, processes_with
from conftest import CACHE_DIR, CONF_DIR
from judge_rl.jobs.policy import run
from judge_rl.reports.jsonl import read_jsonl
from judge_rl.rundir import read_status










# peak memory: 7.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.slow
def test_tiny_policy_job_with_a_vllm_judge_it_starts_and_stops(tmp_path):
    require_vllm()
    port, run_dir = free_port(), tmp_path / "run"
    overrides = [f"cache_dir={CACHE_DIR}", "policy_debug=tiny", "judge=vllm", "judge.model=smollm2-135m",
                 f"judge.port={port}", "judge.max_model_len=1024", "judge.startup_timeout_s=300", "judge.concurrency=8",
                 "judge.max_tokens=8", "+judge.extra_body.stop=[.]", f"run_dir={run_dir}", "ifeval.enabled=false"]  # fmt: skip
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="policy", overrides=overrides)
    results = run(cfg)
    assert read_status(run_dir)["status"] == "finished" and (run_dir / "rl_model" / "config.json").exists()
    rl = results["training"]["rl"]
    print(f"\n{json.dumps(rl['judge'])}; judge failures {rl['judge_failure']['samples']:g} samples "
          f"{rl['judge_failure']['reasons']}; {results['wall_s']:.0f}s")
    assert rl["steps"] == 2 and rl["judge"]["calls"] > 0 and rl["judge"]["failures"] < rl["judge"]["calls"]
    rows = [r for step in (1, 2) for r in read_jsonl(run_dir / "samples" / f"step_{step}.jsonl")]
    judged = [r for r in rows if r["score"] is not None]
    assert len(rows) == 16 and judged, "the vLLM judge graded no sample"
    assert all(r["failure"] for r in rows if r["score"] is None)  # a sample is judged or failed, never a silent 0
    # the job started vLLM's server (this Python's module) and stopped it at the end
    log = run_dir / "judge_server" / "vllm_serve.log"
    assert log.read_text().startswith(f"$ {sys.executable} -m vllm.entrypoints.cli.main serve ")
    assert f"--port {port} --served-model-name smollm2-135m@job-{os.getpid()}-" in log.read_text()  # its own id
    assert port_free(port) and processes_with(f"--port {port} ") == []
