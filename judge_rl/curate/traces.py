"""Reading a teacher's output as a trace in the curation prompt's format.

Clip (Think-J keeps only R1's final explanation, not its long reasoning), exactly, for one teacher output:
  a. an output that already parses under `prompt` keeps its verdict and its thinking, the thinking cut by rule
     e when it is longer than `max_thinking_chars` (a reasoning model that wrote its own reasoning as the
     prompt's `<think>` block, then the verdict line alone); rules b-d do not apply;
  b. else the output is split at its last `</think>`: the reasoning is the text before it (without `<think>`
     tags), the rest is the answer; an output without `</think>` (an API that returns the reasoning apart,
     e.g. DeepSeek's `reasoning_content`) is all answer, with no reasoning;
  c. the verdict is the shortest run of final lines of the answer that `prompt` parses as a verdict (for
     `strength`: the last non-blank line, `Therefore, Response (a) is better, and the strength is [[2]].`);
     no such run: the output is unparsed ("no verdict the prompt reads after the reasoning");
  d. the new thinking is the answer's text before the verdict (the final explanation); when that is blank,
     the reasoning instead; both blank: unparsed ("nothing to keep as thinking");
  e. a thinking longer than `max_thinking_chars` keeps only its end: the last `max_thinking_chars`
     characters, starting at the first sentence start inside them (after `.`, `!` or `?` and whitespace, or
     after a line break); with no sentence start there, at the first word start; else exactly there;
  f. the trace is `<think>\\n{thinking}\\n</think>\\n{verdict}` and must parse under `prompt` (it does, by c).

`judge_output` then checks a trace against the pair's gold verdict (and, optionally, its strength).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from judge_rl.curate.config import AccuracyConfig
from judge_rl.data.pairs import JudgeItem

_SENTENCE_START = re.compile(r"(?:[.!?][\"')\]]*\s+|\n\s*)(?=\S)")
_WORD_START = re.compile(r"\s+(?=\S)")


def tail_at_sentence(text: str, max_chars: int) -> str:
    """The end of `text`, at most `max_chars` characters, starting at a sentence start (after `.`, `!` or `?`
    and whitespace, or after a line break); with none inside that window, at a word start; else exactly at
    the window's start. Text no longer than `max_chars` (whitespace stripped) is returned whole."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    start = len(text) - max_chars
    for pattern in (_SENTENCE_START, _WORD_START):
        for m in pattern.finditer(text):
            if m.end() >= start:
                return text[m.end():].strip()
    return text[start:].strip()


@dataclass(frozen=True)
class ClippedTrace:
    """A teacher output read for curation: `trace` in the prompt's format, or None and `error` saying why;
    `clipped` is True when the trace was rebuilt from a reasoning model's output (rules b-f)."""

    trace: str | None
    error: str | None
    clipped: bool = False


NO_VERDICT_AFTER_REASONING = "no verdict the prompt reads after the reasoning"
NOTHING_TO_KEEP = "nothing to keep as thinking"


def _verdict_suffix(answer: str, prompt) -> tuple[str, str] | None:
    """(explanation, verdict): the shortest run of final lines of `answer` that `prompt` reads as a verdict."""
    from judge_rl.prompts.think import think_block

    lines = answer.splitlines()
    for k in range(len(lines) - 1, -1, -1):
        if not lines[k].strip():
            continue
        verdict = "\n".join(lines[k:]).strip()
        if prompt.parse(think_block("x") + verdict).ok:
            return "\n".join(lines[:k]).strip(), verdict
    return None


def clip_trace(text: str, prompt, max_thinking_chars: int) -> ClippedTrace:
    """A teacher's output as a trace in `prompt`'s format (rules a-f of the module docstring)."""
    from judge_rl.prompts.think import THINK_CLOSE, THINK_OPEN, split_think

    if prompt.parse(text).ok:  # rule a
        after, _ = split_think(text)
        thinking = text.lstrip()[len(THINK_OPEN):].split(THINK_CLOSE, 1)[0]
        if len(thinking.strip()) <= max_thinking_chars:
            return ClippedTrace(text, None, False)
        return _rebuild(thinking, after.strip(), prompt, max_thinking_chars)
    if THINK_CLOSE in text:  # rule b
        reasoning, answer = text.rsplit(THINK_CLOSE, 1)
    else:
        reasoning, answer = "", text
    found = _verdict_suffix(answer, prompt)  # rule c
    if found is None:
        return ClippedTrace(None, NO_VERDICT_AFTER_REASONING)
    explanation, verdict = found
    thinking = _untagged(explanation) or _untagged(reasoning)  # rule d
    if not thinking:
        return ClippedTrace(None, NOTHING_TO_KEEP)
    return _rebuild(thinking, verdict, prompt, max_thinking_chars)


def _untagged(text: str) -> str:
    from judge_rl.prompts.think import THINK_CLOSE, THINK_OPEN

    return text.replace(THINK_OPEN, " ").replace(THINK_CLOSE, " ").strip()


def _rebuild(thinking: str, verdict: str, prompt, max_thinking_chars: int) -> ClippedTrace:
    """Rules e-f: the thinking's end in a `<think>` block, then the verdict; parsed once more."""
    from judge_rl.prompts.think import think_block

    trace = think_block(tail_at_sentence(_untagged(thinking), max_thinking_chars)) + verdict
    judgment = prompt.parse(trace)
    if not judgment.ok:  # the verdict parsed after a <think> block (rule c): only a parser change gets here
        return ClippedTrace(None, judgment.error)
    return ClippedTrace(trace, None, True)


def judge_output(text: str, item: JudgeItem, prompt, acc: AccuracyConfig) -> ClippedTrace:
    """One teacher output checked against the gold label: the trace, or why it does not count. Reasons:
    "unparsed: <parser reason>", "wrong verdict", "strength differs from the label"."""
    read = clip_trace(text, prompt, acc.max_thinking_chars) if acc.clip else ClippedTrace(text, None)
    if read.trace is None:
        return ClippedTrace(None, f"unparsed: {read.error}")
    judgment = prompt.parse(read.trace)
    if not judgment.ok:
        return ClippedTrace(None, f"unparsed: {judgment.error}")
    if judgment.winner != item.chosen_position:
        return ClippedTrace(None, "wrong verdict")
    if acc.match_strength and item.pair.strength is not None and judgment.strength is not None \
            and judgment.strength != item.pair.strength:
        return ClippedTrace(None, "strength differs from the label")
    return read
