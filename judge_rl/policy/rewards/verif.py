"""policy_reward=verif: VerIF's hybrid, all rules pass x one LLM 0/1 verdict on the soft constraints (the package
docstring has the exact definition)."""

from __future__ import annotations

import re
from typing import Sequence

from judge_rl.policy.tasks.prompts import Message, PolicyPrompt
from judge_rl.policy.rewards import POLICY_REWARDS
from judge_rl.policy.rewards.base import (
    NAN,
    NO_VERDICT,
    SEVERAL_VERDICTS,
    VERDICT_OUT_OF_RANGE,
    Graded,
    JudgeFailure,
    PolicyReward,
    PolicyRewardSpec,
    conversation_text,
    strip_think,
)
from judge_rl.policy.rewards.rule import _rule_components, rule_checks

VERIF_COMPONENTS = ("rule_fraction", "rule_all", "n_instructions", "n_followed", "n_soft_constraints",
                    "judge_verdict", "judge_asked")  # fmt: skip
VERIF_SYSTEM = "You are a careful grader. You check whether a response satisfies the constraints of a request."
VERIF_USER = (
    "[Request]\n{conversation}\n\n[Response]\n{response}\n\n[Constraints]\n{constraints}\n\n"
    "Does the response satisfy every constraint listed above? Start your answer with [[1]] if it satisfies all "
    "of them and [[0]] if it misses any. Write the verdict exactly once."
)
NO_SOFT_CONSTRAINTS = "The constraints stated in the request (length, style, format, content)."
_VERDICT = re.compile(r"\[\[\s*(-?\d+)\s*\]\]")


def verif_judge_messages(prompt: PolicyPrompt, response: str) -> list[Message]:
    """VerIF's one judge call on the soft constraints (all at once); a prompt without soft constraints
    asks about the request's constraints in general, as VerIF's `llm_score` does with an empty list."""
    constraints = "\n".join(f"- {c}" for c in prompt.soft_constraints) or NO_SOFT_CONSTRAINTS
    user = VERIF_USER.format(conversation=conversation_text(prompt), response=response, constraints=constraints)
    return [{"role": "system", "content": VERIF_SYSTEM}, {"role": "user", "content": user}]


def parse_verif_reply(reply: str | JudgeFailure) -> bool | JudgeFailure:
    """The judge's 0/1 verdict: after `strip_think`, exactly one `[[k]]` in the answer (other text
    allowed), k 0 or 1. None: "no verdict"; several: "several verdicts"; another k: "verdict out of
    range". (VerIF takes the first `[[k]]` and reads anything else as 0.)"""
    if isinstance(reply, JudgeFailure):
        return reply
    answer, failure = strip_think(reply)
    if failure is not None:
        return failure
    found = _VERDICT.findall(answer)
    if not found:
        return JudgeFailure.unparseable(NO_VERDICT)
    if len(found) > 1:
        return JudgeFailure.unparseable(SEVERAL_VERDICTS)
    if found[0] not in ("0", "1"):
        return JudgeFailure.unparseable(VERDICT_OUT_OF_RANGE, f"[[{found[0]}]]")
    return found[0] == "1"


def verif_score(prompt: PolicyPrompt, response: str, judge_verdict: bool | str | JudgeFailure | None) -> PolicyReward:
    """VerIF's hybrid reward: rule_all x the judge's 0/1 verdict (module docstring). `judge_verdict`: the
    parsed verdict, the judge's reply text (parsed with `parse_verif_reply`), a `JudgeFailure`, or None
    when the judge was not asked because a rule already failed."""
    results = rule_checks(prompt.instruction_id_list, prompt.kwargs, response)
    components = {**_rule_components(results), "n_soft_constraints": float(len(prompt.soft_constraints))}
    if isinstance(judge_verdict, str):
        judge_verdict = parse_verif_reply(judge_verdict)
    if judge_verdict is None:
        if all(results):
            raise ValueError(
                f"prompt {prompt.prompt_id!r}: every rule passed, so the judge's verdict is needed (None is only "
                "for a response a rule already failed)"
            )
        return PolicyReward(0.0, None, {**components, "judge_verdict": NAN, "judge_asked": 0.0})
    if isinstance(judge_verdict, JudgeFailure):
        return PolicyReward.failed(judge_verdict, {**components, "judge_verdict": NAN, "judge_asked": 1.0})
    if not isinstance(judge_verdict, bool):
        raise TypeError(f"judge_verdict must be a bool, a reply string, a JudgeFailure or None, got {judge_verdict!r}")
    score = components["rule_all"] * float(judge_verdict)
    return PolicyReward(score, None, {**components, "judge_verdict": float(judge_verdict), "judge_asked": 1.0})


async def grade(grader, prompt: PolicyPrompt, response: str, checks: Sequence[bool]) -> Graded:
    if not all(checks):  # a rule failed: the product is 0 whatever the judge says
        return Graded.of(verif_score(prompt, response, None), checks)
    reply = await grader.ask(verif_judge_messages(prompt, response))
    verdict = parse_verif_reply(reply.result)
    grader.record(reply, verdict)
    return Graded.of(verif_score(prompt, response, verdict), checks, calls=1, replies=grader.texts([reply]))


POLICY_REWARDS.register("verif")(PolicyRewardSpec(
    "verif", verif_score, True, VERIF_COMPONENTS, grade, None, None,
    "VerIF: all rules pass x one LLM 0/1 verdict on the soft constraints"))  # fmt: skip
