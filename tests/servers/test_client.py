"""AsyncJudgeClient and JudgeTelemetry (judge_rl.servers.client) against real local HTTP servers
(stdlib `http.server` on 127.0.0.1 in a thread) whose answer to each request is scripted: known text and
usage, known sleeps, 500 then 200, always 500, non-JSON, finish_reason "length", a hang past timeout_s.
The server records what it saw (requests, bodies, Authorization headers, peak concurrency), so retries,
caching and the concurrency cap are checked from the server's side."""

from __future__ import annotations

import asyncio
import json
import math
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import httpx
import pytest

from judge_rl.servers.client import (
    AsyncJudgeClient,
    JudgeFailureRateExceeded,
    JudgeReply,
    JudgeTelemetry,
    complete_many,
    nearest_rank,
)
from judge_rl.policy.rewards import (
    EMPTY_REPLY,
    JUDGE_SERVER_ERROR,
    JUDGE_TRUNCATED,
    NO_VERDICT,
    JudgeFailure,
    unparseable,
)
from judge_rl.policy.rewards.verif import parse_verif_reply

SECRET = "sk-judge-test-5f0c1d2e3b4a69788796a5b4c3d2e1f0"
KEY_ENV = "JUDGE_CLIENT_TEST_KEY"


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are a grader."}, {"role": "user", "content": text}]


# --------------------------------------------------------------------------------------------------
# A scripted OpenAI-compatible server
# --------------------------------------------------------------------------------------------------


@dataclass
class Answer:
    """What the server does with one request."""

    text: str | None = "[[1]]"
    prompt_tokens: int = 10
    completion_tokens: int = 3
    finish_reason: str = "stop"
    sleep_s: float = 0.0  # before answering
    status: int = 200  # anything else: an OpenAI-style error body with this status
    raw: bytes | None = None  # sent as the 200 body instead of JSON
    usage: bool = True


class _Backlogged(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 drops simultaneous SYNs: the client's resend costs it 1 s
    daemon_threads = True


class ScriptedServer:
    """`script(n, body) -> Answer` for the n-th request (1-based) with its parsed JSON body."""

    def __init__(self, script: Callable[[int, dict[str, Any]], Answer]):
        self.script = script
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.requests = 0
        self.bodies: list[dict[str, Any]] = []
        self.authorization: list[str | None] = []
        self.active = 0
        self.peak = 0
        self.httpd = _Backlogged(("127.0.0.1", 0), self._handler())
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()  # wakes sleeping handlers
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=2)

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 5  # an idle keep-alive connection does not hold its thread for long

            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, data: bytes, content_type: str = "application/json") -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up
                    pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw)
                with server.lock:
                    server.requests += 1
                    n = server.requests
                    server.bodies.append(body)
                    server.authorization.append(self.headers.get("Authorization"))
                    server.active += 1
                    server.peak = max(server.peak, server.active)
                try:
                    answer = server.script(n, body)
                    if answer.sleep_s:
                        server.stopping.wait(answer.sleep_s)
                finally:
                    with server.lock:
                        server.active -= 1
                if answer.status != 200:
                    error = {"error": {"message": "simulated", "type": "server_error"}}
                    self._send(answer.status, json.dumps(error).encode())
                elif answer.raw is not None:
                    self._send(200, answer.raw, "text/html")
                else:
                    payload: dict[str, Any] = {
                        "id": f"chatcmpl-{n}",
                        "object": "chat.completion",
                        "model": body.get("model"),
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.text},
                                     "finish_reason": answer.finish_reason}],  # fmt: skip
                    }
                    if answer.usage:
                        payload["usage"] = {
                            "prompt_tokens": answer.prompt_tokens,
                            "completion_tokens": answer.completion_tokens,
                            "total_tokens": answer.prompt_tokens + answer.completion_tokens,
                        }
                    self._send(200, json.dumps(payload).encode())

        return Handler


@pytest.fixture
def serve():
    servers: list[ScriptedServer] = []

    def start(script: Callable[[int, dict[str, Any]], Answer] | Answer = Answer()) -> ScriptedServer:
        fixed = script
        server = ScriptedServer(script if callable(script) else (lambda n, body: fixed))
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.stop()


@pytest.fixture(autouse=True)
def secret_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


