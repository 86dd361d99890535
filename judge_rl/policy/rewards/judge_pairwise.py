"""policy_reward=judge_pairwise: the policy's answer against a reference through any pairwise judge prompt of the
project (the package docstring has the exact definition)."""

from __future__ import annotations

import asyncio
from typing import Mapping, Sequence

from judge_rl.data.pairs import JudgeItem, Position, PreferencePair
from judge_rl.policy.tasks.prompts import Message, PolicyPrompt
from judge_rl.policy.rewards import POLICY_REWARDS
from judge_rl.policy.rewards.base import (
    NAN,
    Graded,
    JudgeFailure,
    PolicyReward,
    PolicyRewardSpec,
    UNCLOSED_THINK,
    conversation_text,
    unparseable,
)
from judge_rl.prompts import get_prompt
from judge_rl.prompts.base import Judgment
from judge_rl.prompts.think import UNCLOSED_THINK as PROMPT_UNCLOSED_THINK

PAIRWISE_COMPONENTS = ("score_policy_a", "score_policy_b", "n_orders", "consistent")
POSITIONS = ("a", "b")


def pairwise_judge_item(prompt: PolicyPrompt, response: str, reference: str, policy_position: str) -> JudgeItem:
    """The pair shown to a pairwise judge: the policy's answer at `policy_position`, the reference at the
    other. (The pair's `chosen` slot carries the policy's answer, `chosen_position` is where it is shown;
    no preference is implied.)"""
    position = as_position(policy_position)
    if not isinstance(reference, str) or not reference.strip():
        raise ValueError(f"prompt {prompt.prompt_id!r}: a pairwise judge needs a non-empty reference answer")
    pair = PreferencePair(
        pair_id=prompt.prompt_id,
        source="policy",
        question=conversation_text(prompt),
        chosen=response,
        rejected=reference,
    )
    return JudgeItem(pair, position)


def as_position(value: str) -> Position:
    """`value` as a JudgeItem's position, "a" or "b"; anything else is a ValueError."""
    if value == "a":
        return "a"
    if value == "b":
        return "b"
    raise ValueError(f"policy_position must be 'a' or 'b', got {value!r}")


def _pairwise_prompt(name: str):
    judge = get_prompt(name)
    if getattr(judge, "kind", None) != "pairwise":
        raise ValueError(f"judge prompt {name!r} is not a pairwise prompt (kind {getattr(judge, 'kind', None)!r})")
    return judge


def pairwise_judge_messages(
    prompt: PolicyPrompt, response: str, reference: str, policy_position: str, judge_prompt: str = "strength"
) -> list[Message]:
    """The judge's chat messages for one order, rendered by the project's pairwise prompt `judge_prompt`."""
    return _pairwise_prompt(judge_prompt).messages(pairwise_judge_item(prompt, response, reference, policy_position))


def _order_score(judgment: Judgment, policy_position: str, use_strength: bool) -> float:
    if judgment.winner is None:
        return 0.5
    won = judgment.winner == policy_position
    if use_strength and judgment.strength is not None:
        return 0.5 + judgment.strength / 6 if won else 0.5 - judgment.strength / 6
    return 1.0 if won else 0.0


def judge_pairwise_score(
    prompt: PolicyPrompt,
    response: str,
    reference: str | None,
    judgment: Mapping[str, str | JudgeFailure],
    judge_prompt: str = "strength",
    use_strength: bool = True,
) -> PolicyReward:
    """The policy's answer against `reference` by a pairwise judge (module docstring). `judgment` maps
    the policy's position ("a" and/or "b") to the judge's reply for that order, or a `JudgeFailure`."""
    judge = _pairwise_prompt(judge_prompt)
    if reference is None or not isinstance(reference, str) or not reference.strip():
        raise ValueError(f"prompt {prompt.prompt_id!r}: a pairwise judge needs a non-empty reference answer")
    if not isinstance(judgment, Mapping) or not judgment or set(judgment) - set(POSITIONS):
        raise ValueError(f"judgment must map 'a' and/or 'b' (the policy's position) to a reply, got {judgment!r}")
    n_orders = float(len(judgment))
    failed = {"score_policy_a": NAN, "score_policy_b": NAN, "n_orders": n_orders, "consistent": NAN}
    scores: dict[str, float] = {}
    wins: dict[str, float] = {}
    for position in POSITIONS:
        if position not in judgment:
            continue
        reply = judgment[position]
        if isinstance(reply, JudgeFailure):
            return PolicyReward.failed(reply, failed)
        if not isinstance(reply, str):
            raise TypeError(f"the judge reply for order {position!r} must be a string or a JudgeFailure")
        parsed = judge.parse(reply)
        if not parsed.ok:
            detail = UNCLOSED_THINK if parsed.error == PROMPT_UNCLOSED_THINK else str(parsed.error)
            return PolicyReward.failed(unparseable(detail), failed)
        scores[position] = _order_score(parsed, position, use_strength)
        wins[position] = 0.5 if parsed.winner is None else float(parsed.winner == position)
    consistent = NAN
    if len(wins) == 2 and 0.5 not in wins.values():
        consistent = float(wins["a"] == wins["b"])
    components = {
        "score_policy_a": scores.get("a", NAN),
        "score_policy_b": scores.get("b", NAN),
        "n_orders": n_orders,
        "consistent": consistent,
    }
    return PolicyReward(sum(scores.values()) / len(scores), None, components)


async def grade(grader, prompt: PolicyPrompt, response: str, checks: Sequence[bool]) -> Graded:
    from judge_rl.policy.grading import true_checks

    cfg = grader.cfg
    positions = POSITIONS if cfg.both_orders else ("a",)
    messages = [pairwise_judge_messages(prompt, response, prompt.reference, p, cfg.judge_prompt) for p in positions]
    replies = await asyncio.gather(*(grader.ask(m) for m in messages))
    judgment = {p: r.result for p, r in zip(positions, replies)}
    for p, reply in zip(positions, replies):  # each order's own parse, for the per-call telemetry
        one = judge_pairwise_score(prompt, response, prompt.reference, {p: reply.result}, cfg.judge_prompt,
                                   cfg.use_strength)  # fmt: skip
        grader.record(reply, None if one.ok else JudgeFailure(one.failure))
    reward = judge_pairwise_score(prompt, response, prompt.reference, judgment, cfg.judge_prompt, cfg.use_strength)
    opponent = true_checks(prompt, prompt.reference) if checks else []
    return Graded.of(reward, checks, calls=len(positions), replies=grader.texts(replies),
                     opponent_rule_score=sum(opponent) / len(opponent) if opponent else None)  # fmt: skip


def check(cfg) -> None:
    """policy_reward.judge_prompt names a pairwise judge prompt."""
    if getattr(get_prompt(cfg.judge_prompt), "kind", None) != "pairwise":
        raise ValueError(f"policy_reward.judge_prompt={cfg.judge_prompt!r} is not a pairwise judge prompt")


POLICY_REWARDS.register("judge_pairwise")(PolicyRewardSpec(
    "judge_pairwise", judge_pairwise_score, True, PAIRWISE_COMPONENTS, grade, ("reference", "a reference answer"), None,
    "a pairwise judge prompt of the project, policy answer vs a reference", check))  # fmt: skip
