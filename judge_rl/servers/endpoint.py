"""The judge as its own layer: an OpenAI-compatible endpoint for the policy job, started (or found) from
`judge/` config and stopped when the job is done.

    with judge_endpoint(job.judge, job.cache_dir, seed=job.seed, log_dir=run_dir) as endpoint:
        client = AsyncJudgeClient(endpoint.base_url, endpoint.model, ...)   # endpoint is None for judge=none

What each `judge.engine` gives:

  local   the job loads `judge.model` (with `judge.checkpoint` weights when set) and serves it on
          127.0.0.1 (a free port) with `judge_rl.servers.http.ChatCompletionServer` in a background
          thread, batching concurrent requests (`judge.max_batch`, `judge.batch_wait_s`); it is shut
          down on exit. With `judge.base_url` set, that server is used and nothing is started.
  openai  `judge.base_url` and `judge.served_model`; nothing is started.
  vllm    `judge.base_url` of a running server, or none: the job runs `vllm serve` with this Python
          (`python -m vllm.entrypoints.cli.main serve`, what the `vllm` console script runs: no script
          on PATH needed) on 127.0.0.1:`judge.port` as a subprocess with its output in
          `<log_dir>/vllm_serve.log`, waits until GET /v1/models answers 200 (at most
          `judge.startup_timeout_s`), and stops it on exit (SIGTERM to its process group, SIGKILL after
          10 s; a server that died first still has its group stopped, e.g. vLLM's engine process). A
          server that exits or does not come up fails with one line naming the command, the exit code
          and the log. It runs on a GPU, or on the CPU where no CUDA device is visible (vLLM's CPU
          build), where it gets `--dtype float32 --enforce-eager` unless `judge.vllm_args` set them,
          `--max-model-len 2048` unless `judge.max_model_len` or `judge.vllm_args` set one, and
          VLLM_CPU_KVCACHE_SPACE=2 (GiB of KV cache) unless the environment sets it.
  none    no judge: the context yields None.

Why a subprocess for vLLM rather than the offline `vllm.LLM` (`judge_rl.servers.vllm`): the judge's
GPU memory, its CUDA context and its crashes stay out of the training process, and the policy job talks
to a local judge exactly as to a remote one, over HTTP.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import httpx

from judge_rl.servers.http import HOST, ChatCompletionServer, load_model_config

LOG_NAME = "vllm_serve.log"
STOP_GRACE_S = 10.0
POLL_INTERVAL_S = 0.25


@dataclass
class Endpoint:
    """Where the judge answers: `base_url` (ending in /v1) and the model id to send (`model`).
    `server` is the in-process server (engine local), `process` the vLLM server subprocess (engine vllm,
    started by the job), `log_path` that subprocess's output; None when nothing was started."""

    base_url: str
    model: str
    engine: str
    server: ChatCompletionServer | None = None
    process: subprocess.Popen | None = None
    log_path: Path | None = None


@contextlib.contextmanager
def judge_endpoint(
    judge_cfg,
    cache_dir: str,
    seed: int = 0,
    *,
    log_dir: str | os.PathLike | None = None,
    command: Sequence[str] | None = None,
) -> Iterator[Endpoint | None]:
    """The judge endpoint of a `RewardJudgeConfig` (see the module docstring), stopped on exit.

    `log_dir`: where the vLLM server writes its output (default: a fresh temporary directory, kept so the
    log outlives a failure). `command`: for engine vllm, run this instead of `vllm_serve_command(...)` (a test's
    stand-in server; it must listen on 127.0.0.1:`judge.port`)."""
    engine = judge_cfg.engine
    if engine == "none":
        yield None
    elif engine == "openai":
        yield Endpoint(judge_cfg.base_url, judge_cfg.served_model, engine)
    elif engine == "local":
        if judge_cfg.base_url:
            yield Endpoint(judge_cfg.base_url, served_name(judge_cfg), engine)
        else:
            with _local_server(judge_cfg, cache_dir, seed) as server:
                yield Endpoint(server.base_url, server.model_name, engine, server=server)
    elif engine == "vllm":
        if judge_cfg.base_url:
            yield Endpoint(judge_cfg.base_url, served_name(judge_cfg), engine)
        else:
            with _vllm_process(judge_cfg, cache_dir, log_dir, command) as endpoint:
                yield endpoint
    else:
        raise ValueError(f"judge.engine={engine!r}: expected one of local, openai, vllm, none")


def auto_engine(judge_cfg) -> str:
    """What `judge.engine=auto` (judge=embedded's default) serves with: vllm (`vllm serve`, prefix caching on) where
    vLLM is installed, no running server is named (`judge.base_url`), no failures are injected (`judge.faults.*`
    come from the project's server) and the judge has weights on disk (not the tiny random test model); the
    project's server (local) otherwise. scripts/bench_serving.py measures the policy job's judging on both."""
    if judge_cfg.base_url or (getattr(judge_cfg, "faults", None) is not None and judge_cfg.faults.active()):
        return "local"
    if judge_cfg.model is not None and load_model_config(judge_cfg.model, "judge.model").source == "tiny_random":
        return "local"
    return "vllm" if _vllm_installed() else "local"


