"""Judge rewards, by name, and `compute_score`, the entry point verl imports by file path.

Registered rewards, one module each (each parses with the prompt of the same name). The registry imports every
module of this package on its first lookup, so adding a reward is adding its module (a `@register_reward` class)
and its conf/reward/<name>.yaml:

  "strength", "binary"    Think-J (judge_rl.rewards.strength)
  "consistency"           J1: both orders of a pair in one group (judge_rl.rewards.consistency)
  "margin"                Think-J's score prompt, right side + score margin (judge_rl.rewards.margin)
  "judgelrm"              JudgeLRM: format + relation + absolute + confidence (judge_rl.rewards.judgelrm)
  "pairwise_tag"          OpenJudge pairwise: right/wrong (judge_rl.rewards.openjudge)
  "pointwise"             OpenJudge pointwise: one response scored 0..4 against a binary or graded
                          label; its ground truth is `{"label", "scale"}` (judge_rl.rewards.openjudge)

verl 0.9 loads `reward.custom_reward_function.path` / `.name` (here: this file, `compute_score`)
and calls it per sample as `compute_score(data_source=..., solution_str=..., ground_truth=...,
extra_info=..., **reward_kwargs)`, the `reward_kwargs` coming from the config. Here those kwargs
are `reward_name` plus the chosen reward's weight fields (`format_weight`, `correct_weight`, ...).

Because verl executes this file under a made-up module name, everything below is imported by
absolute name and the registry lives in `judge_rl.rewards.base`: the rewards are registered once,
in the real package, whichever way this file is loaded.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Mapping

from judge_rl.rewards.base import (
    REWARDS,
    GroundTruth,
    PairwiseReward,
    PointwiseReward,
    PointwiseTruth,
    Reward,
    RewardOutput,
    parse_ground_truth,
    parse_pointwise_ground_truth,
    register_reward,
)

DEFAULT_REWARD = "strength"

# Keyword arguments verl's reward managers add on their own when a reward-model router is running;
# they mean nothing to these rule-based rewards and are dropped instead of rejected.
VERL_KWARGS = frozenset({"reward_router_address", "reward_model_tokenizer"})


def get_reward(name: str) -> type[Reward]:
    """The reward class registered as `name` (build it with its weights: `get_reward(name)(**weights)`)."""
    return REWARDS.get(name)


def build_reward(name: str, **weights: float) -> Reward:
    """The reward `name` built with `weights`; a name that is not one of its fields is a TypeError naming it."""
    cls = get_reward(name)
    known = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    for key in weights:
        if key not in known:
            raise TypeError(f"reward {name!r} got an unknown keyword argument {key!r}; known: {', '.join(known)}")
    return cls(**weights)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Mapping[str, Any] | str,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> RewardOutput:
    """verl's custom reward function: score one judge output (see the package docstring).

    The reward is `kwargs["reward_name"]`, else `extra_info["reward_name"]`, else "strength"; the
    other kwargs are its weights. The reward reads `ground_truth` itself (pairwise rewards a
    `{"winner", "strength"}` label, "pointwise" a `{"label", "scale"}` one; a mapping or its JSON
    text). `data_source` is accepted for verl's signature and not used.
    """
    weights = {k: v for k, v in kwargs.items() if k not in VERL_KWARGS}
    default = DEFAULT_REWARD
    if isinstance(extra_info, Mapping) and extra_info.get("reward_name") is not None:
        default = str(extra_info["reward_name"])
    name = weights.pop("reward_name", None)
    name = default if name is None else str(name)
    return build_reward(name, **weights)(solution_str, ground_truth)


__all__ = [
    "REWARDS",
    "GroundTruth",
    "PairwiseReward",
    "PointwiseReward",
    "PointwiseTruth",
    "Reward",
    "RewardOutput",
    "build_reward",
    "compute_score",
    "get_reward",
    "parse_ground_truth",
    "parse_pointwise_ground_truth",
    "register_reward",
]
