"""A small OpenAI-compatible HTTP server for a judge_rl causal LM (stdlib only, 127.0.0.1 only).

    python -m judge_rl.servers.http --model tiny-random --port 8000 [--max-batch 16 --batch-wait-s 0.02]

Serves POST /v1/chat/completions (a request naming another `model` than the one served gets 404
`model_not_found`, as vLLM answers; a route under the wrong method 405; the chat template is applied, then greedy generation up to
`max_tokens`; `temperature` > 0 samples with `top_p`; `stop`, a string or up to 4, ends the reply before
the first of them with finish_reason "stop", as OpenAI's API does), GET /v1/models (with the served context,
`max_model_len`, as vLLM's server lists it) and POST /tokenize (vLLM's: a chat's token count after the template and
the served context, `{"count", "max_model_len", "tokens"}`, so a client leaves out a prompt that cannot fit before
sending it). It exists so a judge can be
reached over the OpenAI chat API without a GPU server: evaluation through `OpenAIServer`, and the
policy job's reward calls (`judge_rl.servers.endpoint`, engine local).

Batching. Handler threads do not run the model. Each request is queued and its thread waits on its own
event; one worker thread takes the queue: the oldest request waits up to `batch_wait_s` (from its
arrival) for company, then up to `max_batch` requests are taken at once, grouped by their generation
parameters (max_tokens, temperature, top_p), and each group runs as ONE `generate` call with
`batch_size=len(group)`. Many concurrent judge calls thus cost a few padded forward passes instead of a
queue of single ones. `batch_sizes` records the size of every generate call. Greedy answers do not
depend on which requests shared a batch, beyond what left-padding changes in float rounding.

Shutdown (`shutdown()`, or leaving the `with` block): requests not yet generating are answered 503,
and the generate call under way is waited for, so no thread is left running the model.

Test hooks (all off by default; `n` is the request's number, 1-based, counted in `requests_seen` over
POSTs to the chat route; `seen_authorization` records each one's Authorization header):

  delay_s          every request sleeps delay_s first (a slow server); shutdown answers it 503 at once
  hang_every=k     request n with n % k == 0 sleeps `hang_s` before it is handled (a server that hangs
                   past a client's timeout); shutdown wakes it and answers it 503
  fail_first_n     requests 1..fail_first_n get HTTP 500 (a server that recovers)
  fail_every=k     request n with n % k == 0 gets HTTP 500 (a flaky server)
  garbage_every=k  request n with n % k == 0 gets HTTP 200 with a body that is not JSON
                   (b"<html>garbage"): a proxy error page, a broken server
  reply_override   a function (n, body) -> str: the reply's content for request n instead of generating
                   (after the body is validated), with finish_reason "stop" and completion_tokens =
                   len(text.split()); lets tests script judge replies (e.g. unparseable ones) through the
                   real HTTP path

They apply in the order listed: delay, hang, then the first failure hook that matches, else the reply.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from judge_rl.config.paths import load_model_config
from judge_rl.rollouts import encode_chat, generate

HOST = "127.0.0.1"
ROUTES = {"GET": ("/v1/models", "/models"), "POST": ("/v1/chat/completions", "/chat/completions", "/tokenize")}
GARBAGE = b"<html>garbage"


@dataclass
class _Request:
    """A validated request waiting for the worker; `answer` is set once, then `done`."""

    prompt: list[int]
    params: tuple[int, float, float]  # (max_tokens, temperature, top_p): requests with equal params share a call
    stop: tuple[str, ...] = ()  # OpenAI's `stop`: the reply ends before the first of these
    arrived: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    answer: tuple[int, dict[str, Any]] | None = None

    def finish(self, status: int, payload: dict[str, Any]) -> None:
        if not self.done.is_set():
            self.answer = (status, payload)
            self.done.set()


class ChatCompletionServer:
    def __init__(
        self,
        model,
        tokenizer,
        model_name: str,
        port: int = 0,
        *,
        max_batch: int = 16,
        batch_wait_s: float = 0.02,
        fail_first_n: int = 0,
        delay_s: float = 0.0,
        default_max_tokens: int = 256,
        fail_every: int = 0,
        hang_every: int = 0,
        hang_s: float = 5.0,
        garbage_every: int = 0,
        reply_override: Callable[[int, dict], str] | None = None,
    ):
        if not isinstance(max_batch, int) or max_batch < 1:
            raise ValueError(f"max_batch={max_batch}: expected an integer >= 1")
        if not batch_wait_s >= 0:
            raise ValueError(f"batch_wait_s={batch_wait_s}: expected a number >= 0")
        for name, value in (("fail_every", fail_every), ("hang_every", hang_every), ("garbage_every", garbage_every)):
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{name}={value}: expected an integer >= 0 (0: off)")
        self.model = model
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.max_batch = max_batch
        self.batch_wait_s = float(batch_wait_s)
        self.fail_first_n = fail_first_n
        self.delay_s = delay_s
        self.default_max_tokens = default_max_tokens
        self.fail_every = fail_every
        self.hang_every = hang_every
        self.hang_s = hang_s
        self.garbage_every = garbage_every
        self.reply_override = reply_override
        self.requests_seen = 0
        self.seen_authorization: list[str | None] = []
        self.batch_sizes: list[int] = []  # the number of requests in each generate call, in order
        self._count_lock = threading.Lock()
        self._queue: deque[_Request] = deque()
        self._cond = threading.Condition()  # guards _queue, _worker and the closing decision
        self._worker: threading.Thread | None = None
        self._closed = threading.Event()
        self.httpd = _Server((HOST, port), _make_handler(self))
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None
        self._served = False  # serve_forever has run (httpd.shutdown() would wait forever otherwise)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def start(self) -> "ChatCompletionServer":
        """Serve in a background daemon thread."""
        self._served = True
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="chat-completion-server", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._served = True
        self.httpd.serve_forever()

    def shutdown(self) -> None:
        """Stop serving; requests not yet generating (queued, or waiting in delay_s / hang_s) are
        answered 503, and a generate call under way is waited for, so no thread is left running the model."""
        with self._cond:
            self._closed.set()
            self._cond.notify_all()
            worker = self._worker
        if self._served:
            self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if worker is not None:
            worker.join()
        self._refuse_queued()

    def __enter__(self) -> "ChatCompletionServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.shutdown()

    # -- request handling ------------------------------------------------------------------------
    def chat_completion(self, body: dict[str, Any], n: int = 0) -> tuple[int, dict[str, Any]]:
        """(status, payload) for a chat-completions body; blocks until the worker has answered it.
        `n` is the request's number, passed to `reply_override`."""
        model = body.get("model")
        if model is not None and model != self.model_name:  # as vLLM: a client asking for another model fails loudly
            return 404, _error(f"The model `{model}` does not exist; this server serves `{self.model_name}`",
                               "NotFoundError", param="model", code="model_not_found")  # fmt: skip
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages
        ):
            return 400, _error("`messages` must be a non-empty list of {role, content} strings", "invalid_request_error")
        if body.get("n", 1) != 1:
            return 400, _error("only n=1 is supported", "invalid_request_error")
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens", self.default_max_tokens))
        if not isinstance(max_tokens, int) or max_tokens < 1:
            return 400, _error("`max_tokens` must be a positive integer", "invalid_request_error")
        temperature = body.get("temperature") or 0.0
        top_p = body.get("top_p") or 1.0
        numbers = isinstance(temperature, (int, float)) and isinstance(top_p, (int, float))
        if not numbers or temperature < 0 or not 0 < top_p <= 1:
            return 400, _error("`temperature` must be >= 0 and `top_p` in (0, 1]", "invalid_request_error")
        stop = body.get("stop") or []
        stop = [stop] if isinstance(stop, str) else stop
        if not isinstance(stop, list) or len(stop) > 4 or not all(isinstance(x, str) and x for x in stop):
            return 400, _error("`stop` must be a non-empty string or a list of up to 4 of them", "invalid_request_error")
        try:
            prompt = encode_chat(self.tokenizer, messages)
        except Exception as e:  # noqa: BLE001
            return 400, _error(f"could not apply the chat template: {e}", "invalid_request_error")
        context = self.context_length
        if context is not None and len(prompt) + max_tokens > context:  # as vLLM's server: refused, not run for minutes
            return 400, _error(f"this model's maximum context length is {context} tokens; the prompt has {len(prompt)} "
                               f"and max_tokens is {max_tokens}", "invalid_request_error")
        if self.reply_override is not None:
            text = self.reply_override(n, body)
            return 200, self._completion(text, "stop", len(prompt), len(text.split()))
        # top_p only matters when sampling: greedy requests share a call whatever top_p they sent
        params = (max_tokens, float(temperature), float(top_p) if temperature > 0 else 1.0)
        request = _Request(prompt, params, tuple(stop))
        if not self._submit(request):
            return 503, _error("server is shutting down", "server_error")
        while not request.done.wait(0.5):
            if self._closed.is_set() and not self._worker_alive():  # never left waiting on a stopped worker
                request.finish(503, _error("server is shutting down", "server_error"))
        assert request.answer is not None
        return request.answer

    @property
    def context_length(self) -> int | None:
        return getattr(self.model.config, "max_position_embeddings", None)

    def tokenize(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(status, payload) for vLLM's POST /tokenize with `messages`: the prompt's ids as the chat route renders
        them, and the served context."""
        model = body.get("model")
        if model is not None and model != self.model_name:
            return 404, _error(f"The model `{model}` does not exist; this server serves `{self.model_name}`",
                               "NotFoundError", param="model", code="model_not_found")  # fmt: skip
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, _error("`messages` must be a non-empty list of {role, content} strings", "invalid_request_error")
        try:
            prompt = encode_chat(self.tokenizer, messages)
        except Exception as e:  # noqa: BLE001
            return 400, _error(f"could not apply the chat template: {e}", "invalid_request_error")
        return 200, {"count": len(prompt), "max_model_len": self.context_length, "tokens": prompt}

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.model_name, "object": "model", "owned_by": "judge_rl",
                                            "max_model_len": self.context_length}]}  # fmt: skip

    def _completion(self, text: str, finish_reason: str, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    # -- the batching worker ---------------------------------------------------------------------
    def _submit(self, request: _Request) -> bool:
        """Queue a request for the worker (started on first use); False when the server is closing."""
        with self._cond:
            if self._closed.is_set():
                return False
            self._queue.append(request)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="chat-completion-batcher", daemon=True)
                self._worker.start()
            self._cond.notify_all()
        return True

    def _worker_alive(self) -> bool:
        with self._cond:
            return self._worker is not None and self._worker.is_alive()

    def _next_batch(self) -> list[_Request]:
        """Up to max_batch requests, once the oldest has waited batch_wait_s or the batch is full; [] on close."""
        with self._cond:
            while not self._queue and not self._closed.is_set():
                self._cond.wait()
            while self._queue and len(self._queue) < self.max_batch and not self._closed.is_set():
                remaining = self._queue[0].arrived + self.batch_wait_s - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            if self._closed.is_set():
                return []
            return [self._queue.popleft() for _ in range(min(self.max_batch, len(self._queue)))]

    def _work(self) -> None:
        while batch := self._next_batch():
            groups: dict[tuple[int, float, float], list[_Request]] = {}
            for request in batch:
                groups.setdefault(request.params, []).append(request)
            for params, group in groups.items():
                if self._closed.is_set():
                    for request in group:
                        request.finish(503, _error("server is shutting down", "server_error"))
                    continue
                try:
                    self._run(params, group)
                except Exception as e:  # noqa: BLE001  (one bad call answers its requests, the worker goes on)
                    for request in group:
                        request.finish(500, _error(f"{type(e).__name__}: {e}", "server_error"))
        self._refuse_queued()

    def _run(self, params: tuple[int, float, float], group: list[_Request]) -> None:
        max_tokens, temperature, top_p = params
        sampling = dict(do_sample=True, temperature=temperature, top_p=top_p) if temperature > 0 else {}
        self.batch_sizes.append(len(group))
        gens = generate(self.model, self.tokenizer, [r.prompt for r in group], max_new_tokens=max_tokens,
                        batch_size=len(group), **sampling)
        for request, (gen,) in zip(group, gens):
            text, finish, n_tokens = gen.text, "stop" if gen.finished else "length", len(gen.response_ids)
            cuts = [text.find(x) for x in request.stop if x in text]
            if cuts:  # as OpenAI's `stop`: the text up to the first stop string, which is not returned
                text, finish = text[: min(cuts)], "stop"
                n_tokens = len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            request.finish(200, self._completion(text, finish, len(gen.prompt_ids), n_tokens))

    def _refuse_queued(self) -> None:
        with self._cond:
            queued = list(self._queue)
            self._queue.clear()
        for request in queued:
            request.finish(503, _error("server is shutting down", "server_error"))

    # -- fault injection ---------------------------------------------------------------------------
    def _injected_fault(self, n: int) -> str | None:
        """Which failure hook answers request n: "fail", "garbage", or None."""
        if n <= self.fail_first_n or (self.fail_every and n % self.fail_every == 0):
            return "fail"
        if self.garbage_every and n % self.garbage_every == 0:
            return "garbage"
        return None


class _Server(ThreadingHTTPServer):
    # the listen backlog: the default 5 drops simultaneous connections (a reward step opens dozens at once), and a
    # dropped SYN costs the client a 1 s resend or, with no retries left, a judge failure that was never the judge's
    request_queue_size = 256
    daemon_threads = True


def _error(message: str, kind: str, *, param: str | None = None, code: str | int | None = None) -> dict[str, Any]:
    """OpenAI's error body: {"error": {"message", "type", "param", "code"}}."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _make_handler(server: ChatCompletionServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args) -> None:  # quiet: no per-request stderr lines
            pass

        def _send(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. timed out)
                pass

        def _reply(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(payload).encode(), "application/json", headers)

        def _route(self) -> str:
            """The request's path without its query string or a trailing slash."""
            return self.path.split("?", 1)[0].rstrip("/")

        def _no_route(self, method: str) -> None:
            """404 for a path this server does not have; 405 (with Allow) for one it has under another method."""
            path = self._route()
            allowed = [m for m, paths in ROUTES.items() if path in paths]
            if allowed:
                self._reply(405, _error(f"{method} {path}: method not allowed (use {', '.join(allowed)})",
                                        "invalid_request_error", code=405), headers={"Allow": ", ".join(allowed)})  # fmt: skip
            else:
                self._reply(404, _error(f"no route {self.path}", "not_found", code=404))

        def do_GET(self) -> None:
            if self._route() in ROUTES["GET"]:
                self._reply(200, server.models())
            else:
                self._no_route("GET")

        def do_PUT(self) -> None:
            self._no_route("PUT")

        def do_DELETE(self) -> None:
            self._no_route("DELETE")

        def do_PATCH(self) -> None:
            self._no_route("PATCH")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self._route() not in ROUTES["POST"]:
                self._no_route("POST")
                return
            if self._route() == "/tokenize":  # not a chat request: no test hook, not counted
                try:
                    body = json.loads(raw or b"{}")
                except ValueError as e:
                    body = None
                    self._reply(400, _error(f"invalid JSON: {e}", "invalid_request_error"))
                if isinstance(body, dict):
                    self._reply(*server.tokenize(body))
                elif body is not None:
                    self._reply(400, _error("body is not a JSON object", "invalid_request_error"))
                return
            with server._count_lock:
                server.requests_seen += 1
                n = server.requests_seen
                server.seen_authorization.append(self.headers.get("Authorization"))
            if server.delay_s and server._closed.wait(server.delay_s):
                self._reply(503, _error("server is shutting down", "server_error"))
                return
            if server.hang_every and n % server.hang_every == 0 and server._closed.wait(server.hang_s):
                self._reply(503, _error("server is shutting down", "server_error"))
                return
            fault = server._injected_fault(n)
            if fault == "fail":
                self._reply(500, _error("simulated failure", "server_error"))
                return
            if fault == "garbage":
                self._send(200, GARBAGE, "text/html")
                return
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("body is not a JSON object")
            except ValueError as e:
                self._reply(400, _error(f"invalid JSON: {e}", "invalid_request_error"))
                return
            try:
                status, payload = server.chat_completion(body, n)
            except Exception as e:  # noqa: BLE001
                status, payload = 500, _error(f"{type(e).__name__}: {e}", "server_error")
            self._reply(status, payload)

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a judge_rl model over an OpenAI-compatible chat API on 127.0.0.1.")
    parser.add_argument("--model", default="tiny-random", help="a conf/model name (tiny-random, smollm2-135m, ...) or a YAML path")
    parser.add_argument("--checkpoint", default=None, help="a saved model directory to serve instead of the configured weights")
    parser.add_argument("--served-model-name", default=None, help="the model id clients send (default: --model)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--cache-dir", default="~/.cache/judge_rl")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-batch", type=int, default=16, help="most requests in one generate call")
    parser.add_argument("--batch-wait-s", type=float, default=0.02,
                        help="how long the oldest queued request waits for others to share its generate call")
    args = parser.parse_args(argv)

    from judge_rl.models.loading import load_model, load_tokenizer, resolve_device

    try:
        cfg = load_model_config(args.model, "--model")
    except ValueError as e:
        raise SystemExit(str(e)) from None
    tokenizer = load_tokenizer(cfg, args.cache_dir)
    model = load_model(cfg, args.cache_dir, resolve_device(args.device), checkpoint=args.checkpoint, seed=args.seed)
    server = ChatCompletionServer(model, tokenizer, args.served_model_name or cfg.name, args.port,
                                  max_batch=args.max_batch, batch_wait_s=args.batch_wait_s)
    print(f"serving {cfg.name} at {server.base_url} (POST /chat/completions, GET /models)", flush=True)

    def stop(signum, frame):  # SIGTERM (what a parent's terminate() sends) stops as Ctrl-C does
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
