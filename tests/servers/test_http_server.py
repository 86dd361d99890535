"""The batched OpenAI-compatible server (judge_rl/servers/http.py) on the tiny random model: batching,
and its fault hooks seen through the policy job's judge client (a real local server that fails, hangs,
returns garbage or scripted replies)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
import torch

from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.servers.client import AsyncJudgeClient, JudgeTelemetry, complete_many
from judge_rl.policy.rewards import JUDGE_SERVER_ERROR, JudgeFailure
from judge_rl.policy.rewards.rubric import parse_yesno_reply
from judge_rl.config.paths import load_model_config
from judge_rl.servers.http import ChatCompletionServer

from conftest import CACHE_DIR

MAX_TOKENS = 8
CHATS = [[{"role": "user", "content": f"Is answer {i} correct? {'Explain. ' * (i % 3)}"}] for i in range(8)]


@pytest.fixture(scope="module")
def tiny():
    cfg = load_model_config("tiny-random")
    tokenizer = load_tokenizer(cfg, CACHE_DIR)
    model = load_model(cfg, CACHE_DIR, torch.device("cpu"), seed=0)
    # larger weights than the default init, so greedy answers differ by prompt (as in test_openai_server)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.5, generator=g)
    return model, tokenizer


@pytest.fixture
def serve(tiny):
    servers: list[ChatCompletionServer] = []

    def start(**kwargs) -> ChatCompletionServer:
        server = ChatCompletionServer(*tiny, "tiny-random", 0, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.shutdown()


def client(server: ChatCompletionServer, **kwargs) -> AsyncJudgeClient:
    kwargs = {"max_tokens": MAX_TOKENS, "backoff_s": 0.0, "max_retries": 0, "timeout_s": 30, "concurrency": 8, **kwargs}
    return AsyncJudgeClient(server.base_url, "tiny-random", **kwargs)


def post(server: ChatCompletionServer, messages, **body) -> httpx.Response:
    return httpx.post(f"{server.base_url}/chat/completions", timeout=30,
                      json={"model": "tiny-random", "messages": messages, "max_tokens": MAX_TOKENS, **body})


# -- batching ---------------------------------------------------------------------------------------


def post_all(server: ChatCompletionServer, chats, extra: list[dict] | None = None) -> list[httpx.Response]:
    """The chats sent at once, one thread each (chat i with body fields extra[i]); responses in input order."""
    answers: list[httpx.Response | None] = [None] * len(chats)

    def send(i: int) -> None:
        answers[i] = post(server, chats[i], **(extra[i] if extra else {}))

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(chats))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert all(a is not None and a.status_code == 200 for a in answers)
    return answers  # type: ignore[return-value]


def text(response: httpx.Response) -> str:
    return response.json()["choices"][0]["message"]["content"]


def test_concurrent_requests_share_a_generate_call_and_answer_as_if_alone(serve):
    one_by_one = serve(batch_wait_s=0.0)
    alone = [text(post(one_by_one, m)) for m in CHATS]
    assert one_by_one.batch_sizes == [1] * len(CHATS)
    assert len(set(alone)) > 1  # the answers differ by prompt: the comparison is not vacuous

    batched = serve(max_batch=16, batch_wait_s=1.0)
    together = [text(r) for r in post_all(batched, CHATS)]
    assert together == alone
    assert max(batched.batch_sizes) > 1 and sum(batched.batch_sizes) == len(CHATS)


def test_a_full_batch_goes_at_once_and_requests_group_by_generation_parameters(serve):
    server = serve(max_batch=8, batch_wait_s=600.0)  # only a full batch can go before the 600 s wait ends
    start = time.monotonic()
    budgets = [4 if i % 2 else 6 for i in range(len(CHATS))]
    answers = post_all(server, CHATS, [{"max_tokens": m} for m in budgets])
    # not the 600 s wait: the full batch went at once (~2 s on a loaded 2-core machine, so 300 s is 100x+; each post's
    # own timeout is 30 s, so a batch left waiting fails post_all's status check first)
    assert time.monotonic() - start < 300
    assert server.batch_sizes == [4, 4]  # one batch of 8: a generate call per max_tokens
    assert [a.json()["usage"]["completion_tokens"] for a in answers] == budgets  # the random model never stops early


def test_max_batch_caps_a_generate_call(serve):
    server = serve(max_batch=3, batch_wait_s=0.5)
    post_all(server, CHATS)
    assert max(server.batch_sizes) <= 3 and sum(server.batch_sizes) == len(CHATS)


def test_validation_and_context_length_are_refused_before_the_queue(serve):
    server = serve()
    assert post(server, "nope").status_code == 400
    assert post(server, CHATS[0], max_tokens=0).status_code == 400
    assert post(server, CHATS[0], temperature=-1).status_code == 400
    too_long = post(server, CHATS[0], max_tokens=5000)  # the tiny model's context is 2048
    assert too_long.status_code == 400 and "maximum context length is 2048" in too_long.json()["error"]["message"]
    assert server.batch_sizes == []


def test_a_request_for_another_model_is_refused_404_as_vllm_does(serve):
    """On the main before this the server answered a request for "gpt-4" with its own model's output, so a client
    configured with the wrong served_model never noticed."""
    server = serve()
    wrong = post(server, CHATS[0], model="gpt-4")
    assert wrong.status_code == 404
    error = wrong.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("NotFoundError", "model", "model_not_found")
    assert "`gpt-4` does not exist" in error["message"] and "tiny-random" in error["message"]
    assert server.batch_sizes == []  # nothing generated for it
    assert post(server, CHATS[0]).status_code == 200  # the served name is answered


def test_a_route_under_the_wrong_method_is_405_and_an_unknown_one_404(serve):
    server = serve()
    got = httpx.get(f"{server.base_url}/chat/completions", timeout=10)
    assert got.status_code == 405 and got.headers["allow"] == "POST"
    assert "method not allowed" in got.json()["error"]["message"]
    posted = httpx.post(f"{server.base_url}/models", json={}, timeout=10)
    assert posted.status_code == 405 and posted.headers["allow"] == "GET"
    assert httpx.get(f"{server.base_url}/nowhere", timeout=10).status_code == 404
    deleted = httpx.delete(f"{server.base_url}/chat/completions", timeout=10)
    assert deleted.status_code == 405 and deleted.headers["allow"] == "POST"  # not http.server's 501
    assert httpx.get(f"{server.base_url}/models", timeout=10).json()["data"][0]["id"] == "tiny-random"


@pytest.mark.parametrize("kwargs, name", [({"max_batch": 0}, "max_batch=0"), ({"batch_wait_s": -1}, "batch_wait_s=-1"),
                                          ({"fail_every": -1}, "fail_every=-1")])
def test_constructor_refuses_bad_parameters(tiny, kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        ChatCompletionServer(*tiny, "tiny-random", 0, **kwargs)


# -- fault hooks, seen through the judge client -----------------------------------------------------


def yes(n: int, body: dict) -> str:
    """A scripted judge that answers every request "yes" (replies that parse, without generating)."""
    return "yes"


def server_errors(replies) -> list:
    return [r for r in replies if r.failure is not None and r.failure.reason == JUDGE_SERVER_ERROR]


def test_fail_every_gives_server_errors_for_exactly_those_requests(serve):
    server = serve(fail_every=2)  # generating: the random model's other replies hit max_tokens ("truncated")
    telemetry = JudgeTelemetry()
    replies = complete_many(client(server), CHATS)
    telemetry.record_many(replies)
    failed = server_errors(replies)
    assert len(failed) == 4 and server.requests_seen == 8 and sum(server.batch_sizes) == 4
    assert all("HTTP 500" in r.failure.detail and r.attempts == 1 for r in failed)
    summary = telemetry.summary()
    assert summary[f"judge/failures/{JUDGE_SERVER_ERROR}"] == 4
    assert summary["judge/failures/judge reply truncated"] == 4


def test_fail_every_is_retried_through(serve):
    server = serve(fail_every=2, reply_override=yes)
    judge = client(server, max_retries=2)
    (reply,) = complete_many(judge, CHATS[:1])  # request 1 answers
    assert reply.ok and reply.attempts == 1
    (reply,) = complete_many(judge, CHATS[1:2])  # request 2 fails, its retry (request 3) answers
    assert reply.ok and reply.text == "yes" and reply.attempts == 2 and server.requests_seen == 3


def test_hung_requests_time_out_within_the_attempt_budget(serve):
    server = serve(hang_every=2, hang_s=120.0, reply_override=yes)  # the hangs end at teardown (shutdown answers 503)
    # one request at a time, so the server's request n is chat n: the answered ones (odd n) get 30 s, 100x a loaded
    # 2-core machine's 0.29-0.39 s round trip; only the hung ones (even n) get the short timeout
    answered, short = client(server), client(server, timeout_s=0.5)
    start = time.monotonic()
    replies = [complete_many(short if n % 2 == 0 else answered, [chat])[0] for n, chat in enumerate(CHATS[:4], 1)]
    elapsed = time.monotonic() - start
    failed = server_errors(replies)
    assert len(failed) == 2 and [r.ok for r in replies] == [True, False, True, False] and server.requests_seen == 4
    # 0.5 s each (~1 s at most on a loaded 2-core machine: 30 s is 5x+ that), not the 120 s the server hangs
    assert all("timeout after 0.5s" in r.failure.detail and r.latency_s < 30 for r in failed)
    assert elapsed < 30  # 2 x 0.5 s and 2 replies; waiting out one hang would take 120 s


def test_every_attempt_hanging_fails_after_max_retries_plus_one_timeouts(serve):
    server = serve(hang_every=1, hang_s=120.0, reply_override=yes)  # the hangs end at teardown (shutdown answers 503)
    start = time.monotonic()
    replies = complete_many(client(server, timeout_s=0.5, max_retries=1), CHATS[:3])
    elapsed = time.monotonic() - start
    # the counts are the attempt budget: (max_retries + 1) attempts of each call, each timed out
    assert len(server_errors(replies)) == 3 and all("[2 attempts]" in r.failure.detail for r in replies)
    assert server.requests_seen == 6
    # (max_retries + 1) * timeout_s = 1 s each (~2 s at most on a loaded 2-core machine: 30 s is 5x+ that), not the
    # 120 s the server hangs
    assert all(1.0 <= r.latency_s < 30 for r in replies)
    assert elapsed < 30


def test_garbage_bodies_are_server_errors(serve):
    server = serve(garbage_every=2, reply_override=yes)
    first, second = post(server, CHATS[0]), post(server, CHATS[0])
    assert first.status_code == second.status_code == 200 and second.content == b"<html>garbage"
    replies = complete_many(client(server), CHATS)
    failed = server_errors(replies)
    assert len(failed) == 4 and sum(r.ok for r in replies) == 4
    assert all("malformed response" in r.failure.detail and r.attempts == 1 for r in failed)  # not retried


def test_reply_override_scripts_replies_through_the_real_path(serve):
    seen: list[tuple[int, str]] = []

    def script(n: int, body: dict) -> str:
        seen.append((n, body["messages"][-1]["content"]))
        return "yes" if n % 2 else "I cannot say"

    server = serve(reply_override=script)
    replies = complete_many(client(server, concurrency=1), CHATS[:4])
    assert all(r.ok and r.finish_reason == "stop" for r in replies)
    assert [r.text for r in replies] == ["yes", "I cannot say", "yes", "I cannot say"]
    assert [r.completion_tokens for r in replies] == [1, 3, 1, 3] and all(r.prompt_tokens > 0 for r in replies)
    assert [n for n, _ in seen] == [1, 2, 3, 4] and server.batch_sizes == []  # nothing generated
    verdicts = [parse_yesno_reply(r.result) for r in replies]
    assert verdicts[0] is True and isinstance(verdicts[1], JudgeFailure)
    telemetry = JudgeTelemetry()
    for r, v in zip(replies, verdicts):
        telemetry.record(r, v if isinstance(v, JudgeFailure) else None)
    assert telemetry.summary()["judge/failures"] == 2


# -- shutdown ---------------------------------------------------------------------------------------


def _call_in_background(server: ChatCompletionServer, **kwargs):
    out: list = []
    thread = threading.Thread(target=lambda: out.extend(complete_many(client(server, **kwargs), CHATS[:1])))
    thread.start()
    deadline = time.monotonic() + 60  # a hang guard: the request arrives in well under 1 s
    while server.requests_seen < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.requests_seen == 1
    return thread, out


def test_shutdown_answers_a_hung_request_503_promptly(serve):
    server = serve(hang_every=1, hang_s=600.0, reply_override=yes)
    thread, out = _call_in_background(server, timeout_s=30)
    start = time.monotonic()
    server.shutdown()
    thread.join(timeout=60)
    # promptly: the 503 below came before the client's own 30 s timeout, and the whole shutdown is well under the
    # 600 s hang (the bound is 5x+ the few seconds it can take on a loaded 2-core machine)
    assert time.monotonic() - start < 60 and not thread.is_alive()
    (reply,) = out
    assert not reply.ok and "HTTP 503" in reply.failure.detail


def test_shutdown_answers_a_queued_request_503_and_leaves_no_generation_running(serve):
    server = serve(batch_wait_s=600.0)  # the request sits in the queue waiting for company
    thread, out = _call_in_background(server, timeout_s=30)
    deadline = time.monotonic() + 60  # a hang guard: queued in well under 1 s
    while not server._queue and time.monotonic() < deadline:
        time.sleep(0.01)
    start = time.monotonic()
    server.shutdown()
    thread.join(timeout=60)
    # promptly: the 503 below came before the client's own 30 s timeout, and the whole shutdown is well under the
    # 600 s batch wait (the bound is 5x+ the few seconds it can take on a loaded 2-core machine)
    assert time.monotonic() - start < 60 and not thread.is_alive()
    (reply,) = out
    assert not reply.ok and "HTTP 503" in reply.failure.detail
    assert server.batch_sizes == [] and not server._worker.is_alive()


def test_stop_strings_cut_the_reply_as_openai_does(tiny):
    """`stop` ends the reply before the first stop string, finish_reason "stop"; without it the same greedy reply runs
    to max_tokens ("length"). A bad `stop` is a 400."""
    model, tokenizer = tiny
    with ChatCompletionServer(model, tokenizer, "tiny-random", 0) as server:
        body = {"messages": [{"role": "user", "content": "Say something."}], "max_tokens": 12}
        status, full = server.chat_completion(body)
        text = full["choices"][0]["message"]["content"]
        assert status == 200 and full["choices"][0]["finish_reason"] == "length" and len(text) > 3
        stop = text[2:4]
        status, cut = server.chat_completion({**body, "stop": [stop]})
        assert status == 200
        assert cut["choices"][0]["message"]["content"] == text[: text.find(stop)]
        assert cut["choices"][0]["finish_reason"] == "stop"
        assert server.chat_completion({**body, "stop": [""]})[0] == 400
        assert server.chat_completion({**body, "stop": 3})[0] == 400