def client_for(server: ScriptedServer | str, **kwargs) -> AsyncJudgeClient:
    url = server if isinstance(server, str) else server.base_url
    kwargs = {"api_key_env": KEY_ENV, "backoff_s": 0.01, "timeout_s": 5, **kwargs}
    return AsyncJudgeClient(url, "judge-model", **kwargs)


def run(coro):
    return asyncio.run(coro)


async def complete_all(client: AsyncJudgeClient, chats: list) -> list[JudgeReply]:
    async with client:
        return list(await asyncio.gather(*(client.complete(c) for c in chats)))


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there now


# --------------------------------------------------------------------------------------------------
# Answers, usage, the request body
# --------------------------------------------------------------------------------------------------


def test_answer_text_usage_and_request_body(serve):
    usages = {"q0": (11, 2), "q1": (23, 5), "q2": (7, 13)}

    def script(n, body):
        q = body["messages"][-1]["content"]
        return Answer(text=f"verdict for {q}: [[1]]", prompt_tokens=usages[q][0], completion_tokens=usages[q][1])

    server = serve(script)
    client = client_for(server, max_tokens=77, temperature=0.3,
                        chat_template_kwargs={"enable_thinking": False}, extra_body={"top_k": 1})  # fmt: skip
    start = time.monotonic()
    replies = run(complete_all(client, [chat(q) for q in usages]))
    elapsed = time.monotonic() - start
    for q, r in zip(usages, replies):
        assert r == JudgeReply(f"verdict for {q}: [[1]]", None, *usages[q], r.latency_s, False, 1, "stop")
        assert r.ok and r.result == r.text and parse_verif_reply(r.result) is True
        assert 0 < r.latency_s <= elapsed  # timed within the call, whatever the machine's load
    body = server.bodies[0]
    assert body["chat_template_kwargs"] == {"enable_thinking": False}  # where vLLM reads it
    assert body["model"] == "judge-model" and body["max_tokens"] == 77 and body["temperature"] == 0.3
    assert body["top_k"] == 1 and body["messages"] == chat(body["messages"][-1]["content"])

    telemetry = JudgeTelemetry()
    telemetry.record_many(replies)
    summary = telemetry.summary()
    assert summary["judge/prompt_tokens"] == 11 + 23 + 7
    assert summary["judge/completion_tokens"] == 2 + 5 + 13
    assert summary["judge/calls"] == 3 and summary["judge/failures"] == 0 and summary["judge/failure_rate"] == 0
    assert client.stats == {"calls": 3, "requests": 3, "retries": 0, "failures": 0, "cache_hits": 0}


def test_no_chat_template_kwargs_means_no_field(serve):
    server = serve()
    run(complete_all(client_for(server), [chat("x")]))
    assert set(server.bodies[0]) == {"model", "messages", "max_tokens", "temperature"}


def test_missing_usage_counts_zero_tokens(serve):
    server = serve(Answer(usage=False))
    (r,) = run(complete_all(client_for(server), [chat("x")]))
    assert r.ok and r.prompt_tokens == 0 and r.completion_tokens == 0


# --------------------------------------------------------------------------------------------------
# Failures: bounded retries, the right reasons
# --------------------------------------------------------------------------------------------------


def test_500_then_200_is_retried_once(serve):
    server = serve(lambda n, body: Answer(status=500) if n == 1 else Answer(text="[[0]]"))
    client = client_for(server, max_retries=3)
    (r,) = run(complete_all(client, [chat("x")]))
    assert r.ok and r.text == "[[0]]" and r.attempts == 2
    assert server.requests == 2
    assert client.stats == {"calls": 1, "requests": 2, "retries": 1, "failures": 0, "cache_hits": 0}


