"""The online RL algorithm: its config (`AlgorithmConfig`, the `algorithm` group of the online_rl recipe and of the
policy job), its checks (`check_online_algorithm`, RL_RANGES), and the one mapping from it to verl's keys, read by
both backends.

The verl backend writes these keys into verl's `ppo_trainer` config (translate.py); the local backend
builds verl's own `AlgoConfig` and `ActorConfig` dataclasses from the same keys (which validate the
values) and its step reads them, so a field cannot mean one thing locally and another on verl.
Batch-shape keys (mini- and micro-batch sizes per GPU, rollout n, data sizes) depend on the cluster and
stay with each backend.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

@dataclass
class KLControlConfig:
    """verl's algorithm.kl_ctrl: the coefficient of the KL penalty put into the reward."""

    type: str = "fixed"  # fixed | adaptive
    kl_coef: float = 0.001
    target_kl: float = 0.1
    horizon: int = 10000


@dataclass
class CriticConfig:
    """The value model of PPO (verl's critic.*), initialised from the same weights as the policy."""

    enabled: bool = False
    lr: float = 1e-4
    cliprange_value: float = 0.5
    warmup_steps: int = 0  # critic-only steps before the actor moves (verl: trainer.critic_warmup = warmup_steps + 1)
    grad_clip: float = 1.0
    weight_decay: float = 0.01


@dataclass
class AlgorithmConfig:
    """The `algorithm` group of the online RL recipe: verl's field names, translated one to one."""

    name: str = "grpo"
    recipe: str = "online_rl"  # the training recipe this method runs (judge_rl/recipes/)
    adv_estimator: str = "grpo"
    norm_adv_by_std_in_grpo: bool = True
    gamma: float = 1.0
    lam: float = 1.0
    use_kl_in_reward: bool = False
    kl_penalty: str = "kl"
    kl_ctrl: KLControlConfig = field(default_factory=KLControlConfig)
    policy_loss: str = "vanilla"
    use_kl_loss: bool = True
    kl_loss_coef: float = 0.001
    kl_loss_type: str = "low_var_kl"
    clip_ratio: float = 0.2
    loss_agg_mode: str = "token-mean"
    loss_scale_factor: Optional[int] = None  # seq-mean-token-sum-norm divisor; None: the batch's response width
    entropy_coeff: float = 0.0
    ppo_epochs: int = 1
    ppo_mini_batch_size: Optional[int] = None  # prompts per optimizer step (verl's unit); None: the whole batch
    ppo_micro_batch_size: int = 4  # sequences per forward/backward
    grad_clip: float = 1.0
    weight_decay: float = 0.01
    lr: float = 1e-5
    rollout_n: int = 4
    # J1's group structure with any reward: each prompt's group holds both orders of its pair, rollout_n/2
    # samples each, so a judge that names one position whatever the content is right in one half of its
    # group and wrong in the other, and its advantages push against the bias (with per-order groups such a
    # group is all right or all wrong, and its advantages are zero). Local backend only.
    group_both_orders: bool = False
    critic: CriticConfig = field(default_factory=CriticConfig)


# the online RL recipe's `algorithm.*` (other recipes check their own fields, judge_rl/recipes/<method>.py)
RL_RANGES = {
    "algorithm.rollout_n": ">= 1",
    "algorithm.ppo_epochs": ">= 1",
    "algorithm.ppo_mini_batch_size": ">= 1",
    "algorithm.ppo_micro_batch_size": ">= 1",
    "algorithm.lr": "> 0",
    "algorithm.clip_ratio": "> 0",
    "algorithm.kl_loss_coef": ">= 0",
    "algorithm.grad_clip": "> 0",
    "algorithm.gamma": "[0, 1]",
    "algorithm.lam": "[0, 1]",
    "algorithm.loss_scale_factor": ">= 1",
    "algorithm.critic.lr": "> 0",
    "algorithm.critic.warmup_steps": ">= 0",
}


def check_critic(a: AlgorithmConfig) -> None:
    """GAE needs a critic and only GAE uses one (checked at validation, and again by the verl translation)."""
    if (a.adv_estimator == "gae") != a.critic.enabled:
        raise ValueError(
            f"algorithm.adv_estimator={a.adv_estimator} with algorithm.critic.enabled={a.critic.enabled}: "
            "GAE needs a critic and only GAE uses one"
        )


def check_online_algorithm(a: AlgorithmConfig, prompts_per_step: int) -> None:
    """The checks of an online RL `algorithm.*` that hold whatever is trained (a judge here, a policy in
    judge_rl/policy/config.py): group shapes verl's estimators need, batch divisions, critic and KL."""
    if a.adv_estimator in ("grpo", "rloo", "reinforce_plus_plus_baseline") and a.rollout_n < 2:
        raise ValueError(
            f"algorithm.rollout_n={a.rollout_n}: {a.adv_estimator} compares samples of the same prompt, it needs >= 2"
        )
    # as in verl, ppo_mini_batch_size counts prompts (each with rollout_n samples), micro-batches count sequences
    if a.ppo_mini_batch_size is not None and prompts_per_step % a.ppo_mini_batch_size:
        raise ValueError(
            f"algorithm.ppo_mini_batch_size={a.ppo_mini_batch_size} (prompts) must divide "
            f"trainer.prompts_per_step={prompts_per_step}"
        )
    mini = (a.ppo_mini_batch_size or prompts_per_step) * a.rollout_n
    if mini % a.ppo_micro_batch_size and a.ppo_micro_batch_size < mini:
        raise ValueError(f"algorithm.ppo_micro_batch_size={a.ppo_micro_batch_size} must divide the mini-batch {mini}")
    check_critic(a)
    if a.use_kl_in_reward and a.use_kl_loss:
        raise ValueError("algorithm.use_kl_in_reward and algorithm.use_kl_loss are both true: the KL would count twice")
    if a.kl_ctrl.type not in ("fixed", "adaptive"):
        raise ValueError(f"algorithm.kl_ctrl.type={a.kl_ctrl.type!r}: expected fixed or adaptive")


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
