"""What every judge prompt provides: chat messages for a pair, a strict parser of the judge's output
and the exact verdict line gold traces end with.

A prompt and its parser live together because the reward is only as good as the parser: the RL
judges we follow (Think-J, Huang et al., 2025; JudgeLRM, Chen et al., 2025) reward a verdict only
when the output has the required shape, so a lenient parser would quietly pay for malformed
outputs. Parsers therefore never raise on model output; they return a `Judgment` whose `error`
names what was wrong, so failures can be counted by reason during training and evaluation.

Two kinds of prompt share the registry: pairwise prompts (`JudgePrompt`, kind "pairwise") judge a
`JudgeItem` (two responses), pointwise prompts (`PointwiseJudgePrompt`, kind "pointwise") score a
`PointwiseItem` (one response). Both parse into a `Judgment`.

Prompts are registered as instances (`@register_prompt("name")` on the class) in `PROMPTS`;
config files name them by key.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, TypeVar

from judge_rl.registry import Registry, package_modules

# Annotations only: a prompt reads an item's fields (judge_rl.data sits below the prompts and imports none of them).
if TYPE_CHECKING:
    from judge_rl.data.pairs import JudgeItem, PointwiseItem

Message = dict[str, str]


@dataclass(frozen=True)
class Judgment:
    """A parsed judge output.

    winner: "a" or "b" for pairwise prompts; None for pointwise prompts, and for a well-formed tie
        where a prompt allows one (JudgeLRM's equal scores);
    strength: 1..3 for strength prompts, None for prompts without strength;
    error: None when the output was well formed, else a short reason (then every other field is None);
    scores: the scores a score-based pairwise prompt gave (Response (a), Response (b)), else None;
    score: the score a pointwise prompt gave, else None.

    `ok` means the output parsed, nothing more: a well-formed wrong (or tied) verdict is ok.
    """

    winner: str | None
    strength: int | None
    error: str | None
    scores: tuple[float, ...] | None = None
    score: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def failure(cls, reason: str) -> "Judgment":
        return cls(None, None, reason)


class JudgePrompt(ABC):
    """A pairwise judge prompt: renders a `JudgeItem` as chat messages and parses the judge's reply."""

    name: ClassVar[str]
    kind: ClassVar[str] = "pairwise"

    @abstractmethod
    def messages(self, item: JudgeItem) -> list[Message]:
        """The chat turns shown to the judge: a system message, then a user message with both responses."""

    @abstractmethod
    def parse(self, text: str) -> Judgment:
        """Read the judge's output strictly; never raises on malformed text (see `Judgment.error`)."""

    @abstractmethod
    def verdict(self, winner: str, strength: int | None = None) -> str:
        """The exact final line this prompt asks for (prompts without strength ignore `strength`)."""


class PointwiseJudgePrompt(ABC):
    """A pointwise judge prompt: renders a `PointwiseItem` (one response) and parses the score it gets."""

    name: ClassVar[str]
    kind: ClassVar[str] = "pointwise"

    @abstractmethod
    def messages(self, item: PointwiseItem) -> list[Message]:
        """The chat turns shown to the judge: a system message, then a user message with the response."""

    @abstractmethod
    def parse(self, text: str) -> Judgment:
        """Read the judge's output strictly; never raises on malformed text (see `Judgment.error`)."""

    @abstractmethod
    def verdict(self, score: int) -> str:
        """The exact final verdict this prompt asks for, for `score`."""


class ChoiceJudgePrompt(ABC):
    """A k-way choice prompt: shows a question and several answers (a `ChoiceItem`) and parses which
    one the judge names best (`Judgment.winner` is the answer's letter, lower case: "a", "b", ...)."""

    name: ClassVar[str]
    kind: ClassVar[str] = "choice"

    @abstractmethod
    def messages(self, item) -> list[Message]:
        """The chat turns shown to the judge."""

    @abstractmethod
    def parse(self, text: str) -> Judgment:
        """Read the judge's output; never raises on malformed text (see `Judgment.error`)."""


AnyPrompt = JudgePrompt | PointwiseJudgePrompt | ChoiceJudgePrompt

# every module of judge_rl/prompts but this one, imported on the first lookup: adding a prompt is adding its module
# (with `@register_prompt`), no list to edit
PROMPTS: Registry[AnyPrompt] = Registry(
    "prompt", modules=package_modules("judge_rl.prompts", [str(Path(__file__).parent)], skip=("base",)))

P = TypeVar("P", bound=type[JudgePrompt] | type[PointwiseJudgePrompt] | type[ChoiceJudgePrompt])


def register_prompt(name: str) -> Callable[[P], P]:
    """Class decorator: set the class's `name` and register one instance of it under `name`."""

    def decorator(cls: P) -> P:
        cls.name = name
        PROMPTS.register(name)(cls())
        return cls

    return decorator