@pytest.mark.parametrize("status", [500, 503, 429])
def test_retryable_errors_are_retried_a_bounded_number_of_times(serve, status):
    server = serve(Answer(status=status))
    client = client_for(server, max_retries=2, backoff_s=0.05)
    start = time.monotonic()
    (r,) = run(complete_all(client, [chat("x")]))
    elapsed = time.monotonic() - start
    assert server.requests == 3  # 1 + max_retries, then it stops
    assert r.text is None and r.failure == JudgeFailure.server_error(f"HTTP {status} [3 attempts]")
    assert r.failure.reason == JUDGE_SERVER_ERROR and r.attempts == 3 and r.finish_reason is None
    # the two backoffs were waited; the upper bound is only a hang guard (requests == 3 above bounds the retries):
    # 30 s is 50x the ~0.5 s this takes on a loaded 2-core machine
    assert 0.05 + 0.1 <= elapsed < 30
    assert r.latency_s >= 0.15
    assert client.stats == {"calls": 1, "requests": 3, "retries": 2, "failures": 1, "cache_hits": 0}


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(serve, status):
    server = serve(Answer(status=status))
    (r,) = run(complete_all(client_for(server, max_retries=3), [chat("x")]))
    assert server.requests == 1
    assert r.failure == JudgeFailure.server_error(f"HTTP {status} [1 attempt]")


def test_non_json_body_is_a_server_error_not_retried(serve):
    server = serve(Answer(raw=b"<html>502 Bad Gateway</html>"))
    (r,) = run(complete_all(client_for(server, max_retries=3), [chat("x")]))
    assert server.requests == 1
    assert r.failure == JudgeFailure.server_error("malformed response (JSONDecodeError) [1 attempt]")


def test_json_without_choices_is_a_server_error(serve):
    server = serve(Answer(raw=b'{"object": "chat.completion"}'))
    (r,) = run(complete_all(client_for(server), [chat("x")]))
    assert r.failure == JudgeFailure.server_error("malformed response (KeyError) [1 attempt]")


def test_finish_reason_length_is_truncated(serve):
    server = serve(Answer(text="<think>let me weigh criterion 1, then", finish_reason="length",
                          prompt_tokens=40, completion_tokens=16))  # fmt: skip
    client = client_for(server, max_tokens=16)
    (r,) = run(complete_all(client, [chat("x")]))
    assert r.text is None and r.failure.reason == JUDGE_TRUNCATED
    assert r.failure.detail == "finish_reason 'length' after 16 completion tokens (max_tokens=16)"
    assert r.finish_reason == "length" and r.prompt_tokens == 40 and r.completion_tokens == 16
    assert parse_verif_reply(r.result) is r.failure  # never a verdict
    assert server.requests == 1 and client.stats["failures"] == 1


def test_no_content_is_an_empty_reply(serve):
    server = serve(Answer(text=None))
    (r,) = run(complete_all(client_for(server), [chat("x")]))
    assert r.failure.reason == unparseable(EMPTY_REPLY)


def test_a_hanging_server_times_out_within_the_bound(serve):
    server = serve(Answer(sleep_s=60))  # woken at teardown (ScriptedServer.stop)
    client = client_for(server, timeout_s=0.3, max_retries=1, backoff_s=0.05)
    start = time.monotonic()
    (r,) = run(complete_all(client, [chat("x")]))
    elapsed = time.monotonic() - start
    # 2 attempts of 0.3 s and one backoff: 0.65 s, ~1.5 s at most on a loaded 2-core machine (30 s is 5x+ that); not
    # the server's 60 s: waiting out even one attempt would take 60 s
    assert 0.65 <= elapsed < 30
    assert r.failure == JudgeFailure.server_error("timeout after 0.3s [2 attempts]")
    assert server.requests == 2


def test_connection_refused_is_a_server_error():
    client = client_for(closed_port_url(), max_retries=1)
    (r,) = run(complete_all(client, [chat("x")]))
    assert r.failure == JudgeFailure.server_error("connection error (ConnectError) [2 attempts]")
    assert client.stats["requests"] == 2 and client.stats["retries"] == 1


# --------------------------------------------------------------------------------------------------
# Latency, cache, concurrency
# --------------------------------------------------------------------------------------------------


