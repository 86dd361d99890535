"""Rewards for a policy: IFEval rules, an LLM judge with a rubric, VerIF's hybrid, and a pairwise judge
against a reference. Pure functions: no HTTP here; the judge's replies come in as text (or as a
`JudgeFailure` when the call itself failed) and the functions below parse and score them.

The rule everywhere: **no silent zeros**. A judge failure (server error, truncated reply, unparseable
reply, criteria missing from the reply) is never a score. Every reward returns a `PolicyReward`:

  score       float, or None exactly when the sample could not be graded
  failure     None, or the reason, one of (`FAILURE_KINDS`):
                "judge server error"                  the call failed (HTTP error, timeout, ...)
                "judge reply truncated"               the judge hit its token limit (finish_reason "length")
                "judge reply unparseable: <detail>"   the reply does not have the required form; <detail> is
                                                      one of `UNPARSEABLE_DETAILS`, or for a pairwise judge
                                                      the prompt's own parser reason (e.g. "verdict line
                                                      does not match template")
                "criteria missing from judge reply"   a rubric reply that skips criteria
              The think-block details: "unclosed <think>" (the judge ran out of tokens while thinking),
              "text before <think>", "several <think> blocks", "nothing after </think>", "empty reply".
  components  dict[str, float] of the reward's fixed component keys (`POLICY_REWARDS[name].component_keys`),
              the same keys on success and failure; those that depend on the judge are NaN on a failure.

`PolicyReward.to_verl_dict()` is verl's per-sample dict: `{"score": float, "judge_failed": 0/1,
"failure_reason": str, **components}`. A failed sample's `score` there is 0.0 *and* `judge_failed` is 1:
the trainer masks it out (no advantage, no loss, not in reward means). Never read `score` without
`judge_failed`.

Scores (exact definitions)

- `rule_score(prompt, response, level="instruction")`: IFEval's checkers alone, strict (as
  `judge_rl.evaluation.ifeval`: the response as is; a blank response follows nothing). rule_fraction =
  followed instructions / instructions; rule_all = 1.0 when every instruction is followed. score =
  rule_fraction (level "instruction") or rule_all (level "prompt"). Never fails: the judge-free upper
  bound. A prompt without rule constraints is a ValueError.
- `rubric_score(rubric, verdicts, clip=(0, 1))`: HealthBench (Arora et al. 2025), as RuscaRL uses it:
  met_points = sum of the points of every met criterion (negative ones included, so a met flaw subtracts),
  positive_points = sum of the positive points; score = clip(met_points / positive_points). `verdicts`
  maps each 0-based rubric index to met (True/False); an index missing => "criteria missing from judge
  reply", an index outside the rubric => "judge reply unparseable: unknown criterion index". A rubric
  without positive points is a ValueError.
- `verif_score(prompt, response, judge_verdict)`: VerIF (Peng et al. 2025, THU-KEG/VerIF
  `constraint_analyzer.evaluate_if_reward_multi`): score = rule_all x judge verdict, where rule_all is 1
  only when every rule checker passes (VerIF reduces its code checks with "0 if any 0 else 1"; no rules:
  1) and the judge verdict is one 0/1 call on all soft constraints at once (VerIF's `llm_score`, which
  asks for `[[1]]`/`[[0]]`). A judge failure is a failure even when the rules pass (VerIF reads an
  unparseable reply as 0; here it is never a score). When a rule fails the product is 0 whatever the
  judge says, so a caller may skip the judge and pass `judge_verdict=None` (then the score is 0.0, and
  `judge_asked` is 0); None with all rules passing is a ValueError.
- `judge_pairwise_score(prompt, response, reference, judgment, judge_prompt="strength")`: the policy's
  answer against a reference through any pairwise judge prompt of the project (`get_prompt`). Per
  order: 1.0 if the judge prefers the policy's answer, 0.0 if it prefers the reference, 0.5 on a
  well-formed tie; with a strength k (1..3) and `use_strength`: 0.5 + k/6 for a win, 0.5 - k/6 for a
  loss. `judgment` maps the position of the policy's answer ("a": shown as Response (a), reference as
  (b); "b": swapped) to the judge's reply; with both orders the score is their mean; any failed order
  fails the sample.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from numbers import Real
from typing import Any, Callable, Literal, Mapping, Sequence

from judge_rl.data.pairs import JudgeItem, PreferencePair
from judge_rl.evaluation.ifeval.checkers import get_checker
from judge_rl.policy.data import Criterion, Message, PolicyPrompt
from judge_rl.prompts import get_prompt
from judge_rl.prompts.base import Judgment
from judge_rl.prompts.think import UNCLOSED_THINK as PROMPT_UNCLOSED_THINK
from judge_rl.registry import Registry
from judge_rl.rewards import VERL_KWARGS
from judge_rl.servers.failures import (  # the failure type and its reasons, shared with the judge client
    CRITERIA_MISSING,
    EMPTY_REPLY,
    FAILURE_KINDS,
    JUDGE_SERVER_ERROR,
    JUDGE_TRUNCATED,
    JUDGE_UNPARSEABLE,
    JudgeFailure,
    failure_kind,
    unparseable,
)

# --------------------------------------------------------------------------------------------------
# Failures
# --------------------------------------------------------------------------------------------------

# Details of JUDGE_UNPARSEABLE ("judge reply unparseable: <detail>") from the parsers of this module.
UNCLOSED_THINK = "unclosed <think>"
TEXT_BEFORE_THINK = "text before <think>"
SEVERAL_THINK = "several <think> blocks"
NOTHING_AFTER_THINK = "nothing after </think>"
NOT_JSON = "not valid JSON"
NOT_A_LIST = "not a JSON list"
NOT_AN_OBJECT = "not a JSON object"
BAD_ENTRY = "bad criterion entry"
UNKNOWN_CRITERION = "unknown criterion index"
DUPLICATE_CRITERION = "duplicate criterion index"
BAD_LINE = "bad line"
NO_VERDICT = "no verdict"
SEVERAL_VERDICTS = "several verdicts"
VERDICT_OUT_OF_RANGE = "verdict out of range"
UNPARSEABLE_DETAILS = (EMPTY_REPLY, UNCLOSED_THINK, TEXT_BEFORE_THINK, SEVERAL_THINK, NOTHING_AFTER_THINK, NOT_JSON,
                       NOT_A_LIST, NOT_AN_OBJECT, BAD_ENTRY, UNKNOWN_CRITERION, DUPLICATE_CRITERION, BAD_LINE,
                       NO_VERDICT, SEVERAL_VERDICTS, VERDICT_OUT_OF_RANGE)  # fmt: skip


RESERVED_KEYS = ("score", "judge_failed", "failure_reason")


@dataclass(frozen=True)
class PolicyReward:
    """A reward for one policy response (see the module docstring)."""

    score: float | None
    failure: str | None
    components: Mapping[str, float]

    def __post_init__(self) -> None:
        if (self.score is None) == (self.failure is None):
            raise ValueError("a PolicyReward has a score or a failure, exactly one of them")
        if self.failure is not None:
            failure_kind(self.failure)
        else:
            s = self.score
            if isinstance(s, bool) or not isinstance(s, Real) or not math.isfinite(float(s)):
                raise ValueError(f"score must be a finite number, got {s!r}")
            object.__setattr__(self, "score", float(s))
        clean = {}
        for key, value in self.components.items():
            if not isinstance(key, str) or key in RESERVED_KEYS:
                raise ValueError(f"component name {key!r} is not allowed (reserved: {', '.join(RESERVED_KEYS)})")
            if isinstance(value, bool) or not isinstance(value, Real):
                raise ValueError(f"component {key!r} must be a number, got {value!r}")
            clean[key] = float(value)
        object.__setattr__(self, "components", clean)

    @property
    def ok(self) -> bool:
        return self.failure is None

    @classmethod
    def failed(cls, failure: str | JudgeFailure, components: Mapping[str, float]) -> "PolicyReward":
        return cls(None, failure.reason if isinstance(failure, JudgeFailure) else failure, components)

    def to_verl_dict(self) -> dict[str, float | int | str]:
        """verl's per-sample reward dict. A failed sample has score 0.0 and judge_failed 1: the trainer
        masks it out; never read score without judge_failed."""
        return {
            "score": 0.0 if self.score is None else self.score,
            "judge_failed": 0 if self.failure is None else 1,
            "failure_reason": self.failure or "",
            **self.components,
        }


NAN = float("nan")

# --------------------------------------------------------------------------------------------------
# Reading judge replies
# --------------------------------------------------------------------------------------------------

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def strip_think(text: str) -> tuple[str, JudgeFailure | None]:
    """The answer part of a judge's reply: `(answer, None)` or `("", failure)`.

    A reply starting with `<think>` (leading whitespace allowed) must close it: the answer is what
    follows `</think>` ("unclosed <think>" otherwise: the judge ran out of tokens while thinking). A
    reply with `</think>` but no `<think>` is read the same way (chat templates that open the thinking
    block in the prompt, e.g. QwQ and DeepSeek-R1 distills). A reply without either tag is the answer.
    Any other `<think>`/`</think>` is "several <think> blocks" or "text before <think>"; an empty answer
    is "nothing after </think>" (or "empty reply" for a blank reply).
    """
    if not isinstance(text, str):
        raise TypeError(f"a judge reply must be a string, got {type(text).__name__}")
    if not text.strip():
        return "", JudgeFailure.unparseable(EMPTY_REPLY)
    body = text.lstrip()
    if body.startswith(THINK_OPEN):
        if THINK_CLOSE not in body:
            return "", JudgeFailure.unparseable(UNCLOSED_THINK)
        answer = body[len(THINK_OPEN) :].split(THINK_CLOSE, 1)[1]
        if THINK_OPEN in body[len(THINK_OPEN) :].split(THINK_CLOSE, 1)[0]:
            return "", JudgeFailure.unparseable(SEVERAL_THINK)
    elif THINK_OPEN in body:
        return "", JudgeFailure.unparseable(TEXT_BEFORE_THINK)
    elif THINK_CLOSE in body:
        answer = body.split(THINK_CLOSE, 1)[1]
    else:
        return body, None
    if THINK_OPEN in answer or THINK_CLOSE in answer:
        return "", JudgeFailure.unparseable(SEVERAL_THINK)
    if not answer.strip():
        return "", JudgeFailure.unparseable(NOTHING_AFTER_THINK)
    return answer, None


_FENCE = re.compile(r"\A```(?:json|JSON|Json)?[ \t]*\n(.*)\n[ \t]*```\Z", re.DOTALL)


def _load_json(answer: str) -> tuple[Any, JudgeFailure | None]:
    """JSON from the whole answer, optionally inside one markdown code fence (```json ... ```); nothing
    else may surround it."""
    text = answer.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text), None
    except ValueError:
        return None, JudgeFailure.unparseable(NOT_JSON)


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --------------------------------------------------------------------------------------------------
# Rubric grading: prompts and strict parsers
# --------------------------------------------------------------------------------------------------

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


def conversation_text(prompt: PolicyPrompt) -> str:
    """The conversation as the grader sees it: the request, or every turn labelled by role."""
    if prompt.messages is None:
        return prompt.prompt
    return "\n\n".join(f"<{m['role']}>\n{m['content']}" for m in prompt.messages)


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


# --------------------------------------------------------------------------------------------------
# Rubric score (HealthBench)
# --------------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------------
# Rules (IFEval checkers)
# --------------------------------------------------------------------------------------------------

RULE_COMPONENTS = ("rule_fraction", "rule_all", "n_instructions", "n_followed")
RuleLevel = Literal["instruction", "prompt"]


def rule_checks(instruction_id_list: Sequence[str], kwargs: Sequence[Mapping[str, Any]], response: str) -> list[bool]:
    """Strict IFEval result per instruction (as `judge_rl.evaluation.ifeval.evaluate_prompt`'s strict
    list: the response as is; a blank response follows nothing)."""
    if not isinstance(response, str):
        raise TypeError(f"the response must be a string, got {type(response).__name__}")
    if len(instruction_id_list) != len(kwargs):
        raise ValueError("instruction_id_list and kwargs must have the same length")
    results = []
    for instruction_id, arguments in zip(instruction_id_list, kwargs):
        checker = get_checker(instruction_id)
        args = checker.arguments(arguments)
        results.append(bool(response.strip()) and bool(checker.fn(response, **args)))
    return results


def _rule_components(results: Sequence[bool]) -> dict[str, float]:
    n = len(results)
    followed = sum(results)
    return {
        "rule_fraction": followed / n if n else 1.0,
        "rule_all": float(all(results)),
        "n_instructions": float(n),
        "n_followed": float(followed),
    }


def _rule_reward(
    ids: Sequence[str], kwargs: Sequence[Mapping[str, Any]], response: str, level: str, where: str
) -> PolicyReward:
    if level not in ("instruction", "prompt"):
        raise ValueError(f"level must be 'instruction' or 'prompt', got {level!r}")
    if not ids:
        raise ValueError(f"{where}has no rule constraints (instruction_id_list is empty)")
    components = _rule_components(rule_checks(ids, kwargs, response))
    return PolicyReward(components["rule_fraction" if level == "instruction" else "rule_all"], None, components)


def rule_score(prompt: PolicyPrompt, response: str, level: RuleLevel = "instruction") -> PolicyReward:
    """IFEval's checkers alone, strict: the judge-free upper bound; never fails (module docstring)."""
    return _rule_reward(prompt.instruction_id_list, prompt.kwargs, response, level, f"prompt {prompt.prompt_id!r} ")


