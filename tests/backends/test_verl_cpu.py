"""verl on this machine's CPU (cluster=cpu_verl): the platform plugin's answers, the translation, and one real
verl GRPO job end to end: Ray, FSDP2 actor/ref on gloo, vLLM-CPU rollouts with weight sync, checkpoints, a
crash and resume, verl's model merger, and evaluation of the merged judge."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge_rl.backends.verl.launch import CPU_PLATFORM_MODULE, FORWARDED_ENV, cpu_platform_env, launch_env

REPO = Path(__file__).resolve().parents[2]


def _vllm_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def test_cpu_platform_env_adds_the_plugin_to_modules_already_named_and_reaches_the_workers():
    env = cpu_platform_env({"VERL_USE_EXTERNAL_MODULES": "my.plugin", "VLLM_CPU_KVCACHE_SPACE": "3"})
    assert env == {"VERL_USE_EXTERNAL_MODULES": f"my.plugin,{CPU_PLATFORM_MODULE}", "VERL_PLATFORM": "cpu",
                   "VLLM_CPU_KVCACHE_SPACE": "3"}
    assert cpu_platform_env({})["VERL_USE_EXTERNAL_MODULES"] == CPU_PLATFORM_MODULE
    assert set(env) <= set(FORWARDED_ENV)


def test_the_cpu_platform_answers_verls_device_questions_for_a_cpu():
    # in a fresh process: the platform verl resolves is a per-process singleton
    code = (
        "import torch, verl\n"
        "from verl.utils.device import get_device_name, get_nccl_backend, get_torch_device, get_device_id\n"
        "from verl.workers.engine import EngineRegistry\n"
        "from verl.plugin.platform import get_platform\n"
        "p = get_platform()\n"
        "x = torch.ones(2).to(get_device_id())\n"
        "print(get_device_name(), get_nccl_backend(), p.ray_resource_options(1), x.device,\n"
        "      get_torch_device().memory_allocated(), get_torch_device().mem_get_info()[1] > 0,\n"
        "      EngineRegistry.get_engine_cls('language_model', 'fsdp2').__name__,\n"
        "      p.is_platform_available(use_smi_check=True), torch.distributed.is_initialized())\n"
    )
    env = {**os.environ, **cpu_platform_env({}), "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=REPO)
    # not auto-detected (chosen by VERL_PLATFORM only); no process group outside a verl worker
    assert out.stdout.strip().splitlines()[-1] == "cpu gloo {'num_gpus': 1} cpu 0 True FSDPEngineWithLMHead False False"


def test_a_verl_worker_process_gets_a_gloo_process_group_before_verl_asks_for_an_impossible_one():
    code = ("import torch.distributed as dist, verl\n"
            "print(dist.is_initialized() and dist.get_backend(), dist.get_world_size())\n")
    env = {**os.environ, **cpu_platform_env({}), "RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": "29517", "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split()[-2:] == ["gloo", "1"], out.stdout + out.stderr


def _dry_run(tmp_path: Path, *overrides: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "judge_rl", "cluster=cpu_verl", "stages=[rl]", "logger=none", f"run_dir={tmp_path}",
         "--dry-run", *overrides],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(tmp_path / "verl" / "ppo_trainer.yaml"))


def test_cluster_cpu_verl_translates_to_a_cpu_job_verl_validates(tmp_path):
    cfg = _dry_run(tmp_path)
    arr = cfg["actor_rollout_ref"]
    assert cfg["trainer"]["device"] == "cpu"
    assert arr["actor"]["strategy"] == arr["ref"]["strategy"] == "fsdp2"
    assert arr["ref"]["fsdp_config"]["forward_only"] is False and arr["ref"]["optim"]["lr"] == arr["actor"]["optim"]["lr"]
    assert arr["rollout"]["enable_sleep_mode"] is False and arr["rollout"]["enforce_eager"] is True
    assert arr["rollout"]["engine_kwargs"]["vllm"]["worker_extension_cls"].endswith("CPUColocateWorkerExtension")
    assert arr["rollout"]["max_model_len"] >= arr["rollout"]["prompt_length"] + arr["rollout"]["response_length"]
    assert cfg["ray_kwargs"]["ray_init"]["num_gpus"] == cfg["trainer"]["n_gpus_per_node"] == 1


def test_a_gpu_cluster_gets_none_of_the_cpu_settings(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "judge_rl", "cluster=single_gpu", "stages=[rl]", "logger=none", f"run_dir={tmp_path}",
         "--dry-run"], capture_output=True, text=True, cwd=REPO)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(tmp_path / "verl" / "ppo_trainer.yaml")
    assert cfg.trainer.device == "cuda" and "enable_sleep_mode" not in cfg.actor_rollout_ref.rollout
    assert "worker_extension_cls" not in cfg.actor_rollout_ref.rollout.engine_kwargs.vllm


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]


@pytest.mark.slow
@pytest.mark.skipif(not _vllm_installed(), reason="needs vLLM's CPU build (make install installs it)")
def test_a_real_verl_grpo_job_on_cpu_trains_checkpoints_resumes_after_a_crash_merges_and_is_evaluated(tmp_path):
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "judge_rl", "cluster=cpu_verl", "stages=[rl,eval_rl]", "logger=none",
               "trainer.total_steps=3", "trainer.save_every=1", "trainer.max_new_tokens=32", "eval.limit=4",
               "eval.benchmarks=[]", f"run_dir={run_dir}"]  # fmt: skip
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    log1 = open(tmp_path / "launch1.log", "wb")
    first = subprocess.Popen(command, cwd=REPO, env=env, stdout=log1, stderr=subprocess.STDOUT, start_new_session=True)
    step2 = run_dir / "verl" / "checkpoints" / "global_step_2"
    deadline = time.monotonic() + 900
    while not (step2 / "actor").is_dir() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(2)
    time.sleep(5)  # let the step-2 checkpoint finish writing before the crash
    assert first.poll() is None, (tmp_path / "launch1.log").read_text()[-3000:]
    os.killpg(first.pid, signal.SIGKILL)  # a crash: nothing gets to clean up
    first.wait()
    time.sleep(5)  # Ray's daemons notice their driver died

    second = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-4000:]

    launches = sorted((run_dir / "verl" / "metrics").glob("*.jsonl"))
    assert len(launches) == 2
    resumed_steps = [json.loads(line)["step"] for line in launches[1].read_text().splitlines() if line.strip()]
    assert resumed_steps == [3], "the second launch resumed from global_step_2 and ran only step 3"
    steps = _metrics(run_dir)
    assert [m["step"] for m in steps] == [1, 2, 3]
    for m in steps:
        for key in ("timing_s/gen", "timing_s/old_log_prob", "timing_s/ref", "timing_s/update_actor", "timing_s/step"):
            assert m[key] > 0, key
        # the rollout engine samples with the actor's current weights: vLLM-CPU's and FSDP's token probabilities
        # agree closely at every step, including after the weight syncs (a failed sync shows as a large diff)
        assert m["training/rollout_probs_diff_mean"] < 0.05
    assert (run_dir / "rl_model" / "model.safetensors").is_file()
    results = json.loads((run_dir / "results.json").read_text())
    assert results["training"]["rl"]["steps"] == 3 and len(results["training"]["rl"]["rewards"]) == 3
    held_out = results["evaluations"]["rl"]["held_out"]["metrics"]  # the merged checkpoint, both answer orders
    assert held_out["n_pairs"] == 4 and held_out["n_items"] == 8


@pytest.mark.slow
@pytest.mark.skipif(not _vllm_installed(), reason="needs vLLM's CPU build (make install installs it)")
def test_the_policy_job_runs_on_verl_cpu_with_a_locally_served_judge(tmp_path):
    # verl's reward loop calls judge_rl's async compute_score in its reward workers, which grade over HTTP with the
    # judge the job serves; the untrained judge's replies are often truncated: those samples must leave the batch
    # (JudgeSampleFailed), never score 0
    run_dir = tmp_path / "policy"
    out = subprocess.run(
        [sys.executable, "-m", "judge_rl.policy", "cluster=cpu_verl", "policy_debug=tiny", "model=smollm2-135m",
         "judge.model=smollm2-135m", f"run_dir={run_dir}"],
        cwd=REPO, env={**os.environ, "PYTHONWARNINGS": "ignore"}, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-4000:]
    assert [m["step"] for m in _metrics(run_dir)] == [1, 2]
    assert "the sample leaves the batch" in log and "Failed to deserialize exception" not in log
    results = json.loads((run_dir / "results.json").read_text())
    assert results["training"]["rl"]["steps"] == 2
    # the dropped samples are counted from the reward workers' outcomes, not read as "0 failed" from verl's metrics
    failures, judge = results["training"]["rl"]["judge_failure"], results["training"]["rl"]["judge"]
    assert failures["samples"] >= 1 and failures["trained_samples"] >= 1 and sum(failures["reasons"].values()) == failures["samples"]
    assert judge["calls"] >= failures["samples"] + failures["trained_samples"] and "verl reward workers" in failures["source"]
    assert set(results["evaluations"]) >= {"before", "after"}
    assert (run_dir / "rl_model" / "model.safetensors").is_file()
