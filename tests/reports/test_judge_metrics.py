"""Judge-bias metrics of one RL step from its compute_score dicts: hand-made batches and the real rewards' keys."""

from __future__ import annotations

import pytest

from judge_rl.prompts import get_prompt
from judge_rl.prompts.think import think_block
from judge_rl.reports.judge_metrics import reason_slug, verdict_metrics
from judge_rl.rewards import compute_score


def pairwise(winner: str, strength: int = -1, error: str = "", **extra) -> dict:
    ok = not error
    return {"score": 1.0 if ok else 0.0, "format_ok": float(ok), "correct": 0.0, "pred_winner": winner if ok else "",
            "pred_strength": strength if ok else -1, "strength_error": -1.0, "parse_error": error, **extra}


def test_a_preference_strength_histogram_and_failure_reasons_of_a_pairwise_step():
    batch = [
        pairwise("a", 3),
        pairwise("a", 3),
        pairwise("a", 1),
        pairwise("b", 2),
        pairwise("", error="missing <think> block"),
        pairwise("", error="missing <think> block"),
        pairwise("", error="text between </think> and verdict line"),
        pairwise("", error="strength out of range"),
    ]
    m = verdict_metrics(batch)
    # 4 parsed verdicts, 3 of them (a); failures are not in the denominator
    assert m["judge/a_preference"] == pytest.approx(0.75)
    assert m["judge/tie_rate"] == 0.0
    assert m["judge/strength/mean"] == pytest.approx(9 / 4)
    assert m["judge/strength/std"] == pytest.approx(((0.75**2) * 2 + 1.25**2 + 0.25**2) ** 0.5 / 2)
    assert [m[f"judge/strength_hist/{k}"] for k in (1, 2, 3)] == pytest.approx([0.25, 0.25, 0.5])
    # failure rates by reason over all 8 samples; they add up to the step's parse-failure rate
    assert m["judge/parse_failure/missing_think_block"] == pytest.approx(2 / 8)
    assert m["judge/parse_failure/text_between_think_and_verdict_line"] == pytest.approx(1 / 8)
    assert m["judge/parse_failure/strength_out_of_range"] == pytest.approx(1 / 8)
    assert sum(v for k, v in m.items() if k.startswith("judge/parse_failure/")) == pytest.approx(0.5)
    assert not any(k.startswith("judge/score") for k in m)  # no pointwise predictions here
    failures = [k for k in m if k.startswith("judge/parse_failure/")]
    assert len(failures) == 3 and all(k.count("/") == 2 for k in failures)  # a reason is one name segment


def test_ties_count_as_parsed_verdicts_and_margins_are_averaged():
    m = verdict_metrics([
        pairwise("a", pred_margin=6.0),
        pairwise("tie", pred_margin=0.0),
        pairwise("b", pred_margin=3.0),
        pairwise("", error="tie", pred_margin=-1.0),  # the margin prompt's tie is a parse failure
    ])
    assert m["judge/a_preference"] == pytest.approx(1 / 3)
    assert m["judge/tie_rate"] == pytest.approx(1 / 3)
    assert m["judge/margin/mean"] == pytest.approx(3.0)  # the failure's -1 is "not available"
    assert m["judge/parse_failure/tie"] == pytest.approx(0.25)
    assert not any(k.startswith("judge/strength") for k in m)  # no verdict carried a strength


def test_pointwise_scores_histogram():
    def pw(score: int, error: str = "") -> dict:
        return {"score": 0.5, "format_ok": float(not error), "correct": 0.0, "pred_score": score,
                "score_error": -1.0, "parse_error": error}

    m = verdict_metrics([pw(4), pw(4), pw(0), pw(2), pw(-1, "score out of range")])
    assert m["judge/score/mean"] == pytest.approx(2.5)
    assert [m[f"judge/score_hist/{k}"] for k in range(5)] == pytest.approx([0.25, 0.0, 0.25, 0.0, 0.5])
    assert m["judge/parse_failure/score_out_of_range"] == pytest.approx(0.2)
    assert "judge/a_preference" not in m


def test_missing_keys_and_empty_steps_are_tolerated():
    assert verdict_metrics([]) == {}
    # no parse_error key, but the format failed: an unknown reason, not a parsed verdict
    m = verdict_metrics([{"score": 0.0, "format_ok": 0.0}, {"score": 1.0, "pred_winner": "b"}, {"score": 1.0}])
    assert m["judge/parse_failure/unknown"] == pytest.approx(1 / 3)
    assert m["judge/a_preference"] == 0.0
    # every sample failed: no preference to report rather than a made-up 0
    m = verdict_metrics([pairwise("", error="empty output")] * 3)
    assert m == {"judge/parse_failure/empty_output": 1.0}
    assert reason_slug("text between </think> and <answer>") == "text_between_think_and_answer"
    assert reason_slug("") == "unknown"


@pytest.mark.parametrize("reward", ["strength", "binary", "margin", "judgelrm", "pairwise_tag", "consistency"])
def test_the_keys_every_pairwise_reward_returns(reward):
    """Scored by the real rewards: two (a) verdicts, one (b), one unparsed."""
    prompt = get_prompt("strength" if reward == "consistency" else reward)
    truth = {"winner": "a", "strength": 2}
    outputs = [prompt.output("t", "a", 2), prompt.output("t", "a", 3), prompt.output("t", "b", 1), "no think block"]
    m = verdict_metrics([compute_score("src", o, truth, reward_name=reward) for o in outputs])
    assert m["judge/a_preference"] == pytest.approx(2 / 3)
    assert m["judge/parse_failure/missing_think_block"] == pytest.approx(0.25)
    has_strength = reward in ("strength", "consistency")
    assert ("judge/strength/mean" in m) == has_strength
    if has_strength:
        assert m["judge/strength/mean"] == pytest.approx(2.0)
    assert ("judge/margin/mean" in m) == (reward in ("margin", "judgelrm"))


def test_a_judgelrm_tie_and_a_pointwise_reward():
    tie = compute_score("src", think_block("t") + get_prompt("judgelrm").scored_verdict(5, 5), {"winner": "b", "strength": 1},
                        reward_name="judgelrm")
    assert verdict_metrics([tie])["judge/tie_rate"] == 1.0
    pointwise = get_prompt("pointwise")
    rows = [compute_score("src", pointwise.output("t", k), {"label": 1, "scale": 4}, reward_name="pointwise") for k in (1, 3)]
    m = verdict_metrics(rows)
    assert m["judge/score/mean"] == pytest.approx(2.0) and m["judge/score_hist/3"] == pytest.approx(0.5)
