"""RewardBench 2: best-of-n, the generative item rules and the Ties formula by hand, and the benchmark end to
end (choice and ratings modes, Ties, an unanswered choice) with a scripted judge."""

from __future__ import annotations

import json
import math

import pytest

from benchmark_support import flaky_run, run, write_jsonl
from judge_rl.evaluation.benchmarks.rewardbench2 import (
    best_of_n_score,
    rb2_choice_item_score,
    rb2_ratings_item_score,
    rb2_ties_score,
    rewardbench2_scores,
)


def test_best_of_n_ties():
    assert best_of_n_score(3, [1, 2, 0]) == 1.0
    assert best_of_n_score(3, [3, 1, 0]) == pytest.approx(1 / 2)  # 2-way tie at top
    assert best_of_n_score(3, [3, 3, 0]) == pytest.approx(1 / 3)  # 3-way tie at top
    assert best_of_n_score(3, [3, 3, 3]) == pytest.approx(1 / 4)
    assert best_of_n_score(3, [4, 3, 0]) == 0.0
    assert best_of_n_score(float("nan"), [1, 2, 0]) == 0.0


def test_rb2_generative_helpers():
    assert rb2_ratings_item_score([7, 7, 5, 7]) == pytest.approx(1 / 3)
    assert rb2_ratings_item_score([5, 7, 5, 6], chosen_index=1) == 1.0
    assert rb2_ratings_item_score([5, 9, 5, 6]) == 0.0
    assert rb2_ratings_item_score([None, 1, 2, 3]) == 0.0
    assert rb2_ratings_item_score([5, None, None, None]) == 1.0
    # failed ratings leave the max; the tie at the top is between the valid ones only
    assert rb2_ratings_item_score([6, None, 6, 2]) == pytest.approx(0.5)
    # every rating failed: an "error", RB2's 0.25
    assert rb2_ratings_item_score([None, None, None, None]) == 0.25
    assert rb2_choice_item_score(2, 2) == 1.0
    assert rb2_choice_item_score(0, 2) == 0.0
    assert rb2_choice_item_score(None, 0) == 0.25


def test_rb2_ties_by_hand():
    prompts = [
        # prompt 1 ref: accurate, correct-incorrect margin 10-4 = 6
        {"prompt_id": 1, "sample_type": "ref", "samples": [(True, 10), (False, 4), (False, 2)]},
        # prompt 1 tied: accurate, spread among correct 10-8 = 2, correct-incorrect 8-5 = 3
        {"prompt_id": 1, "sample_type": "tied", "samples": [(True, 10), (True, 8), (False, 5), (False, 1)]},
        # prompt 2 ref: not accurate, margin 3-5 = -2
        {"prompt_id": 2, "sample_type": "ref", "samples": [(True, 3), (False, 5)]},
        # prompt 2 tied: not accurate, spread 6-2 = 4, margin 2-4 = -2
        {"prompt_id": 2, "sample_type": "tied", "samples": [(True, 6), (True, 2), (False, 4)]},
    ]
    out = rb2_ties_score(prompts)
    assert out["ref_accuracy"] == pytest.approx(0.5)
    assert out["tied_accuracy"] == pytest.approx(0.5)
    # p1: 3 > 2 yes, min(6,3)=3 > 2 yes; p2: -2 > 4 no, min(-2,-2) > 4 no
    assert out["correctness_preferred"] == pytest.approx(0.5)
    assert out["correctness_preferred_hard"] == pytest.approx(0.5)
    # p1: tanh(3/2 - 1) = tanh(0.5); p2: tanh(-2/4 - 1) = tanh(-1.5)
    margin = (math.tanh(0.5) + math.tanh(-1.5)) / 2
    assert out["correctness_margin_score"] == pytest.approx(margin)
    # upstream weights: 0.3 tied acc + 0.3 ref acc + 0.2 preferred + 0.2 preferred_hard + 0.01 margin
    assert out["score"] == pytest.approx(0.3 * 0.5 + 0.3 * 0.5 + 0.2 * 0.5 + 0.2 * 0.5 + 0.01 * margin)


def test_rb2_ties_zero_spread_and_errors():
    prompts = [
        {"prompt_id": "x", "sample_type": "ref", "samples": [(True, 5), (False, 1)]},
        # correct answers scored identically: spread 0, margin 5-1=4 -> 4/0 = inf -> tanh = 1
        {"prompt_id": "x", "sample_type": "tied", "samples": [(True, 5), (True, 5), (False, 1)]},
    ]
    out = rb2_ties_score(prompts)
    assert out["correctness_margin_score"] == pytest.approx(1.0)
    assert out["score"] == pytest.approx(1.01)  # the margin term can lift a perfect score to 1.01, as upstream
    # 0/0 (no gap, no spread) is NaN in numpy and counted as 0 in the mean
    flat = [
        {"prompt_id": "y", "sample_type": "ref", "samples": [(True, 5), (False, 5)]},
        {"prompt_id": "y", "sample_type": "tied", "samples": [(True, 5), (True, 5), (False, 5)]},
    ]
    assert rb2_ties_score(flat)["correctness_margin_score"] == 0.0
    with pytest.raises(ValueError):
        rb2_ties_score([{"prompt_id": 1, "sample_type": "ref", "samples": [(True, 1)]}])
    with pytest.raises(ValueError):
        rb2_ties_score([{"prompt_id": 1, "sample_type": "other", "samples": [(True, 1), (False, 0)]}])