def test_latency_percentiles_match_the_server_sleeps(serve):
    # two groups of sleeps, SLACK apart: 5 short ones (0.05 .. 0.25 s) and 5 long ones (3.05 .. 3.25 s)
    SLACK = 2.5  # over a call's sleep: 5x+ the HTTP round trip on a loaded 2-core machine (0.29-0.39 s seen)
    sleeps = {f"q{i}": 0.05 * i + (3.0 if i > 5 else 0.0) for i in range(1, 11)}
    server = serve(lambda n, body: Answer(sleep_s=sleeps[body["messages"][-1]["content"]]))
    client = client_for(server, concurrency=10, timeout_s=30)
    chats = [chat(q) for q in sleeps]
    replies = run(complete_all(client, chats + chats[:3]))  # 3 identical calls: shared, not timed
    telemetry = JudgeTelemetry()
    telemetry.record_many(replies)
    summary = telemetry.summary()
    assert summary["judge/calls"] == 13 and summary["judge/cache_hits"] == 3 and server.requests == 10
    for q, r in zip(sleeps, replies):
        assert sleeps[q] - 0.01 <= r.latency_s <= sleeps[q] + SLACK  # the server's time + the HTTP round trip
    # the ranking follows the sleeps: every short call below every long one (0.25 + SLACK < 3.05)
    short, long = [r.latency_s for r in replies[:5]], [r.latency_s for r in replies[5:10]]
    assert max(short) < min(long)
    # nearest rank over the 10 timed calls: p50 = 5th smallest (the longest short call, 0.25 s), p95 = 10th (3.25 s)
    assert summary["judge/latency_p50_s"] == sorted(r.latency_s for r in replies[:10])[4] == max(short)
    assert summary["judge/latency_p95_s"] == max(r.latency_s for r in replies[:10]) == max(long)
    assert 0.24 <= summary["judge/latency_p50_s"] <= 0.25 + SLACK < 3.24 <= summary["judge/latency_p95_s"]


def test_nearest_rank_percentiles():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert nearest_rank(values, 50) == 3.0  # ceil(2.5) = 3rd smallest
    assert nearest_rank(values, 95) == 5.0
    assert nearest_rank(values, 20) == 1.0 and nearest_rank(values, 21) == 2.0
    assert nearest_rank([7.0], 50) == 7.0 and math.isnan(nearest_rank([], 50))
    assert nearest_rank(list(range(1, 101)), 95) == 95
    with pytest.raises(ValueError):
        nearest_rank(values, 0)


def test_telemetry_percentiles_match_nearest_rank_whatever_order_the_calls_came_in():
    """The telemetry keeps its latencies sorted as they arrive (the verl reward manager asks for a summary after
    every sample, which sorted them all each time); its percentiles are still those of nearest_rank."""
    import random

    rng = random.Random(0)
    latencies = [rng.uniform(0.01, 9.0) for _ in range(997)]
    telemetry = JudgeTelemetry()
    for i, latency in enumerate(latencies):
        telemetry.record(JudgeReply(text="x", failure=None, latency_s=latency))
        if i in (0, 1, 10, 500, 996):
            summary = telemetry.summary()
            assert summary["judge/latency_p50_s"] == nearest_rank(latencies[: i + 1], 50)
            assert summary["judge/latency_p95_s"] == nearest_rank(latencies[: i + 1], 95)


def test_identical_calls_are_sent_once(serve):
    server = serve(lambda n, body: Answer(text=f"answer {n}", prompt_tokens=9, completion_tokens=4, sleep_s=0.1))
    client = client_for(server)

    async def scenario():
        async with client:
            calls = asyncio.gather(*(client.complete(chat("same")) for _ in range(3)))  # in flight together
            together = await asyncio.wait_for(calls, timeout=30)  # a hang guard: 0.1 s sleeps
            later = await client.complete(chat("same"))  # from the cache
            other = await client.complete(chat("different"))
            return together, later, other

    together, later, other = run(scenario())
    assert server.requests == 2  # "same" once, "different" once
    assert [r.text for r in together] == ["answer 1"] * 3 and later.text == "answer 1" and other.text == "answer 2"
    assert sum(r.cached for r in together) == 2 and later.cached and not other.cached
    sent = [r for r in together if not r.cached][0]
    assert (sent.prompt_tokens, sent.completion_tokens, sent.attempts) == (9, 4, 1)
    assert all((r.prompt_tokens, r.completion_tokens, r.latency_s, r.attempts) == (0, 0, 0.0, 0)
               for r in [*together, later] if r.cached)  # fmt: skip
    assert client.stats == {"calls": 5, "requests": 2, "retries": 0, "failures": 0, "cache_hits": 3}
    # the cache outlives the event loop: a new loop still gets it
    (again,) = complete_many(client, [chat("same")])
    assert again.cached and server.requests == 2
    # other parameters, another request
    run(complete_all(client_for(server, max_tokens=99), [chat("same")]))
    assert server.requests == 3
    telemetry = JudgeTelemetry()
    telemetry.record_many([*together, later, other])
    assert telemetry.summary()["judge/cache_hits"] == 3 and telemetry.summary()["judge/prompt_tokens"] == 18


