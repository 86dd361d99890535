"""Every algorithm option: its advantages are verl's, and two real steps on the tiny model train."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo import core_algos

from judge_rl.jobs.train import run
from judge_rl.backends.algorithm import AlgorithmConfig, KLControlConfig
from judge_rl.jobs.train import to_job_config
from judge_rl.rewards import register_reward
from judge_rl.updates.batch import token_level_scores
from judge_rl.backends.local.backend import apply_kl_penalty, compute_advantages

from conftest import online_algorithms, CONF_DIR, TINY_RUN, compose_config

@register_reward("test_length_signal")
@dataclass(frozen=True)
class LengthSignal:
    """A test reward that varies for an untrained model (which never writes a verdict), so the
    backends have a non-zero learning signal: the output length modulo 7, scaled to [0, 1]."""

    name: ClassVar[str] = "test_length_signal"
    prompt: ClassVar[str] = "strength"
    # the default reward's weight names, so it can stand in for reward=strength (unused)
    format_weight: float = 0.0
    correct_weight: float = 1.0
    strength_weight: float = 1.0

    def __call__(self, solution_str, ground_truth):
        return {"score": (len(solution_str) % 7) / 6, "format_ok": 0.0, "correct": 0.0, "parse_error": ""}


ALGORITHMS = online_algorithms()

SCORES = torch.tensor([1.0, 0.0, 0.75, 0.0, 1.0, 1.0])
MASK = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]]).float()
UIDS = np.array(["p1", "p1", "p1", "p2", "p2", "p2"])


def algo_of(name: str) -> AlgorithmConfig:
    return to_job_config(compose_config([f"algorithm={name}", "run_dir=/tmp/x"])).algorithm


def test_every_algorithm_option_is_known():
    assert set(ALGORITHMS) >= {"grpo", "dr_grpo", "ppo", "reinforce_pp", "reinforce_pp_baseline", "rloo"}


@pytest.mark.parametrize("name", ALGORITHMS)
def test_advantages_equal_verls_function_called_directly(name):
    algo = algo_of(name)
    rewards = token_level_scores(SCORES, MASK)
    values = torch.linspace(-0.5, 0.5, MASK.numel()).reshape(MASK.shape) * MASK
    ours, our_returns = compute_advantages(algo, rewards, MASK, UIDS, values if algo.critic.enabled else None)
    if algo.adv_estimator == "gae":
        theirs, returns = core_algos.compute_gae_advantage_return(rewards, values, MASK, gamma=algo.gamma, lam=algo.lam)
    elif algo.adv_estimator == "grpo":
        theirs, returns = core_algos.compute_grpo_outcome_advantage(
            rewards, MASK, UIDS, norm_adv_by_std_in_grpo=algo.norm_adv_by_std_in_grpo
        )
    elif algo.adv_estimator == "reinforce_plus_plus":
        theirs, returns = core_algos.compute_reinforce_plus_plus_outcome_advantage(rewards, MASK, config=AlgoConfig(gamma=algo.gamma))
    elif algo.adv_estimator == "reinforce_plus_plus_baseline":
        theirs, returns = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(rewards, MASK, UIDS, config=AlgoConfig())
    elif algo.adv_estimator == "rloo":
        theirs, returns = core_algos.compute_rloo_outcome_advantage(rewards, MASK, UIDS, config=AlgoConfig())
    else:
        pytest.fail(f"no reference for {algo.adv_estimator}")
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(our_returns, returns)


def test_hand_computed_advantages():
    rewards = token_level_scores(SCORES, MASK)
    # RLOO: each sample minus the mean of the other samples of its prompt
    rloo, _ = compute_advantages(AlgorithmConfig(adv_estimator="rloo"), rewards, MASK, UIDS)
    assert rloo[0, 0].item() == pytest.approx(1.0 - (0.0 + 0.75) / 2)
    assert rloo[3, 0].item() == pytest.approx(0.0 - 1.0)
    # Dr. GRPO: mean-centred, not std-scaled
    dr, _ = compute_advantages(AlgorithmConfig(norm_adv_by_std_in_grpo=False), rewards, MASK, UIDS)
    assert dr[2, 0].item() == pytest.approx(0.75 - 1.75 / 3)
    # GAE with gamma = lam = 1 and zero values: the return-to-go is the final reward on every token
    gae_adv, gae_ret = compute_advantages(AlgorithmConfig(adv_estimator="gae"), rewards, MASK, UIDS, torch.zeros_like(MASK))
    assert gae_ret[2].tolist() == [0.75] * 4 and gae_ret[1, :2].tolist() == [0.0, 0.0]


def test_kl_in_reward_uses_the_controller():
    rewards = token_level_scores(SCORES, MASK)
    old = torch.full(MASK.shape, -1.0)
    ref = torch.full(MASK.shape, -1.5)
    algo = AlgorithmConfig(use_kl_in_reward=True, use_kl_loss=False, kl_ctrl=KLControlConfig(kl_coef=0.1))
    from judge_rl.backends.algorithm import verl_algo_config

    ctrl = core_algos.get_kl_controller(verl_algo_config(algo).kl_ctrl)
    out, metrics = apply_kl_penalty(rewards, old, ref, MASK, ctrl, "kl")
    # kl estimator "kl" = old - ref = 0.5 on each valid token, times beta 0.1
    torch.testing.assert_close(out, rewards - 0.05 * MASK)
    assert metrics["actor/reward_kl_penalty"] == pytest.approx(0.5)
    adaptive = core_algos.get_kl_controller(
        verl_algo_config(AlgorithmConfig(kl_ctrl=KLControlConfig(type="adaptive", kl_coef=0.1, target_kl=0.1, horizon=10))).kl_ctrl
    )
    apply_kl_penalty(rewards, old, ref, MASK, adaptive, "kl")
    assert adaptive.value > 0.1  # KL above target: the coefficient grows


def test_gae_without_critic_is_refused_before_training():
    with pytest.raises(ValueError, match="critic"):
        to_job_config(compose_config(["algorithm=ppo", "algorithm.critic.enabled=false", "run_dir=/tmp/x"]))


@pytest.mark.parametrize("name", ALGORITHMS)
def test_two_steps_train_with_finite_losses(name, tmp_path):
    overrides = [*TINY_RUN, f"algorithm={name}", "stages=[rl]", f"run_dir={tmp_path}", "algorithm.ppo_micro_batch_size=2",
                 "reward.name=test_length_signal"]
    if name == "ppo":
        overrides += ["algorithm.critic.warmup_steps=0"]
    from judge_rl.models.loading import load_model

    run(compose_config(overrides))
    metrics = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2]
    for m in metrics:
        for key, value in m.items():
            if isinstance(value, float):
                assert np.isfinite(value), (key, value)
        assert "actor/pg_loss" in m and "actor/grad_norm" in m
        if name == "ppo":
            assert m["critic/grad_norm"] > 0 and "critic/vf_loss" in m
        if algo_of(name).use_kl_in_reward:
            assert "actor/reward_kl_penalty" in m
    job = to_job_config(compose_config(overrides))
    init = load_model(job.model, job.cache_dir, torch.device("cpu"), seed=job.seed)
    trained = load_model(job.model, job.cache_dir, torch.device("cpu"), checkpoint=tmp_path / "rl_model")
    assert not torch.equal(init.model.layers[0].mlp.up_proj.weight, trained.model.layers[0].mlp.up_proj.weight)
    if name == "ppo":
        from judge_rl.models.loading import load_value_model

        critic0 = load_value_model(job.model, job.cache_dir, torch.device("cpu"), seed=job.seed)
        critic2 = load_value_model(job.model, job.cache_dir, torch.device("cpu"),
                                   checkpoint=tmp_path / "checkpoints" / "global_step_2" / "critic")
        assert not torch.equal(critic0.score.weight, critic2.score.weight)


def test_same_seed_same_metrics(tmp_path):
    overrides = [*TINY_RUN, "stages=[rl]", "algorithm=reinforce_pp", "reward.name=test_length_signal"]
    run(compose_config([*overrides, f"run_dir={tmp_path / 'a'}"]))
    run(compose_config([*overrides, f"run_dir={tmp_path / 'b'}"]))
    a = [json.loads(x) for x in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    strip = lambda m: {k: v for k, v in m.items() if not k.startswith(("timing_s/", "perf/throughput"))}
    assert [strip(m) for m in a] == [strip(m) for m in b]
