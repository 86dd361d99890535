"""Every registered reward: the failure rule over a grid of weights, fixed output keys and types,
ground-truth parsing (pairwise scores, pointwise labels), compute_score dispatch and the config files."""

from __future__ import annotations

import itertools
import json
import math
import random
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from judge_rl.prompts import get_prompt
from judge_rl.rewards import (
    REWARDS,
    GroundTruth,
    PairwiseReward,
    PointwiseReward,
    PointwiseTruth,
    build_reward,
    compute_score,
    get_reward,
    parse_ground_truth,
    parse_pointwise_ground_truth,
)
from judge_rl.rewards.judgelrm import JudgeLRMReward
from judge_rl.rewards.margin import MarginReward
from judge_rl.rewards.openjudge import PairwiseTagReward, PointwiseScoreReward

CONF_REWARD = Path(__file__).resolve().parents[2] / "conf" / "reward"
THINK = "<think>\nWeighing both.\n</think>\n"
PAIRWISE_KEYS = ["score", "format_ok", "correct", "pred_winner", "pred_strength", "strength_error", "parse_error"]
POINTWISE_KEYS = ["score", "format_ok", "correct", "pred_score", "score_error", "parse_error"]


def margin_out(x: int, y: int) -> str:
    return get_prompt("margin").scored_output("w", x, y)  # type: ignore[union-attr]


def judgelrm_out(x: int, y: int) -> str:
    return get_prompt("judgelrm").scored_output("w", x, y)  # type: ignore[union-attr]


def pairwise_truths(with_scores: bool) -> list[dict[str, object]]:
    truths: list[dict[str, object]] = [{"winner": w, "strength": k} for w in "ab" for k in (1, 3, None)]
    if with_scores:
        truths += [
            {"winner": "a", "strength": None, "scores": [7, 3]},
            {"winner": "b", "strength": None, "scores": [3, 7]},
            {"winner": "a", "strength": 2, "scores": [10, 1]},
        ]
    return truths


# Well-formed outputs that reach each reward's extremes (right and wrong, smallest and largest gaps,
# exact / close / far from gold scores), and the truths to score them against.
WELL_FORMED: dict[str, tuple[list[str], list[dict[str, object]]]] = {
    "strength": (
        [get_prompt("strength").output("w", w, k) for w in "ab" for k in (1, 2, 3)],  # type: ignore[union-attr]
        pairwise_truths(False),
    ),
    "consistency": (
        [get_prompt("strength").output("w", w, k) for w in "ab" for k in (1, 2, 3)],  # type: ignore[union-attr]
        pairwise_truths(False),
    ),
    "binary": ([get_prompt("binary").output("w", w) for w in "ab"], pairwise_truths(False)),  # type: ignore[union-attr]
    "margin": (
        [margin_out(x, y) for x, y in [(51, 50), (50, 51), (100, 0), (0, 100), (70, 30), (30, 70)]],
        pairwise_truths(False),
    ),
    "judgelrm": (
        [judgelrm_out(x, y) for x, y in [(7, 3), (3, 7), (8, 3), (10, 1), (1, 10), (5, 5), (6, 5), (4, 5), (2, 1)]],
        pairwise_truths(True),
    ),
    "pairwise_tag": (
        [get_prompt("pairwise_tag").output("w", w) for w in "ab"],  # type: ignore[union-attr]
        pairwise_truths(False),
    ),
    "pointwise": (
        [get_prompt("pointwise").output("w", k) for k in range(5)],  # type: ignore[union-attr, call-arg]
        [{"label": lab, "scale": 1} for lab in (0, 1)] + [{"label": lab, "scale": 4} for lab in range(5)],
    ),
}
MALFORMED = ["", "no think", THINK, THINK + "<answer>0, 11</answer>", THINK + "<score>9</score>", "<think>x"]

# Fields not swept over the weight grid (not weights), with the values they keep.
FIXED = {"margin_cap": [10.0, 50.0], "binary_threshold": [1, 2, 4]}
GRID = [-1.0, -0.25, 0.0, 0.1, 0.5, 1.0, 4.0]
MAX_COMBOS = 1500