# --------------------------------------------------------------------------------------------------
# VerIF: rules x one judge verdict on the soft constraints
# --------------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------------
# Pairwise judge: the policy's answer against a reference
# --------------------------------------------------------------------------------------------------

PAIRWISE_COMPONENTS = ("score_policy_a", "score_policy_b", "n_orders", "consistent")
POSITIONS = ("a", "b")


def pairwise_judge_item(prompt: PolicyPrompt, response: str, reference: str, policy_position: str) -> JudgeItem:
    """The pair shown to a pairwise judge: the policy's answer at `policy_position`, the reference at the
    other. (The pair's `chosen` slot carries the policy's answer, `chosen_position` is where it is shown;
    no preference is implied.)"""
    if policy_position not in POSITIONS:
        raise ValueError(f"policy_position must be 'a' or 'b', got {policy_position!r}")
    if not isinstance(reference, str) or not reference.strip():
        raise ValueError(f"prompt {prompt.prompt_id!r}: a pairwise judge needs a non-empty reference answer")
    pair = PreferencePair(
        pair_id=prompt.prompt_id,
        source="policy",
        question=conversation_text(prompt),
        chosen=response,
        rejected=reference,
    )
    return JudgeItem(pair, policy_position)  # type: ignore[arg-type]


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


# --------------------------------------------------------------------------------------------------
# Registry and verl adapters
# --------------------------------------------------------------------------------------------------