def judge_model_config(judge_cfg):
    """The ModelConfig of the judge: `judge.model` (a conf/model name or YAML path), or, with only
    `judge.checkpoint` set, that directory as a local model (its own tokenizer)."""
    if judge_cfg.model is not None:
        return load_model_config(judge_cfg.model, "judge.model")
    if judge_cfg.checkpoint is None:
        raise ValueError(f"judge.engine={judge_cfg.engine} serves a model: set judge.model or judge.checkpoint")
    from judge_rl.config import ModelConfig

    path = str(Path(judge_cfg.checkpoint).expanduser())
    return ModelConfig(name=Path(path).name, source="local", path=path)


def served_name(judge_cfg, model_cfg=None) -> str:
    """The model id requests carry: `judge.served_model`, else the judge model's name."""
    if judge_cfg.served_model:
        return judge_cfg.served_model
    if model_cfg is None and judge_cfg.model is None and judge_cfg.checkpoint is None:
        raise ValueError(f"judge.engine={judge_cfg.engine} at judge.base_url={judge_cfg.base_url}: set "
                         "judge.served_model (the model id the endpoint expects) or judge.model")
    return (model_cfg or judge_model_config(judge_cfg)).name


# The `vllm` console script's module. Not `vllm.entrypoints.openai.api_server`: vLLM 0.31 deprecates running that
# module ("may be removed in a future release. Please use `vllm serve`").
VLLM_CLI_MODULE = "vllm.entrypoints.cli.main"


def _sets_flag(args: Sequence[str], *flags: str) -> bool:
    """Whether `args` set one of `flags` (as `--flag`, `--flag value` or `--flag=value`)."""
    return any(a in flags or a.split("=", 1)[0] in flags for a in args)


def vllm_serve_command(judge_cfg, model_path: str, served_name: str, *, cpu: bool = False,
                       python: str | None = None) -> list[str]:
    """The `vllm serve` command line for a judge (pure: no lookup, nothing run), run as a module of
    `python` (default: this one): `<python> -m vllm.entrypoints.cli.main serve <path> ...`. It
    listens on 127.0.0.1:`judge.port` only; `judge.vllm_args` come last, so they can add any vllm flag.
    `cpu`: vLLM's CPU build, where no CUDA device is visible: `--dtype float32 --enforce-eager` and
    `--max-model-len 2048` (CPU_MAX_MODEL_LEN), each unless `judge.vllm_args` (or `judge.max_model_len`)
    sets it."""
    from judge_rl.servers.vllm import CPU_MAX_MODEL_LEN

    extra = [str(a) for a in judge_cfg.vllm_args]
    cmd = [
        python or sys.executable, "-m", VLLM_CLI_MODULE, "serve", str(model_path),
        "--host", HOST,
        "--port", str(judge_cfg.port),
        "--served-model-name", served_name,
        "--tensor-parallel-size", str(judge_cfg.tensor_parallel_size),
        "--gpu-memory-utilization", str(judge_cfg.gpu_memory_utilization),
    ]  # fmt: skip
    max_model_len = getattr(judge_cfg, "max_model_len", None)  # not in every judge schema
    if not max_model_len and cpu and not _sets_flag(extra, "--max-model-len"):
        max_model_len = CPU_MAX_MODEL_LEN
    if max_model_len:
        cmd += ["--max-model-len", str(max_model_len)]
    if cpu and not _sets_flag(extra, "--dtype"):
        cmd += ["--dtype", "float32"]
    if cpu and not _sets_flag(extra, "--enforce-eager", "--no-enforce-eager"):
        cmd += ["--enforce-eager"]
    return [*cmd, *extra]


# -- engine local ------------------------------------------------------------------------------------


@contextlib.contextmanager
def _local_server(judge_cfg, cache_dir: str, seed: int) -> Iterator[ChatCompletionServer]:
    import torch

    from judge_rl.models.loading import load_model, load_tokenizer, resolve_device

    if judge_cfg.device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"judge.device={judge_cfg.device!r}: expected auto, cpu or cuda")
    if judge_cfg.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("judge.device=cuda but no CUDA device is visible; use judge.device=cpu or auto")
    device = resolve_device(judge_cfg.device)
    model_cfg = judge_model_config(judge_cfg)
    tokenizer = load_tokenizer(model_cfg, cache_dir)
    model = load_model(model_cfg, cache_dir, device, checkpoint=judge_cfg.checkpoint, seed=seed)
    faults = judge_cfg.faults.server_kwargs(judge_cfg.timeout_s) if getattr(judge_cfg, "faults", None) is not None else {}
    if faults and judge_cfg.faults.active():  # a rehearsal (judge.faults.*): said, so no run mistakes it for a real one
        shown = ", ".join(f"{k}={v!r}" for k, v in vars(judge_cfg.faults).items() if v and k != "hang_s")
        print(f"judge: the served judge injects failures ({shown})", flush=True)
    server = ChatCompletionServer(model, tokenizer, served_name(judge_cfg, model_cfg), 0,
                                  max_batch=judge_cfg.max_batch, batch_wait_s=judge_cfg.batch_wait_s,
                                  default_max_tokens=judge_cfg.max_tokens, **faults)  # fmt: skip
    server.start()
    try:
        yield server
    finally:
        server.shutdown()


