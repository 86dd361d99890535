"""Inference engines for evaluating a judge: one interface over a local HF model and an
OpenAI-compatible HTTP endpoint.

    engine.complete(batch_of_messages, max_new_tokens=...) -> list[Completion]

Results come back in input order. A request that fails (connection refused, timeout, HTTP error, a
malformed response) yields `Completion(text=None, error=..., finished=False)`; it never raises for a
single bad request and never stands in an empty string for a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from judge_rl.registry import Registry


@dataclass(frozen=True)
class Completion:
    text: str | None  # None when the request failed
    error: str | None  # why it failed; None on success
    finished: bool  # False when max_new_tokens cut it off (or it failed)

    @property
    def ok(self) -> bool:
        return self.text is not None and self.error is None

    @classmethod
    def failure(cls, error: str) -> "Completion":
        return cls(text=None, error=error, finished=False)


class InferenceEngine(Protocol):
    def complete(self, batch_of_messages: list[list[dict]], *, max_new_tokens: int) -> list[Completion]: ...


INFERENCE_ENGINES: Registry = Registry("inference engine")

# Imported for their registrations ("hf", "openai").
from judge_rl.evaluation.engines.hf import HFEngine  # noqa: E402
from judge_rl.evaluation.engines.openai import OpenAIEngine  # noqa: E402

__all__ = ["Completion", "InferenceEngine", "INFERENCE_ENGINES", "HFEngine", "OpenAIEngine"]
