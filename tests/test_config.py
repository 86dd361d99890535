"""Config validation: every step, size and rate field, the judge's weights and the loaders' arguments are
checked before any model loads, with the key named."""

from __future__ import annotations

import re

import pytest
from hydra import compose, initialize_config_dir

from judge_rl.jobs.evaluate import to_eval_config
from judge_rl.jobs.train import to_job_config

from conftest import CACHE_DIR, CONF_DIR, compose_config, job_reward


def job(*overrides: str):
    return to_job_config(compose_config(["run_dir=/tmp/unused", "model=tiny-random", *overrides]))


def eval_job(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="evaluate", overrides=[f"cache_dir={CACHE_DIR}", "run_dir=/tmp/unused", "model=tiny-random", *overrides])
    return to_eval_config(cfg)


@pytest.mark.parametrize(
    "override, message",
    [
        ("trainer.save_every=0", "trainer.save_every=0: expected >= 1"),
        ("trainer.total_steps=0", "trainer.total_steps=0: expected >= 1"),
        ("trainer.total_steps=-3", "trainer.total_steps=-3: expected >= 1"),
        ("trainer.prompts_per_step=0", "trainer.prompts_per_step=0: expected >= 1"),
        ("eval.limit=-1", "eval.limit=-1: expected >= 1"),
        ("eval.limit=0", "eval.limit=0: expected >= 1"),
        ("eval.max_server_failure_rate=1.5", r"eval.max_server_failure_rate=1.5: expected \[0, 1\]"),
        ("trainer.top_p=0", r"trainer.top_p=0.0: expected \(0, 1\]"),
        ("sft.batch_size=0", "sft.batch_size=0: expected >= 1"),
        ("eval.benchmark_limit=0", "eval.benchmark_limit=0: expected >= 1"),
        ("algorithm.lr=inf", "algorithm.lr=inf: expected a finite number > 0"),
        ("algorithm.lr=nan", "algorithm.lr=nan: expected a finite number > 0"),
        ("algorithm.grad_clip=inf", "algorithm.grad_clip=inf: expected a finite number > 0"),
        ("sft.lr=inf", "sft.lr=inf: expected a finite number > 0"),
        ("trainer.temperature=inf", "trainer.temperature=inf: expected a finite number > 0"),
        ("seed=-1", r"seed=-1: expected \[0, 4294967295\]"),
    ],
)
def test_main_job_refuses_out_of_range_fields(override, message):
    with pytest.raises(ValueError, match=message):
        job(override)


@pytest.mark.parametrize(
    "override, message",
    [
        ("server.backoff_s=-1", r"server.backoff_s=-1.0: expected >= 0"),
        ("server.timeout_s=0", r"server.timeout_s=0.0: expected > 0"),
        ("server.max_retries=-1", "server.max_retries=-1: expected >= 0"),
        ("benchmark.limit=-1", "benchmark.limit=-1: expected >= 1"),
        ("server.concurrency=0", "server.concurrency=0: expected >= 1"),
        ("server.timeout_s=inf", "server.timeout_s=inf: expected a finite number > 0"),
        ("seed=-1", r"seed=-1: expected \[0, 4294967295\]"),
    ],
)
def test_eval_app_refuses_out_of_range_fields(override, message):
    overrides = [override]
    if override.startswith(("server.backoff", "server.timeout", "server.max_retries", "server.concurrency")):
        overrides = ["server=openai", "server.base_url=http://127.0.0.1:9/v1", override]
    with pytest.raises(ValueError, match=message):
        eval_job(*overrides)


def test_a_misspelt_source_fails_at_once_not_after_a_hub_attempt():
    with pytest.raises(ValueError, match="model.source='lcoal': expected one of gguf_package, hub, local, tiny_random"):
        job("model.source=lcoal")


def test_missing_model_directories_are_named(tmp_path):
    with pytest.raises(ValueError, match=f"model.path={tmp_path}/nope: no such directory"):
        job("model.source=local", f"model.path={tmp_path}/nope")
    with pytest.raises(ValueError, match=f"judge.checkpoint={tmp_path}/ckpt: no such directory"):
        eval_job(f"judge.checkpoint={tmp_path}/ckpt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a model directory"):
        eval_job(f"judge.checkpoint={tmp_path}/empty")


