"""An asyncio client for an LLM judge behind an OpenAI-compatible chat API (vLLM, SGLang, llama.cpp
server, the project's own `servers.http`, or the OpenAI API), for the policy rewards that call a judge
while a policy trains (verl's reward loop awaits an async `compute_score`), plus per-step telemetry.

    client = AsyncJudgeClient("http://127.0.0.1:8000/v1", "Qwen/Qwen3-8B",
                              chat_template_kwargs={"enable_thinking": False})
    reply = await client.complete(messages)        # a JudgeReply; never raises for a server problem
    verdict = parse_verif_reply(reply.result)      # reply.result: the text, or the JudgeFailure
    telemetry.record(reply, verdict if isinstance(verdict, JudgeFailure) else None)

Why. A reward computed by a judge is only as good as the calls behind it. The rule of
`judge_rl.policy.rewards` holds here too: **no silent zeros**. A call that gets no usable answer is a
`JudgeFailure`, never an empty string, a default verdict or a 0.0 score:

  - HTTP errors, timeouts, connection errors and malformed responses (not JSON, no `choices`) after
    the bounded retries below are `JudgeFailure.server_error(detail)`; the detail is short: the status
    code (with `error_messages=True`, followed by the server's own error message: OpenAI's `error.message`,
    vLLM's `message`, one line, at most 200 characters, the key's value masked should a server echo it) or
    the exception type, and the number of attempts; never a header or the key;
  - `finish_reason == "length"` is `JudgeFailure.truncated(...)` (a thinking judge that ran out of
    tokens before its verdict); the cut text is dropped, not parsed;
  - a reply without text content otherwise (e.g. a reasoning parser that moved everything out of
    `content`) is `JudgeFailure.unparseable("empty reply")`.

`JudgeReply.text` is None exactly when `failure` is set. The trainer masks failed samples out.

Retries are bounded, unlike RuscaRL's grader, which loops until the API answers: a judge that is down
would stall training forever there. Here connection errors, timeouts, 429 and 5xx are retried at most
`max_retries` times with exponential backoff (`backoff_s`, `2 * backoff_s`, ...); other 4xx and
malformed 200 responses are not retried. `timeout_s` bounds each attempt end to end (connect, send,
wait, read the whole body), so one call takes at most about `(max_retries + 1) * timeout_s` plus the
backoffs, and the failure rate of a step is visible (`JudgeTelemetry`) and can stop a run
(`check_failure_rate`) instead of quietly turning into rewards.

Concurrency: at most `concurrency` calls of one event loop are in flight at once (an asyncio semaphore,
held from the first attempt through the retries and backoffs of a call, so a failing server is not
hammered). State that belongs to an event loop (the semaphore, the httpx connection pool, calls in
flight) is kept per loop, so one client can serve a long-lived loop (verl's reward worker) and the
fresh loops of `complete_many`; the cap applies per loop, i.e. per reward worker process in verl.

Cache: identical calls (same endpoint, model, messages and parameters) are sent once. A call identical
to one already answered is served from an in-memory LRU cache of `cache_size` answers; a call identical
to one in flight waits for it and shares its reply. Both come back with `cached=True`, zero tokens,
zero latency and zero attempts (what the call cost), and are counted (`stats["cache_hits"]`, telemetry
`judge/cache_hits`). Failures are not cached: a later identical call asks again.

The API key is read from the environment variable `api_key_env` at each request and sent as
`Authorization: Bearer <key>` (no header when the variable is unset); it is never stored on the client,
logged, or put into a reply, `stats`, `repr`, telemetry or an error message.

`chat_template_kwargs` goes into the request body as the top-level field `chat_template_kwargs`, where
vLLM's (and SGLang's) chat endpoint passes it to the chat template (e.g. `{"enable_thinking": False}`
for Qwen3); `extra_body` is merged into the body as is (e.g. `{"top_k": 1}`).

`complete_many(client, list_of_messages)` is the synchronous entry for callers outside an event loop:
it runs the calls on a fresh event loop in the calling thread, or in a worker thread when the calling
thread already runs a loop (as `judge_rl.servers.openai` does).
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import json
import math
import os
import re
import threading
import time
import weakref
from collections import Counter, OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import httpx

from judge_rl.aio import retryable_status, run_sync
from judge_rl.config import JudgeClientConfig

from judge_rl.servers.failures import EMPTY_REPLY, JudgeFailure

# Body fields the client sets itself; `extra_body` may not override them.
RESERVED_BODY_KEYS = ("model", "messages", "max_tokens", "temperature", "chat_template_kwargs")


# --------------------------------------------------------------------------------------------------
# Replies
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeReply:
    """One judge call's outcome.

    text               the reply's content; None exactly when `failure` is set
    failure            None, or the `JudgeFailure` (server error, truncated, empty reply)
    prompt_tokens      the server's `usage.prompt_tokens` for this call (0 when cached, when no response
                       came back, or when the server reports no usage)
    completion_tokens  the server's `usage.completion_tokens`, likewise
    latency_s          seconds from the call's first attempt (after it got a concurrency slot) to its
                       final answer, retries and backoffs included; 0.0 when cached
    cached             True when no request was sent for this call (answered from the cache, or shared
                       with an identical call in flight)
    attempts           HTTP requests sent for this call (retries included); 0 when cached
    finish_reason      the server's `finish_reason` ("stop", "length", ...); None when no response came
    """

    text: str | None
    failure: JudgeFailure | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    attempts: int = 0
    finish_reason: str | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.failure is None):
            raise ValueError("a JudgeReply has a text or a failure, exactly one of them")

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def result(self) -> str | JudgeFailure:
        """The text, or the failure: what the reply parsers of `judge_rl.policy.rewards` take."""
        return self.text if self.failure is None else self.failure  # type: ignore[return-value]


def _as_cached(reply: JudgeReply) -> JudgeReply:
    return replace(reply, cached=True, prompt_tokens=0, completion_tokens=0, latency_s=0.0, attempts=0)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _plural(n: int) -> str:
    return f"{n} attempt{'s' if n != 1 else ''}"


# --------------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------------


@dataclass
class _LoopState:
    """What belongs to one event loop: the concurrency semaphore, the connection pool, calls in flight."""

    slots: asyncio.Semaphore
    http: httpx.AsyncClient
    inflight: dict[str, asyncio.Future] = field(default_factory=dict)


class AsyncJudgeClient:
    """An asyncio client for an OpenAI-compatible judge endpoint (see the module docstring).

    `await client.complete(messages) -> JudgeReply`; `await client.aclose()` (or `async with client`)
    closes the current loop's connections. `stats` counts, over the client's life: calls (complete()
    calls), requests (HTTP requests sent, retries included), retries, failures (calls whose reply is a
    failure, cached ones included) and cache_hits.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str = JudgeClientConfig.api_key_env,
        concurrency: int = JudgeClientConfig.concurrency,
        timeout_s: float = JudgeClientConfig.timeout_s,
        max_retries: int = JudgeClientConfig.max_retries,
        backoff_s: float = JudgeClientConfig.backoff_s,
        max_tokens: int = 512,
        temperature: float = 0.0,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        cache_size: int = 100_000,
        truncated_ok: bool = False,
        error_messages: bool = False,
    ):
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency={concurrency}: expected an integer >= 1")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries={max_retries}: expected an integer >= 0")
        if not timeout_s > 0 or not math.isfinite(timeout_s):  # also refuses NaN
            raise ValueError(f"timeout_s={timeout_s}: expected a finite number > 0")
        if not backoff_s >= 0 or not math.isfinite(backoff_s):
            raise ValueError(f"backoff_s={backoff_s}: expected a finite number >= 0")
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens={max_tokens}: expected an integer >= 1")
        if not temperature >= 0 or not math.isfinite(temperature):
            raise ValueError(f"temperature={temperature}: expected a finite number >= 0")
        if not isinstance(cache_size, int) or cache_size < 0:
            raise ValueError(f"cache_size={cache_size}: expected an integer >= 0")
        extra = dict(extra_body or {})
        clash = sorted(set(extra) & set(RESERVED_BODY_KEYS))
        if clash:
            raise ValueError(f"extra_body sets {', '.join(clash)}: pass these as the client's own arguments")
        template = dict(chat_template_kwargs) if chat_template_kwargs else None
        try:  # a deep copy, and a check that the body can be sent
            extra = json.loads(json.dumps(extra))
            template = json.loads(json.dumps(template))
        except (TypeError, ValueError) as e:
            raise ValueError(f"extra_body and chat_template_kwargs must be JSON-serialisable ({e})") from None
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout_s = float(timeout_s)  # bounds each attempt end to end
        self.max_retries = max_retries  # retries after the first attempt
        self.backoff_s = float(backoff_s)
        self.max_tokens = max_tokens
        self.temperature = float(temperature)
        self.chat_template_kwargs = template
        self.extra_body = extra
        self.cache_size = cache_size
        # False (a judge): a reply cut at max_tokens is `JudgeFailure.truncated`; True (the evaluation harness's
        # OpenAIServer, whose parsers count truncation themselves): its text comes back, finish_reason "length"
        self.truncated_ok = truncated_ok
        # True: an HTTP error's detail carries the server's own message (e.g. vLLM's context-length refusal)
        self.error_messages = error_messages
        self.endpoint = redact_url(self.base_url)
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, JudgeReply] = OrderedDict()
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
        self.stats: dict[str, int] = {"calls": 0, "requests": 0, "retries": 0, "failures": 0, "cache_hits": 0}

    def __repr__(self) -> str:
        return (
            f"AsyncJudgeClient(base_url={self.endpoint!r}, model={self.model!r}, api_key_env={self.api_key_env!r}, "
            f"concurrency={self.concurrency}, timeout_s={self.timeout_s}, max_retries={self.max_retries}, "
            f"max_tokens={self.max_tokens}, temperature={self.temperature})"
        )

    # -- request pieces ---------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)  # read now, never kept
        return {"Authorization": f"Bearer {key}"} if key else {}

    def body(self, messages: Sequence[Mapping[str, Any]], max_tokens: int | None = None) -> dict[str, Any]:
        """The JSON body sent for `messages` (`max_tokens`: this call's budget; None: the client's)."""
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
            raise TypeError("messages must be a non-empty list of {role, content} mappings")
        if not all(isinstance(m, Mapping) for m in messages):
            raise TypeError("messages must be a non-empty list of {role, content} mappings")
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature,
        }
        if self.chat_template_kwargs is not None:
            body["chat_template_kwargs"] = self.chat_template_kwargs
        body.update(self.extra_body)
        return body

    def request_key(self, messages: Sequence[Mapping[str, Any]], max_tokens: int | None = None) -> str:
        """The cache key of a call: a hash of the endpoint and the whole body."""
        return self._key(self.body(messages, max_tokens))

    def _key(self, body: dict[str, Any]) -> str:
        payload = json.dumps({"endpoint": self.base_url, "body": body}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()[:32]

    def _bump(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.stats[name] += n

    # -- per-loop state ---------------------------------------------------------------------------
    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._states.get(loop)
            if state is None or state.http.is_closed:
                limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
                # httpx's per-operation timeouts are a second line; the attempt deadline is wait_for.
                http = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s), limits=limits)
                state = _LoopState(asyncio.Semaphore(self.concurrency), http)
                self._states[loop] = state
            return state

    async def aclose(self) -> None:
        """Close the connections of the current event loop (the cache stays; a later call reopens)."""
        with self._lock:
            state = self._states.pop(asyncio.get_running_loop(), None)
        if state is not None:
            await state.http.aclose()

    async def __aenter__(self) -> "AsyncJudgeClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    # -- calls ------------------------------------------------------------------------------------
    async def complete(self, messages: Sequence[Mapping[str, Any]], max_tokens: int | None = None) -> JudgeReply:
        """The judge's reply to `messages` (a chat). Never raises for a server problem: a failed call is
        a reply with `failure` set. A malformed `messages` argument is a TypeError. `max_tokens`: this
        call's budget (None: the client's)."""
        body = self.body(messages, max_tokens)
        key = self._key(body)
        reply = await self._complete(key, body)
        with self._lock:
            self.stats["calls"] += 1
            self.stats["cache_hits"] += reply.cached
            self.stats["failures"] += not reply.ok
        return reply

    async def _complete(self, key: str, body: dict[str, Any]) -> JudgeReply:
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
        if hit is not None:
            return _as_cached(hit)
        state = self._state()
        while (pending := state.inflight.get(key)) is not None:
            # An identical call is in flight: share its reply. None means it was cancelled or raised
            # before answering; then look again (another call may have taken over) or send this one.
            shared = await asyncio.shield(pending)
            if shared is not None:
                return _as_cached(shared)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        state.inflight[key] = future
        reply: JudgeReply | None = None
        try:
            reply = await self._send(state, body)
            if reply.ok and self.cache_size:
                with self._lock:
                    self._cache[key] = reply
                    self._cache.move_to_end(key)
                    while len(self._cache) > self.cache_size:
                        self._cache.popitem(last=False)
        finally:
            state.inflight.pop(key, None)
            if not future.done():
                future.set_result(reply)
        return reply

    async def _send(self, state: _LoopState, body: dict[str, Any]) -> JudgeReply:
        url = f"{self.base_url}/chat/completions"
        error = "no attempt made"
        attempts = 0
        async with state.slots:
            start = time.monotonic()
            for attempt in range(self.max_retries + 1):
                if attempt:
                    self._bump("retries")
                    await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
                attempts += 1
                self._bump("requests")
                try:
                    # The whole attempt (connect, send, headers, body) under one deadline; on expiry the
                    # request is cancelled and httpcore closes its connection.
                    response = await asyncio.wait_for(
                        state.http.post(url, json=body, headers=self._headers()), timeout=self.timeout_s
                    )
                except (asyncio.TimeoutError, httpx.TimeoutException):
                    error = f"timeout after {self.timeout_s:g}s"
                    continue
                except httpx.HTTPError as e:  # connection refused/reset, protocol errors, ...
                    error = f"connection error ({type(e).__name__})"
                    continue
                if response.status_code == 200:
                    return self._parse(response, attempts, time.monotonic() - start, body["max_tokens"])
                error = f"HTTP {response.status_code}{self._error_message(response) if self.error_messages else ''}"
                if not retryable_status(response.status_code):
                    break
            latency = time.monotonic() - start
        failure = JudgeFailure.server_error(f"{error} [{_plural(attempts)}]")
        return JudgeReply(None, failure, latency_s=latency, attempts=attempts)

    def _error_message(self, response: httpx.Response) -> str:
        """": <the server's own message>" of an error response (OpenAI's `error.message`, vLLM's `message`), on one
        line, at most 200 characters, the key's value masked should a server echo it; "" when there is none."""
        try:
            data = response.json()
        except ValueError:
            return ""
        error = data.get("error") if isinstance(data, dict) else None
        message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
        if message is None and isinstance(data, dict):
            message = data.get("message")
        if not isinstance(message, str) or not message.strip():
            return ""
        message = " ".join(message.split())
        key = os.environ.get(self.api_key_env)
        if key:
            message = message.replace(key, "***")
        return f": {message[:200]}"

    def _parse(self, response: httpx.Response, attempts: int, latency: float, max_tokens: int) -> JudgeReply:
        try:
            data = response.json()
            choice = data["choices"][0]
            content = choice["message"].get("content")
            finish = choice.get("finish_reason")
            usage = data.get("usage") or {}
            prompt_tokens = _count(usage.get("prompt_tokens"))
            completion_tokens = _count(usage.get("completion_tokens"))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            failure = JudgeFailure.server_error(f"malformed response ({type(e).__name__}) [{_plural(attempts)}]")
            return JudgeReply(None, failure, latency_s=latency, attempts=attempts)
        finish = finish if isinstance(finish, str) else None
        common = dict(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, latency_s=latency,
                      attempts=attempts, finish_reason=finish)  # fmt: skip
        if finish == "length" and not self.truncated_ok:
            detail = f"finish_reason 'length' after {completion_tokens} completion tokens (max_tokens={max_tokens})"
            return JudgeReply(None, JudgeFailure.truncated(detail), **common)
        if content is None:
            failure = JudgeFailure.unparseable(EMPTY_REPLY, f"no content (finish_reason={finish!r})")
            return JudgeReply(None, failure, **common)
        if not isinstance(content, str):
            detail = f"malformed response (content is {type(content).__name__}) [{_plural(attempts)}]"
            failure = JudgeFailure.server_error(detail)
            return JudgeReply(None, failure, **common)
        return JudgeReply(content, None, **common)


