"""Think-J's strength judge prompt (Huang et al., 2025, "Think-J: Learning to Think for Generative
LLM-as-a-Judge"): the judge thinks inside <think>...</think>, then names the better response and how
much better it is, on a 1-3 scale, in a fixed final line that a strict parser reads.

Two prompts are registered here:

- "strength": final line `Therefore, Response (a) is better, and the strength is [[k]].`, k in 1..3
  (1 slightly better, 2 better, 3 much better). Think-J's strength reward scores the distance
  between the predicted and the labelled strength, so the judge learns *how much* better, not only
  which.
- "binary": Think-J's cot-style variant without strength: final line `Therefore, Response (a) is better.`

The wording is deliberately short: the default judge is SmolLM2-135M on a small CPU, where every
prompt token costs time, and a 135M model follows a short, concrete instruction better than a long
rubric. The instruction comes after the responses, next to where the judge starts writing.

Parsing rules (both prompts; first failing rule gives the reason, see the constants below):

1. the output must not be blank                              -> "empty output"
2. it starts with `<think>` (leading whitespace allowed)     -> "missing <think> block" when there is no
   `<think>` at all, "text before <think>" when it comes later
3. the block is closed                                        -> "unclosed <think> block"
4. exactly one `<think>` and one `</think>`                   -> "several <think> blocks"
5. the thinking is not blank                                  -> "empty <think> block"
6. something follows `</think>`                               -> "no verdict line after </think>"
7. after `</think>` the only non-blank line is the verdict line. Lines that look like a verdict
   (contain "is better", "[[" or start with "Therefore") are told apart from other text:
   two or more of them                                        -> "several verdict lines"
   one, followed by other text                                -> "text after verdict line"
   one, preceded by other text                                -> "text between </think> and verdict line"
8. that line matches the template exactly, apart from whitespace around it (so lowercase (a)/(b)
   only, the final period required, no quotes or markdown)    -> "verdict line does not match template"
9. (strength) the integer in [[k]] is 1, 2 or 3                -> "strength out of range"

Nothing is read from inside the <think> block: the judge may weigh both sides there freely. Tokens
a decoder leaves behind (e.g. `<|im_end|>`) are not stripped: decode with skip_special_tokens.
"""

from __future__ import annotations

import re
from typing import ClassVar

from judge_rl.data.pairs import JudgeItem, verdict_line
from judge_rl.prompts.base import JudgePrompt, Judgment, Message, register_prompt
from judge_rl.prompts.think import (  # noqa: F401  (the think-block reasons are part of this module's list)
    EMPTY_OUTPUT,
    EMPTY_THINK,
    MISSING_THINK,
    NO_VERDICT,
    SEVERAL_THINK,
    TEXT_BEFORE_THINK,
    THINK_CLOSE,
    THINK_OPEN,
    UNCLOSED_THINK,
    split_think,
    think_block,
)

# the strength verdict line (VERDICT_TEMPLATE, `verdict_line`) is defined with the pairs, whose gold traces end with it
BINARY_VERDICT_TEMPLATE = "Therefore, Response ({winner}) is better."

STRENGTHS = (1, 2, 3)

# Failure reasons (Judgment.error), in the order the parser checks them (the first seven, shared by
# every prompt, live in judge_rl.prompts.think).
SEVERAL_VERDICTS = "several verdict lines"
TEXT_AFTER_VERDICT = "text after verdict line"
TEXT_BEFORE_VERDICT = "text between </think> and verdict line"
BAD_TEMPLATE = "verdict line does not match template"
STRENGTH_OUT_OF_RANGE = "strength out of range"

FAILURE_REASONS = (
    EMPTY_OUTPUT,
    MISSING_THINK,
    TEXT_BEFORE_THINK,
    UNCLOSED_THINK,
    SEVERAL_THINK,
    EMPTY_THINK,
    NO_VERDICT,
    SEVERAL_VERDICTS,
    TEXT_AFTER_VERDICT,
    TEXT_BEFORE_VERDICT,
    BAD_TEMPLATE,
    STRENGTH_OUT_OF_RANGE,
)

SYSTEM_PROMPT = "You are an impartial judge. Decide which of two responses better answers the question."

USER_TEMPLATE = (
    "[Question]\n{question}\n\n{reference}"
    "[The Start of Response (a)]\n{response_a}\n[The End of Response (a)]\n\n"
    "[The Start of Response (b)]\n{response_b}\n[The End of Response (b)]\n\n"
    "{instruction}"
)

STRENGTH_INSTRUCTION = (
    "Think inside <think>...</think>, then write exactly one final line:\n"
    "Therefore, Response (x) is better, and the strength is [[k]].\n"
    "x is a or b; k is 1 (slightly better), 2 (better) or 3 (much better)."
)

BINARY_INSTRUCTION = (
    "Think inside <think>...</think>, then write exactly one final line:\n"
    "Therefore, Response (x) is better.\n"
    "x is a or b."
)

# Loose: anything that reads like an attempt at a verdict, so extra or repeated verdicts are told
# apart from a single malformed one.
_VERDICT_LIKE = re.compile(r"\bis\s+better\b|\[\[|^therefore\b", re.IGNORECASE)

_STRENGTH_VERDICT = re.compile(
    r"Therefore, Response \((a|b)\) is better, and the strength is \[\[(-?(?:0|[1-9][0-9]*))\]\]\."
)
_BINARY_VERDICT = re.compile(r"Therefore, Response \((a|b)\) is better\.")


def binary_verdict_line(winner: str) -> str:
    """The exact final line a binary judge must write."""
    if winner not in ("a", "b"):
        raise ValueError(f"winner must be 'a' or 'b', got {winner!r}")
    return BINARY_VERDICT_TEMPLATE.format(winner=winner)


