"""judge_rl/curate/teacher.py: the accuracy filter's server and checkpoint teachers (the project's own
OpenAI-compatible server over the tiny-random model; a saved model directory), each asked once per order."""

from __future__ import annotations

import pytest
import torch

from judge_rl.jobs.curate import run_curate
from judge_rl.models.loading import load_model, load_tokenizer, save_model
from judge_rl.servers.http import ChatCompletionServer

from conftest import CACHE_DIR
from curate_support import TINY, TINY_MODEL, compose_curate, lines

@pytest.fixture
def tiny_endpoint():
    model = load_model(TINY_MODEL, CACHE_DIR, torch.device("cpu"), seed=0)
    server = ChatCompletionServer(model, load_tokenizer(TINY_MODEL, CACHE_DIR), "tiny-random", 0).start()
    yield server
    server.shutdown()


def test_server_teacher_is_asked_once_per_order_and_its_unparsed_judgments_drop_the_pairs(tmp_path, tiny_endpoint):
    base = [*TINY, "data.kwargs.n=4", "difficulty.enabled=false", "diversity.enabled=false", "accuracy.teacher=server",
            f"accuracy.server.base_url={tiny_endpoint.base_url}", "accuracy.server.served_model=tiny-random",
            "accuracy.server.max_new_tokens=8", "accuracy.server.backoff_s=0", f"run_dir={tmp_path / 'run'}",
            f"output={tmp_path / 'curated.jsonl'}"]
    counts = run_curate(compose_curate(base))
    acc = counts["filters"]["accuracy"]
    assert acc["requests"] == 8 and tiny_endpoint.requests_seen == 8
    assert counts["written"] == 0 and sum(acc["dropped"].values()) == 4
    assert all(reason.startswith("unparsed: ") for reason in acc["dropped"])
    assert len(lines(tmp_path / "run" / "teacher.jsonl")) == 8
    again = run_curate(compose_curate(base))  # answered from teacher.jsonl
    assert again["filters"]["accuracy"]["reused"] == 8 and again["filters"]["accuracy"]["requests"] == 0
    assert tiny_endpoint.requests_seen == 8


def test_checkpoint_teacher_runs_a_local_model_directory(tmp_path):
    teacher = tmp_path / "teacher"
    save_model(load_model(TINY_MODEL, CACHE_DIR, torch.device("cpu"), seed=3), load_tokenizer(TINY_MODEL, CACHE_DIR), teacher)
    counts = run_curate(compose_curate([*TINY, "data.kwargs.n=2", "difficulty.enabled=false", "diversity.enabled=false",
                                        "accuracy.teacher=checkpoint", f"accuracy.checkpoint={teacher}",
                                        "accuracy.server.max_new_tokens=6", "accuracy.server.device=cpu",
                                        f"run_dir={tmp_path / 'run'}", f"output={tmp_path / 'curated.jsonl'}"]))
    acc = counts["filters"]["accuracy"]
    assert acc["teacher"] == f"checkpoint:{teacher}" and acc["requests"] == 4 and acc["checked"] == 2
    assert counts["written"] == 0
