"""The policy's judge reward for verl: the file verl imports as `reward.custom_reward_function.path`.

    async def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> dict

verl 0.9's reward loop (`verl.experimental.reward_loop`) calls it once per sample, as each rollout ends:
`verl.trainer.ppo.reward.get_custom_reward_fn` wraps it so that `reward.custom_reward_function.reward_kwargs`
arrive as keyword arguments, and the reward manager awaits it because it is a coroutine function (the
rate-limited manager caps the samples in flight per reward worker: `reward.max_concurrent`).

Arguments:
  solution_str  the policy's answer (decoded without special tokens)
  ground_truth  `PolicyPrompt.to_dict()` as JSON text (judge_rl/policy/verl/launch.py writes it into the parquet's
                reward_model.ground_truth): the rubric, checkers, soft constraints or reference travel with it
  kwargs        the settings (`reward_kwargs`, built by `judge_rl.policy.verl.policy_reward_kwargs`), flat:
                  reward_<field>  every field of PolicyRewardConfig (reward_name, reward_level, reward_clip,
                                  reward_batch_criteria, reward_batch_format, reward_criterion_format,
                                  reward_judge_prompt, reward_both_orders, reward_use_strength)
                  judge_<field>   the judge client's settings: judge_base_url, judge_model (the served model
                                  id), judge_api_key_env (the NAME of the environment variable holding the
                                  key, never a key), judge_concurrency (calls in flight per process),
                                  judge_timeout_s, judge_max_retries, judge_backoff_s, judge_cache_size,
                                  judge_max_tokens, judge_temperature, judge_enable_thinking, judge_extra_body
                verl's own `reward_router_address` / `reward_model_tokenizer` are accepted and unused; any other
                name is a TypeError (a misspelt setting must not be a silent default).

policy_reward=rule uses `rule_compute_score` from this file instead (reward.custom_reward_function.name): it is
`judge_rl.policy.rewards.rule.rule_compute_score` (sync, no judge, never fails), re-exported here because verl loads
the file without registering it as a module, and judge_rl/policy/rewards/'s dataclasses need their module
registered (`@dataclass` looks the module up in sys.modules).

Returns `PolicyReward.to_verl_dict()`: {"score", "judge_failed", "failure_reason", **components}, the same keys
for every sample of a reward (verl stacks them per key). A failed judge call is score 0.0 *and* judge_failed 1;
the reward manager turns it into a dropped sample, never a zero (reward_manager.py).

The scoring is `judge_rl.policy.grading.Grader.grade` (the same code the local backend runs). One Grader, and so
one `AsyncJudgeClient` (its connection pool, concurrency cap and cache), per process and settings: they are
kept in this module's canonical copy (`judge_rl.policy.verl.reward`), even when verl loads this file again under
another module name.
"""

from __future__ import annotations

import json
import threading
from dataclasses import fields
from typing import Any, Mapping

from judge_rl.policy.config import PolicyRewardConfig, RewardJudgeConfig
from judge_rl.policy.tasks.prompts import PolicyPrompt
from judge_rl.rewards import VERL_KWARGS
from judge_rl.policy.rewards import POLICY_REWARDS, ground_truth_mapping, plain
from judge_rl.policy.rewards.rule import rule_compute_score  # noqa: F401  (verl's name for policy_reward=rule)

REWARD_PREFIX, JUDGE_PREFIX = "reward_", "judge_"
# RewardJudgeConfig fields the client reads (judge_model and judge_base_url are resolved at launch)
JUDGE_CLIENT_FIELDS = ("api_key_env", "concurrency", "timeout_s", "max_retries", "backoff_s", "cache_size",
                       "max_tokens", "temperature", "enable_thinking", "extra_body")  # fmt: skip

_GRADERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def reward_field_names() -> tuple[str, ...]:
    return tuple(f"{REWARD_PREFIX}{f.name}" for f in fields(PolicyRewardConfig))


def known_kwargs() -> frozenset[str]:
    judge = {f"{JUDGE_PREFIX}{n}" for n in (*JUDGE_CLIENT_FIELDS, "base_url", "model")}
    return frozenset({*reward_field_names(), *judge})


def split_settings(kwargs: Mapping[str, Any]) -> tuple[PolicyRewardConfig, RewardJudgeConfig | None, str | None, str | None]:
    """(reward config, judge config or None, base_url, model) from the flat kwargs; unknown names are a TypeError."""
    options = {k: v for k, v in kwargs.items() if k not in VERL_KWARGS}
    unknown = sorted(set(options) - known_kwargs())
    if unknown:
        raise TypeError(f"judge_rl.policy.verl.reward.compute_score got unknown setting(s) {', '.join(unknown)}")
    reward = PolicyRewardConfig(**{k[len(REWARD_PREFIX):]: plain(v) for k, v in options.items()
                                   if k.startswith(REWARD_PREFIX)})  # fmt: skip
    if not POLICY_REWARDS.get(reward.name).needs_judge:
        return reward, None, None, None
    judge_values = {n: plain(options[f"{JUDGE_PREFIX}{n}"]) for n in JUDGE_CLIENT_FIELDS if f"{JUDGE_PREFIX}{n}" in options}
    base_url, model = options.get(f"{JUDGE_PREFIX}base_url"), options.get(f"{JUDGE_PREFIX}model")
    if not base_url or not model:
        raise TypeError(f"policy_reward={reward.name} asks a judge: compute_score needs judge_base_url and judge_model")
    return reward, RewardJudgeConfig(**judge_values), str(base_url), str(model)


def _cache() -> dict[str, Any]:
    """The process-wide grader cache: the canonical module's, whichever copy of this file runs."""
    import judge_rl.policy.verl.reward as canonical

    return canonical._GRADERS


def process_graders() -> list[Any]:
    """Every `Grader` this process has built (their telemetry counts the process's judge calls)."""
    with _LOCK:
        return list(_cache().values())


def grader_for(kwargs: Mapping[str, Any]):
    """The process's `Grader` for these settings (built once; its client is shared by every call)."""
    from judge_rl.policy.grading import Grader, judge_client

    reward, judge, base_url, model = split_settings(kwargs)
    key = json.dumps({k: plain(v) for k, v in kwargs.items() if k not in VERL_KWARGS},
                     sort_keys=True, default=str)  # fmt: skip
    cache = _cache()
    with _LOCK:
        grader = cache.get(key)
        if grader is None:
            client = None if judge is None else judge_client(judge, base_url, model)
            grader = cache[key] = Grader(reward, client)
    return grader


def prompt_from_ground_truth(ground_truth: str | bytes | Mapping[str, Any]) -> PolicyPrompt:
    """The `PolicyPrompt` a row's reward_model.ground_truth carries (its JSON text, or the parsed mapping)."""
    return PolicyPrompt.from_dict(ground_truth_mapping(ground_truth, "the fields of PolicyPrompt.to_dict()"))


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str | bytes | Mapping[str, Any],
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float | int | str]:
    """verl's custom reward function for the policy job (module docstring): the sample's `PolicyReward` as
    verl's per-sample dict. `data_source` and `extra_info` are accepted for verl's signature, unused."""
    grader = grader_for(kwargs)
    prompt = prompt_from_ground_truth(ground_truth)
    reward = await grader.grade(prompt, solution_str)
    return reward.to_verl_dict()
