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
          on PATH needed) on 127.0.0.1 as a subprocess with its output in `<log_dir>/vllm_serve.log`, and
          stops it on exit (SIGTERM to its process group, SIGKILL after 10 s; a server that died first
          still has its group stopped, e.g. vLLM's engine process). Its port: `judge.port`, refused in
          one line naming it when another job's judge or anything else holds it; judge.port=null (the
          default): the first free one from 8011, locked for the job (a per-user flock; vLLM binds with
          SO_REUSEPORT, and only once its model has loaded, so a bind check alone lets two jobs share a
          port). Its identity: it serves a per-job model id (`<name>@job-<pid>-<token>`, what every
          request names), and the job waits until GET /v1/models answers 200 listing that id (at most
          `judge.startup_timeout_s`): another server answering there fails the start in one line, and a
          request that reaches another server is refused by it (404), a judge failure, never a grade
          from another model. Its death: the kernel SIGKILLs it when the job dies (PR_SET_PDEATHSIG),
          and a watchdog process (judge_rl/servers/watchdog.py) stops its whole process group (vLLM's
          engine does not watch the API server), so a job killed by SIGKILL leaves no server, memory or
          port behind. A server that exits or does not come up fails with one line naming the command,
          the exit code and the log. It runs on a GPU, or on the CPU where no CUDA device is visible
          (vLLM's CPU build), where it gets `--dtype float32 --enforce-eager` unless `judge.vllm_args`
          set them, `--max-model-len 2048` unless `judge.max_model_len` or `judge.vllm_args` set one,
          and VLLM_CPU_KVCACHE_SPACE=2 (GiB of KV cache) unless the environment sets it.
  none    no judge: the context yields None.

Why a subprocess for vLLM rather than the offline `vllm.LLM` (`judge_rl.servers.vllm`): the judge's
GPU memory, its CUDA context and its crashes stay out of the training process, and the policy job talks
to a local judge exactly as to a remote one, over HTTP.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import httpx

from judge_rl import stopping
from judge_rl.config import check_device
from judge_rl.config.paths import load_model_config
from judge_rl.servers.http import HOST, ChatCompletionServer
from judge_rl.servers.watchdog import stop_group

LOG_NAME = "vllm_serve.log"
STOP_GRACE_S = 10.0
POLL_INTERVAL_S = 0.25


@dataclass
class Endpoint:
    """Where the judge answers: `base_url` (ending in /v1) and the model id to send (`model`; for a vLLM server the
    job started, its per-job id).
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
    command: Sequence[str] | Callable[[int, str], Sequence[str]] | None = None,
) -> Iterator[Endpoint | None]:
    """The judge endpoint of a `RewardJudgeConfig` (see the module docstring), stopped on exit.

    `log_dir`: where the vLLM server writes its output (default: a fresh temporary directory, kept so the
    log outlives a failure). `command`: for engine vllm, run this instead of `vllm_serve_command(...)` (a test's
    stand-in server): a function of (port, model id) giving the command line of a server that listens on
    127.0.0.1:port and lists that model id at GET /v1/models, or a fixed command line (one that never gets ready)."""
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
    if judge_cfg.model is not None and judge_model_config(judge_cfg).source == "tiny_random":
        return "local"
    return "vllm" if _vllm_installed() else "local"


def judge_model_config(judge_cfg):
    """The ModelConfig of the judge: `judge.model` (a conf/model name or YAML path), or, with only
    `judge.checkpoint` set, that directory as a local model (its own tokenizer). The one place the policy judge's
    model is looked up (the engine `auto` picks, the served name, the server started)."""
    if judge_cfg.model is not None:
        return load_model_config(judge_cfg.model, "judge.model")
    if judge_cfg.checkpoint is None:
        raise ValueError(f"judge.engine={judge_cfg.engine} serves a model: set judge.model or judge.checkpoint")
    from judge_rl.config import ModelConfig

    path = str(Path(judge_cfg.checkpoint).expanduser())
    return ModelConfig(name=Path(path).name, source="local", path=path)


def served_name(judge_cfg, model_cfg=None) -> str:
    """The model id requests carry: `judge.served_model`; else, for a vLLM server the job reaches but did not start
    (judge.engine=vllm with judge.base_url), the id `vllm serve <path>` serves under by default: `judge.checkpoint`, or
    the model's hub path; else the judge model's name (`judge_model_config`; `model_cfg`: that config, when the caller
    already has it). The one rule: the endpoint started or reached here and the policy job's verl reward kwargs
    (judge_rl/policy/verl/launch.py) both name the judge by it; a server this job starts adds a per-job token to it
    (`job_model_id`)."""
    if judge_cfg.served_model:
        return judge_cfg.served_model
    if model_cfg is None and judge_cfg.model is None and judge_cfg.checkpoint is None:
        raise ValueError(f"judge.engine={judge_cfg.engine} at judge.base_url={judge_cfg.base_url}: set "
                         "judge.served_model (the model id the endpoint expects) or judge.model")
    if judge_cfg.engine == "vllm" and judge_cfg.base_url:
        if judge_cfg.checkpoint:
            return str(judge_cfg.checkpoint)
        m = model_cfg or judge_model_config(judge_cfg)
        return m.path if m.source == "hub" else m.name
    return (model_cfg or judge_model_config(judge_cfg)).name


# The `vllm` console script's module. Not `vllm.entrypoints.openai.api_server`: vLLM 0.31 deprecates running that
# module ("may be removed in a future release. Please use `vllm serve`").
VLLM_CLI_MODULE = "vllm.entrypoints.cli.main"


def _sets_flag(args: Sequence[str], *flags: str) -> bool:
    """Whether `args` set one of `flags` (as `--flag`, `--flag value` or `--flag=value`)."""
    return any(a in flags or a.split("=", 1)[0] in flags for a in args)


def vllm_serve_command(judge_cfg, model_path: str, served_name: str, *, cpu: bool = False,
                       python: str | None = None, port: int | None = None) -> list[str]:
    """The `vllm serve` command line for a judge (pure: no lookup, nothing run), run as a module of
    `python` (default: this one): `<python> -m vllm.entrypoints.cli.main serve <path> ...`. It
    listens on 127.0.0.1:`port` (default `judge.port`) only; `judge.vllm_args` come last, so they can add any vllm flag.
    `cpu`: vLLM's CPU build, where no CUDA device is visible: `--dtype float32 --enforce-eager` and
    `--max-model-len 2048` (CPU_MAX_MODEL_LEN), each unless `judge.vllm_args` (or `judge.max_model_len`)
    sets it."""
    from judge_rl.rollouts.vllm_engine import CPU_MAX_MODEL_LEN

    extra = [str(a) for a in judge_cfg.vllm_args]
    cmd = [
        python or sys.executable, "-m", VLLM_CLI_MODULE, "serve", str(model_path),
        "--host", HOST,
        "--port", str(port if port is not None else judge_cfg.port),
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

    check_device(judge_cfg.device, "judge.device")
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
    from judge_rl.rollouts.vllm_engine import vllm_installed

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


def _stop(process: subprocess.Popen, started: float | None = None) -> None:
    """SIGTERM to the server's process group (vLLM's engine and workers are its children), SIGKILL
    after STOP_GRACE_S; done when the server and every process of its group are gone, and, given `started`
    (the server's start, a time.time()), the shared memory they left is removed. A server that died first
    (a crash, a kill) may leave its engine process behind: the group is stopped all the same."""
    # the group the job started (start_new_session): pgid == pid
    stop_group(process.pid, STOP_GRACE_S, leader=process, shm_since=started)


# -- a job's own server: its port, its identity, its death -------------------------------------------

PORT_BASE = 8011  # judge.port=null: the first free port from here (below Linux's ephemeral range, 32768-60999)
PORT_SPAN = 200
WATCHDOG = Path(__file__).with_name("watchdog.py")


def _port_lock_dir() -> Path:
    """Where this user's jobs lock the ports of the judges they serve (one file per port): /tmp, not $TMPDIR, which a
    scheduler may set per job (SLURM), so that every job on the machine sees the same locks."""
    path = Path("/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()) / f"judge_rl-ports-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def _lock_port(port: int) -> tuple[int | None, str]:
    """An exclusive flock on this user's lock file of `port`: (its fd, "") when taken, or (None, the holder's pid) when
    another job (or another endpoint of this one) holds it. The kernel drops it when the holder dies, kill -9 too;
    `_unlock_port` removes the file. Why a lock besides the bind check: `vllm serve` binds with SO_REUSEPORT, so a
    second server binds the same port as the first, and it binds only once its model is loaded: two jobs that start
    together would both see the port free."""
    import fcntl

    path = _port_lock_dir() / f"{port}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            return None, holder
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:  # not a file its last holder removed as it was opened
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd, ""


def _unlock_port(port: int, fd: int) -> None:
    """Remove the lock file of `port` (while holding it: no lock file is left per port ever used), then release it."""
    with contextlib.suppress(OSError):
        os.unlink(_port_lock_dir() / f"{port}.lock")
    os.close(fd)


def _reserve_port(port: int | None) -> tuple[int, int]:
    """(port, lock fd) for this job's server: `judge.port`, refused in one line naming it when another job's judge
    holds it or anything listens there; with judge.port=null, the first port from PORT_BASE that is neither."""
    if port is not None:
        fd, holder = _lock_port(port)
        if fd is None:
            raise RuntimeError(f"judge.port={port} is taken by another judge_rl job's judge on this machine (pid {holder}); "
                               f"set judge.port=null (the job picks a free port) or another judge.port")
        if _port_in_use(port):
            _unlock_port(port, fd)
            raise RuntimeError(f"judge.port={port} is in use on {HOST} (a judge already running there? set "
                               f"judge.base_url=http://{HOST}:{port}/v1 to use it, or judge.port=null for a free port)")
        return port, fd
    for candidate in range(PORT_BASE, PORT_BASE + PORT_SPAN):
        fd, _ = _lock_port(candidate)
        if fd is None:
            continue
        if not _port_in_use(candidate):
            return candidate, fd
        _unlock_port(candidate, fd)
    raise RuntimeError(f"judge.port=null: no free port in {PORT_BASE}-{PORT_BASE + PORT_SPAN - 1} on {HOST}; set judge.port")


def job_model_id(name: str) -> str:
    """The model id this job's server is started with (`--served-model-name`) and every request carries: the judge's
    name and a per-job token. GET /v1/models must list it before the job grades (another server on the port fails
    the start in one line), and a request that reaches any other server is refused there (HTTP 404, a judge
    failure), never graded by another model."""
    return f"{name}@job-{os.getpid()}-{secrets.token_hex(4)}"


@contextlib.contextmanager
def _vllm_process(judge_cfg, cache_dir: str, log_dir, command) -> Iterator[Endpoint]:
    from judge_rl.rollouts.vllm_engine import cpu_environment, cuda_available
    from judge_rl.servers.vllm import model_dir

    model_cfg = judge_model_config(judge_cfg)
    model_id = job_model_id(served_name(judge_cfg, model_cfg))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if command is None:
        if not _vllm_installed():
            raise RuntimeError(f"judge.engine=vllm: vllm is not installed in this Python ({sys.executable}); install "
                               "vllm (GPU: pip install 'judge_rl[gpu]'; CPU: make install) or set judge.base_url to "
                               "a running server")
        cpu = not cuda_available()
        if cpu:
            cpu_environment(env)
        path = model_dir(model_cfg, cache_dir, judge_cfg.checkpoint)
        command = lambda port, model: vllm_serve_command(judge_cfg, path, model, cpu=cpu, port=port)  # noqa: E731
    elif not callable(command):  # a fixed command line (a test's stand-in that never answers, or exits)
        fixed = list(command)
        command = lambda port, model: fixed  # noqa: E731
    port, lock = _reserve_port(judge_cfg.port)
    try:
        argv = [str(c) for c in command(port, model_id)]
        executable = _resolve_executable(argv[0])
        if executable is None:
            raise RuntimeError(f"judge.engine=vllm: {argv[0]!r} is not on PATH; install vllm (GPU: "
                               "pip install 'judge_rl[gpu]') or set judge.base_url to a running server")
        argv[0] = executable
        log_path = Path(log_dir or tempfile.mkdtemp(prefix="judge_vllm_")).expanduser() / LOG_NAME
        log_path.parent.mkdir(parents=True, exist_ok=True)
        base_url = f"http://{HOST}:{port}/v1"
        with open(log_path, "ab") as log:
            log.write(f"$ {shlex.join(argv)}\n".encode())
            log.flush()
            started = time.time()  # the shared memory its engine may leave is what was made since (judge_rl/shm.py)
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True, env=env, preexec_fn=stopping.die_with_parent())
            try:  # its own session: the job's Ctrl-C or group signals never reach it
                watchdog = subprocess.Popen(
                    [sys.executable, str(WATCHDOG), str(os.getpid()), str(process.pid), str(STOP_GRACE_S),
                     repr(started)],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            except BaseException:
                _stop(process, started)
                raise
        try:
            _wait_ready(process, base_url, model_id, judge_cfg.startup_timeout_s, argv, log_path)
            yield Endpoint(base_url, model_id, "vllm", process=process, log_path=log_path)
        finally:
            _stop(process, started)
            try:  # it exits by itself once the group is gone
                watchdog.wait(timeout=5)
            except subprocess.TimeoutExpired:
                watchdog.kill()
                watchdog.wait()
    finally:
        _unlock_port(port, lock)


def _served_ids(response: httpx.Response) -> list[str] | None:
    """The model ids of a GET /models answer, or None when it is not one."""
    try:
        return [str(m.get("id")) for m in response.json()["data"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _wait_ready(process: subprocess.Popen, base_url: str, model_id: str, timeout_s: float, command: list[str],
                log_path: Path) -> None:
    """Poll GET {base_url}/models until it answers 200 listing `model_id` (this job's server, not another one on
    the port); a one-line RuntimeError when the server exits first, another server answers, or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2.0, trust_env=False) as http:  # 127.0.0.1: never through a proxy
        while True:
            code = process.poll()
            if code is not None:
                raise RuntimeError(f"judge.engine=vllm: `{shlex.join(command)}` exited with code {code} before "
                                   f"answering GET {base_url}/models; log: {log_path} "
                                   f"(last line: {_last_line(log_path)!r})")
            try:
                response = http.get(f"{base_url}/models")
            except httpx.HTTPError:
                response = None
            if response is not None and response.status_code == 200:
                ids = _served_ids(response)
                if ids is not None and model_id in ids:
                    return
                _stop(process)
                raise RuntimeError(f"judge.engine=vllm: another server answers on {base_url} (GET /models lists "
                                   f"{ids if ids is not None else 'no model ids'}, not this job's {model_id!r}); "
                                   f"stopped the one this job started; set judge.port=null (a free port) or another "
                                   f"judge.port; log: {log_path}")
            if time.monotonic() >= deadline:
                _stop(process)
                raise RuntimeError(f"judge.engine=vllm: `{shlex.join(command)}` did not answer GET {base_url}/models "
                                   f"within judge.startup_timeout_s={timeout_s:g}s; stopped it (exit code "
                                   f"{process.returncode}); log: {log_path} (last line: {_last_line(log_path)!r})")
            time.sleep(POLL_INTERVAL_S)
