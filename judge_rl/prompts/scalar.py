"""The conversation a scalar judge (a Bradley-Terry reward model) scores, and how its score is read back.

A Bradley-Terry judge (Think-J Table 3's "Bradley-Terry" row, OpenJudge's BT model) does not write text: a
sequence classifier with one output reads the question and one response and returns a real number. To be
scored by the same harness and benchmarks as generative judges it is a pointwise judge: `messages` renders
the question (with the pair's reference answer, when it has one, the same information a generative judge is
shown) as the user turn and the response as the assistant turn; the scalar server (judge_rl/servers/scalar.py)
answers with the score as text; `parse` reads it into `Judgment.score`. A pair is right when the chosen
response scores strictly higher (`pairwise_accuracy`), as RewardBench scores classifiers.
"""

from __future__ import annotations

import math
from typing import Any

from judge_rl.prompts.base import Judgment, Message, PointwiseJudgePrompt, register_prompt
from judge_rl.prompts.strength import REFERENCE_TEMPLATE

NOT_A_NUMBER = "score is not a finite number"


def scalar_messages(question: str, response: str, reference: str | None = None) -> list[Message]:
    """The conversation a reward model scores: the question (and reference) as the user, the response as the assistant."""
    user = question if not reference else f"{question}\n\n{REFERENCE_TEMPLATE.format(reference=reference).rstrip()}"
    return [{"role": "user", "content": user}, {"role": "assistant", "content": response}]


@register_prompt("scalar")
class ScalarPrompt(PointwiseJudgePrompt):
    """A reward model's input and output: one response in a conversation, a real-valued score."""

    def messages(self, item: Any) -> list[Message]:
        pair = getattr(item, "pair", None)
        reference = pair.meta.get("reference") if pair is not None else None
        return scalar_messages(item.question, item.response, reference)

    def parse(self, text: str) -> Judgment:
        try:
            score = float(text.strip())
        except ValueError:
            return Judgment.failure(NOT_A_NUMBER)
        if not math.isfinite(score):
            return Judgment.failure(NOT_A_NUMBER)
        return Judgment(None, None, None, score=score)  # type: ignore[arg-type]  (a real, not an integer)

    def verdict(self, score: float) -> str:
        return f"{float(score):.6f}"


class SignRule:
    """How a scalar judge's score is read on a pointwise label scale (`score_accuracy` only): positive is
    the top label, the rest the bottom one. A BT model's scores are only defined up to a shift, so this
    diagnostic means something for centred rewards (`algorithm.center_rewards_coefficient`); the headline
    of a scalar judge is `pairwise_accuracy`."""

    def on_label_scale(self, pred: float, truth) -> int:
        return truth.scale if pred > 0 else 0
