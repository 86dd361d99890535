"""The shared shape of a judge reward: parse the judge's output with its prompt's parser, compare
the verdict with the ground truth, and return a score plus scalar components for logging.

Rewards are dataclasses whose fields are their weights, so a Hydra config (`reward.weights`) or a
sweep sets them by name. One rule holds for every reward, checked when it is built: a parse failure
never scores more than any well-formed verdict, wrong ones included. Otherwise the policy could
learn that breaking the format is the safest answer when unsure (the reason Think-J and JudgeLRM
give failures the lowest reward).

The returned dict always has the same keys for a given reward, each a plain float/int/str, because
verl stacks every key across the batch into one array (`reward_extra_info`). Pairwise rewards
(`PairwiseReward`, ground truth `{"winner", "strength"[, "scores"]}`) return:

  score           float, the reward
  format_ok       1.0 when the output parsed, else 0.0
  correct         1.0 when the parsed winner is the labelled one, else 0.0 (0.0 on failure and on a tie)
  pred_winner     "a" / "b", "tie" for a well-formed tie (JudgeLRM's equal scores), "" on failure
  pred_strength   1..3, -1 when the prompt has no strength or on failure
  strength_error  |gt strength - predicted strength| as a float, -1.0 when either is missing
  parse_error     "" when the output parsed, else the parser's reason

followed by the reward's `extra_keys` (score-based rewards add `pred_margin`, the gap between the two
predicted scores, -1.0 on failure). Pointwise rewards (`PointwiseReward`, ground truth `{"label",
"scale"}`) return:

  score           float, the reward
  format_ok       1.0 when the output parsed, else 0.0
  correct         1.0 when the prediction matches the label (binary labels: after thresholding), else 0.0
  pred_score      the predicted score 0..4, -1 on failure
  score_error     |label - prediction| on the label's scale as a float, -1.0 on failure
  parse_error     "" when the output parsed, else the parser's reason
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from numbers import Integral, Real
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, TypeVar

from judge_rl.prompts import get_prompt
from judge_rl.prompts.base import Judgment
from judge_rl.prompts.strength import STRENGTHS
from judge_rl.registry import Registry, package_modules

RewardOutput = dict[str, float | int | str]

MAX_STRENGTH_ERROR = max(STRENGTHS) - min(STRENGTHS)


@dataclass(frozen=True)
class GroundTruth:
    """A pairwise label. scores: gold scores of (Response (a), Response (b)) when the source has them
    (JudgeLRM's data does; preference pairs do not), the winner's strictly higher."""

    winner: str
    strength: int | None
    scores: tuple[float, float] | None = None


@dataclass(frozen=True)
class PointwiseTruth:
    """A pointwise label: `label` in 0..scale; scale 1 is binary (good 1 / bad 0), scale 4 graded 0..4."""

    label: int
    scale: int


POINTWISE_SCALES = (1, 4)


def _as_mapping(ground_truth: Mapping[str, Any] | str | bytes, what: str) -> Mapping[str, Any]:
    if isinstance(ground_truth, (str, bytes)):
        try:
            ground_truth = json.loads(ground_truth)
        except json.JSONDecodeError as e:
            raise ValueError(f"ground truth is not valid JSON: {ground_truth!r}") from e
    if not isinstance(ground_truth, Mapping):
        raise ValueError(f"ground truth must be a mapping with {what}, got {ground_truth!r}")
    return ground_truth


def _is_null(value: Any) -> bool:
    """None or a float NaN (pandas' null for a missing value)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _as_int(value: Any) -> int | None:
    """An int, or an integral float (parquet may store 3 as 3.0); None for anything else (bools included)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    if isinstance(value, Integral):
        return int(value)
    return int(value) if math.isfinite(float(value)) and float(value).is_integer() else None


def _parse_gold_scores(raw: Any, winner: str) -> tuple[float, float] | None:
    if _is_null(raw):
        return None
    if hasattr(raw, "tolist"):  # a numpy array, as a list column comes back from parquet
        raw = raw.tolist()
    if not isinstance(raw, (list, tuple)) or len(raw) != 2:
        raise ValueError(f"ground truth scores must be two numbers (a, b), got {raw!r}")
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
            raise ValueError(f"ground truth scores must be finite numbers, got {raw!r}")
    scores = (float(raw[0]), float(raw[1]))
    won, lost = (scores[0], scores[1]) if winner == "a" else (scores[1], scores[0])
    if not won > lost:
        raise ValueError(f"ground truth scores {raw!r} do not rank the winner {winner!r} strictly higher")
    return scores


def parse_pointwise_ground_truth(ground_truth: Mapping[str, Any] | str) -> PointwiseTruth:
    """`{"label": 0..scale, "scale": 1 | 4}` (`PointwiseItem.ground_truth`), as a mapping or its JSON text.

    A missing scale reads as 1 (binary), the `PointwiseItem` default; integral floats read as ints.
    """
    ground_truth = _as_mapping(ground_truth, "'label' and 'scale'")
    if "label" not in ground_truth:
        raise ValueError(f"ground truth has no 'label': {ground_truth!r}")
    scale = _as_int(ground_truth.get("scale", 1))
    if scale not in POINTWISE_SCALES:
        raise ValueError(f"ground truth scale must be 1 (binary) or 4 (graded 0..4), got {ground_truth.get('scale')!r}")
    label = _as_int(ground_truth["label"])
    if label is None or not 0 <= label <= scale:
        raise ValueError(f"ground truth label must be an integer in 0..{scale}, got {ground_truth['label']!r}")
    return PointwiseTruth(label, scale)


def parse_ground_truth(ground_truth: Mapping[str, Any] | str) -> GroundTruth:
    """`{"winner": "a"|"b", "strength": 1..3 | None[, "scores": [s_a, s_b]]}`, as a mapping or its JSON
    text (parquet round-trips).

    A missing, None or NaN strength (pandas' null) reads as None; an integral float (3.0) as an int.
    Missing or null scores read as None; given scores must rank the winner strictly higher.
    """
    ground_truth = _as_mapping(ground_truth, "'winner' and 'strength'")
    if "winner" not in ground_truth:
        raise ValueError(f"ground truth has no 'winner': {ground_truth!r}")
    winner = ground_truth["winner"]
    if winner not in ("a", "b"):
        raise ValueError(f"ground truth winner must be 'a' or 'b', got {winner!r}")
    strength = ground_truth.get("strength")
    if strength is not None and not isinstance(strength, bool) and isinstance(strength, Real):
        if math.isnan(float(strength)):
            strength = None
        elif not isinstance(strength, Integral) and float(strength).is_integer():
            strength = int(strength)
    if strength is not None:
        if isinstance(strength, bool) or not isinstance(strength, Integral) or int(strength) not in STRENGTHS:
            raise ValueError(f"ground truth strength must be 1, 2, 3 or None, got {strength!r}")
        strength = int(strength)
    scores = _parse_gold_scores(ground_truth.get("scores"), str(winner))
    return GroundTruth(str(winner), strength, scores)


class Reward(ABC):
    """A judge reward: `reward(solution_str, ground_truth) -> dict` (see the module docstring for keys).

    Subclasses are dataclasses whose fields are all numbers; they name the prompt whose parser they
    use (`prompt`), define `failure_score` and `format_weight` fields and `_lowest_verdict_score`, and
    derive from `PairwiseReward` or `PointwiseReward`, which implement `__call__`.
    """

    name: ClassVar[str]
    prompt: ClassVar[str]
    failure_score: float
    format_weight: float

    def __post_init__(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
                raise ValueError(f"reward {self.name!r}: {f.name} must be a finite number, got {value!r}")
        self._check_fields()
        lowest = self._lowest_verdict_score()
        if self.failure_score > lowest:
            raise ValueError(
                f"reward {self.name!r}: failure_score={self.failure_score} exceeds the lowest score of a "
                f"well-formed verdict ({lowest}); a parse failure must never beat a wrong verdict"
            )

    def _check_fields(self) -> None:
        """Checks beyond "a finite number" (a positive cap, a threshold in range); raise ValueError."""

    @abstractmethod
    def _lowest_verdict_score(self) -> float:
        """The lowest score any well-formed verdict can get under these weights (wrong side included)."""

    @abstractmethod
    def __call__(self, solution_str: str, ground_truth: Mapping[str, Any] | str) -> RewardOutput:
        """Score one judge output against its ground truth."""


class PairwiseReward(Reward):
    """A reward for a pairwise prompt: compares the parsed winner with `{"winner", "strength"}`.

    Subclasses define `_verdict_score`; score-based ones also list `extra_keys` and fill them in
    `_extra` (called with None on a parse failure).
    """

    extra_keys: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def _verdict_score(self, judgment: Judgment, truth: GroundTruth, correct: bool) -> float:
        """The score of a well-formed verdict."""

    def _extra(self, judgment: Judgment | None) -> RewardOutput:
        """The values of `extra_keys` for a parsed judgment, or for a failure (None)."""
        return {}

    def __call__(self, solution_str: str, ground_truth: Mapping[str, Any] | str) -> RewardOutput:
        truth = parse_ground_truth(ground_truth)
        judgment = get_prompt(self.prompt).parse(solution_str)
        if not judgment.ok:
            return {
                "score": float(self.failure_score),
                "format_ok": 0.0,
                "correct": 0.0,
                "pred_winner": "",
                "pred_strength": -1,
                "strength_error": -1.0,
                "parse_error": str(judgment.error),
                **self._extra(None),
            }
        correct = judgment.winner is not None and judgment.winner == truth.winner
        has_both = judgment.strength is not None and truth.strength is not None
        return {
            "score": float(self._verdict_score(judgment, truth, correct)),
            "format_ok": 1.0,
            "correct": float(correct),
            "pred_winner": "tie" if judgment.winner is None else str(judgment.winner),
            "pred_strength": -1 if judgment.strength is None else int(judgment.strength),
            "strength_error": float(abs(truth.strength - judgment.strength)) if has_both else -1.0,  # type: ignore[operator]
            "parse_error": "",
            **self._extra(judgment),
        }


class PointwiseReward(Reward):
    """A reward for a pointwise prompt: compares the parsed score with `{"label", "scale"}`.

    Subclasses define `_verdict_score(pred, truth)` and `on_label_scale(pred, truth)`, the prediction
    read on the label's scale, from which `correct` (equal) and `score_error` (distance) follow.
    """

    @abstractmethod
    def _verdict_score(self, pred: int, truth: PointwiseTruth) -> float:
        """The score of a well-formed prediction `pred`."""

    @abstractmethod
    def on_label_scale(self, pred: int, truth: PointwiseTruth) -> int:
        """The prediction as a value on the label's scale (e.g. 0/1 for a binary label)."""

    def __call__(self, solution_str: str, ground_truth: Mapping[str, Any] | str) -> RewardOutput:
        truth = parse_pointwise_ground_truth(ground_truth)
        judgment = get_prompt(self.prompt).parse(solution_str)
        if not judgment.ok or judgment.score is None:
            return {
                "score": float(self.failure_score),
                "format_ok": 0.0,
                "correct": 0.0,
                "pred_score": -1,
                "score_error": -1.0,
                "parse_error": str(judgment.error or "no score"),
            }
        pred = int(judgment.score)
        error = abs(self.on_label_scale(pred, truth) - truth.label)
        return {
            "score": float(self._verdict_score(pred, truth)),
            "format_ok": 1.0,
            "correct": float(error == 0),
            "pred_score": pred,
            "score_error": float(error),
            "parse_error": "",
        }


# every module of judge_rl/rewards but this one, imported on the first lookup: adding a reward is adding its module
# (with `@register_reward`) and its conf/reward/<name>.yaml, no list to edit
REWARDS: Registry[type[Reward]] = Registry(
    "reward", modules=package_modules("judge_rl.rewards", [str(Path(__file__).parent)], skip=("base",)))

R = TypeVar("R", bound=type[Reward])


def register_reward(name: str) -> Callable[[R], R]:
    """Class decorator: set the class's `name` and register the class (built with weights on use)."""

    def decorator(cls: R) -> R:
        cls.name = name
        REWARDS.register(name)(cls)
        return cls

    return decorator
