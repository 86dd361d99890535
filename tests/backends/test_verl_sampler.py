"""judge_rl's replay buffer for verl's v1 trainer (judge_rl/backends/verl/sampler.py): built as verl builds a custom
sampler, failed rollout groups refilled within a bound, then one line."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf
from verl.utils.import_utils import load_extern_type

from judge_rl.backends.verl import sampler


def test_a_step_whose_groups_all_failed_is_refilled_within_a_bound_then_stops():
    """verl builds the custom sampler as `_build_replay_buffer` does (its loader, only the base arguments and
    refill_fn): failed groups are refilled through verl's trainer hook, at most the bound a step, then one line."""
    cls = load_extern_type(sampler.MODULE_PATH, sampler.CLASS_NAME)
    asked: list[int] = []
    buffer = cls(trainer_mode="sync", trainer_config=OmegaConf.create({}), max_off_policy_threshold=8,
                 max_off_policy_strategy="drop", sampler_kwargs=OmegaConf.create({"max_failed_group_refills": 3}),
                 refill_fn=asked.append)  # fmt: skip
    assert buffer.sync_refill_failed_groups is True and buffer.gen_batch_size == 1
    buffer.refill_fn(2)
    buffer.refill_fn(1)
    assert asked == [2, 1]
    with pytest.raises(sampler.StepGroupsFailed, match="4 rollout groups of this step had no finished sample"):
        buffer.refill_fn(1)
    assert asked == [2, 1]  # nothing more was generated
    with pytest.raises(ValueError, match="max_failed_group_refills must be >= 1"):
        cls(trainer_mode="sync", trainer_config=OmegaConf.create({}), max_off_policy_threshold=8,
            max_off_policy_strategy="drop", sampler_kwargs=OmegaConf.create({}), refill_fn=asked.append)
