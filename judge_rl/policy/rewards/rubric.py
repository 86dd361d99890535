"""policy_reward=rubric: HealthBench's rubric grading, clip(met points / positive points) from an LLM grader, one
call per criterion or all criteria in one call (the package docstring has the exact definition)."""

from __future__ import annotations

import asyncio
import json
import re
from numbers import Real
from typing import Literal, Mapping, Sequence

from judge_rl.policy.tasks.prompts import Criterion, Message, PolicyPrompt
from judge_rl.policy.rewards import POLICY_REWARDS
from judge_rl.policy.rewards.base import (
    BAD_ENTRY,
    BAD_LINE,
    CRITERIA_MISSING,
    DUPLICATE_CRITERION,
    NAN,
    NO_VERDICT,
    NOT_A_LIST,
    NOT_AN_OBJECT,
    SEVERAL_VERDICTS,
    UNKNOWN_CRITERION,
    Graded,
    JudgeFailure,
    PolicyReward,
    PolicyRewardSpec,
    _is_index,
    _load_json,
    conversation_text,
    strip_think,
    unparseable,
)

INSTRUCTION_TAG = "instruction_id:"

RubricFormat = Literal["json", "lines"]

RUBRIC_SYSTEM = (
    "You are a careful grader. You check one response against a numbered list of criteria and say, for "
    "each criterion, whether the response meets it."
)
RUBRIC_USER = (
    "[Conversation]\n{conversation}\n\n[Response to grade]\n{response}\n\n[Criteria]\n{criteria}\n\n{instruction}"
)
RUBRIC_RULES = (
    "Decide for each criterion whether the response meets it. A criterion that describes a flaw is met when "
    "the response has that flaw. Judge every criterion on its own: met or not met, no partial credit."
)
JSON_INSTRUCTION = (
    'Reply with a JSON list holding exactly one object per criterion, {{"criterion_index": <number>, "met": '
    "true or false}}, and nothing else. For example:\n{example}"
)
LINES_INSTRUCTION = (
    "Reply with exactly one line per criterion, `<number>: yes` or `<number>: no`, and nothing else. For "
    "example:\n{example}"
)


def _check_format(fmt: str) -> None:
    if fmt not in ("json", "lines"):
        raise ValueError(f"rubric reply format must be 'json' or 'lines', got {fmt!r}")


def rubric_grading_messages(
    prompt: PolicyPrompt, response: str, rubric: Sequence[Criterion] | None = None, fmt: RubricFormat = "json"
) -> list[Message]:
    """One grader call for the whole rubric (default: the prompt's). Criteria are numbered 1..n in the
    prompt (the judge's `criterion_index`); their points are not shown, so they cannot sway the grader."""
    _check_format(fmt)
    rubric = tuple(prompt.rubric if rubric is None else rubric)
    if not rubric:
        raise ValueError(f"prompt {prompt.prompt_id!r}: no rubric to grade")
    criteria = "\n".join(f"{i}. {c.criterion}" for i, c in enumerate(rubric, 1))
    shown = range(1, min(len(rubric), 2) + 1)
    if fmt == "json":
        example = json.dumps([{"criterion_index": i, "met": i == 1} for i in shown])
        instruction = JSON_INSTRUCTION.format(example=example)
    else:
        instruction = LINES_INSTRUCTION.format(example="\n".join(f"{i}: {'yes' if i == 1 else 'no'}" for i in shown))
    user = RUBRIC_USER.format(
        conversation=conversation_text(prompt), response=response, criteria=criteria,
        instruction=f"{RUBRIC_RULES}\n{instruction}",
    )  # fmt: skip
    return [{"role": "system", "content": RUBRIC_SYSTEM}, {"role": "user", "content": user}]


def _complete(verdicts: dict[int, bool], n_criteria: int) -> dict[int, bool] | JudgeFailure:
    missing = [i + 1 for i in range(n_criteria) if i not in verdicts]
    if missing:
        return JudgeFailure(CRITERIA_MISSING, f"criteria {missing} (1-based) not graded")
    return verdicts


