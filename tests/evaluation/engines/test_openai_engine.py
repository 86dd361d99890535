"""OpenAIEngine against the project's own OpenAI-compatible server, serving the tiny random model."""

from __future__ import annotations

import time

import httpx
import pytest
import torch

from judge_rl.config import ModelConfig
from judge_rl.evaluation.engines import INFERENCE_ENGINES, Completion, HFEngine, OpenAIEngine
from judge_rl.evaluation.engines.server import ChatCompletionServer
from judge_rl.models.loading import load_model, load_tokenizer

TINY = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
CACHE_DIR = "~/.cache/judge_rl"
MAX_NEW = 8

MESSAGES = [
    [{"role": "user", "content": "Which response is better, A or B?"}],
    [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Score this answer: 42."}],
    [{"role": "user", "content": "Hi"}],
]


@pytest.fixture(scope="module")
def tiny():
    tokenizer = load_tokenizer(TINY, CACHE_DIR)
    model = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
    # At its default init scale the tiny model answers every prompt with newlines; larger weights make
    # the greedy outputs differ by prompt, so comparing engines means something.
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.5, generator=g)
    return model, tokenizer


@pytest.fixture
def serve(tiny):
    servers = []

    def start(**kwargs) -> ChatCompletionServer:
        server = ChatCompletionServer(*tiny, "tiny-random", 0, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.shutdown()


def test_registry_names_both_engines():
    assert INFERENCE_ENGINES.get("hf") is HFEngine and INFERENCE_ENGINES.get("openai") is OpenAIEngine


def test_server_speaks_openai_format(serve):
    server = serve()
    assert server.httpd.server_address[0] == "127.0.0.1"
    models = httpx.get(f"{server.base_url}/models").json()
    assert models["data"][0]["id"] == "tiny-random"
    r = httpx.post(
        f"{server.base_url}/chat/completions",
        json={"model": "tiny-random", "messages": MESSAGES[0], "max_tokens": 4, "temperature": 0},
    ).json()
    assert isinstance(r["choices"][0]["message"]["content"], str)
    assert r["choices"][0]["finish_reason"] in ("stop", "length")
    assert r["usage"]["completion_tokens"] <= 4
    bad = httpx.post(f"{server.base_url}/chat/completions", json={"messages": "nope"})
    assert bad.status_code == 400


def test_openai_engine_matches_hf_engine(serve, tiny):
    server = serve()
    hf = HFEngine(*tiny, batch_size=1).complete(MESSAGES, max_new_tokens=MAX_NEW)
    with OpenAIEngine(server.base_url, "tiny-random", concurrency=2) as engine:
        remote = engine.complete(MESSAGES, max_new_tokens=MAX_NEW)
    assert all(c.ok for c in hf + remote)
    assert len({c.text for c in hf}) == len(MESSAGES)  # distinct answers: the comparison is not vacuous
    assert remote == hf
    assert engine.stats == {"requests": 3, "retries": 0, "failures": 0, "cache_hits": 0}


def test_identical_requests_are_sent_once(serve):
    server = serve()
    with OpenAIEngine(server.base_url, "tiny-random") as engine:
        first = engine.complete([MESSAGES[0], MESSAGES[0]], max_new_tokens=MAX_NEW)
        assert first[0] == first[1] and first[0].ok
        assert engine.stats["requests"] == 1 and server.requests_seen == 1
        again = engine.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)  # cached across calls too
        assert again == first[:1] and engine.stats["requests"] == 1
        engine.complete([MESSAGES[0]], max_new_tokens=MAX_NEW + 1)  # different params: a new request
        assert engine.stats["requests"] == 2


def test_retries_through_server_errors(serve):
    server = serve(fail_first_n=2)
    with OpenAIEngine(server.base_url, "tiny-random", max_retries=3, backoff_s=0.01) as engine:
        (c,) = engine.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    assert c.ok and c.text is not None
    assert engine.stats["retries"] == 2 and engine.stats["requests"] == 3 and engine.stats["failures"] == 0


def test_too_few_retries_gives_a_failure_not_a_verdict(serve):
    server = serve(fail_first_n=2)
    with OpenAIEngine(server.base_url, "tiny-random", max_retries=1, backoff_s=0.01) as engine:
        (c,) = engine.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
        assert c.text is None and not c.ok and not c.finished
        assert "500" in c.error
        assert engine.stats == {"requests": 2, "retries": 1, "failures": 1, "cache_hits": 0}
        # failures are not cached: the next call asks again (and the server has recovered)
        (again,) = engine.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
        assert again.ok


def test_client_errors_are_not_retried(serve):
    server = serve()
    with OpenAIEngine(server.base_url, "tiny-random", max_retries=3, backoff_s=0.01) as engine:
        (c,) = engine.complete([[{"role": "user"}]], max_new_tokens=MAX_NEW)  # no content: HTTP 400
    assert c.text is None and "400" in c.error
    assert engine.stats["requests"] == 1 and engine.stats["retries"] == 0 and engine.stats["failures"] == 1


def test_timeout_gives_a_failure(serve):
    server = serve(delay_s=2.0)
    start = time.monotonic()
    with OpenAIEngine(server.base_url, "tiny-random", timeout_s=0.5, max_retries=1, backoff_s=0.01) as engine:
        (c,) = engine.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    assert time.monotonic() - start < 2.0
    assert c == Completion(text=None, error=c.error, finished=False)
    assert "timeout" in c.error.lower()
    assert engine.stats["failures"] == 1 and engine.stats["requests"] == 2


def test_connection_refused_gives_a_failure():
    with OpenAIEngine("http://127.0.0.1:1/v1", "x", max_retries=0) as engine:
        (c,) = engine.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    assert c.text is None and "connection" in c.error


def test_api_key_comes_from_the_env_and_is_never_exposed(serve, monkeypatch):
    server = serve()
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("JUDGE_TEST_KEY", secret)
    with OpenAIEngine(server.base_url, "tiny-random", api_key_env="JUDGE_TEST_KEY") as engine:
        (c,) = engine.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    assert c.ok
    assert server.seen_authorization == [f"Bearer {secret}"]
    assert secret not in repr(engine) and secret not in str(engine.stats)
    assert all(secret not in repr(v) for v in vars(engine).values() if not hasattr(v, "headers"))
    assert secret not in repr(engine._client.headers)

    monkeypatch.delenv("JUDGE_TEST_KEY")
    with OpenAIEngine(server.base_url, "tiny-random", api_key_env="JUDGE_TEST_KEY") as engine:
        engine.complete([MESSAGES[1]], max_new_tokens=MAX_NEW)
    assert server.seen_authorization[-1] is None  # no header when the variable is unset
