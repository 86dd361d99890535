"""JudgeLRM's prompt (Chen et al., 2025, "JudgeLRM: Large Reasoning Models as a Judge"): the judge
thinks inside <think>...</think>, then scores both responses from 1 to 10 in one answer tag.

Registered as "judgelrm". Output, exactly (the tag may follow `</think>` on the same line):

    <think>...</think>
    <answer>x, y</answer>

x is the score of Response (a), y of Response (b), integers in 1..10 (no leading zeros, no
decimals; whitespace inside the tag and around the comma is allowed).

Differences from JudgeLRM's released code (src/verl/utils/reward_score/judgelrm.py), kept small on
purpose for a 135M judge: one `<answer>` tag holding both scores instead of two tags of one score
each, and the range 1..10 instead of 0..10.

Parsing: the think-block and tag rules of `judge_rl.prompts.think` for tag "answer", then

13. both scores are in 1..10                                  -> "score out of range"

Equal scores are well formed (a tie): the Judgment is ok with `winner` None; the reward counts a
tie as a wrong ordering. Otherwise `winner` is the higher-scored side. `scores` = (x, y) as floats.

Gold outputs: `scored_output(thinking, x, y)` writes given scores; `output(thinking, winner,
strength)` (the interface SFT uses for every pairwise prompt) writes `GOLD_SCORES[strength]`
(2 when None), the winner getting the higher score.
"""

from __future__ import annotations

import re
from numbers import Integral
from typing import TYPE_CHECKING

from judge_rl.prompts.base import JudgePrompt, Judgment, Message, register_prompt
from judge_rl.prompts.strength import pairwise_messages
from judge_rl.prompts.think import INTEGER, SCORE_OUT_OF_RANGE, THINK_REASONS, TagReasons, ThinkTagParser, think_block

if TYPE_CHECKING:
    from judge_rl.data.pairs import JudgeItem

TAG = "answer"
ANSWER_REASONS = TagReasons.for_tag(TAG)
FAILURE_REASONS = (*THINK_REASONS, *ANSWER_REASONS.all(), SCORE_OUT_OF_RANGE)

MIN_SCORE, MAX_SCORE = 1, 10

JUDGELRM_INSTRUCTION = (
    "Think inside <think>...</think>, then write exactly:\n"
    "<answer>x, y</answer>\n"
    "x and y score Response (a) and Response (b), integers from 1 to 10."
)

# Gold scores (winner, loser) by labelled strength, for traces written from labels.
GOLD_SCORES = {1: (6, 4), 2: (7, 3), 3: (8, 2)}

_CONTENT = re.compile(INTEGER + r"\s*,\s*" + INTEGER)


def _check_score(score: int) -> int:
    if isinstance(score, bool) or not isinstance(score, Integral) or not MIN_SCORE <= int(score) <= MAX_SCORE:
        raise ValueError(f"a JudgeLRM score must be an integer in {MIN_SCORE}..{MAX_SCORE}, got {score!r}")
    return int(score)


@register_prompt("judgelrm")
class JudgeLRMPrompt(ThinkTagParser, JudgePrompt):
    """JudgeLRM's prompt: `<answer>x, y</answer>`, two 1-10 scores; `scores` holds both, a tie has no winner."""

    tag = TAG
    instruction = JUDGELRM_INSTRUCTION

    def messages(self, item: JudgeItem) -> list[Message]:
        return pairwise_messages(item, self.instruction)

    def scored_verdict(self, score_a: int, score_b: int) -> str:
        """The exact answer tag for scores (a, b)."""
        return self.tagged(f"{_check_score(score_a)}, {_check_score(score_b)}")

    def scored_output(self, thinking: str, score_a: int, score_b: int) -> str:
        """A complete well-formed output with the given scores."""
        return think_block(thinking) + self.scored_verdict(score_a, score_b)

    def verdict(self, winner: str, strength: int | None = None) -> str:
        """The gold tag for a label: the scores of `GOLD_SCORES[strength]` (2 when None), winner higher."""
        if winner not in ("a", "b"):
            raise ValueError(f"winner must be 'a' or 'b', got {winner!r}")
        if strength is not None and strength not in GOLD_SCORES:
            raise ValueError(f"strength must be 1, 2, 3 or None, got {strength!r}")
        high, low = GOLD_SCORES[2 if strength is None else strength]
        return self.scored_verdict(*((high, low) if winner == "a" else (low, high)))

    def output(self, thinking: str, winner: str, strength: int | None = None) -> str:
        """A complete well-formed gold output for a label (see `verdict`)."""
        return think_block(thinking) + self.verdict(winner, strength)

    def _read(self, content: str) -> Judgment:
        match = _CONTENT.fullmatch(content)
        if match is None:
            return Judgment.failure(ANSWER_REASONS.bad_content)
        a, b = int(match.group(1)), int(match.group(2))
        if not (MIN_SCORE <= a <= MAX_SCORE and MIN_SCORE <= b <= MAX_SCORE):
            return Judgment.failure(SCORE_OUT_OF_RANGE)
        winner = None if a == b else ("a" if a > b else "b")
        return Judgment(winner, None, None, scores=(float(a), float(b)))
