"""The one algorithm mapping (judge_rl/backends/algorithm.py): the local backend's verl dataclasses and
the verl backend's translated config carry the same value for every key, for every algorithm option."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import online_algorithms, CONF_DIR

from judge_rl.backends.algorithm import ACTOR, actor_config, section, verl_algo_config, verl_algorithm_keys
from judge_rl.backends.algorithm import AlgorithmConfig

ALGORITHMS = online_algorithms()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_local_and_verl_read_the_same_values(algorithm, translate, model_for):
    job, cfg = translate([model_for(algorithm), f"algorithm={algorithm}"])
    keys = verl_algorithm_keys(job.algorithm)
    for key, value in keys.items():  # the verl backend wrote every key of the mapping as it is
        node = cfg
        for part in key.split("."):
            node = node[part]
        assert node == value, key

    algo = verl_algo_config(job.algorithm)  # what the local backend's advantages and KL controller read
    for key, value in section(keys, "algorithm").items():
        node = algo
        for part in key.split("."):
            node = getattr(node, part)
        assert node == value, key
    actor = actor_config(job.algorithm, micro=2)  # what its policy loss reads
    actor_fields = {f.name for f in dataclasses.fields(actor)}
    top = {k: v for k, v in section(keys, ACTOR).items() if "." not in k and k in actor_fields}
    assert {"clip_ratio", "loss_agg_mode", "use_kl_loss", "kl_loss_coef", "kl_loss_type", "ppo_epochs", "entropy_coeff"} <= set(top)
    assert all(getattr(actor, k) == v for k, v in top.items())
    assert actor.ppo_micro_batch_size_per_gpu == 2 and actor.rollout_n == job.algorithm.rollout_n


def test_a_field_changes_both_backends():
    base, changed = AlgorithmConfig(), AlgorithmConfig(clip_ratio=0.3, kl_loss_coef=0.05)
    assert actor_config(changed, 1).clip_ratio == 0.3 != actor_config(base, 1).clip_ratio
    assert verl_algorithm_keys(changed)[f"{ACTOR}.kl_loss_coef"] == 0.05 == actor_config(changed, 1).kl_loss_coef
