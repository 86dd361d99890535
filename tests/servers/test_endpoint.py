"""judge_endpoint (judge_rl/servers/endpoint.py): each judge.engine on the tiny random model, and the
`vllm serve` subprocess lifecycle with the project's own server as a stand-in (127.0.0.1 only)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from judge_rl.policy.config import RewardJudgeConfig
from judge_rl.servers import endpoint as endpoint_module
from judge_rl.servers.endpoint import Endpoint, judge_endpoint, vllm_serve_command

from conftest import CACHE_DIR
from vllm_support import port_free

CHAT = [{"role": "user", "content": "Is 2 + 2 = 4? Answer yes or no."}]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ask(endpoint: Endpoint) -> httpx.Response:
    return httpx.post(f"{endpoint.base_url}/chat/completions", timeout=30,
                      json={"model": endpoint.model, "messages": CHAT, "max_tokens": 4})


def refused(base_url: str) -> bool:
    try:
        httpx.get(f"{base_url}/models", timeout=2)
    except httpx.ConnectError:
        return True
    return False


def stand_in(port: int, model: str) -> list[str]:
    """The project's own server in a subprocess, standing in for `vllm serve` (on the port and with the model id the
    endpoint gives it)."""
    return [sys.executable, "-m", "judge_rl.servers.http", "--model", "tiny-random", "--port", str(port),
            "--served-model-name", model, "--device", "cpu", "--cache-dir", CACHE_DIR, "--max-batch", "4",
            "--batch-wait-s", "0.01"]


# vLLM's engine process: shared memory for its message queue (Python's `psm_*`, untracked as vLLM's, so nothing
# unlinks it when this process dies before unlinking it itself), its name written to the file argv[1], then a sleep
ENGINE = """
import sys, time
from multiprocessing import resource_tracker, shared_memory
queue = shared_memory.SharedMemory(create=True, size=1 << 20)
resource_tracker.unregister(queue._name, "shared_memory")
queue.buf[:4] = b"busy"
open(sys.argv[1], "w").write(queue.name)
time.sleep(300)
"""
# A server that starts in milliseconds: GET /v1/models lists the ids it is given; with a pid file, it first starts a
# child in its process group that outlives it, as vLLM's engine process (ENGINE) outlives a killed `vllm serve`.
MODELS_SERVER = """
import http.server, json, subprocess, sys
port, ids, pid_file = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3]
if pid_file != "-":
    child = subprocess.Popen([sys.executable, "-c", %r, pid_file + ".shm"])
    open(pid_file, "w").write(str(child.pid))
class Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Models).serve_forever()
""" % ENGINE


def models_server(ids: list[str] | None = None, pid_file="-"):
    """A `command` for judge_endpoint: MODELS_SERVER on the endpoint's port, listing `ids` (default: the job's id)."""
    return lambda port, model: [sys.executable, "-c", MODELS_SERVER, str(port), ",".join(ids or [model]), str(pid_file)]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie (exited, not yet reaped by init) is not alive
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def watchdogs_of(pgid: int) -> list[int]:
    """The live watchdog processes (judge_rl/servers/watchdog.py) minding the server process group `pgid`."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmd = p.info["cmdline"] or []
        if str(endpoint_module.WATCHDOG) in cmd and str(pgid) in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(p.pid)
    return found


def vllm_cfg(**kwargs) -> RewardJudgeConfig:
    return RewardJudgeConfig(name="vllm", engine="vllm", model="tiny-random", **kwargs)


# -- engine local / openai / none -------------------------------------------------------------------


def test_local_engine_serves_the_model_in_process_and_stops_it():
    cfg = RewardJudgeConfig(engine="local", model="tiny-random", device="cpu", max_batch=4, batch_wait_s=0.01)
    with judge_endpoint(cfg, CACHE_DIR) as endpoint:
        assert endpoint.engine == "local" and endpoint.model == "tiny-random" and endpoint.process is None
        server = endpoint.server
        assert server is not None and endpoint.base_url == server.base_url.rstrip("/")
        assert endpoint.base_url.startswith("http://127.0.0.1:")
        assert (server.max_batch, server.batch_wait_s) == (4, 0.01)
        assert ask(endpoint).status_code == 200 and server.batch_sizes == [1]
    assert refused(endpoint.base_url)
    assert not server._worker.is_alive()


def test_local_engine_served_model_names_the_model():
    cfg = RewardJudgeConfig(engine="local", model="tiny-random", device="cpu", served_model="my-judge")
    with judge_endpoint(cfg, CACHE_DIR) as endpoint:
        assert endpoint.model == "my-judge"
        assert httpx.get(f"{endpoint.base_url}/models").json()["data"][0]["id"] == "my-judge"
        assert ask(endpoint).status_code == 200


