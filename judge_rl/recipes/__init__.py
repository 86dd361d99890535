"""Training recipes: one readable function per judge-training method, registered with its config.

A recipe reads top to bottom (setup, train, evaluate, report), calls the shared stages in
`judge_rl.recipes.stages`, and returns the run's results document (judge_rl/reports/schema.py). The
`algorithm` config group names the method; its `recipe` field picks the recipe, and the recipe's
config dataclass types the group (a field the recipe does not know fails at composition).

    online_rl   judge_rl/recipes/online_rl.py   SFT init -> GRPO / PPO / REINFORCE++ / RLOO -> evaluation
    direct      judge_rl/recipes/direct.py      no training: the prompted judge (Think-J Table 3 "Direct Prompt")
    sft         judge_rl/recipes/sft.py         SFT on verdicts (sft_direct) or on rejection-sampled traces (sft_cot)
    dpo_critic  judge_rl/recipes/dpo_critic.py  Think-J's critic-guided offline learning: critic traces -> DPO + SFT
    bt          judge_rl/recipes/bt.py          a Bradley-Terry reward model (TRL RewardTrainer), scored as a judge

Each recipe names its final judge's evaluation stage in results.json (`final_stage`), so a report column
`judge/held_out/<metric>` reads the judge each method produced, whatever the method.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from judge_rl.registry import Registry


@dataclass(frozen=True)
class Recipe:
    """A training method: `run(job, run_dir, reward) -> results`, the dataclass that types its `algorithm` node,
    `validate(job, reward)`, its own checks of a composed job (run before any model loads; None: none; `reward` is
    the job's reward, built once by judge_rl/jobs/train.py), and `ignores`, the
    config groups of the main job it does not read (e.g. a Bradley-Terry model reads no `reward`): a job that sets
    one away from its default is refused (judge_rl/jobs/train.py), never run with the setting silently unused."""

    name: str
    run: Callable[[Any, Path, Any], dict[str, Any]]
    config: type
    validate: Callable[[Any, Any], None] | None = None
    ignores: tuple[str, ...] = ()


# the modules that register recipes are imported on the first lookup (they import models, TRL and verl)
RECIPES: Registry[Recipe] = Registry(
    "recipe",
    modules=(
        "judge_rl.recipes.online_rl",
        "judge_rl.recipes.direct",
        "judge_rl.recipes.sft",
        "judge_rl.recipes.dpo_critic",
        "judge_rl.recipes.bt",
    ),
)


def register_recipe(name: str, config: type, validate: Callable[[Any, Any], None] | None = None,
                    ignores: tuple[str, ...] = ()) -> Callable:  # fmt: skip
    """Decorator: register `fn(job, run_dir, reward) -> results` as the recipe `name`, typed by `config` (see `Recipe`)."""

    def decorator(fn: Callable) -> Callable:
        RECIPES.register(name)(Recipe(name, fn, config, validate, tuple(ignores)))
        return fn

    return decorator
