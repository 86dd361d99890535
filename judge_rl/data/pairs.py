"""The unit of data every stage shares: a preference pair, and that pair shown to a judge in one order.

A judge sees two responses labelled (a) and (b). Which label the better response gets is
decided here, once, so that training and evaluation both see an exact 50/50 A/B balance
(position bias is the best documented failure of LLM judges; Think-J and JudgeLRM both
evaluate in both orders).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

Position = Literal["a", "b"]


@dataclass(frozen=True)
class PreferencePair:
    """A question with a better (`chosen`) and a worse (`rejected`) response.

    strength: how much better chosen is, 1 (slightly) .. 3 (much), or None when the source has no label.
    traces: gold judgment traces keyed by the position of `chosen` ("a" or "b"): the full assistant
        turn a judge should write for that order (`<think>...</think>` then the strength judge's verdict line,
        `verdict_line`). Used by the SFT thinking initialization; None when the source has none.
    """

    pair_id: str
    source: str
    question: str
    chosen: str
    rejected: str
    strength: int | None = None
    traces: dict[str, str] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


# The final line of a gold trace: the strength judge's verdict (judge_rl/prompts/strength.py parses it). Defined with
# the pairs, whose generators (judge_rl/data/synthetic.py, judge_rl/policy/tasks/pairs.py) end every trace with it.
VERDICT_TEMPLATE = "Therefore, Response ({winner}) is better, and the strength is [[{strength}]]."


def verdict_line(winner: str, strength: int) -> str:
    """The exact final line a strength judge must write (gold traces end with it)."""
    if winner not in ("a", "b"):
        raise ValueError(f"winner must be 'a' or 'b', got {winner!r}")
    if strength not in (1, 2, 3):
        raise ValueError(f"strength must be 1, 2 or 3, got {strength!r}")
    return VERDICT_TEMPLATE.format(winner=winner, strength=strength)


def percent_of(text: str) -> int:
    """A stable 0..99 from a hash of `text`: which side of a split a key falls on, whatever the order of the rows
    (the synthetic problems' split, the real pairs' split by prompt)."""
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "big") % 100


@dataclass(frozen=True)
class JudgeItem:
    """A pair rendered in one order: `chosen_position` says where the better response is shown."""

    pair: PreferencePair
    chosen_position: Position

    @property
    def item_id(self) -> str:
        return f"{self.pair.pair_id}:{self.chosen_position}"

    @property
    def response_a(self) -> str:
        return self.pair.chosen if self.chosen_position == "a" else self.pair.rejected

    @property
    def response_b(self) -> str:
        return self.pair.rejected if self.chosen_position == "a" else self.pair.chosen

    @property
    def ground_truth(self) -> dict[str, Any]:
        return {"winner": self.chosen_position, "strength": self.pair.strength}

    @property
    def trace(self) -> str | None:
        return None if self.pair.traces is None else self.pair.traces.get(self.chosen_position)

    def swapped(self) -> "JudgeItem":
        return JudgeItem(self.pair, "b" if self.chosen_position == "a" else "a")


def balanced_positions(pairs: Sequence[PreferencePair], seed: int) -> list[JudgeItem]:
    """One item per pair, the better response at (a) for exactly half of them (n odd: one more at (a)).

    A seeded shuffle of a half-and-half list rather than a coin per pair, which would leave
    a random imbalance of order sqrt(n).
    """
    n = len(pairs)
    positions: list[Position] = ["a"] * ((n + 1) // 2) + ["b"] * (n // 2)
    random.Random(seed).shuffle(positions)
    return [JudgeItem(pair, pos) for pair, pos in zip(pairs, positions)]


def both_orders(pairs: Sequence[PreferencePair]) -> list[JudgeItem]:
    """Every pair in both orders (evaluation): chosen at (a), then chosen at (b)."""
    return [JudgeItem(pair, pos) for pair in pairs for pos in ("a", "b")]


@dataclass(frozen=True)
class PointwiseItem:
    """One response of a pair, to be scored alone (OpenJudge's pointwise judge).

    label: the gold score. Pairs from preference data give binary labels (chosen 1, rejected 0,
    `scale` 1); graded data (e.g. HelpSteer2's 0-4 helpfulness) gives `scale` 4.
    """

    pair: PreferencePair
    which: Literal["chosen", "rejected"]
    label: int
    scale: int = 1

    @property
    def item_id(self) -> str:
        return f"{self.pair.pair_id}:{self.which}"

    @property
    def question(self) -> str:
        return self.pair.question

    @property
    def response(self) -> str:
        return self.pair.chosen if self.which == "chosen" else self.pair.rejected

    @property
    def ground_truth(self) -> dict[str, Any]:
        return {"label": self.label, "scale": self.scale}


def pointwise_items(pairs: Sequence[PreferencePair]) -> list[PointwiseItem]:
    """Both responses of every pair, labelled for a 0-4 pointwise judge.

    With a strength label the labels are graded (scale 4): the chosen response 4, the rejected one
    3 - strength (slightly worse 2, worse 1, much worse 0). Without one they are binary (scale 1):
    chosen 1, rejected 0.
    """
    items = []
    for pair in pairs:
        if pair.strength is None:
            items += [PointwiseItem(pair, "chosen", 1, 1), PointwiseItem(pair, "rejected", 0, 1)]
        else:
            items += [PointwiseItem(pair, "chosen", 4, 4), PointwiseItem(pair, "rejected", 3 - pair.strength, 4)]
    return items


@dataclass(frozen=True)
class RatedAnswer:
    """One answer to be rated alone by a pointwise prompt, outside any pair (e.g. one of RewardBench 2's
    four answers); pointwise prompts read `question` and `response`."""

    item_id: str
    question: str
    response: str


@dataclass(frozen=True)
class ChoiceItem:
    """A question with several answers shown at once (a k-way choice prompt, e.g. RewardBench 2's
    4-way): `answers` in display order, `order[i]` = the original index of the answer shown i-th."""

    item_id: str
    question: str
    answers: tuple[str, ...]
    order: tuple[int, ...]
