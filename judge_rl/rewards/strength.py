"""Think-J's rewards (Huang et al., 2025, "Think-J: Learning to Think for Generative LLM-as-a-Judge").

"strength" is Think-J's released reward for its strength prompt: a verdict on the right side scores
`1 - |gt_strength - pred_strength| / 8`, a verdict on the wrong side 0, and an output that does not
parse 0. Generalised with weights so the parts can be swept:

    score = format_weight * format_ok + correct_weight * correct
            - strength_weight * correct * |gt_strength - pred_strength| / 8

and `failure_score` for outputs that do not parse. The defaults (0, 1, 1, failure 0) reproduce
Think-J exactly. The strength term only applies on the right side: on the wrong side the strength
of a preference for the wrong response is meaningless. When the ground truth has no strength
label (None), the strength term is 0 (a right verdict scores format_weight + correct_weight) and
`strength_error` is reported as -1.0, so unlabelled sources can still be trained on.

"binary" is the reward for Think-J's cot prompt without strength: correct_weight when right, 0 when
wrong, plus format_weight for a well-formed output.
"""

from __future__ import annotations

from dataclasses import dataclass

from judge_rl.prompts.base import Judgment
from judge_rl.rewards.base import MAX_STRENGTH_ERROR, GroundTruth, PairwiseReward, register_reward

STRENGTH_SCALE = 8.0  # Think-J's divisor: the largest error (2) costs a right verdict a quarter of its reward


@register_reward("strength")
@dataclass(frozen=True)
class StrengthReward(PairwiseReward):
    """Think-J's strength reward, parsed with the "strength" prompt."""

    prompt = "strength"

    format_weight: float = 0.0
    correct_weight: float = 1.0
    strength_weight: float = 1.0
    failure_score: float = 0.0

    def _verdict_score(self, judgment: Judgment, truth: GroundTruth, correct: bool) -> float:
        score = self.format_weight + (self.correct_weight if correct else 0.0)
        if correct and truth.strength is not None and judgment.strength is not None:
            score -= self.strength_weight * abs(truth.strength - judgment.strength) / STRENGTH_SCALE
        return score

    def _lowest_verdict_score(self) -> float:
        right_worst = min(
            self.correct_weight, self.correct_weight - self.strength_weight * MAX_STRENGTH_ERROR / STRENGTH_SCALE
        )
        return self.format_weight + min(0.0, right_worst)


@register_reward("binary")
@dataclass(frozen=True)
class BinaryReward(PairwiseReward):
    """Right/wrong only, parsed with the "binary" prompt (Think-J's cot variant)."""

    prompt = "binary"

    format_weight: float = 0.0
    correct_weight: float = 1.0
    failure_score: float = 0.0

    def _verdict_score(self, judgment: Judgment, truth: GroundTruth, correct: bool) -> float:
        return self.format_weight + (self.correct_weight if correct else 0.0)

    def _lowest_verdict_score(self) -> float:
        return self.format_weight + min(0.0, self.correct_weight)
