"""Think-J's margin reward for its score prompt (Huang et al., 2025; prompt "margin"): the judge gives
both responses a 0-100 score, and the reward pays for the right side and for how far apart it put
the two scores, so a confident right verdict earns more and a confident wrong one is penalised.

With m = min(|x - y|, margin_cap) / margin_cap in (0, 1], the normalised gap between the scores:

    right side:  format_weight + correct_weight + margin_weight * m
    wrong side:  format_weight - margin_weight * m
    failure:     failure_score (no parse, a score outside 0..100, or equal scores: a tie)

- `correct_weight` pays for naming the better response at all;
- `margin_weight` scales the confidence term: the gap adds to a right verdict and is taken from a
  wrong one, so the judge is pushed to widen the gap only when it is sure;
- `margin_cap` is the gap (in score points) beyond which more confidence earns nothing more;
- `format_weight` is paid to every well-formed verdict, right or wrong;
- `failure_score` must not exceed the lowest score of a well-formed verdict, which for non-negative
  weights is the most confident wrong one, format_weight - margin_weight (checked when built).

This is our reading of Think-J's released reward (verl/utils/reward_score/reward_score.py in
HuihuiChyan/Think-J): right `1 + min(|x-y|/100, 1)`, wrong `max(-|x-y|/100, -1)`, i.e.
correct_weight 1, margin_weight 1, margin_cap 100 here. Two departures: the released code gives an
output it cannot parse 0.5, more than a confident wrong verdict, which our failure rule forbids
(use failure_score <= -1 with those weights); and it scores equal scores as a wrong verdict with no
margin (0), where the "margin" prompt treats a tie as a parse failure. Our defaults (margin 0.5,
cap 50, failure -0.5) keep the right/wrong gap dominant and reach full confidence at a 50-point gap.
"""

from __future__ import annotations

from dataclasses import dataclass

from judge_rl.prompts.base import Judgment
from judge_rl.rewards.base import GroundTruth, PairwiseReward, RewardOutput, register_reward


@register_reward("margin")
@dataclass(frozen=True)
class MarginReward(PairwiseReward):
    """Think-J's margin reward, parsed with the "margin" prompt; adds `pred_margin` = |x - y| (-1.0 on failure)."""

    prompt = "margin"
    extra_keys = ("pred_margin",)

    format_weight: float = 0.0
    correct_weight: float = 1.0
    margin_weight: float = 0.5
    margin_cap: float = 50.0
    failure_score: float = -0.5

    def _check_fields(self) -> None:
        if self.margin_cap <= 0:
            raise ValueError(f"reward {self.name!r}: margin_cap must be > 0, got {self.margin_cap!r}")

    def confidence(self, judgment: Judgment) -> float:
        """m = min(|x - y|, margin_cap) / margin_cap, the normalised gap between the predicted scores."""
        assert judgment.scores is not None
        score_a, score_b = judgment.scores
        return min(abs(score_a - score_b), self.margin_cap) / self.margin_cap

    def _verdict_score(self, judgment: Judgment, truth: GroundTruth, correct: bool) -> float:
        m = self.confidence(judgment)
        if correct:
            return self.format_weight + self.correct_weight + self.margin_weight * m
        return self.format_weight - self.margin_weight * m

    def _lowest_verdict_score(self) -> float:
        # m ranges over (0, 1]; the closed range [0, 1] gives a bound that is safe for either sign of a weight
        right_worst = self.correct_weight + min(0.0, self.margin_weight)
        wrong_worst = min(0.0, -self.margin_weight)
        return self.format_weight + min(right_worst, wrong_worst)

    def _extra(self, judgment: Judgment | None) -> RewardOutput:
        if judgment is None or judgment.scores is None:
            return {"pred_margin": -1.0}
        return {"pred_margin": float(abs(judgment.scores[0] - judgment.scores[1]))}