def parse_rubric_reply(
    reply: str | JudgeFailure, n_criteria: int, fmt: RubricFormat = "json"
) -> dict[int, bool] | JudgeFailure:
    """The verdicts of a one-call rubric reply, keyed by 0-based rubric index, or the failure.

    After `strip_think`, the answer must be (fmt "json") one JSON list, optionally inside one markdown
    code fence, of objects with exactly the keys `criterion_index` (an integer 1..n, as numbered in the
    prompt) and `met` (true/false), plus an optional string `explanation`; or (fmt "lines") non-blank
    lines each `<number>: yes` or `<number>: no` (case-insensitive). Every criterion exactly once:
    an index outside 1..n is "unknown criterion index", a repeated one "duplicate criterion index", a
    missing one "criteria missing from judge reply". A `JudgeFailure` passes through.
    """
    _check_format(fmt)
    if isinstance(reply, JudgeFailure):
        return reply
    if not _is_index(n_criteria) or n_criteria < 1:
        raise ValueError(f"n_criteria must be a positive integer, got {n_criteria!r}")
    answer, failure = strip_think(reply)
    if failure is not None:
        return failure
    entries: list[tuple[int, bool]] = []
    if fmt == "json":
        value, failure = _load_json(answer)
        if failure is not None:
            return failure
        if not isinstance(value, list):
            return JudgeFailure.unparseable(NOT_A_LIST)
        for entry in value:
            if (
                not isinstance(entry, dict)
                or not {"criterion_index", "met"} <= set(entry) <= {"criterion_index", "met", "explanation"}
                or not _is_index(entry["criterion_index"])
                or not isinstance(entry["met"], bool)
                or not isinstance(entry.get("explanation", ""), str)
            ):
                return JudgeFailure.unparseable(BAD_ENTRY, repr(entry)[:200])
            entries.append((entry["criterion_index"], entry["met"]))
    else:
        for line in answer.strip().splitlines():
            if not line.strip():
                continue
            match = re.fullmatch(r"\s*(\d+)\s*:\s*(yes|no)\s*", line, flags=re.IGNORECASE)
            if match is None:
                return JudgeFailure.unparseable(BAD_LINE, line[:200])
            entries.append((int(match.group(1)), match.group(2).lower() == "yes"))
    verdicts: dict[int, bool] = {}
    for index, met in entries:
        if not 1 <= index <= n_criteria:
            return JudgeFailure.unparseable(UNKNOWN_CRITERION, f"criterion_index {index} of {n_criteria}")
        if index - 1 in verdicts:
            return JudgeFailure.unparseable(DUPLICATE_CRITERION, f"criterion_index {index}")
        verdicts[index - 1] = met
    return _complete(verdicts, n_criteria)


CRITERION_SYSTEM = "You are a careful grader. You check whether one response meets one criterion."
CRITERION_USER = (
    "[Conversation]\n{conversation}\n\n[Response to grade]\n{response}\n\n[Criterion]\n{criterion}\n\n"
    "Does the response meet the criterion? A criterion that describes a flaw is met when the response has that "
    "flaw. Met or not met, no partial credit.\n"
    'Reply with one JSON object and nothing else: {{"explanation": "<one or two sentences>", "criteria_met": '
    "true or false}}"
)


# The yes/no form is short and puts the question last, with its own system turn: the 135M embedded judge
# answers it with a yes or a no on 20 of 28 calls, against 13 of 28 for the long form above (measured on its
# own policy's answers to generated prompts).
CRITERION_YESNO_SYSTEM = "You answer questions about a text with Yes or No."
CRITERION_YESNO_USER = (
    "Request:\n{conversation}\n\nText written for the request:\n{response}\n\n"
    "Question: Does the text meet this requirement? {criterion}\nAnswer Yes or No."
)
CriterionFormat = Literal["json", "yesno"]