def test_failures_are_not_cached(serve):
    server = serve(lambda n, body: Answer(status=500) if n == 1 else Answer())
    client = client_for(server, max_retries=0)
    first, second = complete_many(client, [chat("x")]), complete_many(client, [chat("x")])
    assert not first[0].ok and second[0].ok and not second[0].cached
    assert server.requests == 2


def test_a_cancelled_call_does_not_strand_an_identical_one(serve):
    server = serve(Answer(sleep_s=0.3))
    client = client_for(server)

    async def scenario():
        async with client:
            first = asyncio.create_task(client.complete(chat("x")))
            await asyncio.sleep(0.05)
            second = asyncio.create_task(client.complete(chat("x")))  # waits on the first
            await asyncio.sleep(0.05)
            first.cancel()
            return await asyncio.wait_for(second, timeout=30)  # not stranded waiting (a 0.3 s sleep: a hang guard)

    r = run(scenario())
    assert r.ok and not r.cached and server.requests == 2


def test_concurrency_cap_is_respected(serve):
    server = serve(Answer(sleep_s=1.0))
    client = client_for(server, concurrency=3, timeout_s=30)
    start = time.monotonic()
    replies = run(complete_all(client, [chat(f"q{i}") for i in range(10)]))
    elapsed = time.monotonic() - start
    assert all(r.ok for r in replies) and server.requests == 10
    assert server.peak == 3  # concurrent, and never more than the cap
    assert elapsed >= 4 * 1.0 - 0.02  # ceil(10 / 3) rounds
    # latency_s starts when a call gets its slot: the waiting in the queue is not the judge's latency. Counted from the
    # call, the last round's calls would read >= 4 s (over the 3 s bound), >= 3 s more than the first round's (over the
    # 2 s bound). The 2 s slack over the 1 s sleep is 5x+ the HTTP round trip on a loaded 2-core machine (0.29-0.39 s).
    assert all(1.0 - 0.01 <= r.latency_s < 1.0 + 2.0 for r in replies)
    assert max(r.latency_s for r in replies) < min(r.latency_s for r in replies) + 2.0  # no growth with the queue


def test_complete_many_outside_and_inside_an_event_loop(serve):
    server = serve(lambda n, body: Answer(text=body["messages"][-1]["content"].upper()))
    client = client_for(server, concurrency=2)
    chats = [chat(f"q{i}") for i in range(5)]
    assert [r.text for r in complete_many(client, chats)] == [f"Q{i}" for i in range(5)]

    async def caller():  # a running loop in this thread: complete_many uses a worker thread
        return complete_many(client, [chat("inside")])

    (r,) = run(caller())
    assert r.text == "INSIDE" and server.peak <= 2


# --------------------------------------------------------------------------------------------------
# The API key
# --------------------------------------------------------------------------------------------------


