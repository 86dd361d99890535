"""JudgeLRM's composite reward ("judgelrm"): exact values, gold scores, ties, and the released weights."""

from __future__ import annotations

import pytest

from judge_rl.prompts.judgelrm import ANSWER_REASONS
from judge_rl.prompts.think import MISSING_THINK, SCORE_OUT_OF_RANGE
from judge_rl.rewards.judgelrm import JudgeLRMReward

THINK = "<think>\nWeighing both.\n</think>\n"


def out(x: object, y: object) -> str:
    return THINK + f"<answer>{x}, {y}</answer>"


def gt(winner: str, scores: tuple[float, float] | None = None) -> dict[str, object]:
    truth: dict[str, object] = {"winner": winner, "strength": None}
    if scores is not None:
        truth["scores"] = list(scores)
    return truth


# defaults: format 1, relation 2, mismatch 0, absolute 1 (gold scores only), confidence 1 * gap/9, failure 0
CASES: list[tuple[str, str, dict[str, object], float]] = [
    ("right, gap 4", out(7, 3), gt("a"), 1 + 2 + 4 / 9),
    ("wrong, gap 4", out(7, 3), gt("b"), 1.0),
    ("right, gap 9", out(10, 1), gt("a"), 4.0),
    ("right b, gap 1", out(5, 6), gt("b"), 3 + 1 / 9),
    ("tie is a wrong ordering (a)", out(5, 5), gt("a"), 1.0),
    ("tie is a wrong ordering (b)", out(5, 5), gt("b"), 1.0),
    # gold scores (7, 3): absolute 1 when exact, 0.6 when the summed error <= 2, else 0
    ("gold exact", out(7, 3), gt("a", (7, 3)), 1 + 2 + 1 + 4 / 9),
    ("gold off by 1", out(8, 3), gt("a", (7, 3)), 1 + 2 + 0.6 + 5 / 9),
    ("gold off by 2", out(6, 4), gt("a", (7, 3)), 1 + 2 + 0.6 + 2 / 9),
    ("gold off by 3", out(9, 2), gt("a", (7, 3)), 1 + 2 + 0 + 7 / 9),
    ("gold, wrong side: no absolute", out(3, 7), gt("a", (7, 3)), 1.0),
    ("gold b exact", out(2, 9), gt("b", (2, 9)), 1 + 2 + 1 + 7 / 9),
]


@pytest.mark.parametrize("text,truth,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_default_values(text: str, truth: dict[str, object], expected: float) -> None:
    result = JudgeLRMReward()(text, truth)
    assert result["score"] == pytest.approx(expected)
    assert result["format_ok"] == 1.0
    assert result["correct"] == (1.0 if expected > 1.0 else 0.0)


def test_full_outputs() -> None:
    assert JudgeLRMReward()(out(7, 3), gt("a")) == {
        "score": pytest.approx(1 + 2 + 4 / 9),
        "format_ok": 1.0,
        "correct": 1.0,
        "pred_winner": "a",
        "pred_strength": -1,
        "strength_error": -1.0,
        "parse_error": "",
        "pred_margin": 4.0,
    }
    assert JudgeLRMReward()(out(5, 5), gt("b")) == {
        "score": 1.0,
        "format_ok": 1.0,
        "correct": 0.0,
        "pred_winner": "tie",
        "pred_strength": -1,
        "strength_error": -1.0,
        "parse_error": "",
        "pred_margin": 0.0,
    }


@pytest.mark.parametrize(
    "text,reason",
    [
        ("<answer>7, 3</answer>", MISSING_THINK),
        (THINK + "<answer>0, 3</answer>", SCORE_OUT_OF_RANGE),
        (THINK + "<answer>7</answer><answer>3</answer>", ANSWER_REASONS.several),
        (THINK + "<answer>7.5, 3</answer>", ANSWER_REASONS.bad_content),
        (THINK + "(a) wins", ANSWER_REASONS.missing),
    ],
)
def test_failures(text: str, reason: str) -> None:
    assert JudgeLRMReward()(text, gt("a", (7, 3))) == {
        "score": 0.0,
        "format_ok": 0.0,
        "correct": 0.0,
        "pred_winner": "",
        "pred_strength": -1,
        "strength_error": -1.0,
        "parse_error": reason,
        "pred_margin": -1.0,
    }


def test_weights() -> None:
    r = JudgeLRMReward(
        format_weight=0.5, relation_weight=1.0, mismatch_penalty=0.25, absolute_weight=2.0, confidence_weight=0.9,
        failure_score=-1.0,
    )
    assert r(out(7, 3), gt("a"))["score"] == pytest.approx(0.5 + 1.0 + 0.9 * 4 / 9)
    assert r(out(7, 3), gt("a", (7, 3)))["score"] == pytest.approx(0.5 + 1.0 + 2.0 + 0.9 * 4 / 9)
    assert r(out(7, 4), gt("a", (7, 3)))["score"] == pytest.approx(0.5 + 1.0 + 1.2 + 0.9 * 3 / 9)
    assert r(out(7, 3), gt("b"))["score"] == pytest.approx(0.25)
    assert r(out(4, 4), gt("b"))["score"] == pytest.approx(0.25)
    assert r("", gt("b"))["score"] == -1.0


def test_released_weights_on_preference_pairs() -> None:
    """JudgeLRM's released code without gold scores: right 3, wrong -0.5, malformed -3 (ties: see docstring)."""
    r = JudgeLRMReward(mismatch_penalty=1.5, confidence_weight=0.0, failure_score=-3.0)
    assert r(out(7, 3), gt("a"))["score"] == 3.0
    assert r(out(7, 3), gt("b"))["score"] == -0.5
    assert r(out(6, 6), gt("a"))["score"] == -0.5
    assert r(out(7, 3), gt("a", (7, 3)))["score"] == 4.0
    assert r(out(8, 3), gt("a", (7, 3)))["score"] == pytest.approx(3.6)
    assert r("no think", gt("a"))["score"] == -3.0


def test_validation() -> None:
    JudgeLRMReward(failure_score=1.0)  # equal to a wrong verdict (format only): allowed
    with pytest.raises(ValueError, match="failure_score"):
        JudgeLRMReward(failure_score=1.01)
    with pytest.raises(ValueError, match="failure_score"):  # a wrong verdict now scores 1 - 1.5
        JudgeLRMReward(mismatch_penalty=1.5)
    JudgeLRMReward(mismatch_penalty=1.5, failure_score=-0.5)
    with pytest.raises(ValueError, match="failure_score"):  # right, gold exact: 1 + 2 - 4 + 1/9 < 0
        JudgeLRMReward(absolute_weight=-4.0)
    JudgeLRMReward(absolute_weight=-4.0, failure_score=1 + 2 - 4 + 1 / 9)
    with pytest.raises(ValueError, match="failure_score"):  # right with gap 9: 1 + 2 - 5 < 0
        JudgeLRMReward(confidence_weight=-5.0)