PROMPT_OF = {"consistency": "strength"}  # rewards that reuse another mode's prompt


def _project_rewards() -> list[str]:
    # other tests may register rewards of their own (e.g. a signal for untrained models): skip those
    return [n for n in REWARDS.names() if get_reward(n).__module__.startswith("judge_rl.")]


def test_every_registered_reward_is_covered() -> None:
    assert sorted(WELL_FORMED) == _project_rewards()
    assert get_reward("margin") is MarginReward and get_reward("judgelrm") is JudgeLRMReward
    assert get_reward("pairwise_tag") is PairwiseTagReward and get_reward("pointwise") is PointwiseScoreReward
    for name in _project_rewards():
        cls = get_reward(name)
        assert cls.name == name and cls.prompt == PROMPT_OF.get(name, name)
        base = PointwiseReward if get_prompt(cls.prompt).kind == "pointwise" else PairwiseReward
        assert issubclass(cls, base)


@pytest.mark.parametrize("name", sorted(WELL_FORMED))
def test_failure_never_beats_a_well_formed_verdict(name: str) -> None:
    cls = get_reward(name)
    swept = [f.name for f in fields(cls) if f.name not in FIXED]  # type: ignore[arg-type]
    fixed = [f.name for f in fields(cls) if f.name in FIXED]  # type: ignore[arg-type]
    combos = list(itertools.product(GRID, repeat=len(swept)))
    if len(combos) > MAX_COMBOS:
        combos = random.Random(0).sample(combos, MAX_COMBOS)
    outputs, truths = WELL_FORMED[name]
    built = rejected = 0
    for values in combos:
        for fixed_values in itertools.product(*(FIXED[f] for f in fixed)):
            weights = dict(zip(swept + fixed, values + fixed_values))
            try:
                reward = build_reward(name, **weights)
            except ValueError:
                rejected += 1
                continue
            built += 1
            lowest = min(reward(out, truth)["score"] for out in outputs for truth in truths)
            for bad in MALFORMED:  # (up to float rounding: 0.1 + 0.5 - 0.25 - 0.25 < 0.1)
                assert reward(bad, truths[0])["score"] == reward.failure_score <= lowest + 1e-9, weights
            # the bound the reward checks against is never above what a verdict really scores
            assert reward._lowest_verdict_score() <= lowest + 1e-9, weights
    assert built > 0 and rejected > 0


@pytest.mark.parametrize(
    "reward",
    [
        JudgeLRMReward(),
        JudgeLRMReward(absolute_weight=-0.5, confidence_weight=-0.9, failure_score=-2.0),
        JudgeLRMReward(mismatch_penalty=1.5, failure_score=-3.0),
        PointwiseScoreReward(),
        PointwiseScoreReward(correct_weight=-1.0, failure_score=-1.0),
        MarginReward(),
        MarginReward(format_weight=0.5, margin_weight=2.0, failure_score=-2.0),
    ],
)
def test_lowest_bound_is_reached(reward: PairwiseReward | PointwiseReward) -> None:
    """Over every possible output, the checked bound is the true minimum (so the rule is not too strict)."""
    if isinstance(reward, JudgeLRMReward):
        outputs = [judgelrm_out(x, y) for x in range(1, 11) for y in range(1, 11)]
    elif isinstance(reward, MarginReward):
        outputs = [margin_out(x, y) for x in range(0, 101, 5) for y in range(0, 101, 5) if x != y]
    else:
        outputs = [get_prompt("pointwise").output("w", k) for k in range(5)]  # type: ignore[union-attr, call-arg]
    truths = WELL_FORMED[reward.name][1]
    lowest = min(reward(out, truth)["score"] for out in outputs for truth in truths)
    assert lowest == pytest.approx(reward._lowest_verdict_score())


