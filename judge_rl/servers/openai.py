"""An OpenAI-compatible chat endpoint behind the server interface (vLLM, llama.cpp server, the
project's own `servers.http`, or the OpenAI API).

The HTTP side is the policy job's judge client (`judge_rl.servers.client.AsyncJudgeClient`), so both
reach an endpoint the same way: requests run concurrently on an asyncio event loop (at most `concurrency`
at a time); `timeout_s` bounds each attempt end to end (connecting, sending, waiting for the status line
and headers and reading the whole body together take at most `timeout_s`, however slowly the server
trickles bytes; an attempt that runs over is cancelled and its connection closed); connection errors,
timeouts, 429 and 5xx are retried with exponential backoff, other 4xx are not, so one request takes at
most about `(max_retries + 1) * timeout_s` plus the backoffs. The API key is read from the environment
variable named by `api_key_env` at request time; it is never stored, logged, or put into `stats`, `repr`
or error messages. Here a reply cut at `max_new_tokens` comes back with its text and `finished=False` (the
harness's parsers count truncation); a request that got no answer is a `Completion.failure` whose error
is the client's short detail (the status with the server's own message, or the exception, and the attempts).

A prompt that cannot fit the endpoint's context with `max_new_tokens` is left out before it is sent (`too_long`)
where the endpoint says how long a chat is and how much it serves: vLLM's POST /tokenize (`count`, `max_model_len`),
which the project's own server (servers/http.py) answers too. Where it does not (the OpenAI API, llama.cpp), the
first such probe turns the check off, and the endpoint's own refusal is counted as too long by the harness.

Identical requests (same model, messages and parameters) are sent once per server and answered from an
in-memory cache afterwards (`cache_hits`); failures are not cached. `complete()` is synchronous: it runs
its requests on a fresh event loop, in the calling thread, or in a worker thread when the calling thread
already runs an event loop.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request

from judge_rl.config import JudgeClientConfig
from judge_rl.servers.client import AsyncJudgeClient, JudgeReply, complete_many
from judge_rl.servers import SERVERS, Completion, stable_hash


@SERVERS.register("openai")
class OpenAIServer:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str = JudgeClientConfig.api_key_env,
        concurrency: int = JudgeClientConfig.concurrency,
        timeout_s: float = JudgeClientConfig.timeout_s,
        max_retries: int = JudgeClientConfig.max_retries,
        backoff_s: float = JudgeClientConfig.backoff_s,
        temperature: float = 0.0,
    ):
        # the client checks the parameters (one line naming each); this server keeps the cache
        self.client = AsyncJudgeClient(base_url, model, api_key_env=api_key_env, concurrency=concurrency,
                                       timeout_s=timeout_s, max_retries=max_retries, backoff_s=backoff_s,
                                       temperature=temperature, cache_size=0, truncated_ok=True,
                                       error_messages=True)  # fmt: skip
        self.base_url = self.client.base_url
        self.model = model
        self.identity = f"openai:{self.base_url}:{model}"
        self._closed = False
        self._cache: dict[str, Completion] = {}
        self._cache_hits = 0
        self._lock = threading.Lock()
        base = self.base_url.rstrip("/")
        self._tokenize_url: str | None = (base[: -len("/v1")] if base.endswith("/v1") else base) + "/tokenize"

    @property
    def stats(self) -> dict[str, int]:
        """requests: HTTP requests sent (retries included); retries: re-sends; failures: requests that ended
        without an answer; cache_hits: completions answered without a request."""
        sent = self.client.stats
        return {"requests": sent["requests"], "retries": sent["retries"], "failures": sent["failures"],
                "cache_hits": self._cache_hits}  # fmt: skip

    def __repr__(self) -> str:
        c = self.client
        return (
            f"OpenAIServer(base_url={c.endpoint!r}, model={self.model!r}, api_key_env={c.api_key_env!r}, "
            f"concurrency={c.concurrency}, timeout_s={c.timeout_s}, max_retries={c.max_retries})"
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
            **server_cfg.client_kwargs(),
        )

    def request_key(self, messages: list[dict], max_new_tokens: int) -> str:
        return stable_hash({"engine": self.identity, **self.client.body(messages, max_new_tokens)})

    def too_long(self, messages: list[dict], max_new_tokens: int) -> str | None:
        """Why this request cannot fit the endpoint's context, by the endpoint's own count (POST /tokenize), or None
        when it fits or the endpoint cannot say (then the check is off for this server: see the module docstring)."""
        if self._tokenize_url is None:
            return None
        body = json.dumps({"model": self.model, "messages": messages, "add_generation_prompt": True}).encode()
        key = os.environ.get(self.client.api_key_env)
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
        request = urllib.request.Request(self._tokenize_url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.client.timeout_s) as reply:
                answer = json.loads(reply.read())
            n, context = int(answer["count"]), answer.get("max_model_len")
        except urllib.error.HTTPError as e:
            if e.code in (404, 405, 501):  # no such route here: the endpoint cannot say
                self._tokenize_url = None
            return None  # else this request alone (a malformed conversation: the chat call says why)
        except (OSError, ValueError, KeyError, TypeError):  # unreachable, or not vLLM's answer
            self._tokenize_url = None
            return None
        if context is not None and n + max_new_tokens > int(context):
            return f"prompt of {n} tokens + max_new_tokens {max_new_tokens} > the served context of {context}"
        return None

    def __enter__(self) -> "OpenAIServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def _completion(reply: JudgeReply) -> Completion:
        if reply.failure is not None:
            return Completion.failure(reply.failure.detail or reply.failure.reason)
        return Completion(text=reply.text, error=None, finished=reply.finish_reason != "length")

    def complete(self, batch_of_messages: list[list[dict]], *, max_new_tokens: int) -> list[Completion]:
        keys = [stable_hash(self.client.body(m, max_new_tokens)) for m in batch_of_messages]
        results: dict[str, Completion] = {}
        todo: dict[str, list[dict]] = {}  # identical requests within the batch are sent once
        with self._lock:
            for key, messages in zip(keys, batch_of_messages):
                if key in self._cache:
                    results[key] = self._cache[key]
                elif key not in todo:
                    todo[key] = messages
            if todo and self._closed:
                raise RuntimeError("OpenAIServer is closed: cannot send requests")
            self._cache_hits += len(keys) - len(todo)
        if todo:
            replies = complete_many(self.client, list(todo.values()), max_tokens=max_new_tokens)
            sent = {key: self._completion(r) for key, r in zip(todo, replies)}
            with self._lock:
                for key, completion in sent.items():
                    if completion.ok:  # failures are not cached: a later call tries again
                        self._cache[key] = completion
            results.update(sent)
        return [results[k] for k in keys]
