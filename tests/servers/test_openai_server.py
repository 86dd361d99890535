"""OpenAIServer against the project's own OpenAI-compatible server, serving the tiny random model."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import threading
import time

import httpx
import pytest
import torch

from judge_rl.config import ModelConfig
from judge_rl.servers import SERVERS, Completion, HFServer, OpenAIServer
from judge_rl.servers.http import ChatCompletionServer
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
    # the greedy outputs differ by prompt, so comparing servers means something.
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


def test_registry_names_every_server():
    assert SERVERS.get("hf") is HFServer and SERVERS.get("openai") is OpenAIServer


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


def test_openai_server_matches_hf_server(serve, tiny):
    server = serve()
    hf = HFServer(*tiny, batch_size=1).complete(MESSAGES, max_new_tokens=MAX_NEW)
    with OpenAIServer(server.base_url, "tiny-random", concurrency=2) as client:
        remote = client.complete(MESSAGES, max_new_tokens=MAX_NEW)
    assert all(c.ok for c in hf + remote)
    assert len({c.text for c in hf}) == len(MESSAGES)  # distinct answers: the comparison is not vacuous
    assert remote == hf
    assert client.stats == {"requests": 3, "retries": 0, "failures": 0, "cache_hits": 0}


def test_identical_requests_are_sent_once(serve):
    server = serve()
    with OpenAIServer(server.base_url, "tiny-random") as client:
        first = client.complete([MESSAGES[0], MESSAGES[0]], max_new_tokens=MAX_NEW)
        assert first[0] == first[1] and first[0].ok
        assert client.stats["requests"] == 1 and server.requests_seen == 1
        again = client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)  # cached across calls too
        assert again == first[:1] and client.stats["requests"] == 1
        client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW + 1)  # different params: a new request
        assert client.stats["requests"] == 2


def test_retries_through_server_errors(serve):
    server = serve(fail_first_n=2)
    with OpenAIServer(server.base_url, "tiny-random", max_retries=3, backoff_s=0.01) as client:
        (c,) = client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    assert c.ok and c.text is not None
    assert client.stats["retries"] == 2 and client.stats["requests"] == 3 and client.stats["failures"] == 0


def test_too_few_retries_gives_a_failure_not_a_verdict(serve):
    server = serve(fail_first_n=2)
    with OpenAIServer(server.base_url, "tiny-random", max_retries=1, backoff_s=0.01) as client:
        (c,) = client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
        assert c.text is None and not c.ok and not c.finished
        assert "500" in c.error
        assert client.stats == {"requests": 2, "retries": 1, "failures": 1, "cache_hits": 0}
        # failures are not cached: the next call asks again (and the server has recovered)
        (again,) = client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
        assert again.ok


def test_client_errors_are_not_retried(serve):
    server = serve()
    with OpenAIServer(server.base_url, "tiny-random", max_retries=3, backoff_s=0.01) as client:
        (c,) = client.complete([[{"role": "user"}]], max_new_tokens=MAX_NEW)  # no content: HTTP 400
    assert c.text is None and "400" in c.error
    assert client.stats["requests"] == 1 and client.stats["retries"] == 0 and client.stats["failures"] == 1


def test_timeout_gives_a_failure(serve):
    server = serve(delay_s=60.0)  # the delay ends at teardown (shutdown answers 503)
    start = time.monotonic()
    with OpenAIServer(server.base_url, "tiny-random", timeout_s=0.5, max_retries=1, backoff_s=0.01) as client:
        (c,) = client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    # 2 attempts of 0.5 s (~2 s at most on a loaded 2-core machine: 30 s is 5x+ that), not the server's 60 s delay
    assert time.monotonic() - start < 30
    assert c == Completion(text=None, error=c.error, finished=False)
    assert "timeout" in c.error.lower()
    assert client.stats["failures"] == 1 and client.stats["requests"] == 2


def test_connection_refused_gives_a_failure():
    with OpenAIServer("http://127.0.0.1:1/v1", "x", max_retries=0) as client:
        (c,) = client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    assert c.text is None and "connection" in c.error


def test_api_key_comes_from_the_env_and_is_never_exposed(serve, monkeypatch):
    server = serve()
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("JUDGE_TEST_KEY", secret)
    with OpenAIServer(server.base_url, "tiny-random", api_key_env="JUDGE_TEST_KEY") as client:
        (c,) = client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    assert c.ok
    assert server.seen_authorization == [f"Bearer {secret}"]
    assert secret not in repr(client) and secret not in str(client.stats)
    assert all(secret not in repr(v) for v in vars(client).values())

    monkeypatch.delenv("JUDGE_TEST_KEY")
    with OpenAIServer(server.base_url, "tiny-random", api_key_env="JUDGE_TEST_KEY") as client:
        client.complete([MESSAGES[1]], max_new_tokens=MAX_NEW)
    assert server.seen_authorization[-1] is None  # no header when the variable is unset


# --- misbehaving servers: a raw socket server on 127.0.0.1 that answers each connection by hand ---


def _chat_response(content: str = "A") -> tuple[bytes, bytes]:
    body = json.dumps(
        {
            "id": "raw-1",
            "object": "chat.completion",
            "model": "raw",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        }
    ).encode()
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    return head, body


class RawServer:
    """Accepts connections on 127.0.0.1, reads one HTTP request from each and hands it to
    `respond(server, conn, request_body)` in its own thread. Stops on `stop()` or by itself after
    `lifetime_s`, whichever comes first; every socket has a timeout, so no thread blocks for long."""

    def __init__(self, respond, lifetime_s: float = 12.0):
        self.respond = respond
        self.deadline = time.monotonic() + lifetime_s
        self.connections = 0
        self.disconnects: list[float] = []  # monotonic times at which a client was seen hanging up
        self.disconnected = threading.Event()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.threads: list[threading.Thread] = []
        self.acceptor = threading.Thread(target=self._accept, daemon=True)
        self.acceptor.start()

    def alive(self) -> bool:
        return not self.stopping.is_set() and time.monotonic() < self.deadline

    def _accept(self) -> None:
        with self.sock:
            while self.alive():
                try:
                    conn, _ = self.sock.accept()
                except (socket.timeout, OSError):
                    continue
                with self.lock:
                    self.connections += 1
                t = threading.Thread(target=self._handle, args=(conn,), daemon=True)
                self.threads.append(t)
                t.start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(1.0)
            data = b""
            try:
                while b"\r\n\r\n" not in data and self.alive():
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
                    0,
                )
                while len(body) < length and self.alive():
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    body += chunk
                self.respond(self, conn, body)
            except OSError:
                pass

    def client_gone(self, conn: socket.socket, wait_s: float) -> bool:
        """Waits up to wait_s; True (and recorded) when the client hung up, or the server is stopping."""
        if not self.alive():
            return True
        readable, _, _ = select.select([conn], [], [], wait_s)
        if readable:
            try:
                gone = conn.recv(1) == b""
            except OSError:
                gone = True
            if gone:
                with self.lock:
                    self.disconnects.append(time.monotonic())
                self.disconnected.set()
                return True
        return not self.alive()

    def stop(self) -> None:
        self.stopping.set()
        for t in [self.acceptor, *self.threads]:
            t.join(timeout=2.0)


@pytest.fixture
def raw_server():
    servers: list[RawServer] = []

    def start(respond, **kwargs) -> RawServer:
        server = RawServer(respond, **kwargs)
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.stop()
    assert not any(t.is_alive() for s in servers for t in [s.acceptor, *s.threads])


def trickle(interval_s: float, headers_at_once: bool, content: str = "A"):
    """Sends a valid chat-completions response one byte per interval_s (the status line and
    headers too, unless headers_at_once), stopping as soon as the client hangs up."""

    def respond(server: RawServer, conn: socket.socket, _body: bytes) -> None:
        head, body = _chat_response(content)
        if headers_at_once:
            conn.sendall(head)
            data = body
        else:
            data = head + body
        for i in range(len(data)):
            if server.client_gone(conn, interval_s):
                return
            conn.sendall(data[i : i + 1])

    return respond


@pytest.mark.parametrize("headers_at_once", [False, True], ids=["headers-trickled", "body-trickled"])
def test_a_trickling_server_is_cut_off_at_timeout_s(raw_server, headers_at_once):
    # ~200 bytes at 1 byte / 0.5 s: each socket read is quick, the whole response would take ~100 s (the server lives
    # 300 s, stopped at teardown, so an attempt not cut off would read it all).
    server = raw_server(trickle(0.5, headers_at_once), lifetime_s=300)
    start = time.monotonic()
    with OpenAIServer(server.base_url, "raw", timeout_s=1, max_retries=0) as client:
        (c,) = client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    elapsed = time.monotonic() - start
    # 1 s and the client's own overhead (~2 s at most on a loaded 2-core machine: 20 s is 5x+ that); unbounded ~100 s
    assert elapsed < 20
    assert c == Completion(text=None, error=c.error, finished=False)
    assert "timeout after 1s" in c.error and "[1 attempt]" in c.error
    assert client.stats == {"requests": 1, "retries": 0, "failures": 1, "cache_hits": 0}
    # the timed-out attempt's connection was closed, not left trickling: the server sees it within a byte's interval
    # (0.5 s) of the client's timeout, where a connection left open would trickle on for ~100 s
    assert server.disconnected.wait(timeout=30)
    assert server.disconnects[0] - start < 20 and server.connections == 1


def test_trickling_is_retried_and_the_request_stays_bounded(raw_server):
    # a ~500-byte body at 0.2 s a byte: each read well within the 0.5 s timeout, the whole body ~100 s (the server lives
    # 300 s, stopped at teardown, so an attempt not cut off would read it all)
    server = raw_server(trickle(0.2, headers_at_once=True, content="A" * 300), lifetime_s=300)
    start = time.monotonic()
    with OpenAIServer(server.base_url, "raw", timeout_s=0.5, max_retries=2, backoff_s=0.05) as client:
        (c,) = client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    elapsed = time.monotonic() - start
    # 3 attempts of 0.5 s plus backoffs of 0.05 s and 0.1 s: 1.65 s, up to 3.54 s seen on a loaded 2-core machine (20 s
    # is 5x+ that); one attempt not cut off at timeout_s would take ~100 s
    assert 1.5 <= elapsed < 20
    assert "timeout after 0.5s" in c.error and "[3 attempts]" in c.error
    assert client.stats == {"requests": 3, "retries": 2, "failures": 1, "cache_hits": 0}
    assert server.connections == 3


def test_a_slow_trickle_within_timeout_s_succeeds(raw_server):
    # the same server, fast enough: the response is valid, so the timeouts above are not parse errors
    server = raw_server(trickle(0.002, headers_at_once=False, content="B"))
    # ~0.5 s of trickle; 30 s is 5x+ what it can take on a loaded 2-core machine (the server lives 12 s anyway)
    with OpenAIServer(server.base_url, "raw", timeout_s=30, max_retries=0) as client:
        (c,) = client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    assert c == Completion(text="B", error=None, finished=True)


def test_concurrency_limit_and_input_order(raw_server):
    active, peak, lock = [0], [0], threading.Lock()

    def echo_slowly(server: RawServer, conn: socket.socket, body: bytes) -> None:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.15)
        with lock:
            active[0] -= 1
        head, payload = _chat_response(json.loads(body)["messages"][-1]["content"])
        conn.sendall(head + payload)

    server = raw_server(echo_slowly)
    batch = [[{"role": "user", "content": f"q{i}"}] for i in range(7)]
    with OpenAIServer(server.base_url, "raw", concurrency=3, timeout_s=5) as client:
        out = client.complete(batch, max_new_tokens=MAX_NEW)
    assert [c.text for c in out] == [f"q{i}" for i in range(7)]
    assert peak[0] == 3  # concurrent, and never more than `concurrency` at once
    assert client.stats == {"requests": 7, "retries": 0, "failures": 0, "cache_hits": 0}


def test_complete_works_inside_a_running_event_loop(raw_server):
    server = raw_server(trickle(0.0, headers_at_once=True, content="C"))

    async def caller() -> list[Completion]:
        return client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)

    with OpenAIServer(server.base_url, "raw", timeout_s=5) as client:
        (c,) = asyncio.run(caller())
    assert c.ok and c.text == "C"


def test_closed_engine_refuses_new_requests_but_serves_its_cache(raw_server):
    server = raw_server(trickle(0.0, headers_at_once=True))
    with OpenAIServer(server.base_url, "raw", timeout_s=5) as client:
        (c,) = client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW)
    assert c.ok
    assert client.complete([MESSAGES[0]], max_new_tokens=MAX_NEW) == [c]
    with pytest.raises(RuntimeError, match="closed"):
        client.complete([MESSAGES[1]], max_new_tokens=MAX_NEW)
    assert server.connections == 1


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"timeout_s": 0}, "timeout_s=0"),
        ({"timeout_s": -1.0}, "timeout_s=-1.0"),
        ({"timeout_s": float("nan")}, "timeout_s=nan"),
        ({"backoff_s": -1}, "backoff_s=-1"),
        ({"concurrency": 0}, "concurrency=0"),
        ({"max_retries": -1}, "max_retries=-1"),
    ],
)
def test_constructor_refuses_bad_parameters(kwargs, name):
    with pytest.raises(ValueError) as e:
        OpenAIServer("http://127.0.0.1:1/v1", "x", **kwargs)
    assert str(e.value).startswith(name + ":") and "\n" not in str(e.value)