@pytest.mark.parametrize("name", sorted(WELL_FORMED))
def test_output_keys_and_types_never_change(name: str) -> None:
    """verl stacks each key across the batch: the same keys, scalar types, on success, wrong and failure."""
    reward = build_reward(name)
    outputs, truths = WELL_FORMED[name]
    results = [reward(out, truth) for out in outputs for truth in truths]
    results += [reward(bad, truths[0]) for bad in MALFORMED]
    pointwise = name == "pointwise"
    keys = POINTWISE_KEYS if pointwise else PAIRWISE_KEYS + list(reward.extra_keys)  # type: ignore[attr-defined]
    types = [float, float, float, int, float, str] if pointwise else [float, float, float, str, int, float, str]
    types += [float] * (len(keys) - len(types))
    for result in results:
        assert list(result) == keys
        assert [type(result[k]) for k in keys] == types
    assert {r["format_ok"] for r in results} == {0.0, 1.0}


def test_extra_keys() -> None:
    assert MarginReward.extra_keys == ("pred_margin",) and JudgeLRMReward.extra_keys == ("pred_margin",)
    assert PairwiseTagReward.extra_keys == () and get_reward("strength").extra_keys == ()  # type: ignore[attr-defined]


# --- ground truth -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,expected",
    [
        ({"winner": "a", "strength": None, "scores": [7, 3]}, GroundTruth("a", None, (7.0, 3.0))),
        ('{"winner": "b", "strength": 2, "scores": [3, 7.5]}', GroundTruth("b", 2, (3.0, 7.5))),
        ({"winner": "a", "strength": 1, "scores": (10, 1)}, GroundTruth("a", 1, (10.0, 1.0))),
        ({"winner": "b", "strength": None, "scores": np.array([2, 9])}, GroundTruth("b", None, (2.0, 9.0))),
        ({"winner": "a", "strength": 3, "scores": None}, GroundTruth("a", 3, None)),
        ({"winner": "a", "strength": 3, "scores": math.nan}, GroundTruth("a", 3, None)),
        ({"winner": "a", "strength": 3}, GroundTruth("a", 3)),
    ],
)
def test_parse_ground_truth_scores(raw: object, expected: GroundTruth) -> None:
    assert parse_ground_truth(raw) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "scores",
    [[3, 7], [5, 5], [7], [7, 3, 1], "7, 3", [7, math.nan], [True, False], [7, "3"], [math.inf, 3]],
)
def test_parse_ground_truth_rejects_bad_scores(scores: object) -> None:
    with pytest.raises(ValueError):
        parse_ground_truth({"winner": "a", "strength": None, "scores": scores})


