"""Servers for evaluating a judge: one interface over a local HF model, vLLM (offline; GPU, or its CPU build)
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

The judge serving layer around them, shared by evaluation and the policy job's rewards: `client` (the asyncio
HTTP client for an OpenAI-compatible judge: bounded retries, timeouts, concurrency cap, cache, per-step
telemetry; `OpenAIServer` sends through it), `failures` (why a call gave no usable answer), `http` (the
project's own batched OpenAI-compatible server) and `endpoint` (start or find the judge a job needs).
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


# The modules that register the servers ("hf", "openai", "vllm", "scalar") are imported on the first lookup, and
# their classes on first use (`from judge_rl.servers import HFServer`), so the torch-free parts of this package
# (`client`, `failures`, `http`'s protocol side) import without torch: a verl reward worker loads them in milliseconds.
_SERVER_MODULES = {
    "HFServer": "judge_rl.servers.hf",
    "OpenAIServer": "judge_rl.servers.openai",
    "VLLMServer": "judge_rl.servers.vllm",
    "ScalarServer": "judge_rl.servers.scalar",
}
SERVERS: Registry = Registry("server", modules=tuple(_SERVER_MODULES.values()))


def __getattr__(name: str) -> Any:
    if name in _SERVER_MODULES:
        import importlib

        return getattr(importlib.import_module(_SERVER_MODULES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
