"""The `<think>` block every judge output here starts with, and the tag-verdict parser shared by the
prompts whose verdict is an XML-style tag (JudgeLRM's `<answer>`, OpenJudge's `<better>` / `<score>`).

Think-block rules (every prompt; the first failing rule gives the reason):

1. the output must not be blank                              -> "empty output"
2. it starts with `<think>` (leading whitespace allowed)     -> "missing <think> block" when there is no
   `<think>` at all, "text before <think>" when it comes later
3. the block is closed                                        -> "unclosed <think> block"
4. exactly one `<think>` and one `</think>`                   -> "several <think> blocks"
5. the thinking is not blank                                  -> "empty <think> block"
6. something follows `</think>`                               -> "no verdict line after </think>"

Tag rules, on the text after `</think>` (for tag `t`, e.g. "answer"):

7. it holds `<t>`                                             -> "missing <t> tag"
8. exactly one `<t>` and at most one `</t>`                   -> "several <t> tags"
9. `</t>` follows `<t>`                                       -> "unclosed <t> tag"
10. only whitespace between `</think>` and `<t>`              -> "text between </think> and <t>"
11. only whitespace after `</t>`                              -> "text after </t>"
12. the content (whitespace around it ignored) has the prompt's exact form
                                                              -> "<t> content does not match template"
13. then the prompt's own checks (e.g. a range)               -> e.g. "score out of range"

Nothing is read from inside the `<think>` block: tags or verdicts written while thinking are ignored.
The tag may follow `</think>` on the same line (`</think><answer>7, 3</answer>`, the form JudgeLRM
and OpenJudge show their judges).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from judge_rl.prompts.base import Judgment

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"

# Failure reasons (Judgment.error) of the think block, in the order they are checked.
EMPTY_OUTPUT = "empty output"
MISSING_THINK = "missing <think> block"
TEXT_BEFORE_THINK = "text before <think>"
UNCLOSED_THINK = "unclosed <think> block"
SEVERAL_THINK = "several <think> blocks"
EMPTY_THINK = "empty <think> block"
NO_VERDICT = "no verdict line after </think>"

THINK_REASONS = (EMPTY_OUTPUT, MISSING_THINK, TEXT_BEFORE_THINK, UNCLOSED_THINK, SEVERAL_THINK, EMPTY_THINK, NO_VERDICT)

# Shared by the prompts that ask for numeric scores.
SCORE_OUT_OF_RANGE = "score out of range"
# An integer score as written in a verdict (a leading minus is captured so it fails as out of range).
INTEGER = r"(-?(?:0|[1-9][0-9]*))"


def split_think(text: str) -> tuple[str, str | None]:
    """`(text after </think>, None)` when the think block is well formed (rules 1-6), else `("", reason)`."""
    if not text.strip():
        return "", EMPTY_OUTPUT
    body = text.lstrip()
    if not body.startswith(THINK_OPEN):
        return "", TEXT_BEFORE_THINK if THINK_OPEN in body else MISSING_THINK
    if THINK_CLOSE not in body:
        return "", UNCLOSED_THINK
    if body.count(THINK_OPEN) > 1 or body.count(THINK_CLOSE) > 1:
        return "", SEVERAL_THINK
    thinking, after = body[len(THINK_OPEN) :].split(THINK_CLOSE, 1)
    if not thinking.strip():
        return "", EMPTY_THINK
    if not after.strip():
        return "", NO_VERDICT
    return after, None


def think_block(thinking: str) -> str:
    """`<think>\\n{thinking}\\n</think>\\n` for gold outputs; the thinking must be non-blank and tag-free."""
    if not thinking.strip() or THINK_OPEN in thinking or THINK_CLOSE in thinking:
        raise ValueError("thinking must be non-blank and must not contain <think> tags")
    return f"{THINK_OPEN}\n{thinking.strip()}\n{THINK_CLOSE}\n"


@dataclass(frozen=True)
class TagReasons:
    """The failure reasons of the tag rules 7-12 for one tag name."""

    missing: str
    several: str
    unclosed: str
    text_before: str
    text_after: str
    bad_content: str

    @classmethod
    def for_tag(cls, tag: str) -> "TagReasons":
        return cls(
            missing=f"missing <{tag}> tag",
            several=f"several <{tag}> tags",
            unclosed=f"unclosed <{tag}> tag",
            text_before=f"text between </think> and <{tag}>",
            text_after=f"text after </{tag}>",
            bad_content=f"<{tag}> content does not match template",
        )

    def all(self) -> tuple[str, ...]:
        return (self.missing, self.several, self.unclosed, self.text_before, self.text_after, self.bad_content)


class ThinkTagParser:
    """Mixin: parse `<think>...</think>` then exactly one `<tag>content</tag>` (module docstring rules).

    Subclasses set `tag` and implement `_read(content)`, which turns the stripped tag content into a
    Judgment (a failure with `reasons.bad_content` when it does not have the prompt's exact form).
    """

    tag: ClassVar[str]

    @property
    def reasons(self) -> TagReasons:
        return TagReasons.for_tag(self.tag)

    def tagged(self, content: str) -> str:
        return f"<{self.tag}>{content}</{self.tag}>"

    def parse(self, text: str) -> Judgment:
        after, error = split_think(text)
        if error is not None:
            return Judgment.failure(error)
        r = self.reasons
        open_tag, close_tag = f"<{self.tag}>", f"</{self.tag}>"
        n_open, n_close = after.count(open_tag), after.count(close_tag)
        if n_open == 0:
            return Judgment.failure(r.missing)
        if n_open > 1 or n_close > 1:
            return Judgment.failure(r.several)
        before, rest = after.split(open_tag, 1)
        if close_tag not in rest:
            return Judgment.failure(r.unclosed)
        content, tail = rest.split(close_tag, 1)
        if before.strip():
            return Judgment.failure(r.text_before)
        if tail.strip():
            return Judgment.failure(r.text_after)
        return self._read(content.strip())

    @abstractmethod
    def _read(self, content: str) -> Judgment:
        """The Judgment for the tag's content (stripped of surrounding whitespace)."""
