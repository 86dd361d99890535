"""The one mapping from judge_rl's `algorithm.*` to verl's keys, read by both backends.

The verl backend writes these keys into verl's `ppo_trainer` config (translate.py); the local backend
builds verl's own `AlgoConfig` and `ActorConfig` dataclasses from the same keys (which validate the
values) and its step reads them, so a field cannot mean one thing locally and another on verl.
Batch-shape keys (mini- and micro-batch sizes per GPU, rollout n, data sizes) depend on the cluster and
stay with each backend.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from judge_rl.config import AlgorithmConfig

ACTOR = "actor_rollout_ref.actor"


def verl_algorithm_keys(a: AlgorithmConfig) -> dict[str, Any]:
    """judge_rl's algorithm fields as verl 0.9 dotted keys (`algorithm.*`, `actor_rollout_ref.actor.*`)."""
    return {
        "algorithm.adv_estimator": a.adv_estimator,
        "algorithm.norm_adv_by_std_in_grpo": a.norm_adv_by_std_in_grpo,
        "algorithm.gamma": a.gamma,
        "algorithm.lam": a.lam,
        "algorithm.use_kl_in_reward": a.use_kl_in_reward,
        "algorithm.kl_penalty": a.kl_penalty,
        "algorithm.kl_ctrl.type": a.kl_ctrl.type,
        "algorithm.kl_ctrl.kl_coef": a.kl_ctrl.kl_coef,
        "algorithm.kl_ctrl.target_kl": a.kl_ctrl.target_kl,
        "algorithm.kl_ctrl.horizon": a.kl_ctrl.horizon,
        f"{ACTOR}.optim.lr": a.lr,
        f"{ACTOR}.optim.weight_decay": a.weight_decay,
        f"{ACTOR}.optim.clip_grad": a.grad_clip,
        f"{ACTOR}.grad_clip": a.grad_clip,
        f"{ACTOR}.ppo_epochs": a.ppo_epochs,
        f"{ACTOR}.clip_ratio": a.clip_ratio,
        f"{ACTOR}.clip_ratio_low": a.clip_ratio,
        f"{ACTOR}.clip_ratio_high": a.clip_ratio,
        f"{ACTOR}.loss_agg_mode": a.loss_agg_mode,
        f"{ACTOR}.loss_scale_factor": a.loss_scale_factor,
        f"{ACTOR}.entropy_coeff": a.entropy_coeff,
        f"{ACTOR}.use_kl_loss": a.use_kl_loss,
        f"{ACTOR}.kl_loss_coef": a.kl_loss_coef,
        f"{ACTOR}.kl_loss_type": a.kl_loss_type,
        f"{ACTOR}.policy_loss.loss_mode": a.policy_loss,
    }


def section(keys: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The keys under `prefix.` with the prefix taken off ("algorithm.kl_ctrl.type" -> "kl_ctrl.type")."""
    return {k[len(prefix) + 1 :]: v for k, v in keys.items() if k.startswith(prefix + ".")}


def verl_algo_config(algo: AlgorithmConfig):
    """verl's own `AlgoConfig` (its dataclass validates the values) from the mapping's `algorithm.*`."""
    from verl.trainer.config import AlgoConfig, KLControlConfig

    keys = section(verl_algorithm_keys(algo), "algorithm")
    kl_ctrl = KLControlConfig(**section(keys, "kl_ctrl"))
    return AlgoConfig(kl_ctrl=kl_ctrl, **{k: v for k, v in keys.items() if "." not in k})


def actor_config(algo: AlgorithmConfig, micro: int):
    """verl's `ActorConfig` carrying the fields its policy-loss functions read, from the mapping's
    `actor_rollout_ref.actor.*` (the top-level fields; the optimizer is the backend's own)."""
    from verl.workers.config.actor import ActorConfig

    fields = {f.name for f in dataclasses.fields(ActorConfig)}
    keys = section(verl_algorithm_keys(algo), ACTOR)
    return ActorConfig(
        strategy="local",
        rollout_n=algo.rollout_n,
        ppo_micro_batch_size_per_gpu=micro,
        use_torch_compile=False,
        **{k: v for k, v in keys.items() if "." not in k and k in fields},
    )
