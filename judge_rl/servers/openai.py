"""An OpenAI-compatible chat endpoint behind the server interface (vLLM, llama.cpp server, the
project's own `servers.http`, or the OpenAI API), over plain httpx.

Requests run concurrently on an asyncio event loop (at most `concurrency` at a time). `timeout_s`
bounds each attempt end to end: connecting, sending, waiting for the status line and headers and
reading the whole body together take at most `timeout_s`, however slowly the server trickles bytes;
an attempt that runs over is cancelled and its connection closed. Connection errors, timeouts, 429
and 5xx are retried with exponential backoff, other 4xx are not, so one request takes at most about
`(max_retries + 1) * timeout_s` plus the backoffs. Identical requests (same model, messages and
parameters) are sent once per server and answered from an in-memory cache afterwards. The API key is
read from the environment variable named by `api_key_env` at request time; it is never stored on the
server, logged, or put into `stats`, `repr` or error messages.

`complete()` is synchronous: it runs its requests on a fresh event loop, in the calling thread, or
in a worker thread when the calling thread already runs an event loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import httpx

from judge_rl.aio import retryable_status, run_sync

from judge_rl.servers import SERVERS, Completion, stable_hash


@SERVERS.register("openai")
class OpenAIServer:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        temperature: float = 0.0,
    ):
        if concurrency < 1:
            raise ValueError(f"concurrency={concurrency}: expected >= 1")
        if max_retries < 0:
            raise ValueError(f"max_retries={max_retries}: expected >= 0")
        if not timeout_s > 0:  # also refuses NaN
            raise ValueError(f"timeout_s={timeout_s}: expected > 0")
        if not backoff_s >= 0:
            raise ValueError(f"backoff_s={backoff_s}: expected >= 0")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.identity = f"openai:{self.base_url}:{model}"
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout_s = timeout_s  # bounds each attempt end to end
        self.max_retries = max_retries  # retries after the first attempt
        self.backoff_s = backoff_s
        self.temperature = temperature
        self._closed = False
        self._cache: dict[str, Completion] = {}
        self._lock = threading.Lock()
        # requests: HTTP requests sent (retries included); retries: re-sends; failures: requests that
        # ended without an answer; cache_hits: completions answered without a request.
        self.stats: dict[str, int] = {"requests": 0, "retries": 0, "failures": 0, "cache_hits": 0}

    def __repr__(self) -> str:
        return (
            f"OpenAIServer(base_url={self.base_url!r}, model={self.model!r}, api_key_env={self.api_key_env!r}, "
            f"concurrency={self.concurrency}, timeout_s={self.timeout_s}, max_retries={self.max_retries})"
        )

    def close(self) -> None:
        """Refuse further requests. Connections live only for one `complete()` call, so none is left
        open between calls; cached completions can still be read."""
        self._closed = True

    @classmethod
    def from_config(cls, server_cfg, model_cfg, cache_dir: str, checkpoint: str | None = None, seed: int = 0) -> "OpenAIServer":
        if not server_cfg.base_url:
            raise ValueError("server.base_url is required for server=openai (e.g. http://127.0.0.1:8000/v1)")
        return cls(
            base_url=server_cfg.base_url,
            model=server_cfg.served_model or model_cfg.name,
            api_key_env=server_cfg.api_key_env,
            concurrency=server_cfg.concurrency,
            timeout_s=server_cfg.timeout_s,
            max_retries=server_cfg.max_retries,
            backoff_s=server_cfg.backoff_s,
        )

    def request_key(self, messages: list[dict], max_new_tokens: int) -> str:
        return stable_hash({"engine": self.identity, **self._body(messages, max_new_tokens)})

    def __enter__(self) -> "OpenAIServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.stats[name] += n

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _body(self, messages: list[dict], max_new_tokens: int) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_new_tokens,
            "temperature": self.temperature,
        }

    @staticmethod
    def _parse(response: httpx.Response) -> Completion:
        try:
            choice = response.json()["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            return Completion.failure(f"malformed response ({type(e).__name__}): {response.text[:200]!r}")
        if not isinstance(content, str):
            return Completion.failure(f"response has no text content (finish_reason={choice.get('finish_reason')!r})")
        return Completion(text=content, error=None, finished=choice.get("finish_reason") != "length")

    async def _send(self, client: httpx.AsyncClient, slots: asyncio.Semaphore, body: dict[str, Any]) -> Completion:
        url = f"{self.base_url}/chat/completions"
        error = "no attempt made"
        async with slots:
            for attempt in range(self.max_retries + 1):
                if attempt:
                    self._count("retries")
                    await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
                self._count("requests")
                try:
                    # The whole attempt (connect, send, headers, body) under one deadline; on expiry
                    # the request is cancelled and httpcore closes its connection.
                    response = await asyncio.wait_for(
                        client.post(url, json=body, headers=self._headers()), timeout=self.timeout_s
                    )
                except (asyncio.TimeoutError, httpx.TimeoutException) as e:
                    error = f"timeout after {self.timeout_s}s ({type(e).__name__})"
                    continue
                except httpx.TransportError as e:
                    error = f"connection error ({type(e).__name__}): {e}"
                    continue
                if response.status_code == 200:
                    return self._parse(response)
                error = f"HTTP {response.status_code}: {response.text[:200]!r}"
                if not retryable_status(response.status_code):
                    break
        attempts = attempt + 1
        self._count("failures")
        return Completion.failure(f"{error} [{attempts} attempt{'s' if attempts > 1 else ''}]")

    async def _send_all(self, bodies: list[dict[str, Any]]) -> list[Completion]:
        slots = asyncio.Semaphore(self.concurrency)
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        # httpx's own per-operation timeouts stay as a second line; the attempt deadline is wait_for.
        async with httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s), limits=limits) as client:
            return list(await asyncio.gather(*(self._send(client, slots, b) for b in bodies)))

    def complete(self, batch_of_messages: list[list[dict]], *, max_new_tokens: int) -> list[Completion]:
        bodies = [self._body(m, max_new_tokens) for m in batch_of_messages]
        keys = [stable_hash(b) for b in bodies]
        results: dict[str, Completion] = {}
        todo: dict[str, dict[str, Any]] = {}  # identical requests within the batch are sent once
        with self._lock:
            for key, body in zip(keys, bodies):
                if key in self._cache:
                    results[key] = self._cache[key]
                elif key not in todo:
                    todo[key] = body
            if todo and self._closed:
                raise RuntimeError("OpenAIServer is closed: cannot send requests")
            self.stats["cache_hits"] += len(keys) - len(todo)
        if todo:
            sent = dict(zip(todo, run_sync(self._send_all(list(todo.values())))))
            with self._lock:
                for key, completion in sent.items():
                    if completion.ok:  # failures are not cached: a later call tries again
                        self._cache[key] = completion
            results.update(sent)
        return [results[k] for k in keys]
