"""The shared shape of a judge reward: parse the judge's output with its prompt's parser, compare
the verdict with the ground truth, and return a score plus scalar components for logging.

Rewards are dataclasses whose fields are their weights, so a Hydra config (`reward.weights`) or a
sweep sets them by name. One rule holds for every reward, checked when it is built: a parse failure
never scores more than any well-formed verdict, wrong ones included. Otherwise the policy could
learn that breaking the format is the safest answer when unsure (the reason Think-J and JudgeLRM
give failures the lowest reward).

The returned dict always has the same keys, each a plain float/int/str, because verl stacks every
key across the batch into one array (`reward_extra_info`):

  score           float, the reward
  format_ok       1.0 when the output parsed, else 0.0
  correct         1.0 when the parsed winner is the labelled one, else 0.0 (0.0 on failure)
  pred_winner     "a" / "b", "" on failure
  pred_strength   1..3, -1 when the prompt has no strength or on failure
  strength_error  |gt strength - predicted strength| as a float, -1.0 when either is missing
  parse_error     "" when the output parsed, else the parser's reason
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from numbers import Integral, Real
from typing import Any, Callable, ClassVar, Mapping, TypeVar

from judge_rl.prompts import get_prompt
from judge_rl.prompts.base import Judgment
from judge_rl.prompts.strength import STRENGTHS
from judge_rl.registry import Registry

RewardOutput = dict[str, float | int | str]

MAX_STRENGTH_ERROR = max(STRENGTHS) - min(STRENGTHS)


@dataclass(frozen=True)
class GroundTruth:
    winner: str
    strength: int | None


def parse_ground_truth(ground_truth: Mapping[str, Any] | str) -> GroundTruth:
    """`{"winner": "a"|"b", "strength": 1..3 | None}`, as a mapping or its JSON text (parquet round-trips).

    A missing, None or NaN strength (pandas' null) reads as None; an integral float (3.0) as an int.
    """
    if isinstance(ground_truth, (str, bytes)):
        try:
            ground_truth = json.loads(ground_truth)
        except json.JSONDecodeError as e:
            raise ValueError(f"ground truth is not valid JSON: {ground_truth!r}") from e
    if not isinstance(ground_truth, Mapping):
        raise ValueError(f"ground truth must be a mapping with 'winner' and 'strength', got {ground_truth!r}")
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
    return GroundTruth(str(winner), strength)


class Reward(ABC):
    """A judge reward: `reward(solution_str, ground_truth) -> dict` (see the module docstring for keys).

    Subclasses are dataclasses; they name the prompt whose parser they use (`prompt`) and define
    `failure_score` and `format_weight` fields plus `_verdict_score` and `_lowest_verdict_score`.
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
        lowest = self._lowest_verdict_score()
        if self.failure_score > lowest:
            raise ValueError(
                f"reward {self.name!r}: failure_score={self.failure_score} exceeds the lowest score of a "
                f"well-formed verdict ({lowest}); a parse failure must never beat a wrong verdict"
            )

    @abstractmethod
    def _verdict_score(self, judgment: Judgment, truth: GroundTruth, correct: bool) -> float:
        """The score of a well-formed verdict."""

    @abstractmethod
    def _lowest_verdict_score(self) -> float:
        """The lowest score any well-formed verdict can get under these weights (wrong side included)."""

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
            }
        correct = judgment.winner == truth.winner
        has_both = judgment.strength is not None and truth.strength is not None
        return {
            "score": float(self._verdict_score(judgment, truth, correct)),
            "format_ok": 1.0,
            "correct": float(correct),
            "pred_winner": str(judgment.winner),
            "pred_strength": -1 if judgment.strength is None else int(judgment.strength),
            "strength_error": float(abs(truth.strength - judgment.strength)) if has_both else -1.0,  # type: ignore[operator]
            "parse_error": "",
        }


REWARDS: Registry[type[Reward]] = Registry("reward")

R = TypeVar("R", bound=type[Reward])


def register_reward(name: str) -> Callable[[R], R]:
    """Class decorator: set the class's `name` and register the class (built with weights on use)."""

    def decorator(cls: R) -> R:
        cls.name = name
        REWARDS.register(name)(cls)
        return cls

    return decorator