def test_endpoints_that_are_already_running_start_nothing():
    local = RewardJudgeConfig(engine="local", model="tiny-random", base_url="http://127.0.0.1:9/v1")
    with judge_endpoint(local, CACHE_DIR) as endpoint:
        assert endpoint == Endpoint("http://127.0.0.1:9/v1", "tiny-random", "local")
    remote = RewardJudgeConfig(engine="openai", model=None, base_url="https://api.example.com/v1", served_model="gpt-x")
    with judge_endpoint(remote, CACHE_DIR) as endpoint:
        assert endpoint == Endpoint("https://api.example.com/v1", "gpt-x", "openai")
    running = vllm_cfg(base_url="http://127.0.0.1:8011/v1", served_model="Qwen/Qwen3-8B")
    with judge_endpoint(running, CACHE_DIR) as endpoint:
        assert endpoint == Endpoint("http://127.0.0.1:8011/v1", "Qwen/Qwen3-8B", "vllm")


def test_engine_none_yields_none_and_an_unknown_engine_is_refused():
    with judge_endpoint(RewardJudgeConfig(engine="none", model=None), CACHE_DIR) as endpoint:
        assert endpoint is None
    with pytest.raises(ValueError, match=r"^judge.engine='sglang': expected one of local, openai, vllm, none$"):
        with judge_endpoint(RewardJudgeConfig(engine="sglang"), CACHE_DIR):
            pass


# -- engine vllm: the command and the subprocess ----------------------------------------------------


def test_vllm_serve_command_is_pure_and_ends_with_vllm_args():
    cfg = vllm_cfg(port=8123, tensor_parallel_size=2, gpu_memory_utilization=0.4,
                   vllm_args=["--max-model-len", "8192", "--enforce-eager"])
    serve = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", "/models/qwen3-8b", "--host", "127.0.0.1",
             "--port", "8123", "--served-model-name", "qwen3-8b", "--tensor-parallel-size", "2",
             "--gpu-memory-utilization", "0.4"]  # fmt: skip
    assert vllm_serve_command(cfg, "/models/qwen3-8b", "qwen3-8b") == [*serve, "--max-model-len", "8192", "--enforce-eager"]
    assert vllm_serve_command(cfg, "/m", "q", python="/opt/py/bin/python")[:3] == ["/opt/py/bin/python", "-m", "vllm.entrypoints.cli.main"]
    # judge.max_model_len is a flag of its own; vllm_args still come last
    cfg = vllm_cfg(port=8123, tensor_parallel_size=2, gpu_memory_utilization=0.4, max_model_len=1024, vllm_args=["--seed", "1"])
    assert vllm_serve_command(cfg, "/models/qwen3-8b", "qwen3-8b") == [*serve, "--max-model-len", "1024", "--seed", "1"]


def test_vllm_serve_command_on_a_cpu_adds_float32_eager_and_a_context_unless_set():
    cfg = vllm_cfg(port=8123)
    tail = vllm_serve_command(cfg, "/m", "q", cpu=True)[-5:]
    assert tail == ["--max-model-len", "2048", "--dtype", "float32", "--enforce-eager"]
    assert vllm_serve_command(vllm_cfg(port=8123, max_model_len=1024), "/m", "q", cpu=True)[-5:-3] == ["--max-model-len", "1024"]
    # what judge.vllm_args set is left to them (either spelling), and they come last
    mine = ["--dtype=bfloat16", "--no-enforce-eager", "--max-model-len", "512"]
    cmd = vllm_serve_command(vllm_cfg(port=8123, vllm_args=mine), "/m", "q", cpu=True)
    assert cmd[-4:] == mine and cmd.count("--max-model-len") == 1 and "--enforce-eager" not in cmd
    assert "float32" not in cmd and not any(c.startswith("--dtype") for c in cmd[:-4])
    # on a GPU nothing is added
    assert not {"--dtype", "--enforce-eager", "--max-model-len"} & set(vllm_serve_command(cfg, "/m", "q"))