def test_api_key_is_sent_and_never_exposed(serve, monkeypatch):
    outcomes = {"ok": Answer(), "500": Answer(status=500), "garbage": Answer(raw=b"oops"),
                "length": Answer(finish_reason="length"), "hang": Answer(sleep_s=60)}  # fmt: skip
    server = serve(lambda n, body: outcomes[body["messages"][-1]["content"]])
    # the answered calls get 30 s (75x+ a loaded 2-core machine's 0.29-0.39 s round trip); only the hang is timed out
    client = client_for(server, timeout_s=30, max_retries=1)
    hang_client = client_for(server, timeout_s=0.3, max_retries=1)
    replies = complete_many(client, [chat(k) for k in outcomes if k != "hang"])
    replies += complete_many(hang_client, [chat("hang")])
    replies += complete_many(client_for(closed_port_url(), max_retries=0), [chat("refused")])
    assert [r.ok for r in replies] == [True, False, False, False, False, False]
    assert "timeout after 0.3s" in replies[4].failure.detail
    assert set(server.authorization) == {f"Bearer {SECRET}"}

    telemetry = JudgeTelemetry()
    telemetry.record_many(replies)
    with pytest.raises(JudgeFailureRateExceeded) as e:
        telemetry.check_failure_rate(0.1, client.endpoint)
    exposed = [repr(client), str(client), repr(vars(client)), repr(client.stats), repr(replies),
               repr(hang_client), repr(vars(hang_client)),
               str(telemetry.summary()), repr(telemetry.commonest_failure()), str(e.value), repr(e.value)]  # fmt: skip
    exposed += [r.failure.detail for r in replies if r.failure]
    assert all(SECRET not in text for text in exposed)
    assert all(SECRET[3:15] not in text for text in exposed)

    # read at request time: a new value is used at once, an unset variable sends no header
    monkeypatch.setenv(KEY_ENV, "sk-rotated")
    complete_many(client, [chat("ok"), chat("ok") + chat("again")])
    assert server.authorization[-1] == "Bearer sk-rotated"
    monkeypatch.delenv(KEY_ENV)
    complete_many(client, [chat("ok") + chat("third")])
    assert server.authorization[-1] is None


# --------------------------------------------------------------------------------------------------
# Telemetry
# --------------------------------------------------------------------------------------------------


def _reply(failure: JudgeFailure | None = None, **kwargs) -> JudgeReply:
    return JudgeReply(None if failure else "[[1]]", failure, **kwargs)


def test_telemetry_summary_keys_and_failure_rate():
    t = JudgeTelemetry()
    assert t.summary()["judge/calls"] == 0 and math.isnan(t.summary()["judge/failure_rate"])
    assert math.isnan(t.summary()["judge/latency_p50_s"]) and t.commonest_failure() == (None, 0)
    t.check_failure_rate(0.0, "http://x/v1")  # no calls: passes

    t.record(_reply(prompt_tokens=5, completion_tokens=1, latency_s=0.2, attempts=1))
    t.record(_reply(cached=True))
    for _ in range(3):
        t.record(_reply(JudgeFailure.server_error("HTTP 500 [4 attempts]"), latency_s=2.0, attempts=4))
    t.record(_reply(JudgeFailure.truncated("..."), prompt_tokens=7, completion_tokens=512, latency_s=1.0, attempts=1))
    # a reply that came back fine but did not parse
    parsed = parse_verif_reply("I think it is fine.")
    t.record(_reply(latency_s=0.5, attempts=1), parsed)
    summary = t.summary()
    assert set(summary) == set(JudgeTelemetry.BASE_KEYS) | {
        "judge/failures/judge server error",
        "judge/failures/judge reply truncated",
        f"judge/failures/{unparseable(NO_VERDICT)}",
    }
    assert summary["judge/calls"] == 7 and summary["judge/cache_hits"] == 1
    assert summary["judge/prompt_tokens"] == 12 and summary["judge/completion_tokens"] == 513
    assert summary["judge/failures"] == 5 and summary["judge/failure_rate"] == pytest.approx(5 / 7)
    assert summary["judge/failures/judge server error"] == 3 and summary["judge/failures/judge reply truncated"] == 1
    assert summary[f"judge/failures/{unparseable(NO_VERDICT)}"] == 1
    assert sum(v for k, v in summary.items() if k.startswith("judge/failures/")) == summary["judge/failures"]
    # latencies of the 6 non-cached calls: 0.2, 0.5, 1.0, 2.0, 2.0, 2.0 -> p50 = 3rd, p95 = 6th
    assert summary["judge/latency_p50_s"] == 1.0 and summary["judge/latency_p95_s"] == 2.0
    assert all(isinstance(v, float) for v in summary.values())
    assert t.commonest_failure() == (JUDGE_SERVER_ERROR, 3)

    t.check_failure_rate(0.75, "http://x/v1")  # 71% <= 75%: passes
    with pytest.raises(JudgeFailureRateExceeded) as e:
        t.check_failure_rate(0.5, "http://user:pw@judge.internal:8000/v1")
    message = str(e.value)
    assert "\n" not in message
    assert message == ("judge failure rate 71.4% (5/7 calls) at http://***@judge.internal:8000/v1 exceeds the "
                       "threshold 50.0%; commonest reason: judge server error (3)")  # fmt: skip
    assert (e.value.rate, e.value.max_rate, e.value.reason, e.value.reason_count) == (5 / 7, 0.5, JUDGE_SERVER_ERROR, 3)

    t.reset()
    assert t.summary()["judge/calls"] == 0 and len(t) == 0 and set(t.summary()) == set(JudgeTelemetry.BASE_KEYS)


