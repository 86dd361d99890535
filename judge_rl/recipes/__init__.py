"""Training recipes: one readable function per judge-training method, registered with its config.

A recipe reads top to bottom (setup, train, evaluate, report), calls the shared stages in
`judge_rl.recipes.stages`, and returns the run's results document (judge_rl/reports/schema.py). The
`algorithm` config group names the method; its `recipe` field picks the recipe, and the recipe's
config dataclass types the group (a field the recipe does not know fails at composition).

    online_rl   judge_rl/recipes/online_rl.py   SFT init -> GRPO / PPO / REINFORCE++ / RLOO -> evaluation
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from judge_rl.registry import Registry


@dataclass(frozen=True)
class Recipe:
    """A training method: `run(job, run_dir) -> results` and the dataclass that types its `algorithm` node."""

    name: str
    run: Callable[[Any, Path], dict[str, Any]]
    config: type


# the modules that register recipes are imported on the first lookup (they import models, TRL and verl)
RECIPES: Registry[Recipe] = Registry("recipe", modules=("judge_rl.recipes.online_rl",))


def register_recipe(name: str, config: type) -> Callable:
    """Decorator: register `fn(job, run_dir) -> results` as the recipe `name`, typed by `config`."""

    def decorator(fn: Callable) -> Callable:
        RECIPES.register(name)(Recipe(name, fn, config))
        return fn

    return decorator
