"""Judge prompts, by name: each renders an item as chat messages and strictly parses the judge's reply.

`PROMPTS` maps a name to a prompt instance; its first lookup imports every module of this package, which registers
them (adding a prompt is adding a module with `@register_prompt`):

  pairwise (`JudgePrompt`, render a `JudgeItem`):
    "strength"      Think-J: `Therefore, Response (a) is better, and the strength is [[k]].`
    "binary"        Think-J's cot variant: `Therefore, Response (a) is better.`
    "margin"        Think-J's score prompt: two 0-100 scores in one final line
    "judgelrm"      JudgeLRM: `<answer>x, y</answer>`, two 1-10 scores
    "pairwise_tag"  OpenJudge: `<better>A</better>` / `<better>B</better>`
  pointwise (`PointwiseJudgePrompt`, render a `PointwiseItem`):
    "pointwise"     OpenJudge: `<score>k</score>`, k in 0..4
  benchmark authors' prompts for generative judges (judge_rl/prompts/benchmarks.py, no `<think>` block):
    "rewardbench_pairwise" "[[A]]"/"[[B]]";  "rb2_choice" "[[A]]".."[[D]]" (kind "choice");
    "rb2_rating", "rb2_rating_ties" a final 1-10 rating (pointwise)
  without thinking (Think-J Table 3's "w/o CoT" rows): "strength_direct", "binary_direct" (the verdict line alone)
  scalar judges: "scalar" (pointwise): the question and one response as a conversation a Bradley-Terry
    reward model scores (judge_rl/servers/scalar.py); the score is read back as a real number

Every judge_rl output of a generative prompt starts with a `<think>...</think>` block, except the `_direct` ones; a
prompt's `kind` says which item it renders.
"""

from __future__ import annotations

from judge_rl.prompts.base import (
    PROMPTS,
    AnyPrompt,
    ChoiceJudgePrompt,
    JudgePrompt,
    Judgment,
    Message,
    PointwiseJudgePrompt,
    register_prompt,
)


def get_prompt(name: str) -> AnyPrompt:
    """The registered prompt `name`; an unknown name fails with the list of known ones."""
    return PROMPTS.get(name)


__all__ = [
    "PROMPTS",
    "AnyPrompt",
    "ChoiceJudgePrompt",
    "JudgePrompt",
    "Judgment",
    "Message",
    "PointwiseJudgePrompt",
    "get_prompt",
    "register_prompt",
]
