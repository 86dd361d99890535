"""Why a judge call gave no usable answer: `JudgeFailure` and its reasons, shared by the judge client
(judge_rl/servers/client.py), which turns server problems into failures, and the reply parsers of the
policy rewards (judge_rl/policy/rewards/), which add the unparseable details. A failure is never a score.

Reasons (`FAILURE_KINDS`): "judge server error", "judge reply truncated", "judge reply unparseable: <detail>",
"criteria missing from judge reply".
"""

from __future__ import annotations

from dataclasses import dataclass

JUDGE_SERVER_ERROR = "judge server error"
JUDGE_TRUNCATED = "judge reply truncated"
JUDGE_UNPARSEABLE = "judge reply unparseable"
CRITERIA_MISSING = "criteria missing from judge reply"
FAILURE_KINDS = (JUDGE_SERVER_ERROR, JUDGE_TRUNCATED, JUDGE_UNPARSEABLE, CRITERIA_MISSING)

# The unparseable detail of a reply without text (the parsers add their own details)
EMPTY_REPLY = "empty reply"


def unparseable(detail: str) -> str:
    """The failure reason "judge reply unparseable: <detail>"."""
    return f"{JUDGE_UNPARSEABLE}: {detail}"


def failure_kind(reason: str) -> str:
    """The kind of a failure reason (one of `FAILURE_KINDS`); a ValueError for anything else."""
    if reason in (JUDGE_SERVER_ERROR, JUDGE_TRUNCATED, CRITERIA_MISSING):
        return reason
    prefix = f"{JUDGE_UNPARSEABLE}: "
    if isinstance(reason, str) and reason.startswith(prefix) and reason[len(prefix) :].strip():
        return JUDGE_UNPARSEABLE
    raise ValueError(f"unknown failure reason {reason!r}; a reason is one of {', '.join(FAILURE_KINDS)} "
                     "(the unparseable one followed by ': <detail>')")  # fmt: skip


@dataclass(frozen=True)
class JudgeFailure:
    """A judge call that gave no usable answer: `reason` (see `failure_kind`); `detail` is free text for
    logs (an HTTP status, an exception, which criteria were missing), never part of the reason."""

    reason: str
    detail: str = ""

    def __post_init__(self) -> None:
        failure_kind(self.reason)

    @classmethod
    def server_error(cls, detail: str = "") -> "JudgeFailure":
        return cls(JUDGE_SERVER_ERROR, detail)

    @classmethod
    def truncated(cls, detail: str = "") -> "JudgeFailure":
        return cls(JUDGE_TRUNCATED, detail)

    @classmethod
    def unparseable(cls, detail: str, log: str = "") -> "JudgeFailure":
        return cls(unparseable(detail), log)