def test_vllm_engine_starts_a_server_process_waits_for_it_and_stops_it(tmp_path):
    port = free_port()
    cfg = vllm_cfg(port=port, startup_timeout_s=120)
    with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path, command=stand_in) as endpoint:
        assert endpoint.base_url == f"http://127.0.0.1:{port}/v1" and endpoint.model.startswith("tiny-random@job-")
        assert endpoint.engine == "vllm" and endpoint.server is None
        process = endpoint.process
        assert process is not None and process.poll() is None  # polled until ready, still running
        assert ask(endpoint).status_code == 200
        assert endpoint.log_path == tmp_path / "vllm_serve.log"
    assert process.returncode == 0  # SIGTERM stopped it cleanly (no SIGKILL)
    assert refused(endpoint.base_url) and watchdogs_of(process.pid) == []  # its watchdog went with it
    log = endpoint.log_path.read_text()
    assert log.startswith("$ ") and "judge_rl.servers.http" in log
    assert f"serving tiny-random at http://127.0.0.1:{port}" in log


def test_a_server_that_exits_at_once_fails_with_one_line(tmp_path):
    cfg = vllm_cfg(port=free_port(), startup_timeout_s=600)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as err:
        with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path,
                            command=[sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"]):
            pytest.fail("the endpoint should not have come up")
    message = str(err.value)
    # the exit is noticed at once (a Python start: seconds at most on a loaded 2-core machine, 120 s is 5x+ that), not
    # at the 600 s startup timeout
    assert "\n" not in message and time.monotonic() - start < 120
    assert message.startswith("judge.engine=vllm: ") and "exited with code 3" in message
    assert str(tmp_path / "vllm_serve.log") in message and "last line: 'boom'" in message
    assert sys.executable in message  # the command


def test_a_server_that_never_answers_is_stopped_at_the_startup_timeout(tmp_path):
    cfg = vllm_cfg(port=free_port(), startup_timeout_s=1.0)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as err:
        slow = [sys.executable, "-c", "print('loading', flush=True); import time; time.sleep(600)"]
        with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path, command=slow):
            pytest.fail("the endpoint should not have come up")
    message = str(err.value)
    # stopped at the 1 s startup timeout by SIGTERM (a few s at most on a loaded 2-core machine, 60 s is 5x+ that), not
    # left to its 600 s sleep
    assert "\n" not in message and time.monotonic() - start < 60
    assert "judge.startup_timeout_s=1s" in message and "exit code -15" in message
    assert str(tmp_path / "vllm_serve.log") in message and "last line: 'loading'" in message


def test_a_missing_executable_or_vllm_says_to_install_vllm_or_set_base_url(tmp_path, monkeypatch):
    cfg = vllm_cfg(port=free_port())
    with pytest.raises(RuntimeError) as err:
        with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path, command=["no-such-vllm-executable", "serve"]):
            pass
    assert "'no-such-vllm-executable' is not on PATH" in str(err.value) and "judge.base_url" in str(err.value)

    monkeypatch.setattr(endpoint_module, "_vllm_installed", lambda: False)  # as in a Python without vllm
    with pytest.raises(RuntimeError) as err:
        with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path):
            pass
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"judge.engine=vllm: vllm is not installed in this Python ({sys.executable})")
    assert "install vllm" in message and "judge.base_url" in message
    assert not (tmp_path / "vllm_serve.log").exists()  # nothing was started


@pytest.mark.usefixtures("cleans_up_after_kills")
def test_a_server_that_dies_leaves_no_process_of_its_group_behind(tmp_path):
    """The server's child (as vLLM's engine process) outlives a server killed by a signal; exiting stops the group."""
    port = free_port()
    child = tmp_path / "child.pid"
    script = (f"import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
              f"open({str(child)!r}, 'w').write(str(c.pid)); "
              "import runpy; sys.argv = sys.argv[1:]; runpy.run_module('judge_rl.servers.http', run_name='__main__')")
    cfg = vllm_cfg(port=port, startup_timeout_s=120)
    command = lambda port, model: [sys.executable, "-c", script, *stand_in(port, model)[2:]]  # noqa: E731
    with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path, command=command) as endpoint:
        process = endpoint.process
        child_pid = int(child.read_text())
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)  # a hang guard: a SIGKILLed process is reaped at once
        assert pid_alive(child_pid)  # orphaned, still in the server's process group
    assert not pid_alive(child_pid) and refused(endpoint.base_url)