def test_a_misspelt_loader_argument_is_named():
    with pytest.raises(ValueError, match="data.eval.kwargs.limt: loader 'synthetic' has no argument 'limt'"):
        job("+data.eval.kwargs.limt=2")


EXPERIMENTS = sorted(p.stem for p in (CONF_DIR.parent / "experiments").glob("*.yaml"))


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_composes_and_passes_validation(name):
    job = to_job_config(compose_config(["run_dir=/tmp/unused", f"experiments={name}"]))
    assert job.trainer.total_steps >= 1
    if name == "reference_guided_grpo":
        assert job.algorithm.group_both_orders and job.data.train.kwargs["reference"] and job.data.eval.kwargs["reference"]


@pytest.mark.parametrize("override", ["reward=consistency", "reward=binary", "reward.weights.correct_weight=2.0"])
def test_a_reward_the_bradley_terry_recipe_does_not_read_is_refused(override):
    """On the main before this `reward=consistency algorithm=bt` trained a BT model and reported it as if the reward
    had shaped it."""
    with pytest.raises(ValueError, match=r"algorithm=bt \(recipe bt\) does not read `reward`.*reward=strength"):
        job("algorithm=bt", override)
    assert job("algorithm=bt").algorithm.name == "bt"  # the default reward: nothing set, nothing refused
    assert job("algorithm=grpo", override).reward.name  # the online recipe reads it


@pytest.mark.parametrize("override, message", [
    ("trainer.logprob_pass=flash", r"^trainer.logprob_pass='flash': expected auto or one of padded, shared_prefix$"),
    ("cluster.device=gpu", r"^cluster.device='gpu': expected auto, cpu or cuda$"),
])
def test_the_local_backend_refuses_an_unknown_log_prob_pass_or_device(override, message):
    with pytest.raises(ValueError, match=message):
        job(override)


def test_cluster_local_gpu_sizes_micro_batches_for_a_gpu_and_is_refused_where_none_is_visible(tmp_path):
    """cluster=local_gpu composes and validates anywhere (a GPU sweep is checked on a laptop); the job itself, started
    where no CUDA device is visible, stops in one line before any data or model loads."""
    import torch

    from judge_rl.jobs.train import run_job

    job_cfg = job("cluster=local_gpu", f"run_dir={tmp_path}")
    assert job_cfg.cluster.backend == "local" and job_cfg.cluster.device == "cuda"
    assert job_cfg.algorithm.ppo_micro_batch_size == 16
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"^cluster=local_gpu \(cluster.device=cuda\): no CUDA device is visible"):
            run_job(job_cfg, tmp_path, job_reward(job_cfg))
        assert not any(tmp_path.iterdir())  # nothing was written: it stopped first


@pytest.mark.parametrize("path, message", [
    ("{tmp}", r"^benchmark.path={tmp}: a directory; expected a data file"),
    ("{tmp}/missing.jsonl", r"^benchmark.path={tmp}/missing.jsonl: no such file$"),
])  # fmt: skip
def test_eval_app_checks_the_benchmark_path_before_the_judge_is_built(tmp_path, path, message):
    """Issue 55: a directory or a missing file was found only after the judge model was built, named as a file."""
    path, message = path.format(tmp=tmp_path), message.format(tmp=re.escape(str(tmp_path)))
    with pytest.raises(ValueError, match=message):
        eval_job("benchmark=preference", f"benchmark.path={path}")
    eval_job("benchmark=rewardbench")  # a hub dataset name passes: it is fetched, not checked here


@pytest.mark.parametrize("debug", ["tiny", "cpu"])
def test_a_debug_option_shrinks_sizes_and_never_changes_which_stages_a_point_runs(debug):
    """Issue 55: debug=tiny set the default stages after judge_ladder=, so the `untrained` rung (stages [eval_base])
    was trained in a smoke run and the policy sweep that reads its base evaluation failed."""
    assert job("judge_ladder=untrained", f"debug={debug}").stages == ["eval_base"]
    assert job("stages=[rl,eval_rl]", f"debug={debug}").stages == ["rl", "eval_rl"]
    assert job(f"debug={debug}").stages == ["sft", "eval_sft", "rl", "eval_rl"]  # the default, as without debug