@pytest.mark.parametrize(
    "raw,expected",
    [
        ({"label": 1, "scale": 1}, PointwiseTruth(1, 1)),
        ({"label": 0, "scale": 1}, PointwiseTruth(0, 1)),
        ('{"label": 3, "scale": 4}', PointwiseTruth(3, 4)),
        ({"label": 0}, PointwiseTruth(0, 1)),
        ({"label": 4.0, "scale": 4.0}, PointwiseTruth(4, 4)),
        ({"label": np.int64(2), "scale": np.int64(4)}, PointwiseTruth(2, 4)),
    ],
)
def test_parse_pointwise_ground_truth(raw: object, expected: PointwiseTruth) -> None:
    assert parse_pointwise_ground_truth(raw) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "raw",
    [
        "nope",
        '"1"',
        {},
        {"winner": "a", "strength": 1},
        {"label": 2, "scale": 1},
        {"label": 5, "scale": 4},
        {"label": -1, "scale": 4},
        {"label": 1, "scale": 2},
        {"label": 1.5, "scale": 4},
        {"label": True, "scale": 1},
        {"label": None, "scale": 1},
        {"label": "1", "scale": 1},
        {"label": math.nan, "scale": 4},
    ],
)
def test_parse_pointwise_ground_truth_rejects(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_pointwise_ground_truth(raw)  # type: ignore[arg-type]


def test_from_pointwise_item() -> None:
    from judge_rl.data.pairs import PointwiseItem, PreferencePair, pointwise_items

    pair = PreferencePair("p", "t", "q", "good", "bad")
    truths = [parse_pointwise_ground_truth(it.ground_truth) for it in pointwise_items([pair])]
    assert truths == [PointwiseTruth(1, 1), PointwiseTruth(0, 1)]
    graded = PointwiseItem(pair, "chosen", 3, scale=4)
    assert parse_pointwise_ground_truth(json.dumps(graded.ground_truth)) == PointwiseTruth(3, 4)


# --- compute_score dispatch -------------------------------------------------------------------

DISPATCH = [
    ("margin", margin_out(80, 30), {"winner": "a", "strength": 2}, 1.5),
    ("margin", margin_out(80, 30), {"winner": "b", "strength": 2}, -0.5),
    ("judgelrm", judgelrm_out(10, 1), {"winner": "a", "strength": None}, 4.0),
    ("judgelrm", judgelrm_out(7, 3), {"winner": "a", "strength": None, "scores": [7, 3]}, 3 + 1 + 4 / 9),
    ("pairwise_tag", THINK + "<better>B</better>", {"winner": "b", "strength": 1}, 1.0),
    ("pairwise_tag", THINK + "<better>B</better>", {"winner": "a", "strength": 1}, 0.0),
    ("pointwise", THINK + "<score>3</score>", {"label": 1, "scale": 1}, 1.0),
    ("pointwise", THINK + "<score>1</score>", {"label": 3, "scale": 4}, 0.5),
    ("pointwise", "garbage", {"label": 0, "scale": 1}, 0.0),
]


@pytest.mark.parametrize("name,text,truth,expected", DISPATCH)
def test_compute_score_dispatches_by_reward_name(name: str, text: str, truth: dict, expected: float) -> None:
    direct = build_reward(name)(text, truth)
    assert direct["score"] == pytest.approx(expected)
    assert compute_score("src", text, truth, reward_name=name) == direct
    assert compute_score("src", text, json.dumps(truth), extra_info={"reward_name": name}) == direct
    assert compute_score("src", text, truth, {"reward_name": "strength"}, reward_name=name) == direct


def test_compute_score_weights_and_mismatched_ground_truth() -> None:
    out = compute_score(
        "s", margin_out(80, 30), {"winner": "a", "strength": None}, reward_name="margin",
        margin_weight=1.0, margin_cap=100.0, failure_score=-1.0,
    )
    assert out["score"] == pytest.approx(1.5)
    out = compute_score("s", THINK + "<score>2</score>", {"label": 1, "scale": 1}, reward_name="pointwise",
                        binary_threshold=3.0)
    assert out["score"] == 0.0
    with pytest.raises(TypeError, match="'margin_cap'"):
        compute_score("s", judgelrm_out(7, 3), {"winner": "a"}, reward_name="judgelrm", margin_cap=5.0)
    with pytest.raises(ValueError, match="label"):  # a pairwise label given to the pointwise reward
        compute_score("s", THINK + "<score>2</score>", {"winner": "a", "strength": 1}, reward_name="pointwise")
    with pytest.raises(ValueError, match="winner"):  # a pointwise label given to a pairwise reward
        compute_score("s", margin_out(80, 30), {"label": 1, "scale": 1}, reward_name="margin")


def test_compute_score_loaded_by_path_knows_every_reward() -> None:
    import importlib.util

    import judge_rl.rewards as package

    spec = importlib.util.spec_from_file_location("custom_module_family", Path(package.__file__))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.REWARDS.names() == REWARDS.names()
    score = module.compute_score("s", THINK + "<score>4</score>", '{"label": 4, "scale": 4}', reward_name="pointwise")
    assert score["score"] == 1.0


# --- config files -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["margin", "judgelrm", "pairwise_tag", "pointwise"])
def test_reward_config_lists_every_field_at_its_default(name: str) -> None:
    cfg = OmegaConf.to_container(OmegaConf.load(CONF_REWARD / f"{name}.yaml"))
    assert isinstance(cfg, dict) and cfg["name"] == name
    cls = get_reward(name)
    assert list(cfg["weights"]) == [f.name for f in fields(cls)]  # type: ignore[arg-type]
    assert build_reward(name, **{k: float(v) for k, v in cfg["weights"].items()}) == cls()


@pytest.mark.parametrize("path", sorted(CONF_REWARD.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_reward_config_builds(path: Path) -> None:
    cfg = OmegaConf.to_container(OmegaConf.load(path))
    assert isinstance(cfg, dict) and cfg["name"] == path.stem
    build_reward(cfg["name"], **{k: float(v) for k, v in cfg["weights"].items()})