REFERENCE_TEMPLATE = "[Reference Answer]\n{reference}\n\n"


def pairwise_messages(item: JudgeItem, instruction: str) -> list[Message]:
    """The system message and the user turn (question, Response (a), Response (b), then `instruction`).

    Reference-guided judging (MT-Bench's reference mode): a pair whose `meta["reference"]` holds a
    reference answer shows it after the question, so the judge checks each response against it instead
    of solving the question itself; pairs without one render exactly as before."""
    reference = item.pair.meta.get("reference")
    user = USER_TEMPLATE.format(
        question=item.pair.question,
        reference=REFERENCE_TEMPLATE.format(reference=reference) if reference else "",
        response_a=item.response_a,
        response_b=item.response_b,
        instruction=instruction,
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


class ThinkVerdictPrompt(JudgePrompt):
    """Shared by Think-J's prompts: the same messages and `<think>` structure, a prompt-specific final line."""

    instruction: ClassVar[str]
    verdict_pattern: ClassVar[re.Pattern[str]]

    def messages(self, item: JudgeItem) -> list[Message]:
        return pairwise_messages(item, self.instruction)

    def output(self, thinking: str, winner: str, strength: int | None = None) -> str:
        """A complete well-formed judge output (gold traces): the thinking in a block, then the verdict."""
        return think_block(thinking) + self.verdict(winner, strength)

    def parse(self, text: str) -> Judgment:
        after, error = split_think(text)
        if error is not None:
            return Judgment.failure(error)
        return self._parse_verdict(after)

    def _parse_verdict(self, after: str) -> Judgment:
        """Rules 7-9 on the text after the thinking: one line, exactly the verdict template."""
        lines = [line.strip() for line in after.splitlines() if line.strip()]
        verdict_like = [i for i, line in enumerate(lines) if _VERDICT_LIKE.search(line)]
        if len(verdict_like) > 1:
            return Judgment.failure(SEVERAL_VERDICTS)
        if len(lines) > 1 and verdict_like:
            return Judgment.failure(TEXT_AFTER_VERDICT if verdict_like[0] < len(lines) - 1 else TEXT_BEFORE_VERDICT)
        if len(lines) > 1:
            return Judgment.failure(BAD_TEMPLATE)
        match = self.verdict_pattern.fullmatch(lines[0])
        if match is None:
            return Judgment.failure(BAD_TEMPLATE)
        return self._judgment(match)

    def _judgment(self, match: re.Match[str]) -> Judgment:
        """The Judgment for a line that matched `verdict_pattern` (may still fail, e.g. a range check)."""
        return Judgment(match.group(1), None, None)


@register_prompt("strength")
class StrengthPrompt(ThinkVerdictPrompt):
    """Think-J's strength prompt: winner plus strength 1..3."""

    instruction = STRENGTH_INSTRUCTION
    verdict_pattern = _STRENGTH_VERDICT

    def verdict(self, winner: str, strength: int | None = None) -> str:
        if strength is None:
            raise ValueError("the strength prompt's verdict needs a strength (1, 2 or 3)")
        return verdict_line(winner, strength)

    def _judgment(self, match: re.Match[str]) -> Judgment:
        strength = int(match.group(2))
        if strength not in STRENGTHS:
            return Judgment.failure(STRENGTH_OUT_OF_RANGE)
        return Judgment(match.group(1), strength, None)


@register_prompt("binary")
class BinaryPrompt(ThinkVerdictPrompt):
    """Think-J's cot-style prompt without strength: the parsed strength is always None."""

    instruction = BINARY_INSTRUCTION
    verdict_pattern = _BINARY_VERDICT

    def verdict(self, winner: str, strength: int | None = None) -> str:
        return binary_verdict_line(winner)


DIRECT_STRENGTH_INSTRUCTION = (
    "Do not explain. Write exactly one line:\n"
    "Therefore, Response (x) is better, and the strength is [[k]].\n"
    "x is a or b; k is 1 (slightly better), 2 (better) or 3 (much better)."
)
DIRECT_BINARY_INSTRUCTION = "Do not explain. Write exactly one line:\nTherefore, Response (x) is better.\nx is a or b."


class DirectVerdictMixin:
    """The verdict without thinking (Think-J Table 3's "w/o CoT" rows: direct prompting and SFT on verdicts
    alone): the same question and responses, an instruction asking for the final line only, and a parser that
    reads the whole output as rules 7-9 read the text after `</think>` (an empty output is "empty output")."""

    direct_instruction: ClassVar[str]

    def messages(self, item: JudgeItem) -> list[Message]:
        return pairwise_messages(item, self.direct_instruction)

    def output(self, thinking: str | None, winner: str, strength: int | None = None) -> str:
        """The gold output: the verdict line alone (`thinking` is dropped)."""
        return self.verdict(winner, strength)

    def parse(self, text: str) -> Judgment:
        if not text.strip():
            return Judgment.failure(EMPTY_OUTPUT)
        return self._parse_verdict(text)


@register_prompt("strength_direct")
class StrengthDirectPrompt(DirectVerdictMixin, StrengthPrompt):
    """`strength` without thinking: the line `Therefore, Response (a) is better, and the strength is [[k]].`"""

    direct_instruction = DIRECT_STRENGTH_INSTRUCTION


@register_prompt("binary_direct")
class BinaryDirectPrompt(DirectVerdictMixin, BinaryPrompt):
    """`binary` without thinking: the line `Therefore, Response (a) is better.`"""

    direct_instruction = DIRECT_BINARY_INSTRUCTION
