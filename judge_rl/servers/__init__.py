"""Servers for evaluating a judge: one interface over a local HF model, vLLM (offline, GPU)
and an OpenAI-compatible HTTP endpoint.

    server.complete(batch_of_messages, max_new_tokens=...) -> list[Completion]
    server.request_key(messages, max_new_tokens) -> str

Results come back in input order. A request that fails (connection refused, timeout, HTTP error, a
malformed response) yields `Completion(text=None, error=..., finished=False)`; it never raises for a
single bad request and never stands in an empty string for a verdict.

`request_key` names a request exactly (the judge's identity, the rendered prompt and the generation
budget); the evaluation harness stores results under it, so a resumed run and identical requests
within a run never reach the server twice. Each server class builds itself from the eval config with
`from_config(server_cfg, model_cfg, cache_dir, checkpoint, seed)`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Protocol

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


class JudgeServer(Protocol):
    def complete(self, batch_of_messages: list[list[dict]], *, max_new_tokens: int) -> list[Completion]: ...

    def request_key(self, messages: list[dict], max_new_tokens: int) -> str: ...


def stable_hash(payload: Any) -> str:
    """A short, stable hash of a JSON-able payload (sorted keys)."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:24]


SERVERS: Registry = Registry("server")

# Imported for their registrations ("hf", "openai", "vllm", "scalar").
from judge_rl.servers.hf import HFServer  # noqa: E402
from judge_rl.servers.openai import OpenAIServer  # noqa: E402
from judge_rl.servers.vllm import VLLMServer  # noqa: E402
from judge_rl.servers.scalar import ScalarServer  # noqa: E402

__all__ = [
    "Completion",
    "JudgeServer",
    "SERVERS",
    "HFServer",
    "OpenAIServer",
    "ScalarServer",
    "VLLMServer",
    "build_server",
    "stable_hash",
]


def build_server(server_cfg, model_cfg, cache_dir: str, checkpoint: str | None = None, seed: int = 0):
    """The server `server_cfg.name` for the judge `model_cfg` (with `checkpoint` weights when given)."""
    return SERVERS.get(server_cfg.name).from_config(server_cfg, model_cfg, cache_dir, checkpoint, seed)
