"""The guard of the policy task's true score: what the rule checkers cannot see.

Under the rule reward alone a 135M policy learns to pass the checkers with text that answers nothing: sixty
GRPO steps on postscript / title / placeholder / section constraints moved the held-out checker score from 0.35 to
1.00 with answers such as "P.P.S.P.S.P.S...", "[date] [time] [location]..." and "Step 1: Step 2: Step 3: ..."
(docs/results.md, "The oracle on the task held out"). The guard turns such answers away, so a score that needs the guard (the task's true
score, `task_eval`; the oracle reward, `policy_reward=rule` with `guard: true`) cannot be reached by degenerate text:

- **too short**: fewer than `MIN_WORDS` words (no instruction the generator writes asks for fewer);
- **repetitive**: fewer than `MIN_DISTINCT_TRIGRAMS` of its word trigrams distinct, any number counting as one
  word (a loop: on 48 held-out answers the untrained policy's median share is 0.88, the hacked policy's 0.09);
- **off topic**: none of its base task's topical words (`BaseTask.keywords`, matched as a word prefix, so
  "tides" counts for "tide"); skipped where the prompt asks for another language, or when the prompt's task is
  unknown (a prompt from a file).

`guard_failure(response, task_id, instruction_ids)` is the reason a response fails, or None. Words are lowercase
runs of letters, digits and apostrophes. The thresholds are fixed constants, not tuned on evaluation answers.
"""

from __future__ import annotations

import re
from typing import Sequence

MIN_WORDS = 8
MIN_DISTINCT_TRIGRAMS = 0.5
TOO_SHORT, REPETITIVE, OFF_TOPIC = "too short", "repetitive", "off topic"
GUARD_FAILURES = (TOO_SHORT, REPETITIVE, OFF_TOPIC)
# instructions under which the task's English topical words need not appear
NO_TOPIC_CHECK = frozenset({"language:response_language"})

_WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def distinct_trigram_share(tokens: Sequence[str]) -> float:
    """The share of a word sequence's trigrams that are distinct (1.0 for fewer than three words); numbers count
    as one word, so a counting loop ("Step 1: Step 2: Step 3: ...") is a loop."""
    tokens = ["0" if t.isdigit() else t for t in tokens]
    trigrams = list(zip(tokens, tokens[1:], tokens[2:]))
    return len(set(trigrams)) / len(trigrams) if trigrams else 1.0


def on_topic(tokens: Sequence[str], keywords: Sequence[str]) -> bool:
    """Whether a word starts with one of the topical words, less a plural or verb ending ("tide" for "tides")."""
    stems = tuple(k.lower()[: max(4, len(k) - 2)] for k in keywords)
    return any(t.startswith(stems) for t in tokens)


def task_keywords(task_id: str | None) -> tuple[str, ...] | None:
    """The topical words of a generated prompt's base task, or None for an unknown task."""
    from judge_rl.policy.tasks.prompts import BASE_TASKS

    for task in BASE_TASKS:
        if task.task_id == task_id:
            return task.keywords
    return None


def guard_failure(response: str, task_id: str | None = None, instruction_ids: Sequence[str] = ()) -> str | None:
    """Why `response` fails the guard (one of GUARD_FAILURES), or None when it passes (module docstring)."""
    tokens = words(response)
    if len(tokens) < MIN_WORDS:
        return TOO_SHORT
    if distinct_trigram_share(tokens) < MIN_DISTINCT_TRIGRAMS:
        return REPETITIVE
    keywords = task_keywords(task_id)
    if keywords is not None and not NO_TOPIC_CHECK.intersection(instruction_ids) and not on_topic(tokens, keywords):
        return OFF_TOPIC
    return None
