"""J1-style position-consistency reward (Whitehouse et al., 2025, "J1: Incentivizing Thinking in
LLM-as-a-Judge via Reinforcement Learning").

Both orders of a pair are rolled out in the same GRPO group, half the samples each. Sample k of the
order where the better response is shown at (a) is paired with sample k of the swapped order, and a
right verdict keeps its reward only when its partner is right too; otherwise it scores as a wrong
verdict. A judge that always names (a) is therefore never paid, which is the failure the
foundation run showed. Per-sample scoring is Think-J's strength reward (same prompt, same weights);
the pairing is applied by `combine`, which the backend calls on each group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from judge_rl.rewards.base import register_reward
from judge_rl.rewards.strength import StrengthReward


@register_reward("consistency")
@dataclass(frozen=True)
class ConsistencyReward(StrengthReward):
    """Think-J's strength reward, paid only for verdicts that are right in both orders."""

    prompt = "strength"
    both_orders: ClassVar[bool] = True

    def combine(self, order_a: list[dict[str, Any]], order_b: list[dict[str, Any]]) -> None:
        """Rescore the k-th sample of each order jointly, in place; adds a `consistent` component."""
        if len(order_a) != len(order_b):
            raise ValueError(f"consistency reward: {len(order_a)} and {len(order_b)} samples per order differ")
        for ra, rb in zip(order_a, order_b):
            both_right = bool(ra["correct"]) and bool(rb["correct"])
            for r in (ra, rb):
                r["consistent"] = float(both_right)
                if r["correct"] and not both_right:
                    r["score"] = self.format_weight * r["format_ok"]  # what a wrong verdict scores
                    r["correct"] = 0.0
