"""Rewards for a policy: IFEval rules, an LLM judge with a rubric, VerIF's hybrid, and a pairwise judge
against a reference. Pure functions: no HTTP here; the judge's replies come in as text (or as a
`JudgeFailure` when the call itself failed) and the functions below parse and score them.

The rule everywhere: **no silent zeros**. A judge failure (server error, truncated reply, unparseable
reply, criteria missing from the reply) is never a score. Every reward returns a `PolicyReward`:

  score       float, or None exactly when the sample could not be graded
  failure     None, or the reason, one of (`FAILURE_KINDS`):
                "judge server error"                  the call failed (HTTP error, timeout, ...)
                "judge reply truncated"               the judge hit its token limit (finish_reason "length")
                "judge reply unparseable: <detail>"   the reply does not have the required form; <detail> is
                                                      one of `UNPARSEABLE_DETAILS`, or for a pairwise judge
                                                      the prompt's own parser reason (e.g. "verdict line
                                                      does not match template")
                "criteria missing from judge reply"   a rubric reply that skips criteria
              The think-block details: "unclosed <think>" (the judge ran out of tokens while thinking),
              "text before <think>", "several <think> blocks", "nothing after </think>", "empty reply".
  components  dict[str, float] of the reward's fixed component keys (`POLICY_REWARDS[name].component_keys`),
              the same keys on success and failure; those that depend on the judge are NaN on a failure.

`PolicyReward.to_verl_dict()` is verl's per-sample dict: `{"score": float, "judge_failed": 0/1,
"failure_reason": str, **components}`. A failed sample's `score` there is 0.0 *and* `judge_failed` is 1:
the trainer masks it out (no advantage, no loss, not in reward means). Never read `score` without
`judge_failed`.

Scores (exact definitions)

- `rule_score(prompt, response, level="instruction")`: IFEval's checkers alone, strict (as
  `judge_rl.evaluation.ifeval`: the response as is; a blank response follows nothing). rule_fraction =
  followed instructions / instructions; rule_all = 1.0 when every instruction is followed. score =
  rule_fraction (level "instruction") or rule_all (level "prompt"). Never fails: the judge-free upper
  bound. A prompt without rule constraints is a ValueError.
- `rubric_score(rubric, verdicts, clip=(0, 1))`: HealthBench (Arora et al. 2025), as RuscaRL uses it:
  met_points = sum of the points of every met criterion (negative ones included, so a met flaw subtracts),
  positive_points = sum of the positive points; score = clip(met_points / positive_points). `verdicts`
  maps each 0-based rubric index to met (True/False); an index missing => "criteria missing from judge
  reply", an index outside the rubric => "judge reply unparseable: unknown criterion index". A rubric
  without positive points is a ValueError.
- `verif_score(prompt, response, judge_verdict)`: VerIF (Peng et al. 2025, THU-KEG/VerIF
  `constraint_analyzer.evaluate_if_reward_multi`): score = rule_all x judge verdict, where rule_all is 1
  only when every rule checker passes (VerIF reduces its code checks with "0 if any 0 else 1"; no rules:
  1) and the judge verdict is one 0/1 call on all soft constraints at once (VerIF's `llm_score`, which
  asks for `[[1]]`/`[[0]]`). A judge failure is a failure even when the rules pass (VerIF reads an
  unparseable reply as 0; here it is never a score). When a rule fails the product is 0 whatever the
  judge says, so a caller may skip the judge and pass `judge_verdict=None` (then the score is 0.0, and
  `judge_asked` is 0); None with all rules passing is a ValueError.
- `judge_pairwise_score(prompt, response, reference, judgment, judge_prompt="strength")`: the policy's
  answer against a reference through any pairwise judge prompt of the project (`get_prompt`). Per
  order: 1.0 if the judge prefers the policy's answer, 0.0 if it prefers the reference, 0.5 on a
  well-formed tie; with a strength k (1..3) and `use_strength`: 0.5 + k/6 for a win, 0.5 - k/6 for a
  loss. `judgment` maps the position of the policy's answer ("a": shown as Response (a), reference as
  (b); "b": swapped) to the judge's reply; with both orders the score is their mean; any failed order
  fails the sample.

Package layout: `base.py` (what every reward shares), then one module per reward, each holding its prompts, its
parser, its score and its `PolicyRewardSpec` registered in `POLICY_REWARDS`: rule.py, rubric.py, verif.py,
judge_pairwise.py. Adding a reward is one new module here plus its conf/policy_reward/<name>.yaml: every module
of this package is imported on the registry's first lookup (no list to edit); the job, the grader
(judge_rl/policy/grading.py) and the verl translation read only the spec.
"""

from __future__ import annotations

from typing import Any, Mapping

from judge_rl.policy.rewards.base import (  # noqa: F401  (the shared names, for importers of the package)
    CRITERIA_MISSING,
    EMPTY_REPLY,
    FAILURE_KINDS,
    JUDGE_SERVER_ERROR,
    JUDGE_TRUNCATED,
    JUDGE_UNPARSEABLE,
    NO_VERDICT,
    UNPARSEABLE_DETAILS,
    Graded,
    JudgeFailure,
    PolicyReward,
    PolicyRewardSpec,
    failure_kind,
    ground_truth_mapping,
    plain,
    strip_think,
    unparseable,
)
from judge_rl.registry import Registry, package_modules

POLICY_REWARDS: Registry[PolicyRewardSpec] = Registry("policy reward", modules=package_modules(__name__, __path__, skip=("base",)))


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Mapping[str, Any] | str,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float | int | str]:
    """verl's custom reward function for a judge-free policy reward: the reward `kwargs["reward_name"]`, else
    `extra_info["reward_name"]`, else "rule". A reward that calls a judge is refused here: its verl reward is the
    async `compute_score` of judge_rl/policy/verl/reward.py."""
    name = kwargs.pop("reward_name", None)
    if name is None and isinstance(extra_info, Mapping):
        name = extra_info.get("reward_name")
    spec = POLICY_REWARDS.get("rule" if name is None else str(name))
    if spec.compute_score is None:
        raise NotImplementedError(
            f"policy reward {spec.name!r} calls an LLM judge: its verl reward is the async compute_score of "
            "judge_rl/policy/verl/reward.py (the translation in judge_rl/policy/verl/launch.py selects it)"
        )
    return spec.compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)
