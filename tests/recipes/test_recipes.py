"""The recipe registry: every algorithm option names a registered recipe typed by its config, and a
recipe that does not exist fails when the config is validated, before any model loads."""

from __future__ import annotations

import pytest
from conftest import CONF_DIR, compose_config

from judge_rl.backends.algorithm import AlgorithmConfig
from judge_rl.jobs.train import to_job_config
from judge_rl.recipes import RECIPES

ALGORITHMS = sorted(p.stem for p in (CONF_DIR / "algorithm").glob("*.yaml"))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_option_names_a_registered_recipe(algorithm):
    job = to_job_config(compose_config(["run_dir=/tmp/x", f"algorithm={algorithm}"]))
    recipe = RECIPES.get(job.algorithm.recipe)
    assert recipe.name in RECIPES.names() and isinstance(job.algorithm, recipe.config)


def test_online_rl_is_typed_by_the_algorithm_config():
    assert RECIPES.get("online_rl").config is AlgorithmConfig


def test_an_unknown_recipe_fails_at_validation_with_the_known_ones():
    with pytest.raises(ValueError, match=r"algorithm.recipe='nope'.*online_rl"):
        to_job_config(compose_config(["run_dir=/tmp/x", "algorithm.recipe=nope"]))
