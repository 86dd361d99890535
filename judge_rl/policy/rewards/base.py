"""What every policy reward shares: the `PolicyReward` it returns (a score, or a failure: never a silent zero), the
failure details its parsers name, reading a judge's reply (`strip_think`, JSON), the `Graded` record of one sample,
the `PolicyRewardSpec` a reward registers, and reading verl's ground truth (`plain`, `ground_truth_mapping`)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, Awaitable, Callable, Mapping, Sequence

from judge_rl.policy.tasks.prompts import PolicyPrompt
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

__all__ = ["CRITERIA_MISSING", "FAILURE_KINDS", "JUDGE_SERVER_ERROR", "JUDGE_TRUNCATED", "JUDGE_UNPARSEABLE", "unparseable"]

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

    @property
    def graded_score(self) -> float:
        """The score of a graded reward (`ok`); a failed one has none, and asking it for one is a ValueError."""
        if self.score is None:
            raise ValueError(f"a failed reward ({self.failure}) has no score")
        return self.score

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


def conversation_text(prompt: PolicyPrompt) -> str:
    """The conversation as the grader sees it: the request, or every turn labelled by role."""
    if prompt.messages is None:
        return prompt.prompt
    return "\n\n".join(f"<{m['role']}>\n{m['content']}" for m in prompt.messages)


@dataclass
class Graded:
    """One graded sample: its reward, and what the bias metrics compare it with."""

    reward: PolicyReward
    rule_score: float | None = None  # fraction of the prompt's IFEval instructions followed (None: no checkers)
    rule_all: float | None = None  # 1.0 when all were followed
    # (judge says met, checker says followed) per rubric criterion tied to one instruction the judge graded
    criterion_checks: list[tuple[bool, bool]] = field(default_factory=list)
    calls: int = 0
    replies: list[str] = field(default_factory=list)  # each call's reply text, or "<failed: reason; detail>"
    # a pairwise judge: the rule score of the answer the sample was compared with (None: no checkers)
    opponent_rule_score: float | None = None

    @classmethod
    def of(cls, reward: PolicyReward, checks: Sequence[bool], **kwargs: Any) -> "Graded":
        """`reward` with the rule scores of `checks` (the prompt's checker results)."""
        return cls(reward, sum(checks) / len(checks) if checks else None, float(all(checks)) if checks else None, **kwargs)


@dataclass(frozen=True)
class PolicyRewardSpec:
    """A policy reward, all that the job, the grader and the verl translation read about it:

      name            its `policy_reward.name`
      score           its pure scoring function
      needs_judge     whether it calls a judge (the job serves or reaches one; verl's reward is then the async
                      `compute_score` of judge_rl/policy/verl/reward.py with judge_rl's reward manager)
      component_keys  its fixed component keys (the same on success and failure)
      grade           `async grade(grader, prompt, response, checks) -> Graded`: one sample, asking the judge through
                      `grader` (judge_rl.policy.grading.Grader: `ask`, `record`, `texts`, `cfg`, `clip`); `checks` are
                      the prompt's IFEval checker results on the response (empty without checkers)
      requires        (PolicyPrompt field, what it is) every training prompt must have, or None
      compute_score   its synchronous verl adapter (`compute_score(data_source, solution_str, ground_truth,
                      extra_info=None, **kwargs) -> dict`), None for a reward that calls a judge
      description     one line for listings
      check           `check(policy_reward_config)`: the reward's own config checks (a one-line ValueError), or None
    """

    name: str
    score: Callable[..., PolicyReward]
    needs_judge: bool
    component_keys: tuple[str, ...]
    grade: Callable[..., Awaitable["Graded"]]
    requires: tuple[str, str] | None
    compute_score: Callable[..., dict[str, Any]] | None
    description: str
    check: Callable[[Any], None] | None = None


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
