"""Bias metrics (judge_rl.policy.bias) and which samples train after judge failures (judge_rl.policy.backend)."""

from __future__ import annotations

import math

import pytest

from judge_rl.policy.backend import kept_samples
from judge_rl.policy.bias import bias_metrics, length_correlation
from judge_rl.policy.config import JudgeFailurePolicy
from judge_rl.policy.grading import Graded
from judge_rl.policy.rewards import JUDGE_SERVER_ERROR, PolicyReward


def ok(score: float, rule: float | None, pairs=()) -> Graded:
    return Graded(PolicyReward(score, None, {}), rule, None if rule is None else float(rule == 1.0), list(pairs))


def failed(rule: float | None = 0.5, pairs=()) -> Graded:
    return Graded(PolicyReward(None, JUDGE_SERVER_ERROR, {}), rule, None, list(pairs))


def test_false_positive_and_negative_rates_against_the_checkers():
    graded = [
        ok(1.0, 1.0, [(True, True), (True, False)]),  # one right, one fooled
        ok(0.0, 0.0, [(False, False), (False, True)]),  # one right, one missed
        failed(0.5, [(True, False)]),  # a parsed criterion of a failed sample still counts
    ]
    m = bias_metrics(graded, [10, 20, 30])
    # checker says not followed: (T,F), (F,F), (T,F) -> judge met 2 of 3
    assert m["bias/judge_fp_rate"] == pytest.approx(2 / 3)
    # checker says followed: (T,T), (F,T) -> judge missed 1 of 2
    assert m["bias/judge_fn_rate"] == pytest.approx(1 / 2)
    assert m["bias/judge_agreement"] == pytest.approx(2 / 5)
    assert m["bias/n_checked"] == 5


def test_reward_minus_rule_leaves_out_failed_samples_and_prompts_without_checkers():
    graded = [ok(0.9, 0.5), ok(0.7, 1.0), failed(0.0), ok(0.3, None)]
    m = bias_metrics(graded, [1, 2, 3, 4])
    assert m["bias/n_samples"] == 2
    assert m["bias/reward_mean"] == pytest.approx(0.8)
    assert m["bias/rule_mean"] == pytest.approx(0.75)
    assert m["bias/reward_minus_rule"] == pytest.approx(0.05)
    assert math.isnan(m["bias/judge_fp_rate"]) and m["bias/n_checked"] == 0


def test_length_correlation_is_within_checker_outcome():
    # Across groups, longer answers follow more rules and get more reward (a confounded correlation of 1).
    # Within each group the judge pays *less* for length: the metric must say -1, not +1.
    rewards = [0.2, 0.1, 0.9, 0.8]
    lengths = [10, 20, 100, 110]
    strata = [0.0, 0.0, 1.0, 1.0]
    assert length_correlation(rewards, lengths, strata) == pytest.approx(-1.0)
    # a stratum of one sample says nothing; no variance anywhere: NaN
    assert math.isnan(length_correlation([0.5, 0.7], [10, 20], [0.0, 1.0]))
    assert math.isnan(length_correlation([0.5, 0.5], [10, 20], [0.0, 0.0]))


def test_bias_metrics_need_one_length_per_sample():
    with pytest.raises(ValueError, match="2 graded samples but 1 lengths"):
        bias_metrics([ok(1, 1), ok(0, 0)], [3])


UIDS = ["p0"] * 4 + ["p1"] * 4 + ["p2"] * 4


def test_mask_keeps_graded_samples_and_drops_groups_left_with_one_under_grpo():
    ok_flags = [True, False, True, True,  # p0: 3 graded
                True, False, False, False,  # p1: 1 graded -> no baseline under GRPO: dropped
                False, False, False, False]  # p2: none  # fmt: skip
    keep, dropped = kept_samples(UIDS, ok_flags, JudgeFailurePolicy(mode="mask"), "grpo")
    assert keep == [0, 2, 3]
    assert dropped == 1
    # an estimator without groups keeps the lone sample
    keep, dropped = kept_samples(UIDS, ok_flags, JudgeFailurePolicy(mode="mask"), "reinforce_plus_plus")
    assert keep == [0, 2, 3, 4] and dropped == 0


def test_drop_group_drops_groups_below_min_group_size():
    ok_flags = [True, False, True, True, True, True, True, True, False, True, True, False]
    keep, dropped = kept_samples(UIDS, ok_flags, JudgeFailurePolicy(mode="drop_group", min_group_size=4), "grpo")
    assert keep == [4, 5, 6, 7] and dropped == 2
    keep, dropped = kept_samples(UIDS, ok_flags, JudgeFailurePolicy(mode="drop_group", min_group_size=3), "grpo")
    assert keep == [0, 2, 3, 4, 5, 6, 7] and dropped == 1


def test_a_pairwise_judge_disagrees_with_the_checkers_where_it_prefers_the_answer_they_rank_lower():
    def vs(score: float, rule: float, opponent: float) -> Graded:
        return Graded(PolicyReward(score, None, {}), rule, float(rule == 1.0), opponent_rule_score=opponent)

    graded = [
        vs(1.0, 1.0, 0.0),  # agrees: the judge prefers the answer the checkers rank higher
        vs(1.0, 0.0, 1.0),  # disagrees
        vs(0.0, 0.0, 1.0),  # agrees
        vs(0.5, 1.0, 0.0),  # the judge undecided: not counted
        vs(1.0, 1.0, 1.0),  # the checkers undecided: not counted
        failed(1.0),  # no reward: not counted
    ]
    m = bias_metrics(graded, [10] * 6)
    assert m["bias/n_compared"] == 3 and m["bias/judge_rule_disagree"] == pytest.approx(1 / 3)
    assert math.isnan(bias_metrics([ok(1.0, 1.0)], [5])["bias/judge_rule_disagree"])


def test_the_bias_metrics_hold_a_generated_prompt_to_its_true_score():
    """A generated prompt's rule score is its true score: a looping answer that passes the checkers follows nothing."""
    from judge_rl.policy.tasks.prompts import generate_policy_prompts
    from judge_rl.policy.grading import true_checks
    from judge_rl.policy.rewards.rule import rule_checks

    p = generate_policy_prompts(1, seed=0, instruction_ids=["detectable_content:postscript"])[0]
    loop = f"{p.kwargs[0]['postscript_marker']} " + "yes yes yes " * 10
    assert rule_checks(p.instruction_id_list, p.kwargs, loop) == [True] and true_checks(p, loop) == [False]
