"""Think-J's margin reward ("margin"): exact values on hand-written outputs, and its weights."""

from __future__ import annotations

import math

import pytest

from judge_rl.prompts.margin import TIE
from judge_rl.prompts.strength import BAD_TEMPLATE, MISSING_THINK
from judge_rl.prompts.think import SCORE_OUT_OF_RANGE
from judge_rl.rewards.margin import MarginReward

THINK = "<think>\nWeighing both.\n</think>\n"


def out(x: object, y: object) -> str:
    return THINK + f"Therefore, the score of Response (a) is [[{x}]] and the score of Response (b) is [[{y}]]."


def gt(winner: str, strength: int | None = None) -> dict[str, object]:
    return {"winner": winner, "strength": strength}


# defaults: correct 1, margin 0.5, cap 50, failure -0.5; m = min(|x-y|, 50) / 50
CASES: list[tuple[str, str, str, float]] = [
    # id, output, labelled winner, expected score
    ("right, gap 50", out(80, 30), "a", 1.5),
    ("wrong, gap 50", out(80, 30), "b", -0.5),
    ("right, gap 20", out(60, 40), "a", 1.2),
    ("wrong, gap 20", out(60, 40), "b", -0.2),
    ("right b, gap 25", out(10, 35), "b", 1.25),
    ("wrong b, gap 25", out(10, 35), "a", -0.25),
    ("right, gap 1", out(51, 50), "a", 1.01),
    ("wrong, gap 1", out(51, 50), "b", -0.01),
    ("right, gap 100 capped", out(0, 100), "b", 1.5),
    ("wrong, gap 100 capped", out(0, 100), "a", -0.5),
]


@pytest.mark.parametrize("text,winner,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_default_values(text: str, winner: str, expected: float) -> None:
    result = MarginReward()(text, gt(winner, 2))
    assert result["score"] == pytest.approx(expected)
    assert result["format_ok"] == 1.0
    assert result["correct"] == (1.0 if expected > 0 else 0.0)
    assert result["pred_strength"] == -1 and result["strength_error"] == -1.0 and result["parse_error"] == ""


def test_full_output() -> None:
    assert MarginReward()(out(80, 30), gt("a", 3)) == {
        "score": 1.5,
        "format_ok": 1.0,
        "correct": 1.0,
        "pred_winner": "a",
        "pred_strength": -1,
        "strength_error": -1.0,
        "parse_error": "",
        "pred_margin": 50.0,
    }
    assert MarginReward()(out(10, 35), gt("a"))["pred_margin"] == 25.0
    assert MarginReward()(out(10, 35), gt("a"))["pred_winner"] == "b"


@pytest.mark.parametrize(
    "text,reason",
    [
        (out(50, 50), TIE),
        (out(101, 0), SCORE_OUT_OF_RANGE),
        (out("80.5", 30), BAD_TEMPLATE),
        ("Therefore, the score of Response (a) is [[80]] and the score of Response (b) is [[30]].", MISSING_THINK),
    ],
)
@pytest.mark.parametrize("winner", ["a", "b"])
def test_failures(text: str, reason: str, winner: str) -> None:
    assert MarginReward()(text, gt(winner, 1)) == {
        "score": -0.5,
        "format_ok": 0.0,
        "correct": 0.0,
        "pred_winner": "",
        "pred_strength": -1,
        "strength_error": -1.0,
        "parse_error": reason,
        "pred_margin": -1.0,
    }


def test_weights() -> None:
    r = MarginReward(format_weight=0.25, correct_weight=2.0, margin_weight=1.0, margin_cap=20.0, failure_score=-0.75)
    assert r(out(60, 40), gt("a"))["score"] == pytest.approx(0.25 + 2.0 + 1.0)  # gap 20 = cap
    assert r(out(45, 40), gt("a"))["score"] == pytest.approx(0.25 + 2.0 + 0.25)  # gap 5 of 20
    assert r(out(45, 40), gt("b"))["score"] == pytest.approx(0.25 - 0.25)
    assert r(out(90, 10), gt("b"))["score"] == pytest.approx(0.25 - 1.0)  # capped at 20
    assert r("", gt("b"))["score"] == -0.75
    # margin_weight 0: right/wrong only
    flat = MarginReward(margin_weight=0.0, failure_score=0.0)
    assert [flat(out(x, y), gt("a"))["score"] for x, y in [(51, 50), (100, 0), (50, 51), (0, 100)]] == [1, 1, 0, 0]


def test_thinkj_released_weights() -> None:
    """Think-J's released code: right 1 + min(|x-y|/100, 1), wrong max(-|x-y|/100, -1); failure 0.5 is not allowed."""
    r = MarginReward(correct_weight=1.0, margin_weight=1.0, margin_cap=100.0, failure_score=-1.0)
    for x, y in [(80, 30), (51, 50), (0, 100), (35, 10)]:
        gap = abs(x - y)
        better = "a" if x > y else "b"
        worse = "b" if better == "a" else "a"
        assert r(out(x, y), gt(better))["score"] == pytest.approx(1 + min(gap / 100, 1.0))
        assert r(out(x, y), gt(worse))["score"] == pytest.approx(max(-gap / 100, -1.0))
    with pytest.raises(ValueError, match="failure_score"):
        MarginReward(correct_weight=1.0, margin_weight=1.0, margin_cap=100.0, failure_score=0.5)


def test_validation() -> None:
    MarginReward(failure_score=-0.5)  # equal to the most confident wrong verdict: allowed
    with pytest.raises(ValueError, match="failure_score"):
        MarginReward(failure_score=-0.49)
    with pytest.raises(ValueError, match="failure_score"):  # lowest = 0.3 - 0.5
        MarginReward(format_weight=0.3, failure_score=0.0)
    MarginReward(format_weight=0.3, failure_score=-0.2)
    with pytest.raises(ValueError, match="failure_score"):  # a right verdict can score 1 - 2 = -1
        MarginReward(margin_weight=-2.0, failure_score=-0.5)
    for cap in [0.0, -5.0]:
        with pytest.raises(ValueError, match="margin_cap"):
            MarginReward(margin_cap=cap)
    with pytest.raises(ValueError, match="finite"):
        MarginReward(margin_cap=math.inf)