@dataclass(frozen=True)
class PolicyRewardSpec:
    """A policy reward: its pure scoring function, whether it calls a judge, its fixed component keys,
    and its synchronous verl adapter (`compute_score(data_source, solution_str, ground_truth, extra_info=None,
    **kwargs) -> dict`), None for the rewards that call a judge: theirs is the *async* `compute_score` of
    judge_rl/policy/verl_reward.py, which needs the judge's settings and grades with
    `judge_rl.policy.grading.Grader` (the code the local backend runs).
    """

    name: str
    score: Callable[..., PolicyReward]
    needs_judge: bool
    component_keys: tuple[str, ...]
    compute_score: Callable[..., dict[str, Any]] | None
    description: str


POLICY_REWARDS: Registry[PolicyRewardSpec] = Registry("policy reward")


def plain(value: Any) -> Any:
    """Plain Python from what verl hands over: numpy arrays and scalars (parquet round trips give arrays for
    lists) and OmegaConf containers (nested reward_kwargs arrive as ListConfig / DictConfig)."""
    if type(value).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(value, resolve=True)
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def ground_truth_mapping(ground_truth: Mapping[str, Any] | str | bytes, what: str) -> dict[str, Any]:
    """A row's ground truth (a mapping, or its JSON text as verl's parquet carries it) as a plain dict; `what` names
    what it should hold, for the one-line error."""
    from judge_rl.rewards.base import _as_mapping

    return plain(dict(_as_mapping(ground_truth, what)))


