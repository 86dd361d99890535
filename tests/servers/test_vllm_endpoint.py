"""judge.engine=vllm for real (slow; where vllm imports: vLLM's CPU build here): `judge_endpoint` starts `vllm serve`
of the embedded SmolLM2-135M as a subprocess, the policy rewards' judge client gets real completions from it, vLLM's
own refusal of a prompt over max_model_len is a judge failure carrying vLLM's message (never a score), and a server
that dies, mid-run or at start-up, is a failure or one line, with nothing of its process group left behind.
One server start is shared by the tests that only talk to it (`served`, module scope)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import httpx
import pytest

from vllm_support import require_vllm, free_port, port_free
from conftest import CACHE_DIR
from judge_rl.policy.config import PolicyRewardConfig, RewardJudgeConfig
from judge_rl.policy.tasks.prompts import Criterion, PolicyPrompt
from judge_rl.policy.grading import Grader, judge_client
from judge_rl.servers.client import complete_many
from judge_rl.servers.endpoint import Endpoint, judge_endpoint
from judge_rl.servers.failures import JUDGE_SERVER_ERROR

pytestmark = pytest.mark.slow

CHAT = [{"role": "user", "content": "Is 2 + 2 = 4? Answer yes or no."}]
TOO_LONG = [{"role": "user", "content": "word " * 1500}]  # ~1,500 tokens > max_model_len 1024
LOWER = "change_case:english_lowercase"
PROMPT = PolicyPrompt(
    prompt_id="p1",
    prompt="Describe the sea. Write everything in lowercase.",
    instruction_id_list=(LOWER,),
    kwargs=({},),
    rubric=(Criterion("The whole response is in lowercase letters.", 2.0, ("instruction_id:" + LOWER,)),
            Criterion("The response describes the sea.", 3.0, ())),
)  # fmt: skip








def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def on_cpu() -> bool:
    from judge_rl.rollouts.vllm_engine import cuda_available

    return not cuda_available()


def vllm_judge(port: int, **kwargs) -> RewardJudgeConfig:
    """The embedded judge served by vLLM, as conf/judge/embedded.yaml asks it (a yes/no clause, stopped at "." or a
    newline), no retries (each failure is seen as it is)."""
    settings = dict(name="vllm", engine="vllm", model="smollm2-135m", port=port, max_model_len=1024,
                    startup_timeout_s=300.0, max_tokens=32, extra_body={"stop": ["\n", "."]}, max_retries=0,
                    timeout_s=120.0, concurrency=8)  # fmt: skip
    return RewardJudgeConfig(**{**settings, **kwargs})


@dataclass
class Served:
    cfg: RewardJudgeConfig
    endpoint: Endpoint
    startup_s: float
    stack: contextlib.ExitStack

    def stop(self) -> None:
        self.stack.close()


def start(cfg: RewardJudgeConfig, log_dir) -> Served:
    stack = contextlib.ExitStack()
    t = time.monotonic()
    endpoint = stack.enter_context(judge_endpoint(cfg, CACHE_DIR, log_dir=log_dir))
    return Served(cfg, endpoint, time.monotonic() - t, stack)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    require_vllm()
    served = start(vllm_judge(free_port()), tmp_path_factory.mktemp("vllm_judge"))
    yield served
    served.stop()


# peak memory: 9.7 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_the_job_starts_vllm_serve_and_the_judge_client_gets_a_real_completion(served):
    endpoint, cfg = served.endpoint, served.cfg
    print(f"\nvllm serve ready in {served.startup_s:.1f}s")
    assert endpoint.engine == "vllm" and endpoint.model.startswith("smollm2-135m@job-")  # this job's own id
    assert endpoint.base_url == f"http://127.0.0.1:{cfg.port}/v1" and endpoint.process.poll() is None
    command = endpoint.log_path.read_text().splitlines()[0]
    assert command.startswith(f"$ {sys.executable} -m vllm.entrypoints.cli.main serve ")
    assert f"--port {cfg.port} --served-model-name {endpoint.model}" in command and "--max-model-len 1024" in command
    environ = dict(kv.split("=", 1) for kv in open(f"/proc/{endpoint.process.pid}/environ").read().split("\0") if "=" in kv)
    if on_cpu():
        assert command.endswith("--max-model-len 1024 --dtype float32 --enforce-eager")
        assert environ["VLLM_CPU_KVCACHE_SPACE"] == (os.environ.get("VLLM_CPU_KVCACHE_SPACE") or "2")
    (model,) = httpx.get(f"{endpoint.base_url}/models", timeout=10).json()["data"]
    assert model["id"] == endpoint.model and model["max_model_len"] == 1024
    # a request naming another id (another job's judge, even of the same model) is refused here, never graded
    other = httpx.post(f"{endpoint.base_url}/chat/completions", timeout=30,
                       json={"model": "smollm2-135m", "messages": CHAT, "max_tokens": 4})
    assert other.status_code == 404, other.text

    client = judge_client(cfg, endpoint.base_url, endpoint.model)  # what the policy rewards send through
    start = time.monotonic()
    (reply,) = complete_many(client, [CHAT])
    print(f"one judge call: {time.monotonic() - start:.2f}s, {reply.completion_tokens} tokens: {reply.text!r}")
    assert reply.ok and reply.text.strip() and reply.finish_reason == "stop" and reply.attempts == 1
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0

    # a rubric graded by the vLLM judge, one yes/no call per criterion: every call reached vLLM and came back
    grader = Grader(PolicyRewardConfig(name="rubric", criterion_format="yesno"), judge_client(cfg, endpoint.base_url, endpoint.model))
    (graded,) = grader.grade_many([PROMPT], ["the sea is wide and blue."])
    assert graded.calls == 2 and grader.telemetry.summary()["judge/calls"] == 2.0
    assert not any(r.startswith(f"<failed: {JUDGE_SERVER_ERROR}") for r in graded.replies), graded.replies


# peak memory: 9.7 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_prompt_over_max_model_len_is_a_judge_failure_carrying_vllms_message(served):
    endpoint, cfg = served.endpoint, served.cfg
    client = judge_client(cfg, endpoint.base_url, endpoint.model)
    ok, refused = complete_many(client, [CHAT, TOO_LONG])
    assert ok.ok
    assert refused.text is None and refused.failure.reason == JUDGE_SERVER_ERROR and refused.attempts == 1  # 400: no retry
    detail = refused.failure.detail
    print(f"\nvLLM's refusal as the judge failure: {detail!r}")
    assert detail.startswith("HTTP 400: This model's maximum context length is 1024 tokens.") and detail.endswith("[1 attempt]")
    assert "\n" not in detail

    # in a reward: the sample fails with that reason and message, never a score of 0
    grader = Grader(PolicyRewardConfig(name="rubric", criterion_format="yesno"), judge_client(cfg, endpoint.base_url, endpoint.model))
    (graded,) = grader.grade_many([PROMPT], ["the sea " * 700])
    assert graded.reward.score is None and graded.reward.failure == JUDGE_SERVER_ERROR and not graded.reward.ok
    assert all("maximum context length is 1024 tokens" in r for r in graded.replies)
    summary = grader.telemetry.summary()
    assert summary["judge/failures"] == summary["judge/calls"] == 2.0 and summary[f"judge/failures/{JUDGE_SERVER_ERROR}"] == 2.0

    # the evaluation harness's endpoint server against the same vLLM: a failed completion with vLLM's message
    from judge_rl.servers import OpenAIServer

    with OpenAIServer(endpoint.base_url, endpoint.model, max_retries=0) as server:
        (completion,) = server.complete([TOO_LONG], max_new_tokens=8)
    assert not completion.ok and "HTTP 400" in completion.error and "maximum context length is 1024" in completion.error


# peak memory: 9.7 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.usefixtures("cleans_up_after_kills")
def test_leaving_the_endpoint_stops_vllm_and_frees_the_port(served):
    endpoint, port = served.endpoint, served.cfg.port
    process = endpoint.process
    assert process.poll() is None and group_alive(process.pid)
    start = time.monotonic()
    served.stop()
    print(f"\nstopped in {time.monotonic() - start:.1f}s, exit code {process.returncode}")
    assert process.returncode is not None and not group_alive(process.pid)  # the engine process too
    assert port_free(port)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{endpoint.base_url}/models", timeout=5)


# peak memory: 9.6 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.usefixtures("cleans_up_after_kills")
def test_a_server_killed_mid_run_fails_the_calls_and_leaves_nothing_behind(tmp_path):
    require_vllm()
    served = start(vllm_judge(free_port()), tmp_path)
    try:
        endpoint, cfg = served.endpoint, served.cfg
        client = judge_client(cfg, endpoint.base_url, endpoint.model)
        (before,) = complete_many(client, [CHAT])
        assert before.ok
        process = endpoint.process
        os.kill(process.pid, signal.SIGKILL)  # the server crashes; its engine process is not told
        process.wait(timeout=60)  # a hang guard: a SIGKILLed process is reaped at once
        after = complete_many(judge_client(cfg, endpoint.base_url, endpoint.model), [TOO_LONG, [{"role": "user", "content": "Hi"}]])
        assert all(r.text is None and r.failure.reason == JUDGE_SERVER_ERROR for r in after)
        assert all(r.failure.detail.startswith("connection error") for r in after), [r.failure.detail for r in after]
        grader = Grader(PolicyRewardConfig(name="rubric", criterion_format="yesno"), judge_client(cfg, endpoint.base_url, endpoint.model))
        (graded,) = grader.grade_many([PROMPT], ["the sea is wide and blue."])
        assert graded.reward.score is None and graded.reward.failure == JUDGE_SERVER_ERROR
        left = group_alive(process.pid)
    finally:
        served.stop()
    print(f"\nkilled server: its process group {'still had' if left else 'had no'} processes before the endpoint exited")
    assert not group_alive(process.pid) and port_free(cfg.port)


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.parametrize("how, log_says", [
    (dict(vllm_args=["--max-model-len", "-5"]), "Input should be greater than or equal to -1"),
    ("empty model dir", "Invalid repository ID or local directory specified"),
], ids=["max-model-len -5", "empty model dir"])  # fmt: skip
def test_vllm_that_exits_at_start_up_is_one_line_naming_the_command_exit_code_and_log(tmp_path, how, log_says):
    require_vllm()
    if how == "empty model dir":
        (tmp_path / "model").mkdir()
        how = dict(checkpoint=str(tmp_path / "model"))
    cfg = vllm_judge(free_port(), startup_timeout_s=120.0, **how)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as err:
        with judge_endpoint(cfg, CACHE_DIR, log_dir=tmp_path / "log"):
            pytest.fail("vLLM should not have come up")
    message, log = str(err.value), tmp_path / "log" / "vllm_serve.log"
    print(f"\n{time.monotonic() - start:.1f}s: {message}")
    assert "\n" not in message and message.startswith(f"judge.engine=vllm: `{sys.executable} -m vllm.entrypoints.cli.main serve ")
    assert "exited with code 1 before answering GET" in message and f"log: {log}" in message
    assert log_says in log.read_text()
    if "vllm_args" in how:
        assert "last line: 'Input should be greater than or equal to -1" in message  # not pydantic's link after it
    assert port_free(cfg.port)


JOB = """
import sys, time
from judge_rl.policy.config import RewardJudgeConfig
from judge_rl.servers.endpoint import judge_endpoint
cfg = RewardJudgeConfig(name="vllm", engine="vllm", model="smollm2-135m", port={port}, max_model_len=1024,
                        startup_timeout_s=300.0)