def criterion_grading_messages(
    prompt: PolicyPrompt, response: str, criterion: Criterion, fmt: CriterionFormat = "json"
) -> list[Message]:
    """One grader call per criterion (HealthBench's grading: one call per rubric item). `fmt` "json" asks
    for {"explanation", "criteria_met"} (`parse_criterion_reply`); "yesno" for one word, Yes or No
    (`parse_yesno_reply`): the form a small untrained judge can write."""
    if fmt not in ("json", "yesno"):
        raise ValueError(f"criterion reply format must be 'json' or 'yesno', got {fmt!r}")
    template, system = (CRITERION_USER, CRITERION_SYSTEM) if fmt == "json" else (CRITERION_YESNO_USER, CRITERION_YESNO_SYSTEM)
    user = template.format(conversation=conversation_text(prompt), response=response, criterion=criterion.criterion)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_yesno_reply(reply: str | JudgeFailure) -> bool | JudgeFailure:
    """Met or not from a yes/no reply: after `strip_think`, the words "yes" / "no" (whole words, any case)
    in the answer must all be the same one. Neither: "no verdict"; both: "several verdicts" (a reply that
    copies "no partial credit" from somewhere and says "yes" is not read as either)."""
    if isinstance(reply, JudgeFailure):
        return reply
    answer, failure = strip_think(reply)
    if failure is not None:
        return failure
    words = {w.lower() for w in _YES_NO.findall(answer)}
    if not words:
        return JudgeFailure.unparseable(NO_VERDICT, answer[:200])
    if len(words) > 1:
        return JudgeFailure.unparseable(SEVERAL_VERDICTS, answer[:200])
    return words == {"yes"}


def parse_criterion(reply: str | JudgeFailure, fmt: CriterionFormat = "json") -> bool | JudgeFailure:
    """`parse_criterion_reply` (fmt "json") or `parse_yesno_reply` (fmt "yesno")."""
    if fmt not in ("json", "yesno"):
        raise ValueError(f"criterion reply format must be 'json' or 'yesno', got {fmt!r}")
    return parse_criterion_reply(reply) if fmt == "json" else parse_yesno_reply(reply)


def parse_criterion_reply(reply: str | JudgeFailure) -> bool | JudgeFailure:
    """Met or not from a one-criterion reply: after `strip_think`, one JSON object (optionally fenced)
    with the key `criteria_met` (true/false) and optionally `explanation` (a string), nothing else."""
    if isinstance(reply, JudgeFailure):
        return reply
    answer, failure = strip_think(reply)
    if failure is not None:
        return failure
    value, failure = _load_json(answer)
    if failure is not None:
        return failure
    if not isinstance(value, dict):
        return JudgeFailure.unparseable(NOT_AN_OBJECT)
    if (
        not {"criteria_met"} <= set(value) <= {"criteria_met", "explanation"}
        or not isinstance(value["criteria_met"], bool)
        or not isinstance(value.get("explanation", ""), str)
    ):
        return JudgeFailure.unparseable(BAD_ENTRY, repr(value)[:200])
    return value["criteria_met"]


def collect_criterion_verdicts(results: Sequence[bool | JudgeFailure]) -> dict[int, bool] | JudgeFailure:
    """The verdicts of one call per criterion (`results[i]` for rubric item i, as `parse_criterion_reply`
    returns them): the first failure if any call failed, else {index: met}."""
    for result in results:
        if isinstance(result, JudgeFailure):
            return result
    verdicts = {}
    for i, result in enumerate(results):
        if not isinstance(result, bool):
            raise TypeError(f"criterion result {i} must be a bool or a JudgeFailure, got {result!r}")
        verdicts[i] = result
    return verdicts



RUBRIC_COMPONENTS = ("met_points", "positive_points", "n_criteria", "n_met", "unclipped_score")


def _check_clip(clip: tuple[float, float] | None) -> None:
    if clip is None:
        return
    if not isinstance(clip, (tuple, list)) or len(clip) != 2 or not all(isinstance(c, Real) for c in clip):
        raise ValueError(f"clip must be (low, high) or None, got {clip!r}")
    if not clip[0] < clip[1]:
        raise ValueError(f"clip must have low < high, got {clip!r}")


