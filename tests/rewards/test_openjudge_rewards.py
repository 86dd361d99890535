"""OpenJudge's rewards: "pairwise_tag" (right/wrong) and "pointwise" (binary and graded labels)."""

from __future__ import annotations

import pytest

from judge_rl.prompts.openjudge import BETTER_REASONS, SCORE_REASONS
from judge_rl.prompts.think import MISSING_THINK, SCORE_OUT_OF_RANGE
from judge_rl.rewards.openjudge import PairwiseTagReward, PointwiseScoreReward
from judge_rl.rewards.strength import BinaryReward

THINK = "<think>\nWeighing it.\n</think>\n"


def better(letter: str) -> str:
    return THINK + f"<better>{letter}</better>"


def scored(k: object) -> str:
    return THINK + f"<score>{k}</score>"


def label(value: int, scale: int) -> dict[str, int]:
    return {"label": value, "scale": scale}


# --- pairwise_tag -----------------------------------------------------------------------------


@pytest.mark.parametrize("winner,letter", [("a", "A"), ("b", "B")])
def test_pairwise_tag_values(winner: str, letter: str) -> None:
    other = "B" if letter == "A" else "A"
    truth = {"winner": winner, "strength": 2}
    assert PairwiseTagReward()(better(letter), truth) == {
        "score": 1.0,
        "format_ok": 1.0,
        "correct": 1.0,
        "pred_winner": winner,
        "pred_strength": -1,
        "strength_error": -1.0,
        "parse_error": "",
    }
    wrong = PairwiseTagReward()(better(other), truth)
    assert wrong["score"] == 0.0 and wrong["correct"] == 0.0 and wrong["format_ok"] == 1.0
    for text, reason in [(better("a"), BETTER_REASONS.bad_content), (better("tie"), BETTER_REASONS.bad_content),
                         ("<better>A</better>", MISSING_THINK), (THINK + "A", BETTER_REASONS.missing)]:
        failed = PairwiseTagReward()(text, truth)
        assert failed["score"] == 0.0 and failed["format_ok"] == 0.0 and failed["parse_error"] == reason
    r = PairwiseTagReward(format_weight=0.25, correct_weight=0.75, failure_score=-0.5)
    assert r(better(letter), truth)["score"] == 1.0
    assert r(better(other), truth)["score"] == 0.25
    assert r("", truth)["score"] == -0.5


def test_pairwise_tag_is_the_binary_reward_on_its_own_prompt() -> None:
    assert PairwiseTagReward.prompt == "pairwise_tag" and PairwiseTagReward.name == "pairwise_tag"
    assert BinaryReward.prompt == "binary" and BinaryReward.name == "binary"
    binary_line = THINK + "Therefore, Response (a) is better."
    assert PairwiseTagReward()(binary_line, {"winner": "a"})["parse_error"] == BETTER_REASONS.missing
    with pytest.raises(ValueError, match="failure_score"):
        PairwiseTagReward(format_weight=0.2, failure_score=0.3)


# --- pointwise --------------------------------------------------------------------------------

# defaults: threshold 2 for binary labels; graded: 1 - |k - label| / 4; failure 0
BINARY_CASES = [(k, lab, float((k >= 2) == bool(lab))) for k in range(5) for lab in (0, 1)]


@pytest.mark.parametrize("k,lab,expected", BINARY_CASES)
def test_pointwise_binary(k: int, lab: int, expected: float) -> None:
    assert PointwiseScoreReward()(scored(k), label(lab, 1)) == {
        "score": expected,
        "format_ok": 1.0,
        "correct": expected,
        "pred_score": k,
        "score_error": 1.0 - expected,
        "parse_error": "",
    }


GRADED_CASES = [
    (3, 3, 1.0),
    (2, 3, 0.75),
    (4, 3, 0.75),
    (1, 3, 0.5),
    (0, 3, 0.25),
    (0, 0, 1.0),
    (4, 0, 0.0),
    (2, 0, 0.5),
    (0, 4, 0.0),
    (1, 1, 1.0),  # a graded label of 1 is not binary (OpenJudge's code would treat it as one)
    (2, 1, 0.75),
]


@pytest.mark.parametrize("k,lab,expected", GRADED_CASES)
def test_pointwise_graded(k: int, lab: int, expected: float) -> None:
    assert PointwiseScoreReward()(scored(k), label(lab, 4)) == {
        "score": expected,
        "format_ok": 1.0,
        "correct": float(k == lab),
        "pred_score": k,
        "score_error": float(abs(k - lab)),
        "parse_error": "",
    }


@pytest.mark.parametrize(
    "text,reason",
    [
        ("", "empty output"),
        ("<score>0</score>", MISSING_THINK),
        (scored(5), SCORE_OUT_OF_RANGE),
        (scored("zero"), SCORE_REASONS.bad_content),
        (THINK + "0", SCORE_REASONS.missing),
    ],
)
@pytest.mark.parametrize("truth", [label(0, 1), label(1, 1), label(0, 4), label(3, 4)])
def test_pointwise_failure_scores_failure_even_on_label_zero(text: str, reason: str, truth: dict[str, int]) -> None:
    """OpenJudge's extractor reads an unreadable output as 0, so it pays full marks on label 0; not here."""
    assert PointwiseScoreReward()(text, truth) == {
        "score": 0.0,
        "format_ok": 0.0,
        "correct": 0.0,
        "pred_score": -1,
        "score_error": -1.0,
        "parse_error": reason,
    }


def test_pointwise_weights_and_threshold() -> None:
    r = PointwiseScoreReward(format_weight=0.2, correct_weight=0.8, failure_score=-0.1)
    assert r(scored(4), label(1, 1))["score"] == pytest.approx(1.0)
    assert r(scored(1), label(1, 1))["score"] == pytest.approx(0.2)
    assert r(scored(2), label(4, 4))["score"] == pytest.approx(0.2 + 0.8 * 0.5)
    assert r("junk", label(0, 1))["score"] == -0.1
    strict = PointwiseScoreReward(binary_threshold=4)
    assert [strict(scored(k), label(1, 1))["score"] for k in range(5)] == [0, 0, 0, 0, 1]
    lenient = PointwiseScoreReward(binary_threshold=1.0)  # Hydra passes weights as floats
    assert [lenient(scored(k), label(0, 1))["score"] for k in range(5)] == [1, 0, 0, 0, 0]
    assert lenient(scored(1), label(1, 1))["score_error"] == 0.0


def test_pointwise_validation() -> None:
    for t in [0, 5, 2.5, -1]:
        with pytest.raises(ValueError, match="binary_threshold"):
            PointwiseScoreReward(binary_threshold=t)
    with pytest.raises(ValueError, match="failure_score"):
        PointwiseScoreReward(failure_score=0.1)
    with pytest.raises(ValueError, match="failure_score"):
        PointwiseScoreReward(format_weight=0.2, correct_weight=-0.5, failure_score=0.0)
    PointwiseScoreReward(format_weight=0.2, correct_weight=-0.5, failure_score=-0.3)
    PointwiseScoreReward(format_weight=0.2, failure_score=0.2)
