"""Fixtures for the verl backend tests: judge_rl jobs composed from conf/, a small exported data set,
the translated verl config, and SmolLM2's tokenizer. Everything runs on CPU; nothing starts Ray."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CACHE_DIR, compose_config, job_reward

from judge_rl.config import JobConfig, ModelConfig
from judge_rl.jobs.train import to_job_config

# hub configs need no GGUF conversion; verl only reads the name unless a critic is built (PPO), whose
# config verl builds from the checkpoint itself, so PPO uses the embedded model's converted copy
HUB_MODEL = "model=qwen2.5-7b-instruct"
LOCAL_MODEL = "model=smollm2-135m"



def _make_job(overrides: list[str], run_dir: Path | str = "/tmp/judge_rl_verl_test") -> JobConfig:
    return to_job_config(compose_config([f"run_dir={run_dir}", "logger=none", *overrides]))


@pytest.fixture
def make_job():
    """make_job(overrides) -> the JobConfig composed from conf/ (logger=none, a fixed run_dir)."""
    return _make_job


@pytest.fixture
def model_for():
    """model_for(algorithm) -> the model override its translator test uses."""
    return lambda algorithm: LOCAL_MODEL if algorithm == "ppo" else HUB_MODEL


@pytest.fixture(scope="session")
def data_files(tmp_path_factory) -> dict[str, str]:
    """A few synthetic pairs exported for the strength prompt (train: balanced, val: both orders)."""
    from judge_rl.data import load_dataset_pairs
    from judge_rl.backends.verl import export_parquet
    from judge_rl.prompts import get_prompt

    out = tmp_path_factory.mktemp("verl_data")
    pairs = list(load_dataset_pairs("synthetic", n=8, seed=0, split="train"))
    files = {}
    for split, orders in (("train", "balanced"), ("val", "both")):
        path = out / f"{split}.parquet"
        export_parquet(pairs, get_prompt("strength"), path, seed=0, reward_name="strength", orders=orders)
        files[split] = str(path)
    return files


@pytest.fixture
def translate(data_files, tmp_path):
    """translate(overrides, **verl_config kwargs) -> (job, verl cfg)."""
    from judge_rl.backends.verl import reward_module_path, verl_config
    from judge_rl.backends.verl.export import judge_reward_kwargs

    def run(overrides: list[str], **kwargs):
        job = _make_job(overrides)
        args = dict(
            data_files=data_files,
            reward_module=reward_module_path(),
            reward_kwargs=judge_reward_kwargs(job, job_reward(job)),
            stages=job.stages,
            experiment_name="test",
            ckpt_dir=tmp_path / "ckpt",
            n_gpus_per_node=1,
            nnodes=1,
        )
        args.update(kwargs)
        return job, verl_config(job, **args)

    return run


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    from judge_rl.models.loading import load_tokenizer

    return load_tokenizer(ModelConfig(source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf"), CACHE_DIR)
