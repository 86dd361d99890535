"""J1 consistency: a right verdict is paid only when its partner in the other order is right too."""

from __future__ import annotations

import pytest

from judge_rl.prompts import get_prompt
from judge_rl.rewards import build_reward, compute_score

P = get_prompt("strength")


def score(winner: str, k: int, gt_winner: str, gt_strength: int = 2) -> dict:
    return compute_score("s", P.output("t", winner, k), {"winner": gt_winner, "strength": gt_strength},
                         reward_name="consistency")


def test_only_verdicts_right_in_both_orders_keep_their_reward():
    reward = build_reward("consistency")
    # order a: better shown at (a); order b: better shown at (b)
    a = [score("a", 2, "a"), score("a", 3, "a"), score("b", 2, "a"), score("a", 2, "a")]
    b = [score("b", 2, "b"), score("a", 2, "b"), score("b", 2, "b"), P.parse("junk") and compute_score(
        "s", "junk", {"winner": "b", "strength": 2}, reward_name="consistency")]
    reward.combine(a, b)
    # pair 0: right in both orders -> both keep 1 - 0/8
    assert a[0]["score"] == 1.0 and b[0]["score"] == 1.0 and a[0]["consistent"] == 1.0
    # pair 1: always "(a)": the right one in order a is no longer paid
    assert a[1]["score"] == 0.0 and a[1]["correct"] == 0.0 and b[1]["score"] == 0.0
    # pair 2: wrong in order a, right in order b -> b is not paid
    assert a[2]["score"] == 0.0 and b[2]["score"] == 0.0 and b[2]["consistent"] == 0.0
    # pair 3: partner did not parse -> not paid; the failure keeps its failure score
    assert a[3]["score"] == 0.0 and b[3]["score"] == 0.0 and b[3]["parse_error"]


def test_a_right_but_unpartnered_verdict_scores_as_a_wrong_one():
    reward = build_reward("consistency", format_weight=0.2)
    a = [compute_score("s", P.output("t", "a", 2), {"winner": "a", "strength": 2}, reward_name="consistency", format_weight=0.2)]
    b = [compute_score("s", P.output("t", "a", 2), {"winner": "b", "strength": 2}, reward_name="consistency", format_weight=0.2)]
    assert a[0]["score"] == pytest.approx(1.2) and b[0]["score"] == pytest.approx(0.2)
    reward.combine(a, b)
    assert a[0]["score"] == pytest.approx(0.2) and b[0]["score"] == pytest.approx(0.2)


def test_odd_rollout_n_is_refused_before_training():
    from judge_rl.jobs.train import to_job_config

    from conftest import compose_config

    with pytest.raises(ValueError, match="even"):
        to_job_config(compose_config(["reward=consistency", "algorithm.rollout_n=3", "run_dir=/tmp/x"]))