with judge_endpoint(cfg, {cache!r}, log_dir={log!r}) as endpoint:
    print(endpoint.process.pid, flush=True)
    time.sleep(600)
"""


# peak memory: 10.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.usefixtures("cleans_up_after_kills")
def test_a_job_killed_by_sigkill_leaves_no_vllm_process_and_frees_the_port(tmp_path):
    """kill -9 of a process that serves the vLLM judge as the policy job does (issue 36): `vllm serve`, its engine
    process (VLLM::EngineCore, which does not watch the API server) and every other process of the server are gone
    within seconds, and the port is free for a re-run."""
    import psutil

    require_vllm()
    port = free_port()
    job = subprocess.Popen([sys.executable, "-c", JOB.format(port=port, cache=CACHE_DIR, log=str(tmp_path))],
                           stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        line = job.stdout.readline()
        assert line.strip().isdigit(), f"the job's endpoint did not come up; log: {(tmp_path / 'vllm_serve.log').read_text()[-2000:]}"
        server = psutil.Process(int(line))
        processes = [server, *server.children(recursive=True)]
        names = [p.name() for p in processes]
        print(f"\nserver processes: {names}")
        assert any("EngineCore" in n for n in names) and not port_free(port)
        job.kill()
        job.wait(timeout=60)  # a hang guard: a SIGKILLed process is reaped at once
        start = time.monotonic()
        # gone within seconds (the watchdog's SIGTERM, its SIGKILL after a 10 s grace: 90 s is 5x+ what that takes on a
        # loaded 2-core machine), where "left behind" means never
        gone, alive = psutil.wait_procs(processes, timeout=90)
        print(f"all gone {time.monotonic() - start:.1f}s after the job's SIGKILL")
        assert alive == [], f"left behind: {[(p.pid, p.name()) for p in alive]}"
        assert port_free(port)
    finally:
        if job.poll() is None:
            job.kill()
