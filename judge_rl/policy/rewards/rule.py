"""policy_reward=rule: IFEval's checkers alone, strict; the judge-free upper bound (the package docstring has the
exact definition). Its verl reward is the synchronous `rule_compute_score`."""

from __future__ import annotations

from typing import Any, Literal, Mapping, Sequence

from judge_rl.evaluation.ifeval.checkers import get_checker
from judge_rl.policy.tasks.prompts import PolicyPrompt
from judge_rl.policy.tasks.guard import guard_failure
from judge_rl.policy.rewards import POLICY_REWARDS
from judge_rl.policy.rewards.base import Graded, PolicyReward, PolicyRewardSpec, ground_truth_mapping
from judge_rl.rewards import VERL_KWARGS

RULE_COMPONENTS = ("rule_fraction", "rule_all", "n_instructions", "n_followed", "guard_pass")
RuleLevel = Literal["instruction", "prompt"]


def rule_checks(instruction_id_list: Sequence[str], kwargs: Sequence[Mapping[str, Any]], response: str) -> list[bool]:
    """Strict IFEval result per instruction (as `judge_rl.evaluation.ifeval.evaluate_prompt`'s strict
    list: the response as is; a blank response follows nothing)."""
    if not isinstance(response, str):
        raise TypeError(f"the response must be a string, got {type(response).__name__}")
    if len(instruction_id_list) != len(kwargs):
        raise ValueError("instruction_id_list and kwargs must have the same length")
    results = []
    for instruction_id, arguments in zip(instruction_id_list, kwargs):
        checker = get_checker(instruction_id)
        args = checker.arguments(arguments)
        results.append(bool(response.strip()) and bool(checker.fn(response, **args)))
    return results


def _rule_components(results: Sequence[bool]) -> dict[str, float]:
    n = len(results)
    followed = sum(results)
    return {
        "rule_fraction": followed / n if n else 1.0,
        "rule_all": float(all(results)),
        "n_instructions": float(n),
        "n_followed": float(followed),
    }


def _rule_reward(ids: Sequence[str], kwargs: Sequence[Mapping[str, Any]], response: str, level: str, where: str,
                 guard: bool = False, task_id: str | None = None) -> PolicyReward:  # fmt: skip
    if level not in ("instruction", "prompt"):
        raise ValueError(f"level must be 'instruction' or 'prompt', got {level!r}")
    if not ids:
        raise ValueError(f"{where}has no rule constraints (instruction_id_list is empty)")
    guard_pass = not guard or guard_failure(response, task_id, ids) is None
    components = {**_rule_components(rule_checks(ids, kwargs, response)), "guard_pass": float(guard_pass)}
    score = components["rule_fraction" if level == "instruction" else "rule_all"]
    return PolicyReward(score if guard_pass else 0.0, None, components)


def rule_score(prompt: PolicyPrompt, response: str, level: RuleLevel = "instruction", guard: bool = False) -> PolicyReward:
    """IFEval's checkers alone, strict: the judge-free upper bound; never fails (module docstring). `guard`: 0 where
    the response fails judge_rl/policy/tasks/guard.py (too short, a loop, off its generated task's topic): the task's
    true score, the oracle a judge is compared with."""
    return _rule_reward(prompt.instruction_id_list, prompt.kwargs, response, level, f"prompt {prompt.prompt_id!r} ",
                        guard, prompt.meta.get("task_id"))  # fmt: skip


def _ground_truth(ground_truth: Mapping[str, Any] | str) -> dict[str, Any]:
    ground_truth = ground_truth_mapping(ground_truth, "instruction_id_list and kwargs")
    for name in ("instruction_id_list", "kwargs"):
        if name not in ground_truth:
            raise ValueError(f"ground truth has no {name!r}")
    return dict(ground_truth)


def rule_compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Mapping[str, Any] | str,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float | int | str]:
    """verl adapter of `rule_score`: `ground_truth` is a mapping or its JSON text with
    `instruction_id_list` and `kwargs` (e.g. `PolicyPrompt.to_dict()`, whose `meta.task_id` the guard reads);
    kwargs: `level` ("instruction", default, or "prompt"), `guard` (default false). `data_source` and `extra_info` are accepted for verl's signature, unused."""
    options = {k: v for k, v in kwargs.items() if k not in VERL_KWARGS}
    level = options.pop("level", "instruction")
    guard = bool(options.pop("guard", False))
    if options:
        unknown = ", ".join(sorted(options))
        raise TypeError(f"policy reward 'rule' got unknown keyword argument(s) {unknown}; known: level, guard")
    truth = _ground_truth(ground_truth)
    where = f"prompt {truth.get('prompt_id', '?')!r} "
    task_id = (truth.get("meta") or {}).get("task_id")
    return _rule_reward(truth["instruction_id_list"], truth["kwargs"], solution_str, level, where, guard, task_id).to_verl_dict()


async def grade(grader, prompt: PolicyPrompt, response: str, checks: Sequence[bool]) -> Graded:
    return Graded.of(rule_score(prompt, response, grader.cfg.level, grader.cfg.guard), checks)


POLICY_REWARDS.register("rule")(PolicyRewardSpec(
    "rule", rule_score, False, RULE_COMPONENTS, grade, ("instruction_id_list", "IFEval checkers"), rule_compute_score,
    "IFEval checkers alone, strict; the judge-free upper bound"))  # fmt: skip
