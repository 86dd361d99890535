"""Where the policy's training prompts come from (`policy_data.source`), a registry, and the check that every prompt
has what its reward needs (the reward's `PolicyRewardSpec.requires`).

    generated    IFEval-style prompts generated from `seed` (judge_rl/policy/tasks/prompts.py: generate_policy_prompts)
    rubric_file  a JSONL file of prompts with rubrics (judge_rl/policy/tasks/rubric_files.py)
    verif_file   a VerIF-format JSONL file (judge_rl/policy/tasks/rubric_files.py)

A new source is a function `(policy_data config) -> list[PolicyPrompt]` registered here with
`@POLICY_SOURCES.register("<name>")`, and its conf/policy_data/<name>.yaml.
"""

from __future__ import annotations

from typing import Any, Callable

from judge_rl.policy.tasks.prompts import PolicyPrompt, generate_policy_prompts
from judge_rl.policy.rewards import POLICY_REWARDS
from judge_rl.registry import Registry

POLICY_SOURCES: Registry[Callable[[Any], list[PolicyPrompt]]] = Registry("policy data source")


@POLICY_SOURCES.register("generated")
def generated(d) -> list[PolicyPrompt]:
    return generate_policy_prompts(d.n_train, seed=d.seed, split="train", instruction_ids=d.instruction_ids,
                                   min_constraints=d.min_constraints, max_constraints=d.max_constraints)  # fmt: skip


@POLICY_SOURCES.register("rubric_file")
def rubric_file(d) -> list[PolicyPrompt]:
    from judge_rl.policy.tasks.rubric_files import load_rubric_file

    return load_rubric_file(d.path, limit=d.limit)


@POLICY_SOURCES.register("verif_file")
def verif_file(d) -> list[PolicyPrompt]:
    from judge_rl.policy.tasks.rubric_files import load_verif_file

    return load_verif_file(d.path, limit=d.limit)


def load_policy_prompts(job) -> list[PolicyPrompt]:
    """The training prompts, checked against what the reward needs (a one-line error naming the prompt)."""
    d = job.policy_data
    prompts = POLICY_SOURCES.get(d.source)(d)
    if not prompts:
        raise ValueError(f"policy_data={d.name}: no prompts")
    name, where = job.policy_reward.name, f"policy_data={d.name}" + (f" ({d.path})" if d.path else "")
    need = POLICY_REWARDS.get(name).requires
    if job.policy_reward.opponent == "group":  # the answer is compared with its group, not with a reference
        need = None
    if need is not None:
        lacking = [p.prompt_id for p in prompts if not getattr(p, need[0])]
        if lacking:
            raise ValueError(f"policy_reward={name} needs {need[1]} for every prompt; {where}: prompt {lacking[0]!r} "
                             f"has none ({len(lacking)} of {len(prompts)} lack one)")
    return prompts
