"""`python -m judge_rl.eval`: composed with Hydra's compose API, run through `run_eval`, on the real
LLMBar-Natural file, with the hf server and with the openai server against the project's own server."""

from __future__ import annotations

import json
import socket

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf.errors import MissingMandatoryValue

from judge_rl.config import ModelConfig
from judge_rl.jobs.evaluate import run_eval
from judge_rl.servers.http import ChatCompletionServer
from judge_rl.evaluation.harness import ScoreWithheld
from judge_rl.rundir import RunDirError
from judge_rl.models.loading import load_model, load_tokenizer

from conftest import CACHE_DIR, CONF_DIR

TINY = ["model=tiny-random", "benchmark=llmbar_natural", "benchmark.limit=2", "server.max_new_tokens=4"]


def compose_eval(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="evaluate", overrides=[f"cache_dir={CACHE_DIR}", *overrides])


def test_eval_app_writes_records_summary_and_resumes(tmp_path, shared_data):
    summary = run_eval(compose_eval([*TINY, f"run_dir={tmp_path}"]))
    assert summary["benchmark"] == "llmbar_natural" and summary["prompt"] == "strength"
    assert summary["counts"]["items"] == 4 and summary["counts"]["requests_sent"] == 4
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["official"] == summary["official"]
    records = [json.loads(x) for x in (tmp_path / "judgments.jsonl").read_text().splitlines()]
    assert len(records) == 4 and all(r["request_key"] and "output" in r and "winner" in r for r in records)
    again = run_eval(compose_eval([*TINY, f"run_dir={tmp_path}"]))
    assert again["counts"]["reused"] == 4 and again["counts"]["requests_sent"] == 0
    # another prompt is another run: refused in this run_dir, judged anew with resume=false
    with pytest.raises(RunDirError, match=r"judge.prompt: null -> \"rewardbench_pairwise\""):
        run_eval(compose_eval([*TINY, f"run_dir={tmp_path}", "judge.prompt=rewardbench_pairwise"]))
    other = run_eval(compose_eval([*TINY, f"run_dir={tmp_path}", "judge.prompt=rewardbench_pairwise", "resume=false"]))
    assert other["counts"]["requests_sent"] == 4 and other["counts"]["reused"] == 0


def test_a_changed_judge_is_never_answered_from_saved_judgments(tmp_path, shared_data):
    """On today's main a run with another seed, then another model shape, in one run_dir printed
    "0 judged, 8 reused": the request key named the judge only by its name."""
    run_eval(compose_eval([*TINY, "seed=1", f"run_dir={tmp_path}"]))
    shape = ["model.tiny.hidden_size=32", "model.tiny.num_hidden_layers=1"]
    with pytest.raises(RunDirError) as err:
        run_eval(compose_eval([*TINY, *shape, f"run_dir={tmp_path}"]))
    assert "model.tiny.hidden_size: 64 -> 32" in str(err.value) and "seed: 1 -> 42" in str(err.value)
    fresh = run_eval(compose_eval([*TINY, *shape, f"run_dir={tmp_path}", "resume=false"]))
    assert fresh["counts"]["reused"] == 0 and fresh["counts"]["requests_sent"] == 4
    # below the config check, the request keys themselves differ: the judgments file of the first judge,
    # put back beside the second judge's config, is not reused either
    first = next((tmp_path / "superseded").glob("*/judgments.jsonl"))
    (tmp_path / "judgments.jsonl").write_text(first.read_text())
    again = run_eval(compose_eval([*TINY, *shape, f"run_dir={tmp_path}"]))
    assert again["counts"]["reused"] == 0 and again["counts"]["requests_sent"] == 4


def test_a_dead_endpoint_fails_in_one_line_naming_the_key_before_the_run(tmp_path):
    """On an older main, with nothing listening, RewardBench printed an official overall of 0.500 and exit 0; then it
    was withheld after every request had failed. Now nothing answering at server.base_url is found before the run
    directory is claimed, in one line (an endpoint that answers and fails is withheld: the openai-endpoint test)."""
    rows = [{"id": i, "subset": "alpacaeval-easy", "prompt": f"Q{i}", "chosen": f"good {i}", "rejected": f"bad {i}"}
            for i in range(4)]
    path = tmp_path / "rb.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    overrides = ["model=tiny-random", "server=openai", f"server.base_url=http://127.0.0.1:{port}/v1", "server.max_retries=0",
                 "benchmark=rewardbench", f"benchmark.path={path}", f"run_dir={tmp_path / 'run'}"]
    with pytest.raises(ValueError) as err:
        run_eval(compose_eval(overrides))
    assert str(err.value) == (f"server.base_url=http://127.0.0.1:{port}/v1: connection refused at 127.0.0.1:{port} "
                              "(nothing listens there); start the judge's server there or fix the address")
    assert not (tmp_path / "run").exists()


