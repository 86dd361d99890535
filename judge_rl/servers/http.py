"""A small OpenAI-compatible HTTP server for a judge_rl causal LM (stdlib only, 127.0.0.1 only).

    python -m judge_rl.servers.http --model tiny-random --port 8000

Serves POST /v1/chat/completions (the chat template is applied, then greedy generation up to
`max_tokens`; `temperature` > 0 samples) and GET /v1/models. Generation is serialised behind a lock;
concurrent requests queue. It exists so evaluation through `OpenAIServer` can be run and tested
against a real endpoint without a GPU server. `fail_first_n` and `delay_s` are test hooks that
simulate a failing and a slow server; `seen_authorization` records the Authorization headers seen.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from judge_rl.rollouts import encode_chat, generate

HOST = "127.0.0.1"


class ChatCompletionServer:
    def __init__(
        self,
        model,
        tokenizer,
        model_name: str,
        port: int = 0,
        *,
        fail_first_n: int = 0,
        delay_s: float = 0.0,
        default_max_tokens: int = 256,
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.fail_first_n = fail_first_n
        self.delay_s = delay_s
        self.default_max_tokens = default_max_tokens
        self.requests_seen = 0
        self.seen_authorization: list[str | None] = []
        self._count_lock = threading.Lock()
        self._generate_lock = threading.Lock()
        self._closed = threading.Event()
        self.httpd = ThreadingHTTPServer((HOST, port), _make_handler(self))
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def start(self) -> "ChatCompletionServer":
        """Serve in a background daemon thread."""
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="chat-completion-server", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def shutdown(self) -> None:
        """Stop serving; requests still waiting (delay_s) are answered 503, and a generation under
        way is waited for, so no handler thread is left running the model."""
        self._closed.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._generate_lock:
            pass

    def __enter__(self) -> "ChatCompletionServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.shutdown()

    # -- request handling ------------------------------------------------------------------------
    def chat_completion(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
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
        try:
            prompt = encode_chat(self.tokenizer, messages)
        except Exception as e:  # noqa: BLE001
            return 400, _error(f"could not apply the chat template: {e}", "invalid_request_error")
        context = getattr(self.model.config, "max_position_embeddings", None)
        if context is not None and len(prompt) + max_tokens > context:  # as vLLM's server: refused, not run for minutes
            return 400, _error(f"this model's maximum context length is {context} tokens; the prompt has {len(prompt)} "
                               f"and max_tokens is {max_tokens}", "invalid_request_error")
        sampling = dict(do_sample=True, temperature=float(temperature), top_p=float(body.get("top_p") or 1.0)) if temperature > 0 else {}
        with self._generate_lock:
            if self._closed.is_set():
                return 503, _error("server is shutting down", "server_error")
            gen = generate(self.model, self.tokenizer, [prompt], max_new_tokens=max_tokens, batch_size=1, **sampling)[0][0]
        return 200, {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": gen.text},
                    "finish_reason": "stop" if gen.finished else "length",
                }
            ],
            "usage": {
                "prompt_tokens": len(gen.prompt_ids),
                "completion_tokens": len(gen.response_ids),
                "total_tokens": len(gen.prompt_ids) + len(gen.response_ids),
            },
        }

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.model_name, "object": "model", "owned_by": "judge_rl"}]}


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


def _make_handler(server: ChatCompletionServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args) -> None:  # quiet: no per-request stderr lines
            pass

        def _reply(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. timed out)
                pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._reply(200, server.models())
            else:
                self._reply(404, _error(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._reply(404, _error(f"no route {self.path}", "not_found"))
                return
            with server._count_lock:
                server.requests_seen += 1
                n = server.requests_seen
                server.seen_authorization.append(self.headers.get("Authorization"))
            if server.delay_s and server._closed.wait(server.delay_s):
                self._reply(503, _error("server is shutting down", "server_error"))
                return
            if n <= server.fail_first_n:
                self._reply(500, _error("simulated failure", "server_error"))
                return
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("body is not a JSON object")
            except ValueError as e:
                self._reply(400, _error(f"invalid JSON: {e}", "invalid_request_error"))
                return
            try:
                status, payload = server.chat_completion(body)
            except Exception as e:  # noqa: BLE001
                status, payload = 500, _error(f"{type(e).__name__}: {e}", "server_error")
            self._reply(status, payload)

    return Handler


def load_model_config(name: str):
    """A ModelConfig from conf/model/<name>.yaml, or from a YAML file path."""
    from pathlib import Path

    from omegaconf import OmegaConf

    from judge_rl.config import ModelConfig

    path = Path(name)
    if not path.suffix:
        path = Path(__file__).resolve().parents[2] / "conf" / "model" / f"{name}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "conf" / "model").glob("*.yaml"))
        raise SystemExit(f"unknown model {name!r}; known: {', '.join(known)} (or a path to a YAML file)")
    merged = OmegaConf.merge(OmegaConf.structured(ModelConfig), OmegaConf.load(path))
    return OmegaConf.to_object(merged)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a judge_rl model over an OpenAI-compatible chat API on 127.0.0.1.")
    parser.add_argument("--model", default="tiny-random", help="a conf/model name (tiny-random, smollm2-135m, ...) or a YAML path")
    parser.add_argument("--checkpoint", default=None, help="a saved model directory to serve instead of the configured weights")
    parser.add_argument("--served-model-name", default=None, help="the model id clients send (default: --model)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--cache-dir", default="~/.cache/judge_rl")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from judge_rl.models.loading import load_model, load_tokenizer, resolve_device

    cfg = load_model_config(args.model)
    tokenizer = load_tokenizer(cfg, args.cache_dir)
    model = load_model(cfg, args.cache_dir, resolve_device(args.device), checkpoint=args.checkpoint, seed=args.seed)
    server = ChatCompletionServer(model, tokenizer, args.served_model_name or cfg.name, args.port)
    print(f"serving {cfg.name} at {server.base_url} (POST /chat/completions, GET /models)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()


if __name__ == "__main__":
    main()