# -- engine vllm -------------------------------------------------------------------------------------


def _vllm_installed() -> bool:
    from judge_rl.servers.vllm import vllm_installed

    return vllm_installed()


def _resolve_executable(name: str) -> str | None:
    """`name` on PATH, or next to this Python (a virtualenv's bin/, which may not be on PATH)."""
    return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed server's TIME_WAIT is not "in use"
        try:
            sock.bind((HOST, port))
        except OSError:
            return True
    return False


# Lines a failing server prints after its error that say nothing about it (pydantic's link under a refused config)
_TRAILERS = ("For further information visit ",)


def _last_line(path: Path) -> str:
    """The log's last line that says something (pydantic's trailing link skipped), at most 300 characters."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 8192))
            lines = [line.strip() for line in f.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    said = [line for line in lines if not line.startswith(_TRAILERS)] or lines
    return said[-1][:300] if said else ""


def _group_alive(pgid: int) -> bool:
    """Whether any process of the process group `pgid` is left."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):  # a group this job may not signal is not the one it started
        return False
    return True


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the server's process group (vLLM's engine and workers are its children), SIGKILL
    after STOP_GRACE_S; done when the server and every process of its group are gone. A server that
    died first (a crash, a kill) may leave its engine process behind: the group is stopped all the same."""
    pgid = process.pid  # the group the job started (start_new_session): pgid == pid

    def gone() -> bool:
        return process.poll() is not None and not _group_alive(pgid)

    for sig, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5.0)):
        if gone():
            return
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + wait_s
        while not gone() and time.monotonic() < deadline:
            time.sleep(0.05)


@contextlib.contextmanager
def _vllm_process(judge_cfg, cache_dir: str, log_dir, command: Sequence[str] | None) -> Iterator[Endpoint]:
    from judge_rl.servers.vllm import cpu_environment, cuda_available, model_dir

    model_cfg = judge_model_config(judge_cfg)
    name = served_name(judge_cfg, model_cfg)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if command is None:
        if not _vllm_installed():
            raise RuntimeError(f"judge.engine=vllm: vllm is not installed in this Python ({sys.executable}); install "
                               "vllm (GPU: pip install 'judge_rl[gpu]'; CPU: make install) or set judge.base_url to "
                               "a running server")
        cpu = not cuda_available()
        if cpu:
            cpu_environment(env)
        command = vllm_serve_command(judge_cfg, model_dir(model_cfg, cache_dir, judge_cfg.checkpoint), name, cpu=cpu)
    command = [str(c) for c in command]
    executable = _resolve_executable(command[0])
    if executable is None:
        raise RuntimeError(f"judge.engine=vllm: {command[0]!r} is not on PATH; install vllm (GPU: "
                           "pip install 'judge_rl[gpu]') or set judge.base_url to a running server")
    command[0] = executable
    if _port_in_use(judge_cfg.port):
        raise RuntimeError(f"judge.port={judge_cfg.port} is in use on {HOST} (a judge already running there? "
                           f"set judge.base_url=http://{HOST}:{judge_cfg.port}/v1 to use it, or another judge.port)")
    log_path = Path(log_dir or tempfile.mkdtemp(prefix="judge_vllm_")).expanduser() / LOG_NAME
    log_path.parent.mkdir(parents=True, exist_ok=True)
    base_url = f"http://{HOST}:{judge_cfg.port}/v1"
    with open(log_path, "ab") as log:
        log.write(f"$ {shlex.join(command)}\n".encode())
        log.flush()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, env=env)
    try:
        _wait_ready(process, base_url, judge_cfg.startup_timeout_s, command, log_path)
        yield Endpoint(base_url, name, "vllm", process=process, log_path=log_path)
    finally:
        _stop(process)


def _wait_ready(process: subprocess.Popen, base_url: str, timeout_s: float, command: list[str], log_path: Path) -> None:
    """Poll GET {base_url}/models until it answers 200; a one-line RuntimeError when the server exits
    first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2.0, trust_env=False) as http:  # 127.0.0.1: never through a proxy
        while True:
            code = process.poll()
            if code is not None:
                raise RuntimeError(f"judge.engine=vllm: `{shlex.join(command)}` exited with code {code} before "
                                   f"answering GET {base_url}/models; log: {log_path} "
                                   f"(last line: {_last_line(log_path)!r})")
            try:
                if http.get(f"{base_url}/models").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() >= deadline:
                _stop(process)
                raise RuntimeError(f"judge.engine=vllm: `{shlex.join(command)}` did not answer GET {base_url}/models "
                                   f"within judge.startup_timeout_s={timeout_s:g}s; stopped it (exit code "
                                   f"{process.returncode}); log: {log_path} (last line: {_last_line(log_path)!r})")
            time.sleep(POLL_INTERVAL_S)