def _ground_truth(ground_truth: Mapping[str, Any] | str) -> dict[str, Any]:
    ground_truth = ground_truth_mapping(ground_truth, "instruction_id_list and kwargs")
    for name in ("instruction_id_list", "kwargs"):
        if name not in ground_truth:
            raise ValueError(f"ground truth has no {name!r}")
    return dict(ground_truth)


def rule_compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Mapping[str, Any] | str,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float | int | str]:
    """verl adapter of `rule_score`: `ground_truth` is a mapping or its JSON text with
    `instruction_id_list` and `kwargs` (e.g. `PolicyPrompt.to_dict()`); kwargs: `level` ("instruction",
    default, or "prompt"). `data_source` and `extra_info` are accepted for verl's signature, unused."""
    options = {k: v for k, v in kwargs.items() if k not in VERL_KWARGS}
    level = options.pop("level", "instruction")
    if options:
        unknown = ", ".join(sorted(options))
        raise TypeError(f"policy reward 'rule' got unknown keyword argument(s) {unknown}; known: level")
    truth = _ground_truth(ground_truth)
    where = f"prompt {truth.get('prompt_id', '?')!r} "
    return _rule_reward(truth["instruction_id_list"], truth["kwargs"], solution_str, level, where).to_verl_dict()


for _spec in (
    PolicyRewardSpec("rule", rule_score, False, RULE_COMPONENTS, rule_compute_score,
                     "IFEval checkers alone, strict; the judge-free upper bound"),
    PolicyRewardSpec("rubric", rubric_score, True, RUBRIC_COMPONENTS, None,
                     "HealthBench rubric: clip(met points / positive points) from an LLM grader"),
    PolicyRewardSpec("verif", verif_score, True, VERIF_COMPONENTS, None,
                     "VerIF: all rules pass x one LLM 0/1 verdict on the soft constraints"),
    PolicyRewardSpec("judge_pairwise", judge_pairwise_score, True, PAIRWISE_COMPONENTS, None,
                     "a pairwise judge prompt of the project, policy answer vs a reference"),
):  # fmt: skip
    POLICY_REWARDS.register(_spec.name)(_spec)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Mapping[str, Any] | str,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float | int | str]:
    """verl's custom reward function for a judge-free policy reward: the reward `kwargs["reward_name"]`, else
    `extra_info["reward_name"]`, else "rule". A reward that calls a judge is refused here: its verl reward is the
    async `compute_score` of judge_rl/policy/verl_reward.py."""
    name = kwargs.pop("reward_name", None)
    if name is None and isinstance(extra_info, Mapping):
        name = extra_info.get("reward_name")
    spec = POLICY_REWARDS.get("rule" if name is None else str(name))
    if spec.compute_score is None:
        raise NotImplementedError(
            f"policy reward {spec.name!r} calls an LLM judge: its verl reward is the async compute_score of "
            "judge_rl/policy/verl_reward.py (the translation in judge_rl/policy/verl.py selects it)"
        )
    return spec.compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)
