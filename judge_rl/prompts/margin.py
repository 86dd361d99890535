"""Think-J's score prompt (Huang et al., 2025, appendix A.1): the judge thinks inside <think>...</think>,
then gives each response a quality score from 0 to 100; the better response is the higher-scored one
and the gap between the scores is how sure the judge is (the margin reward pays for it).

Registered as "margin". Final line, exactly:

    Therefore, the score of Response (a) is [[x]] and the score of Response (b) is [[y]].

with x and y integers in 0..100 (no leading zeros, no decimals). Think-J's released prompt asks for
`<Score 1>x</Score 1> and <Score 2>y</Score 2>` with "Response 1/2"; here the responses keep the
(a)/(b) labels and the [[.]] brackets of the other Think-J prompts, so one judge sees one vocabulary.

Parsing: the think-block and verdict-line rules of `judge_rl.prompts.strength` (1-8: one verdict
line, alone after `</think>`, matching the template exactly), then

9. both scores are in 0..100                                  -> "score out of range"
10. the scores differ                                          -> "tie"

A tie names no better response, so it is a parse failure here (Think-J's released reward scores it
like a wrong verdict with zero margin, i.e. 0). The parsed Judgment carries `winner` (the
higher-scored side) and `scores` = (x, y) as floats.

Gold outputs: `scored_output(thinking, x, y)` writes given scores; `output(thinking, winner,
strength)` (the interface SFT uses for every pairwise prompt) writes the scores of `GOLD_SCORES`
for that strength (2 when None), the winner getting the higher one.
"""

from __future__ import annotations

import re
from numbers import Integral

from judge_rl.prompts.base import Judgment, register_prompt
from judge_rl.prompts.strength import (
    BAD_TEMPLATE,
    SEVERAL_VERDICTS,
    TEXT_AFTER_VERDICT,
    TEXT_BEFORE_VERDICT,
    ThinkVerdictPrompt,
)
from judge_rl.prompts.think import INTEGER, SCORE_OUT_OF_RANGE, THINK_REASONS, think_block

MARGIN_TEMPLATE = (
    "Therefore, the score of Response (a) is [[{score_a}]] and the score of Response (b) is [[{score_b}]]."
)

MIN_SCORE, MAX_SCORE = 0, 100

TIE = "tie"

FAILURE_REASONS = (
    *THINK_REASONS,
    SEVERAL_VERDICTS,
    TEXT_AFTER_VERDICT,
    TEXT_BEFORE_VERDICT,
    BAD_TEMPLATE,
    SCORE_OUT_OF_RANGE,
    TIE,
)

MARGIN_INSTRUCTION = (
    "Think inside <think>...</think>, then write exactly one final line:\n"
    "Therefore, the score of Response (a) is [[x]] and the score of Response (b) is [[y]].\n"
    "x and y are quality scores from 0 to 100."
)

# Gold scores (winner, loser) by labelled strength, for traces written from labels: a clearer
# preference gets a wider gap (20, 40, 60 points).
GOLD_SCORES = {1: (60, 40), 2: (70, 30), 3: (80, 20)}

_MARGIN_VERDICT = re.compile(
    r"Therefore, the score of Response \(a\) is \[\[" + INTEGER
    + r"\]\] and the score of Response \(b\) is \[\[" + INTEGER + r"\]\]\."
)


def _check_score(score: int) -> int:
    if isinstance(score, bool) or not isinstance(score, Integral) or not MIN_SCORE <= int(score) <= MAX_SCORE:
        raise ValueError(f"a margin score must be an integer in {MIN_SCORE}..{MAX_SCORE}, got {score!r}")
    return int(score)


def margin_verdict_line(score_a: int, score_b: int) -> str:
    """The exact final line for scores (a, b); equal scores are refused (they parse as a tie failure)."""
    a, b = _check_score(score_a), _check_score(score_b)
    if a == b:
        raise ValueError(f"equal scores ({a}) name no better response")
    return MARGIN_TEMPLATE.format(score_a=a, score_b=b)


@register_prompt("margin")
class MarginPrompt(ThinkVerdictPrompt):
    """Think-J's score prompt: two 0-100 scores; the winner is the higher one, `scores` holds both."""

    instruction = MARGIN_INSTRUCTION
    verdict_pattern = _MARGIN_VERDICT

    def verdict(self, winner: str, strength: int | None = None) -> str:
        """The gold line for a label: the scores of `GOLD_SCORES[strength]` (2 when None), winner higher."""
        if winner not in ("a", "b"):
            raise ValueError(f"winner must be 'a' or 'b', got {winner!r}")
        if strength is not None and strength not in GOLD_SCORES:
            raise ValueError(f"strength must be 1, 2, 3 or None, got {strength!r}")
        high, low = GOLD_SCORES[2 if strength is None else strength]
        return margin_verdict_line(*((high, low) if winner == "a" else (low, high)))

    def scored_verdict(self, score_a: int, score_b: int) -> str:
        return margin_verdict_line(score_a, score_b)

    def scored_output(self, thinking: str, score_a: int, score_b: int) -> str:
        """A complete well-formed output with the given scores."""
        return think_block(thinking) + margin_verdict_line(score_a, score_b)

    def _judgment(self, match: re.Match[str]) -> Judgment:
        a, b = int(match.group(1)), int(match.group(2))
        if not (MIN_SCORE <= a <= MAX_SCORE and MIN_SCORE <= b <= MAX_SCORE):
            return Judgment.failure(SCORE_OUT_OF_RANGE)
        if a == b:
            return Judgment.failure(TIE)
        return Judgment("a" if a > b else "b", None, None, scores=(float(a), float(b)))