def test_an_over_long_row_is_left_out_and_the_good_rows_are_judged(tmp_path):
    """On today's main a 1 MB field became a 524k-token prompt for a 2,048-position model: it ran for
    minutes, saved nothing, and the good rows of its chunk were lost with it."""
    rows = [{"prompt": f"Question {i}?", "chosen": f"Good answer {i}.", "rejected": f"Bad answer {i}."} for i in range(3)]
    rows.insert(1, {"prompt": "word " * 200_000, "chosen": "Good.", "rejected": "Bad."})
    path = tmp_path / "pref.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = run_eval(compose_eval(["model=tiny-random", "benchmark=preference", f"benchmark.path={path}",
                                     "server.max_new_tokens=4", f"run_dir={tmp_path / 'run'}"]))
    assert summary["counts"]["too_long_units"] == 1 and summary["counts"]["items"] == 6
    # the over-long row was never generated for (what a wall-time bound stood for): only the good rows' 3 x 2 orders
    # went to the model, and no judgment names it
    assert summary["counts"]["requests_sent"] == summary["counts"]["judged_now"] == 6
    assert summary["harness"]["overall"]["n_pairs"] == 3 and summary["scoring"]["status"] == "complete"
    (reason,) = summary["too_long"].values()
    assert "> the model's context of 2048" in reason
    judged = [json.loads(line)["pair_id"] for line in (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    assert len(judged) == 6 and set(summary["too_long"]).isdisjoint(judged)


@pytest.fixture
def tiny_server():
    cfg = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    model = load_model(cfg, CACHE_DIR, torch.device("cpu"), seed=0)
    servers = []

    def start(**kwargs):
        server = ChatCompletionServer(model, load_tokenizer(cfg, CACHE_DIR), "tiny-random", 0, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.shutdown()


def test_eval_app_through_an_openai_endpoint(tmp_path, shared_data, tiny_server):
    server = tiny_server()
    overrides = [*TINY, "server=openai", f"server.base_url={server.base_url}", "server.max_new_tokens=4",
                 "server.backoff_s=0", f"run_dir={tmp_path}"]
    summary = run_eval(compose_eval(overrides))
    assert summary["counts"]["server_failures"] == 0 and summary["counts"]["requests_sent"] == 4
    assert summary["judge"].startswith("openai:")

    # a server that answers 500 to everything: four failures, counted, reported, never a verdict: no score
    broken = tiny_server(fail_first_n=1000)
    with pytest.raises(ScoreWithheld):
        run_eval(compose_eval([*overrides[:-1], f"server.base_url={broken.base_url}", "server.max_retries=1",
                               f"run_dir={tmp_path / 'broken'}"]))
    failed = json.loads((tmp_path / "broken" / "summary.json").read_text())
    assert failed["counts"]["server_failures"] == 4 and failed["parse_failure_reasons"] == {}
    assert failed["official"] is None and failed["harness"]["overall"] == {}

    # the first two requests fail (concurrency 1, no retry): with eval.max_server_failure_rate=0.5 the
    # score stands on the answered pair and says so
    flaky = tiny_server(fail_first_n=2)
    partial = run_eval(compose_eval([*overrides[:-1], f"server.base_url={flaky.base_url}", "server.max_retries=0",
                                     "server.concurrency=1", "eval.max_server_failure_rate=0.5",
                                     f"run_dir={tmp_path / 'flaky'}"]))
    assert partial["counts"]["server_failures"] == 2 and partial["scoring"]["status"] == "answered_only"
    assert partial["scoring"]["units_scored"] == 2 - partial["scoring"]["units_without_answer"] >= 1
    assert partial["harness"]["overall"]["n_pairs"] == partial["scoring"]["units_scored"]

    # the project's server refuses a prompt longer than its model's context, as vLLM's does
    from judge_rl.servers import OpenAIServer

    with OpenAIServer(server.base_url, "tiny-random", max_retries=0) as server:
        (too_long,) = server.complete([[{"role": "user", "content": "word " * 3000}]], max_new_tokens=4)
    assert not too_long.ok and "HTTP 400" in too_long.error and "maximum context length is 2048" in too_long.error


def test_an_over_long_pair_is_left_out_before_it_reaches_an_openai_endpoint(tmp_path, tiny_server):
    """On the main before this, the endpoint refused the pair (HTTP 400, over its 2,048-token context), counted as a
    server failure: the score of the other pairs was withheld. Now the endpoint's own count (POST /tokenize, as vLLM's
    server answers) leaves it out before it is sent, with its length; the rest is judged and scored."""
    rows = [{"prompt": f"Question {i}?", "chosen": f"Good answer {i}.", "rejected": f"Bad answer {i}."} for i in range(3)]
    rows.insert(1, {"prompt": "Question?", "chosen": "A good and long answer. " * 600, "rejected": "Bad."})
    path = tmp_path / "pref.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    server = tiny_server()
    summary = run_eval(compose_eval(["model=tiny-random", "server=openai", f"server.base_url={server.base_url}",
                                     "server.max_retries=0", "benchmark=preference", f"benchmark.path={path}",
                                     "server.max_new_tokens=4", f"run_dir={tmp_path / 'run'}"]))  # fmt: skip
    assert summary["scoring"]["status"] == "complete" and summary["harness"]["overall"]["n_pairs"] == 3
    assert summary["counts"]["too_long_units"] == 1 and summary["counts"]["server_failures"] == 0
    assert server.requests_seen == 6  # the 3 pairs in both orders: the long one was never sent
    (reason,) = summary["too_long"].values()
    assert reason.startswith("prompt of ") and "+ max_new_tokens 4 > the served context of 2048" in reason
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["evaluations"]["eval"]["benchmarks"]["preference"]["too_long"] == summary["too_long"]


def test_eval_config_errors_fail_before_any_model_loads(tmp_path):
    with pytest.raises((ValueError, MissingMandatoryValue), match="base_url"):
        run_eval(compose_eval([*TINY, "server=openai", f"run_dir={tmp_path}"]))
    with pytest.raises((ValueError, MissingMandatoryValue), match="path"):
        run_eval(compose_eval([*TINY, "benchmark=pandalm", f"run_dir={tmp_path}"]))
    with pytest.raises(KeyError, match="unknown prompt 'nope'"):
        run_eval(compose_eval([*TINY, "judge.prompt=nope", f"run_dir={tmp_path}"]))
    with pytest.raises(ValueError, match="benchmark.kind='nope'"):
        run_eval(compose_eval([*TINY, "benchmark.kind=nope", f"run_dir={tmp_path}"]))