def test_a_port_already_in_use_is_refused_before_starting(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(RuntimeError, match=rf"^judge.port={port} is in use on 127.0.0.1"):
            with judge_endpoint(vllm_cfg(port=port), CACHE_DIR, log_dir=tmp_path, command=stand_in):
                pass
    assert not (tmp_path / "vllm_serve.log").exists()


def test_judge_engine_auto_serves_with_vllm_unless_the_projects_server_is_needed(monkeypatch):
    from judge_rl.policy.config import JudgeFaultsConfig

    monkeypatch.setattr(endpoint_module, "_vllm_installed", lambda: True)
    assert endpoint_module.auto_engine(RewardJudgeConfig(engine="auto", model="smollm2-135m")) == "vllm"
    assert endpoint_module.auto_engine(RewardJudgeConfig(engine="auto", model="tiny-random")) == "local"
    assert endpoint_module.auto_engine(RewardJudgeConfig(engine="auto", model="smollm2-135m",
                                                         faults=JudgeFaultsConfig(fail_every=3))) == "local"  # fmt: skip
    assert endpoint_module.auto_engine(RewardJudgeConfig(engine="auto", model="smollm2-135m",
                                                         base_url="http://127.0.0.1:9/v1")) == "local"  # fmt: skip
    monkeypatch.setattr(endpoint_module, "_vllm_installed", lambda: False)
    assert endpoint_module.auto_engine(RewardJudgeConfig(engine="auto", model="smollm2-135m")) == "local"


# -- a job's own server: its port, its identity, its death (issue 36) ---------------------------------


def models_listed(base_url: str) -> list[str]:
    return [m["id"] for m in httpx.get(f"{base_url}/models", timeout=5).json()["data"]]


def test_judge_port_null_gives_each_job_its_own_locked_port_and_a_taken_port_is_refused(tmp_path):
    """Two jobs' judges (port null) get two ports, each answering with its own model id only; naming a port another
    job's judge holds is refused in one line naming it, before anything starts (vLLM binds with SO_REUSEPORT and
    only once loaded, so a bind check alone would let both start there)."""
    cfg = vllm_cfg(port=None, startup_timeout_s=30)
    with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path / "a", command=models_server()) as a, \
            judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path / "b", command=models_server()) as b:  # fmt: skip
        port_a, port_b = (int(e.base_url.rsplit(":", 1)[1].split("/")[0]) for e in (a, b))
        assert port_a != port_b and min(port_a, port_b) >= endpoint_module.PORT_BASE
        assert a.model != b.model and a.model.startswith("tiny-random@job-") and b.model.startswith("tiny-random@job-")
        assert models_listed(a.base_url) == [a.model] and models_listed(b.base_url) == [b.model]
        with pytest.raises(RuntimeError) as err:
            with judge_endpoint(vllm_cfg(port=port_a), CACHE_DIR, log_dir=tmp_path / "c", command=models_server()):
                pytest.fail("a port another job's judge holds should be refused")
        message = str(err.value)
        assert "\n" not in message and message.startswith(f"judge.port={port_a} is taken by another judge_rl job's judge")
        assert f"(pid {os.getpid()})" in message and not (tmp_path / "c" / "vllm_serve.log").exists()
    with judge_endpoint(vllm_cfg(port=port_a), CACHE_DIR, log_dir=tmp_path / "c", command=models_server()) as c:
        assert c.base_url == a.base_url  # released when the first job's endpoint closed
    assert not (endpoint_module._port_lock_dir() / f"{port_a}.lock").exists()  # no lock file left per port used


def test_another_server_answering_on_the_port_fails_the_start_in_one_line(tmp_path):
    """A server that answers GET /v1/models without this job's model id (another job's judge on the same port) is
    not graded by: one line naming the URL and both ids, and the server this job started is stopped."""
    cfg = vllm_cfg(port=free_port(), startup_timeout_s=600)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as err:
        with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path, command=models_server(["tiny-random"])):
            pytest.fail("a server that does not list this job's model id should not be used")
    message = str(err.value)
    # refused at its first answer (a few s at most on a loaded 2-core machine, 120 s is 5x+ that), not waited on until
    # the 600 s startup timeout
    assert "\n" not in message and time.monotonic() - start < 120
    assert message.startswith(f"judge.engine=vllm: another server answers on http://127.0.0.1:{cfg.port}/v1 "
                              "(GET /models lists ['tiny-random'], not this job's 'tiny-random@job-")
    assert refused(f"http://127.0.0.1:{cfg.port}/v1")  # the one it started is stopped


JOB = """
import sys, time
from judge_rl.policy.config import RewardJudgeConfig
from judge_rl.servers.endpoint import judge_endpoint
cfg = RewardJudgeConfig(name="vllm", engine="vllm", model="tiny-random", port={port}, startup_timeout_s=30)
server = lambda port, model: [sys.executable, "-c", {server!r}, str(port), model, {pid_file!r}]
with judge_endpoint(cfg, {cache!r}, log_dir={log!r}, command=server) as endpoint:
    print(endpoint.process.pid, flush=True)
    time.sleep(300)
"""


