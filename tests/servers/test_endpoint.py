"""judge_endpoint (judge_rl/servers/endpoint.py): each judge.engine on the tiny random model, and the
`vllm serve` subprocess lifecycle with the project's own server as a stand-in (127.0.0.1 only)."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

import httpx
import pytest

from judge_rl.policy.config import RewardJudgeConfig
from judge_rl.servers import endpoint as endpoint_module
from judge_rl.servers.endpoint import Endpoint, judge_endpoint, vllm_serve_command

from conftest import CACHE_DIR

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


def stand_in(port: int) -> list[str]:
    """The project's own server in a subprocess, standing in for `vllm serve`."""
    return [sys.executable, "-m", "judge_rl.servers.http", "--model", "tiny-random", "--port", str(port),
            "--device", "cpu", "--cache-dir", CACHE_DIR, "--max-batch", "4", "--batch-wait-s", "0.01"]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie (exited, not yet reaped by init) is not alive
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


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
    with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path, command=stand_in(port)) as endpoint:
        assert endpoint.base_url == f"http://127.0.0.1:{port}/v1" and endpoint.model == "tiny-random"
        assert endpoint.engine == "vllm" and endpoint.server is None
        process = endpoint.process
        assert process is not None and process.poll() is None  # polled until ready, still running
        assert ask(endpoint).status_code == 200
        assert endpoint.log_path == tmp_path / "vllm_serve.log"
    assert process.returncode == 0  # SIGTERM stopped it cleanly (no SIGKILL)
    assert refused(endpoint.base_url)
    log = endpoint.log_path.read_text()
    assert log.startswith("$ ") and "judge_rl.servers.http" in log
    assert f"serving tiny-random at http://127.0.0.1:{port}" in log


def test_a_server_that_exits_at_once_fails_with_one_line(tmp_path):
    cfg = vllm_cfg(port=free_port(), startup_timeout_s=60)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as err:
        with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path,
                            command=[sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"]):
            pytest.fail("the endpoint should not have come up")
    message = str(err.value)
    assert "\n" not in message and time.monotonic() - start < 30
    assert message.startswith("judge.engine=vllm: ") and "exited with code 3" in message
    assert str(tmp_path / "vllm_serve.log") in message and "last line: 'boom'" in message
    assert sys.executable in message  # the command


def test_a_server_that_never_answers_is_stopped_at_the_startup_timeout(tmp_path):
    cfg = vllm_cfg(port=free_port(), startup_timeout_s=1.0)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as err:
        slow = [sys.executable, "-c", "print('loading', flush=True); import time; time.sleep(60)"]
        with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path, command=slow):
            pytest.fail("the endpoint should not have come up")
    message = str(err.value)
    assert "\n" not in message and time.monotonic() - start < 15
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


def test_a_server_that_dies_leaves_no_process_of_its_group_behind(tmp_path):
    """The server's child (as vLLM's engine process) outlives a server killed by a signal; exiting stops the group."""
    port = free_port()
    child = tmp_path / "child.pid"
    script = (f"import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
              f"open({str(child)!r}, 'w').write(str(c.pid)); "
              f"import runpy; sys.argv = {stand_in(port)[2:]!r}; runpy.run_module('judge_rl.servers.http', run_name='__main__')")
    cfg = vllm_cfg(port=port, startup_timeout_s=120)
    with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path, command=[sys.executable, "-c", script]) as endpoint:
        process = endpoint.process
        child_pid = int(child.read_text())
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        assert pid_alive(child_pid)  # orphaned, still in the server's process group
    assert not pid_alive(child_pid) and refused(endpoint.base_url)


def test_a_port_already_in_use_is_refused_before_starting(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(RuntimeError, match=rf"^judge.port={port} is in use on 127.0.0.1"):
            with judge_endpoint(vllm_cfg(port=port), CACHE_DIR, log_dir=tmp_path, command=stand_in(port)):
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
