"""The verl preflight: every mistake a GPU run would find minutes in is refused on CPU, one line each."""

from __future__ import annotations

import json
import os

import pytest
from omegaconf import OmegaConf

from judge_rl.app import run
from judge_rl.config import ArchConfig, LoggerConfig
from judge_rl.backends.verl.entry import with_forwarded_env
from judge_rl.backends.verl.launch import launch_env, read_verl_metrics
from judge_rl.backends.verl.preflight import (
    PreflightError,
    check_lengths,
    check_logger,
    check_paths,
    check_reward_import,
    check_tensor_parallel,
)
from judge_rl.reports.logging import MetricsLogger
from judge_rl.reports.summary import reward_curve

from conftest import compose_config

GPU_CLUSTERS = ["single_gpu", "node_8gpu", "nodes_2x8", "ray_address", "slurm"]
HEADS = {"smollm2-135m": (9, 3), "qwen2.5-7b-instruct": (28, 4)}


@pytest.mark.parametrize("model", sorted(HEADS))
@pytest.mark.parametrize("cluster", GPU_CLUSTERS)
def test_dry_run_writes_a_tp_that_divides_heads_and_gpus(cluster, model, tmp_path):
    """On today's main every 8-GPU option set TP=2 for SmolLM2-135M, whose 9 heads vLLM cannot split in 2."""
    out = run(compose_config([f"cluster={cluster}", f"model={model}", "logger=none", "dry_run=true", f"run_dir={tmp_path}"]))
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


def test_the_reward_file_must_load_in_a_fresh_process(tmp_path, make_job):
    from judge_rl.backends.verl.launch import prepare

    job = make_job(["cluster=single_gpu", "model=qwen2.5-7b-instruct"], run_dir=tmp_path)
    cfg, path, _ = prepare(job, tmp_path)  # passes: verl's loader imports judge_rl's reward module
    broken = tmp_path / "broken_reward.py"
    broken.write_text("import a_module_that_is_not_installed\n")
    OmegaConf.update(cfg, "reward.custom_reward_function.path", str(broken))
    bad = tmp_path / "bad.yaml"
    bad.write_text(OmegaConf.to_yaml(cfg))
    (line,) = check_reward_import(bad, os.environ)
    assert line.startswith("reward.custom_reward_function.path does not load in a fresh process")
    assert "a_module_that_is_not_installed" in line


def test_the_wandb_mode_reaches_the_job_environment_and_no_key_reaches_a_file(tmp_path, make_job, monkeypatch):
    """On today's main the verl process got trainer.logger=[console, wandb] and no mode: wandb.init in a
    Ray actor failed with "No API key configured"."""
    from judge_rl.backends.verl.launch import prepare

    job = make_job(["cluster=single_gpu", "model=qwen2.5-7b-instruct", "logger=wandb", "logger.group=sweep-a"], run_dir=tmp_path)
    env = launch_env(job, tmp_path, {"PATH": os.environ["PATH"]})
    assert env["WANDB_MODE"] == "offline" and env["WANDB_PROJECT"] == "judge_rl" and env["WANDB_RUN_GROUP"] == "sweep-a"
    assert env["VERL_FILE_LOGGER_PATH"].startswith(str((tmp_path / "verl" / "metrics").resolve()))
    assert launch_env(job, tmp_path, {"WANDB_API_KEY": "k" * 40})["WANDB_MODE"] == "online"
    assert launch_env(job, tmp_path, {"WANDB_API_KEY": "k" * 40, "WANDB_MODE": "disabled"})["WANDB_MODE"] == "disabled"
    # the entry process hands them to Ray's runtime env, in memory
    cfg = OmegaConf.create({"ray_kwargs": {"ray_init": {"runtime_env": None}}})
    forwarded = with_forwarded_env(cfg, {**env, "WANDB_API_KEY": "secret-key-0123456789"})
    env_vars = forwarded.ray_kwargs.ray_init.runtime_env.env_vars
    assert env_vars.WANDB_MODE == "offline" and env_vars.WANDB_RUN_GROUP == "sweep-a" and "VERL_FILE_LOGGER_PATH" in env_vars
    # a real dry run with a key in the environment: preflight passes, nothing on disk holds the key
    monkeypatch.setenv("WANDB_API_KEY", "secret-key-0123456789")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    prepare(job, tmp_path)
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