def test_telemetry_refuses_a_second_failure_for_a_failed_reply():
    t = JudgeTelemetry()
    failed = _reply(JudgeFailure.server_error("HTTP 500"))
    t.record(failed, failed.failure)  # the same failure passed through a parser: fine
    with pytest.raises(ValueError):
        t.record(failed, JudgeFailure.unparseable(NO_VERDICT))
    assert t.summary()["judge/failures"] == 1


def test_check_failure_rate_on_real_failures(serve):
    server = serve(lambda n, body: Answer(status=503) if body["messages"][-1]["content"] != "ok" else Answer())
    client = client_for(server, max_retries=1)
    telemetry = JudgeTelemetry()
    telemetry.record_many(complete_many(client, [chat("ok"), chat("a"), chat("b"), chat("c")]))
    assert server.requests == 1 + 3 * 2
    assert telemetry.summary()["judge/failure_rate"] == 0.75
    with pytest.raises(JudgeFailureRateExceeded, match=r"^judge failure rate 75\.0% \(3/4 calls\) at "
                       rf"{server.base_url} exceeds the threshold 20\.0%; commonest reason: judge server error \(3\)$"):
        telemetry.check_failure_rate(0.2, client.endpoint)


# --------------------------------------------------------------------------------------------------
# Construction
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"timeout_s": 0}, "timeout_s=0"),
        ({"timeout_s": float("nan")}, "timeout_s=nan"),
        ({"backoff_s": -1}, "backoff_s=-1"),
        ({"concurrency": 0}, "concurrency=0"),
        ({"max_retries": -1}, "max_retries=-1"),
        ({"max_tokens": 0}, "max_tokens=0"),
        ({"temperature": -0.1}, "temperature=-0.1"),
        ({"extra_body": {"max_tokens": 5}}, "extra_body sets max_tokens"),
        ({"extra_body": {"chat_template_kwargs": {}}}, "extra_body sets chat_template_kwargs"),
        ({"chat_template_kwargs": {"x": object()}}, "extra_body and chat_template_kwargs must be JSON"),
    ],
)
def test_constructor_refuses_bad_parameters(kwargs, name):
    with pytest.raises(ValueError) as e:
        AsyncJudgeClient("http://127.0.0.1:1/v1", "x", **kwargs)
    assert str(e.value).startswith(name) and "\n" not in str(e.value)


def test_bad_messages_are_a_type_error():
    client = AsyncJudgeClient("http://127.0.0.1:1/v1", "x")
    for bad in ("hello", [], ["hello"]):
        with pytest.raises(TypeError):
            run(client.complete(bad))


def test_error_messages_option_carries_the_servers_message_with_the_key_masked(serve, monkeypatch):
    """The evaluation harness's OpenAIServer asks for the server's own message (a vLLM context-length refusal
    says why); a server echoing the key gets it masked."""
    server = serve(lambda n, body: Answer(status=400, text=None))
    (plain,) = run(complete_all(client_for(server, max_retries=0), [chat("x")]))
    assert plain.failure.detail == "HTTP 400 [1 attempt]"
    (told,) = run(complete_all(client_for(server, max_retries=0, error_messages=True), [chat("x")]))
    assert told.failure.detail == "HTTP 400: simulated [1 attempt]"
    # the shapes servers answer with: OpenAI's error.message, vLLM's top-level message, none at all
    client = client_for(server, error_messages=True)
    echoed = httpx.Response(401, json={"error": {"message": f"Incorrect API key\n provided: {SECRET}"}})
    assert client._error_message(echoed) == ": Incorrect API key provided: ***"
    assert client._error_message(httpx.Response(400, json={"object": "error", "message": "too long"})) == ": too long"
    assert client._error_message(httpx.Response(502, text="<html>bad gateway</html>")) == ""