# --------------------------------------------------------------------------------------------------
# Synchronous helper
# --------------------------------------------------------------------------------------------------


def complete_many(
    client: AsyncJudgeClient, list_of_messages: Sequence[Sequence[Mapping[str, Any]]], max_tokens: int | None = None
) -> list[JudgeReply]:
    """The replies to many chats, in input order, from synchronous code: the calls run concurrently (up
    to `client.concurrency`) on a fresh event loop, whose connections are closed before returning."""

    async def run() -> list[JudgeReply]:
        try:
            return list(await asyncio.gather(*(client.complete(m, max_tokens) for m in list_of_messages)))
        finally:
            await client.aclose()

    return run_sync(run())


# --------------------------------------------------------------------------------------------------
# Telemetry
# --------------------------------------------------------------------------------------------------


def nearest_rank(values: Sequence[float], p: float) -> float:
    """The nearest-rank p-th percentile (0 < p <= 100): the smallest value with at least p% of the
    values at or below it, i.e. sorted(values)[ceil(p / 100 * n) - 1]. NaN for no values."""
    return sorted_rank(sorted(values), p)


def sorted_rank(ordered: Sequence[float], p: float) -> float:
    """`nearest_rank` of values already in ascending order: O(1), for a summary asked after every call."""
    if not 0 < p <= 100:
        raise ValueError(f"p={p}: expected 0 < p <= 100")
    if not ordered:
        return math.nan
    return float(ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1])


