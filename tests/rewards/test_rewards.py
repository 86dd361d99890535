"""Think-J's strength and binary rewards, exact values, the failure rule, and verl's compute_score."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from judge_rl.prompts import get_prompt
from judge_rl.prompts.strength import BAD_TEMPLATE, MISSING_THINK, STRENGTH_OUT_OF_RANGE
from judge_rl.rewards import (
    REWARDS,
    build_reward,
    compute_score,
    get_reward,
    parse_ground_truth,
)
from judge_rl.rewards.strength import BinaryReward, StrengthReward
from judge_rl.rewards.base import GroundTruth

KEYS = ["score", "format_ok", "correct", "pred_winner", "pred_strength", "strength_error", "parse_error"]


def strength_out(winner: str, strength: int) -> str:
    return get_prompt("strength").output("Weighing both.", winner, strength)  # type: ignore[attr-defined]


def binary_out(winner: str) -> str:
    return get_prompt("binary").output("Weighing both.", winner)  # type: ignore[attr-defined]


def gt(winner: str, strength: int | None) -> dict[str, object]:
    return {"winner": winner, "strength": strength}


def test_registry() -> None:
    project = [n for n in REWARDS.names() if REWARDS.get(n).__module__.startswith("judge_rl.")]
    assert project == ["binary", "consistency", "judgelrm", "margin", "pairwise_tag", "pointwise", "strength"]
    assert REWARDS.get("strength") is StrengthReward and StrengthReward.name == "strength"
    assert REWARDS.get("binary") is BinaryReward and BinaryReward.name == "binary"
    assert StrengthReward.prompt == "strength" and BinaryReward.prompt == "binary"
    assert get_reward("strength") is StrengthReward and get_reward("binary") is BinaryReward
    assert get_reward("strength")() == StrengthReward(0.0, 1.0, 1.0, 0.0)
    assert build_reward("binary", correct_weight=2.0) == BinaryReward(correct_weight=2.0)
    with pytest.raises(KeyError, match="known: binary, consistency, judgelrm, margin, pairwise_tag, pointwise, strength"):
        get_reward("nope")
    with pytest.raises(TypeError, match="'strength_weight'"):
        build_reward("binary", strength_weight=1.0)
    with pytest.raises(TypeError, match="'strength_weigth'"):  # the dataclass itself names the key too
        get_reward("strength")(strength_weigth=1.0)


# --- strength reward: Think-J defaults --------------------------------------------------------


@pytest.mark.parametrize(
    "gt_strength,pred_strength,expected",
    [(3, 3, 1.0), (3, 2, 0.875), (3, 1, 0.75), (1, 3, 0.75), (2, 1, 0.875), (2, 3, 0.875), (1, 1, 1.0)],
)
@pytest.mark.parametrize("winner", ["a", "b"])
def test_strength_right_side(winner: str, gt_strength: int, pred_strength: int, expected: float) -> None:
    out = StrengthReward()(strength_out(winner, pred_strength), gt(winner, gt_strength))
    assert out == {
        "score": expected,
        "format_ok": 1.0,
        "correct": 1.0,
        "pred_winner": winner,
        "pred_strength": pred_strength,
        "strength_error": float(abs(gt_strength - pred_strength)),
        "parse_error": "",
    }


@pytest.mark.parametrize("pred_strength", [1, 2, 3])
def test_strength_wrong_side_scores_zero(pred_strength: int) -> None:
    out = StrengthReward()(strength_out("b", pred_strength), gt("a", 3))
    assert out == {
        "score": 0.0,
        "format_ok": 1.0,
        "correct": 0.0,
        "pred_winner": "b",
        "pred_strength": pred_strength,
        "strength_error": float(abs(3 - pred_strength)),
        "parse_error": "",
    }


def test_strength_failure() -> None:
    out = StrengthReward()("Therefore, Response (a) is better, and the strength is [[3]].", gt("a", 3))
    assert out == {
        "score": 0.0,
        "format_ok": 0.0,
        "correct": 0.0,
        "pred_winner": "",
        "pred_strength": -1,
        "strength_error": -1.0,
        "parse_error": MISSING_THINK,
    }
    out = StrengthReward()("<think>x</think>\nTherefore, Response (a) is better, and the strength is [[4]].", gt("a", 3))
    assert out["score"] == 0.0 and out["parse_error"] == STRENGTH_OUT_OF_RANGE


def test_strength_without_gt_strength() -> None:
    out = StrengthReward()(strength_out("a", 1), gt("a", None))
    assert out["score"] == 1.0 and out["strength_error"] == -1.0 and out["pred_strength"] == 1
    out = StrengthReward(format_weight=0.1, correct_weight=0.9, strength_weight=4.0)(strength_out("a", 1), gt("a", None))
    assert out["score"] == pytest.approx(1.0)
    assert StrengthReward()(strength_out("b", 1), gt("a", None))["score"] == 0.0


def test_strength_weights() -> None:
    r = StrengthReward(format_weight=0.2, correct_weight=0.5, strength_weight=2.0, failure_score=-1.0)
    # right side, error 2: 0.2 + 0.5 - 2 * 2 / 8 = 0.2
    assert r(strength_out("a", 1), gt("a", 3))["score"] == pytest.approx(0.2)
    # right side, error 1: 0.2 + 0.5 - 2 / 8 = 0.45
    assert r(strength_out("b", 2), gt("b", 3))["score"] == pytest.approx(0.45)
    # right side, exact: 0.7
    assert r(strength_out("b", 3), gt("b", 3))["score"] == pytest.approx(0.7)
    # wrong side: format only
    assert r(strength_out("a", 3), gt("b", 3))["score"] == pytest.approx(0.2)
    # failure
    assert r("", gt("b", 3))["score"] == -1.0


# --- binary reward ----------------------------------------------------------------------------


@pytest.mark.parametrize("winner", ["a", "b"])
def test_binary_values(winner: str) -> None:
    other = "b" if winner == "a" else "a"
    assert BinaryReward()(binary_out(winner), gt(winner, 2)) == {
        "score": 1.0,
        "format_ok": 1.0,
        "correct": 1.0,
        "pred_winner": winner,
        "pred_strength": -1,
        "strength_error": -1.0,
        "parse_error": "",
    }
    assert BinaryReward()(binary_out(other), gt(winner, 2))["score"] == 0.0
    assert BinaryReward()(binary_out(other), gt(winner, 2))["correct"] == 0.0
    failed = BinaryReward()(strength_out(winner, 2), gt(winner, 2))  # a strength line is not a binary verdict
    assert failed["score"] == 0.0 and failed["parse_error"] == BAD_TEMPLATE and failed["format_ok"] == 0.0
    r = BinaryReward(format_weight=0.25, correct_weight=0.75, failure_score=-0.5)
    assert r(binary_out(winner), gt(winner, None))["score"] == 1.0
    assert r(binary_out(other), gt(winner, None))["score"] == 0.25
    assert r("<think>", gt(winner, None))["score"] == -0.5


@pytest.mark.parametrize("reward", [StrengthReward(), BinaryReward(), StrengthReward(format_weight=0.3)])
def test_output_keys_and_types_never_change(reward: StrengthReward | BinaryReward) -> None:
    """verl stacks each key across the batch: same keys, scalar types, on success and failure."""
    outputs = [reward(strength_out("a", 2), gt("a", 1)), reward(binary_out("b"), gt("a", 1)), reward("", gt("b", None))]
    for out in outputs:
        assert list(out) == KEYS
        assert [type(out[k]) for k in KEYS] == [float, float, float, str, int, float, str]


# --- the failure rule -------------------------------------------------------------------------

GRID = [-1.0, -0.25, 0.0, 0.1, 0.5, 1.0, 4.0]


def all_outputs(prompt: str) -> list[str]:
    if prompt == "binary":
        return [binary_out(w) for w in "ab"]
    return [strength_out(w, k) for w in "ab" for k in (1, 2, 3)]


@pytest.mark.parametrize("name", ["strength", "binary"])
def test_failure_never_beats_a_well_formed_verdict(name: str) -> None:
    cls = REWARDS.get(name)
    weight_names = [f for f in ("format_weight", "correct_weight", "strength_weight") if hasattr(cls(), f)]
    built = rejected = 0
    for values in itertools.product(GRID, repeat=len(weight_names) + 1):
        weights = dict(zip(weight_names + ["failure_score"], values))
        try:
            reward = build_reward(name, **weights)
        except ValueError:
            rejected += 1
            continue
        built += 1
        failure = reward("no think", gt("a", 3))["score"]
        lowest = min(
            reward(out, gt(w, s))["score"] for out in all_outputs(name) for w in "ab" for s in (1, 2, 3, None)
        )
        assert failure <= lowest, weights
    assert built > 0 and rejected > 0


def test_failure_rule_rejects_exact_cases() -> None:
    with pytest.raises(ValueError, match="failure_score"):
        StrengthReward(failure_score=0.1)
    with pytest.raises(ValueError, match="failure_score"):
        BinaryReward(format_weight=0.2, failure_score=0.3)
    with pytest.raises(ValueError, match="failure_score"):  # right side with error 2 scores 1 - 8 * 2/8 = -1
        StrengthReward(strength_weight=8.0)
    StrengthReward(format_weight=0.2, failure_score=0.2)  # equal is allowed
    StrengthReward(strength_weight=8.0, failure_score=-1.0)
    with pytest.raises(ValueError, match="finite"):
        StrengthReward(correct_weight=math.nan)
    with pytest.raises(ValueError, match="finite"):
        BinaryReward(correct_weight="1")  # type: ignore[arg-type]


# --- ground truth and compute_score -----------------------------------------------------------


@pytest.mark.parametrize(
    "raw,expected",
    [
        ({"winner": "a", "strength": 2}, GroundTruth("a", 2)),
        ('{"winner": "b", "strength": 3}', GroundTruth("b", 3)),
        ('{"winner": "b", "strength": null}', GroundTruth("b", None)),
        ({"winner": "a"}, GroundTruth("a", None)),
        ({"winner": "a", "strength": 1.0}, GroundTruth("a", 1)),
        ({"winner": "b", "strength": math.nan}, GroundTruth("b", None)),
    ],
)
def test_parse_ground_truth(raw: object, expected: GroundTruth) -> None:
    assert parse_ground_truth(raw) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "raw",
    ["not json", '"a"', {"strength": 1}, {"winner": "c", "strength": 1}, {"winner": "a", "strength": 4},
     {"winner": "a", "strength": 1.5}, {"winner": "a", "strength": True}, {"winner": "a", "strength": "2"}],
)
def test_parse_ground_truth_rejects(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_ground_truth(raw)  # type: ignore[arg-type]


def test_compute_score_dict_and_json() -> None:
    out = strength_out("a", 1)
    as_dict = compute_score("hh_rlhf", out, gt("a", 3))
    as_json = compute_score("hh_rlhf", out, json.dumps(gt("a", 3)), extra_info={"index": 0})
    assert as_dict == as_json == StrengthReward()(out, gt("a", 3))
    assert as_dict["score"] == 0.75


def test_compute_score_picks_reward_and_weights() -> None:
    out = binary_out("b")
    assert compute_score("s", out, gt("b", 2))["parse_error"] == BAD_TEMPLATE  # default: strength
    assert compute_score("s", out, gt("b", 2), reward_name="binary")["score"] == 1.0
    assert compute_score("s", out, gt("b", 2), extra_info={"reward_name": "binary"})["score"] == 1.0
    # kwargs win over extra_info
    assert compute_score("s", out, gt("b", 2), {"reward_name": "strength"}, reward_name="binary")["score"] == 1.0
    s = compute_score(
        "s", strength_out("a", 2), gt("a", 3), reward_name="strength", format_weight=0.5, correct_weight=0.5,
        strength_weight=4.0,
    )
    assert s["score"] == pytest.approx(0.5 + 0.5 - 4.0 / 8)
    # what verl adds itself when a reward-model router runs is ignored
    assert compute_score("s", out, gt("b", 2), reward_name="binary", reward_router_address=None)["score"] == 1.0


def test_compute_score_unknown_kwarg() -> None:
    with pytest.raises(TypeError, match="'strength_weight'"):
        compute_score("s", binary_out("a"), gt("a", 1), reward_name="binary", strength_weight=1.0)
    with pytest.raises(TypeError, match="'temperature'"):
        compute_score("s", binary_out("a"), gt("a", 1), temperature=1.0)


def test_compute_score_loaded_by_path_like_verl() -> None:
    """verl executes the file under a made-up module name; the registry must still be the real one."""
    import importlib.util
    from pathlib import Path

    import judge_rl.rewards as package

    spec = importlib.util.spec_from_file_location("custom_module_test", Path(package.__file__))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.compute_score("s", strength_out("b", 3), gt("b", 3))["score"] == 1.0
    assert module.REWARDS is package.REWARDS