@pytest.mark.usefixtures("cleans_up_after_kills")
def test_a_job_killed_by_sigkill_leaves_no_server_process_and_frees_the_port(tmp_path):
    """kill -9 of a process that serves its judge as the job does: the server (PR_SET_PDEATHSIG) and the child it
    started in its process group (as vLLM's engine process, which does not watch its parent; the watchdog stops
    it) are gone within seconds, the shared memory that child made and could not unlink is removed, and the port is
    free for a re-run."""
    import psutil

    port, pid_file = free_port(), tmp_path / "child.pid"
    script = JOB.format(server=MODELS_SERVER, port=port, cache=CACHE_DIR, log=str(tmp_path),
                        pid_file=str(pid_file))  # fmt: skip
    job = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        server = int(job.stdout.readline())
        shm_name = Path(f"{pid_file}.shm")
        deadline = time.monotonic() + 60  # a hang guard: the child writes it within a second or two
        while not shm_name.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        queue = Path("/dev/shm") / shm_name.read_text()
        assert queue.is_file()
        (watchdog,) = watchdogs_of(server)
        processes = [psutil.Process(pid) for pid in (server, int(pid_file.read_text()), watchdog)]
        assert all(p.is_running() for p in processes) and not port_free(port)
        job.kill()
        job.wait(timeout=60)  # a hang guard: a SIGKILLed process is reaped at once
        start = time.monotonic()
        # gone within seconds (3.4 s on a loaded 2-core machine; the watchdog's SIGTERM, its SIGKILL after a 10 s
        # grace): 60 s is 5x+ that, where "left behind" means never
        gone, alive = psutil.wait_procs(processes, timeout=60)
        print(f"\nserver, its child and the watchdog gone {time.monotonic() - start:.2f}s after the job's SIGKILL")
        assert alive == [], f"left behind: {[p.pid for p in alive]}"
        assert not queue.exists()  # SIGTERM ended the child before it could unlink it: the watchdog did
        assert port_free(port)
        lock, holder = endpoint_module._lock_port(port)  # a re-run may take the port: the dead job's lock went with it
        assert lock is not None, f"still locked by {holder}"
        endpoint_module._unlock_port(port, lock)
        assert f"judge_rl watchdog: the job (pid {job.pid}) is gone" in (tmp_path / "vllm_serve.log").read_text()
    finally:
        if job.poll() is None:
            job.kill()


def test_the_default_judge_takes_port_startup_timeout_base_url_and_vllm_args(tmp_path):
    """judge.port, judge.startup_timeout_s, judge.base_url and judge.vllm_args are plain overrides of judge=embedded
    (the default; they were "not in struct") and are honoured: the port and vllm_args are on the server's command
    line, startup_timeout_s bounds the wait, base_url is used with nothing started; a bad port is one line."""
    from hydra import compose, initialize_config_dir

    from conftest import CONF_DIR
    from judge_rl.policy.config import to_policy_config

    def job(*overrides):
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name="policy", overrides=[f"cache_dir={CACHE_DIR}", f"run_dir={tmp_path}", *overrides])
        return to_policy_config(cfg)

    port = free_port()
    judge = job("judge.engine=vllm", f"judge.port={port}", "judge.startup_timeout_s=1", "judge.vllm_args=[--seed,7]").judge
    assert (judge.name, judge.port, judge.startup_timeout_s, judge.vllm_args) == ("embedded", port, 1.0, ["--seed", "7"])
    command = vllm_serve_command(judge, "/m", "smollm2-135m@job-1", port=judge.port)
    assert command[command.index("--port") + 1] == str(port) and command[-2:] == ["--seed", "7"]
    never = [sys.executable, "-c", "import time; time.sleep(600)"]
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"did not answer GET http://127.0.0.1:{port}/v1/models within "
                                           r"judge.startup_timeout_s=1s"):  # fmt: skip
        with judge_endpoint(judge, CACHE_DIR, log_dir=tmp_path, command=never):
            pass
    # stopped at the 1 s startup timeout (a few s at most on a loaded 2-core machine, 60 s is 5x+ that), not left to
    # its 600 s sleep
    assert time.monotonic() - start < 60

    judge = job("judge.base_url=http://127.0.0.1:9/v1").judge
    with judge_endpoint(judge, CACHE_DIR) as endpoint:
        assert endpoint == Endpoint("http://127.0.0.1:9/v1", "smollm2-135m", "local")  # nothing started

    assert job().judge.port is None  # the default: a free port, picked when the job starts
    with pytest.raises(ValueError, match=r"^judge.port=0: expected \[1, 65535\]$"):
        job("judge.port=0")