_USERINFO = re.compile(r"//[^/@\s]*@")


def redact_url(url: str) -> str:
    """`url` without user:password (`//user:pw@host` -> `//***@host`) and on one line."""
    return _USERINFO.sub("//***@", " ".join(str(url).split()))


class JudgeFailureRateExceeded(RuntimeError):
    """The judge failed on more of a step's calls than allowed; the message is one line."""

    def __init__(self, endpoint: str, rate: float, max_rate: float, failures: int, calls: int,
                 reason: str | None, reason_count: int, unit: str = "calls"):  # fmt: skip
        self.endpoint, self.rate, self.max_rate = endpoint, rate, max_rate
        self.failures, self.calls, self.reason, self.reason_count = failures, calls, reason, reason_count
        super().__init__(
            f"judge failure rate {rate:.1%} ({failures}/{calls} {unit}) at {endpoint} exceeds the threshold "
            f"{max_rate:.1%}; commonest reason: {reason} ({reason_count})"
        )


class JudgeTelemetry:
    """The judge calls of one training step, summarised for the logger; `reset()` between steps.

    `record(reply, failure=None)` adds one call; `failure` is the failure found by parsing the reply's
    text (unparseable, criteria missing), for a reply that came back from the server fine. A call's
    outcome is `reply.failure`, else `failure`, else success.

    `summary()` returns, as floats:

      judge/calls              calls recorded (cached ones included)
      judge/cache_hits         calls answered without a request (`reply.cached`)
      judge/prompt_tokens      sum of the server's usage.prompt_tokens over the calls (cached: 0)
      judge/completion_tokens  sum of usage.completion_tokens likewise
      judge/latency_p50_s      nearest-rank median of `latency_s` over the non-cached calls (failures
                               included: a timeout's latency is part of what the step waited); NaN
                               when every call was cached or there were none
      judge/latency_p95_s      nearest-rank 95th percentile likewise: sorted(latencies)[ceil(0.95 n) - 1]
      judge/failures           calls whose outcome is a failure
      judge/failure_rate       failures / calls; NaN when there were no calls
      judge/failures/<reason>  calls that failed with that exact reason (a `JudgeFailure.reason`, e.g.
                               "judge server error", "judge reply unparseable: unclosed <think>"); one
                               key per reason seen this step, so they sum to judge/failures
    """

    BASE_KEYS = ("judge/calls", "judge/cache_hits", "judge/prompt_tokens", "judge/completion_tokens",
                 "judge/latency_p50_s", "judge/latency_p95_s", "judge/failures", "judge/failure_rate")  # fmt: skip

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._calls = 0
            self._cache_hits = 0
            self._prompt_tokens = 0
            self._completion_tokens = 0
            self._latencies: list[float] = []  # kept in ascending order: summary() is asked after every call
            self._reasons: Counter[str] = Counter()

    def __len__(self) -> int:
        return self._calls

    def record(self, reply: JudgeReply, failure: JudgeFailure | None = None) -> None:
        if reply.failure is not None and failure is not None and failure != reply.failure:
            raise ValueError("a failed reply has its own failure; `failure` is for a reply that came back fine")
        outcome = reply.failure or failure
        with self._lock:
            self._calls += 1
            self._prompt_tokens += reply.prompt_tokens
            self._completion_tokens += reply.completion_tokens
            if reply.cached:
                self._cache_hits += 1
            else:
                bisect.insort(self._latencies, reply.latency_s)
            if outcome is not None:
                self._reasons[outcome.reason] += 1

    def record_many(self, replies: Sequence[JudgeReply]) -> None:
        for reply in replies:
            self.record(reply)

    def summary(self) -> dict[str, float]:
        with self._lock:
            failures = sum(self._reasons.values())
            out = {
                "judge/calls": float(self._calls),
                "judge/cache_hits": float(self._cache_hits),
                "judge/prompt_tokens": float(self._prompt_tokens),
                "judge/completion_tokens": float(self._completion_tokens),
                "judge/latency_p50_s": sorted_rank(self._latencies, 50),
                "judge/latency_p95_s": sorted_rank(self._latencies, 95),
                "judge/failures": float(failures),
                "judge/failure_rate": failures / self._calls if self._calls else math.nan,
            }
            for reason, count in sorted(self._reasons.items()):
                out[f"judge/failures/{reason}"] = float(count)
        return out

    def commonest_failure(self) -> tuple[str | None, int]:
        """The most frequent failure reason and its count (ties: the reason seen first); (None, 0)
        when nothing failed."""
        with self._lock:
            top = self._reasons.most_common(1)
        return top[0] if top else (None, 0)

    def check_failure_rate(self, max_rate: float, endpoint: str) -> None:
        """Raise `JudgeFailureRateExceeded` when the step's failure rate is above `max_rate` (a fraction
        in [0, 1]); a step without calls passes."""
        if not 0 <= max_rate <= 1:
            raise ValueError(f"max_rate={max_rate}: expected a fraction in [0, 1]")
        with self._lock:
            calls, failures = self._calls, sum(self._reasons.values())
        if calls and failures / calls > max_rate:
            reason, count = self.commonest_failure()
            rate = failures / calls
            raise JudgeFailureRateExceeded(redact_url(endpoint), rate, max_rate, failures, calls, reason, count)