def rubric_score(
    rubric: Sequence[Criterion],
    verdicts: Mapping[int, bool] | JudgeFailure,
    clip: tuple[float, float] | None = (0.0, 1.0),
) -> PolicyReward:
    """HealthBench's rubric score: clip(met points / positive points). See the module docstring."""
    rubric = tuple(rubric)
    if not all(isinstance(c, Criterion) for c in rubric):
        raise TypeError("rubric must be a sequence of Criterion")
    _check_clip(clip)
    positive = sum(c.points for c in rubric if c.points > 0)
    if positive <= 0:
        raise ValueError("a rubric needs at least one criterion with positive points")
    n = float(len(rubric))

    def components(met_points: float, n_met: float, unclipped: float) -> dict[str, float]:
        values = (met_points, positive, n, n_met, unclipped)
        return dict(zip(RUBRIC_COMPONENTS, values))

    failed = components(NAN, NAN, NAN)
    if isinstance(verdicts, JudgeFailure):
        return PolicyReward.failed(verdicts, failed)
    if not isinstance(verdicts, Mapping):
        raise TypeError(f"verdicts must be a mapping of rubric index to bool, or a JudgeFailure, got {verdicts!r}")
    for index, met in verdicts.items():
        if not _is_index(index) or not isinstance(met, bool):
            raise TypeError(f"verdicts map integer rubric indices to bools, got {index!r}: {met!r}")
    if any(not 0 <= index < len(rubric) for index in verdicts):
        return PolicyReward.failed(unparseable(UNKNOWN_CRITERION), failed)
    if len(verdicts) < len(rubric):
        return PolicyReward.failed(CRITERIA_MISSING, failed)
    met_points = sum(c.points for i, c in enumerate(rubric) if verdicts[i])
    raw = met_points / positive
    score = raw if clip is None else min(max(raw, float(clip[0])), float(clip[1]))
    n_met = sum(1 for i in range(len(rubric)) if verdicts[i])
    return PolicyReward(score, None, components(met_points, float(n_met), raw))


def rubric_reward(
    rubric: Sequence[Criterion],
    reply: str | JudgeFailure,
    fmt: RubricFormat = "json",
    clip: tuple[float, float] | None = (0.0, 1.0),
) -> PolicyReward:
    """`rubric_score` of a one-call grader reply (`parse_rubric_reply`)."""
    rubric = tuple(rubric)
    if not rubric:
        raise ValueError("a rubric needs at least one criterion with positive points")
    return rubric_score(rubric, parse_rubric_reply(reply, len(rubric), fmt), clip)


def _instruction_of(criterion) -> str | None:
    ids = [t[len(INSTRUCTION_TAG) :] for t in criterion.tags if t.startswith(INSTRUCTION_TAG)]
    return ids[0] if len(ids) == 1 else None


async def grade(grader, prompt: PolicyPrompt, response: str, checks: Sequence[bool]) -> Graded:
    """The rubric graded; for each criterion tied to one IFEval instruction (tag `instruction_id:<id>`), the
    judge's verdict beside the checker's (the bias metrics)."""
    rubric, cfg = prompt.rubric, grader.cfg
    if not rubric:
        raise ValueError(f"prompt {prompt.prompt_id!r}: policy_reward=rubric needs a rubric")
    if cfg.batch_criteria:
        reply = await grader.ask(rubric_grading_messages(prompt, response, rubric, cfg.batch_format))
        verdicts = parse_rubric_reply(reply.result, len(rubric), cfg.batch_format)
        grader.record(reply, verdicts)
        per_criterion = list(verdicts.items()) if isinstance(verdicts, dict) else []
        replies = [reply]
    else:
        fmt = cfg.criterion_format
        replies = await asyncio.gather(*(grader.ask(criterion_grading_messages(prompt, response, c, fmt)) for c in rubric))
        results = [parse_criterion(r.result, fmt) for r in replies]
        for reply, result in zip(replies, results):
            grader.record(reply, result)
        verdicts = collect_criterion_verdicts(results)
        per_criterion = [(i, r) for i, r in enumerate(results) if isinstance(r, bool)]
    followed = dict(zip(prompt.instruction_id_list, checks))
    pairs = []
    for index, met in per_criterion:
        instruction = _instruction_of(rubric[index])
        if instruction is not None and instruction in followed and prompt.instruction_id_list.count(instruction) == 1:
            pairs.append((met, followed[instruction]))
    return Graded.of(rubric_score(rubric, verdicts, grader.clip), checks, criterion_checks=pairs, calls=len(replies),
                     replies=grader.texts(replies))  # fmt: skip


POLICY_REWARDS.register("rubric")(PolicyRewardSpec(
    "rubric", rubric_score, True, RUBRIC_COMPONENTS, grade, ("rubric", "a rubric"), None,
    "HealthBench rubric: clip(met points / positive points) from an LLM grader"))  # fmt: skip