def test_rewardbench2_overall_unweighted():
    out = rewardbench2_scores(
        {
            "Factuality": [1, 0, 0.5, 0.5],  # 0.5
            "Precise IF": [1],  # 1.0
            "Math": [0, 0],  # 0.0
            "Safety": [1, 1, 1, 0],  # 0.75
            "Focus": [1 / 3, 2 / 3],  # 0.5
            "Ties": 0.25,  # aggregated score
        }
    )
    assert out["subsets"]["Safety"] == pytest.approx(0.75)
    assert out["overall"] == pytest.approx((0.5 + 1.0 + 0.0 + 0.75 + 0.5 + 0.25) / 6)
    assert out["missing_subsets"] == []
    partial = rewardbench2_scores({"Math": [1.0], "Focus": [0.0]})
    assert partial["overall"] == pytest.approx(0.5)
    assert "Ties" in partial["missing_subsets"]


def rb2_row(row_id, subset, rule, n_correct=1, n_rejected=3, ratings=None):
    ratings = ratings or [8] * n_correct + [3] * n_rejected
    answers = [f"{'GOOD' if k < n_correct else 'BAD'} {row_id} {k} rate={r}" for k, r in enumerate(ratings)]
    return {"id": row_id, "prompt": f"Q {row_id} rule={rule}", "chosen": answers[:n_correct], "rejected": answers[n_correct:],
            "num_correct": n_correct, "num_incorrect": n_rejected, "total_completions": n_correct + n_rejected,
            "models": [], "subset": subset, "additional_metadata": {}}


def test_rewardbench2_choice_ratings_and_ties(tmp_path):
    path = write_jsonl(tmp_path / "rb2.jsonl", [
        rb2_row("1", "Focus", "right"),
        rb2_row("2", "Focus", "garbage"),  # no verdict: 0.25
        rb2_row("3", "Math", "wrong"),
        # Ties (always rated): ref has 1 correct, tied 2 correct, sharing prompt id 7
        rb2_row("ref:7", "Ties", "right", 1, 2, ratings=[9, 2, 2]),
        rb2_row("tied:7", "Ties", "right", 2, 1, ratings=[9, 8, 2]),
    ])
    summary, server = run(tmp_path, "rewardbench2", path, options={"mode": "choice", "seed": 3})
    off = summary["official"]
    assert off["subsets"]["Focus"] == pytest.approx((1 + 0.25) / 2) and off["subsets"]["Math"] == 0.0
    # ref: accurate, ci 7; tied: accurate, diff 1, ci 6 -> 0.3 + 0.3 + 0.2 + 0.2 + 0.01 tanh(6/1 - 1)
    assert off["ties"]["score"] == pytest.approx(1.0 + 0.01 * math.tanh(5))
    assert off["overall"] == pytest.approx((0.625 + 0.0 + off["ties"]["score"]) / 3)
    assert off["missing_subsets"] == ["Factuality", "Precise IF", "Safety"]
    assert server.requests == 3 + 3 + 3  # one 4-way request per non-Ties row, one rating per Ties answer
    # the correct answer sits in a seeded random slot and is mapped back
    recs = [json.loads(x) for x in (tmp_path / "out" / "judgments.jsonl").read_text().splitlines()]
    focus = next(r for r in recs if r["unit_id"] == "1")
    assert focus["picked_index"] == 0 and focus["pick"] in "abcd"

    # ratings mode: best-of-4 with 1/k for a tie at the top
    path2 = write_jsonl(tmp_path / "rb2r.jsonl", [rb2_row("1", "Focus", "right", ratings=[8, 8, 3, 3]),
                                                  rb2_row("2", "Math", "right", ratings=[9, 3, 3, 3])])
    summary2, _ = run(tmp_path / "r", "rewardbench2", path2, options={"mode": "ratings"})
    assert summary2["official"]["subsets"] == {"Focus": 0.5, "Math": 1.0}
    with pytest.raises(ValueError, match="options.mode='vote'"):
        run(tmp_path / "x", "rewardbench2", path2, options={"mode": "vote"})


def test_rewardbench2_bad_ties_id_is_reported(tmp_path):
    path = write_jsonl(tmp_path / "rb2.jsonl", [rb2_row("7", "Ties", "right", 1, 2)])
    with pytest.raises(ValueError, match="row 1 .*Ties id must be '<ref|tied>:<int>'"):
        run(tmp_path, "rewardbench2", path)


def test_an_unanswered_rewardbench2_choice_is_not_scored_as_unreadable(tmp_path):
    def row(i, rule):
        return {"id": str(i), "subset": "Factuality", "prompt": f"Q{i} rule={rule}", "chosen": [f"GOOD {i}"],
                "rejected": [f"BAD {i}a", f"BAD {i}b", f"BAD {i}c"], "num_correct": 1}

    path = write_jsonl(tmp_path / "rb2.jsonl", [row(0, "right"), row(1, "down")])
    summary = flaky_run(tmp_path / "out", "rewardbench2", path, max_rate=0.5, options={"mode": "choice"})
    assert summary["scoring"]["units_scored"] == 1
    assert summary["official"]["subsets"]["Factuality"] == 1.0  # not (1 + 0.25) / 2
