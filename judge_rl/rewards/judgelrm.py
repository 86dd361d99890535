"""JudgeLRM's composite reward (Chen et al., 2025, "JudgeLRM: Large Reasoning Models as a Judge"),
parsed with the "judgelrm" prompt (`<answer>s_a, s_b</answer>`, two 1-10 scores).

    well formed:  format_weight
                  + right ordering:  relation_weight + absolute + confidence_weight * |s_a - s_b| / 9
                  + wrong ordering:  - mismatch_penalty     (equal scores count as a wrong ordering)
    failure:      failure_score

- format: paid to every well-formed output (JudgeLRM's structural reward);
- relation: the predicted ordering matches the gold preference (s_winner > s_loser strictly);
- absolute (right ordering only, and only when the ground truth carries gold `scores`, on the same
  1-10 scale): absolute_weight * 1.0 when both predicted scores equal the gold ones, * 0.6 when the
  summed error |g_a - s_a| + |g_b - s_b| is at most 2, else 0 (JudgeLRM's released values).
  Preference pairs have no gold scores, so the term is 0 for them;
- confidence (right ordering only): grows with the gap between the predicted scores, 0..1 over
  the possible gaps 1..9, so a right verdict is paid more for being decisive.

What JudgeLRM's released code does (src/verl/utils/reward_score/judgelrm.py in NuoJohnChen/JudgeLRM),
and where we differ:
- format +1 for a well-formed output, -1 for a malformed one (-0.5 for unreadable scores); answer
  +2 for the right ordering, -1.5 for a wrong one, -2 when the format failed. A malformed output
  therefore scores -3 (-2.5 when only its scores are unreadable), a wrong one -0.5, a right one 3
  plus the absolute and confidence terms. Here format_weight 1 and relation_weight 2 are as
  released; mismatch_penalty defaults to 0 (released: 1.5) and failure_score to 0 (released: -3);
- absolute: as released (+1 exact, +0.6 within 2), needs gold scores;
- confidence: released +0.2 when the predicted gap is at least the gold gap, which needs gold
  scores; ours pays confidence_weight * gap / 9 and works on preference pairs (our choice);
- the released relation uses `>=`, so equal scores count as "(a) is better" (a position bias);
  here a tie is wrong on both orders;
- the released length bonus (+0.2 past 120 tokens) and truncation penalty (-1) are not reproduced:
  a truncated output has no closing tag and already fails to parse.

`failure_score` must not exceed the lowest score of a well-formed verdict (checked when built):
format_weight - mismatch_penalty for non-negative weights.
"""

from __future__ import annotations

from dataclasses import dataclass

from judge_rl.prompts.base import Judgment
from judge_rl.prompts.judgelrm import MAX_SCORE, MIN_SCORE
from judge_rl.rewards.base import GroundTruth, PairwiseReward, RewardOutput, register_reward

MAX_GAP = MAX_SCORE - MIN_SCORE  # 9: the confidence term reaches confidence_weight at scores 10 vs 1
ABSOLUTE_EXACT, ABSOLUTE_CLOSE, CLOSE_DISTANCE = 1.0, 0.6, 2.0  # JudgeLRM's released absolute reward


@register_reward("judgelrm")
@dataclass(frozen=True)
class JudgeLRMReward(PairwiseReward):
    """JudgeLRM's format + relation + absolute + confidence reward; adds `pred_margin` = |s_a - s_b|."""

    prompt = "judgelrm"
    extra_keys = ("pred_margin",)

    format_weight: float = 1.0
    relation_weight: float = 2.0
    mismatch_penalty: float = 0.0
    absolute_weight: float = 1.0
    confidence_weight: float = 1.0
    failure_score: float = 0.0

    def absolute(self, judgment: Judgment, truth: GroundTruth) -> float:
        """1.0 / 0.6 / 0.0 by the summed distance to the gold scores (0 / <= 2 / more); 0.0 without them."""
        if truth.scores is None or judgment.scores is None:
            return 0.0
        distance = sum(abs(g - s) for g, s in zip(truth.scores, judgment.scores))
        if distance == 0:
            return ABSOLUTE_EXACT
        return ABSOLUTE_CLOSE if distance <= CLOSE_DISTANCE else 0.0

    def _verdict_score(self, judgment: Judgment, truth: GroundTruth, correct: bool) -> float:
        if not correct:
            return self.format_weight - self.mismatch_penalty
        assert judgment.scores is not None
        gap = abs(judgment.scores[0] - judgment.scores[1])
        return (
            self.format_weight
            + self.relation_weight
            + self.absolute_weight * self.absolute(judgment, truth)
            + self.confidence_weight * gap / MAX_GAP
        )

    def _lowest_verdict_score(self) -> float:
        # a right ordering has a gap of 1..9 and an absolute factor of 0, 0.6 or 1
        right_worst = (
            self.relation_weight
            + min(0.0, self.absolute_weight)
            + min(self.confidence_weight / MAX_GAP, self.confidence_weight)
        )
        return self.format_weight + min(right_worst, -self.mismatch_penalty)

    def _extra(self, judgment: Judgment | None) -> RewardOutput:
        if judgment is None or judgment.scores is None:
            return {"pred_margin": -1.0}
        return {"pred_margin": float(abs(judgment.scores[0] - judgment.scores[1]))}
