"""The harness: judgments saved as they come, resumed without redoing finished items, identical
requests sent once, server failures counted and retried, never scored as a verdict."""

from __future__ import annotations

import json

import torch

from judge_rl.config import ModelConfig
from judge_rl.data import generate_pairs
from judge_rl.data.pairs import PreferencePair
from judge_rl.servers import Completion, HFServer
from judge_rl.evaluation.harness import evaluate_pairs, judge_tasks
from judge_rl.evaluation.benchmarks import Task
from judge_rl.data.pairs import RatedAnswer
from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.prompts import get_prompt

from conftest import CACHE_DIR

TINY = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")


def tiny_server(batch_size: int = 4) -> HFServer:
    tok = load_tokenizer(TINY, CACHE_DIR)
    model = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
    return HFServer(model, tok, batch_size, name="tiny-random")


class CountingServer:
    """A real server wrapped to count what reaches it (and, optionally, to fail some requests)."""

    def __init__(self, inner, fail_when=None):
        self.inner = inner
        self.identity = inner.identity
        self.sent: list[list[dict]] = []
        self.fail_when = fail_when

    def request_key(self, messages, max_new_tokens):
        return self.inner.request_key(messages, max_new_tokens)

    def complete(self, batch, *, max_new_tokens):
        self.sent.extend(batch)
        out = self.inner.complete(batch, max_new_tokens=max_new_tokens)
        if self.fail_when is not None:
            out = [Completion.failure("HTTP 500: 'boom'") if self.fail_when(m) else c for m, c in zip(batch, out)]
        return out


def test_evaluation_resumes_after_a_crash(tmp_path):
    server = tiny_server()
    prompt = get_prompt("strength")
    pairs = generate_pairs(5, seed=1, split="test")
    out = tmp_path / "judgments.jsonl"
    kwargs = dict(max_new_tokens=8, chunk_size=4)
    first = evaluate_pairs(server, prompt, pairs, out, **kwargs)
    assert first["judged_now"] == 10 and first["reused"] == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 10
    record = json.loads(lines[0])
    assert {"item_id", "request_key", "output", "winner", "parse_error", "correct"} <= set(record)
    # a crash: the last judgments were lost and the final line was cut in half
    out.write_text("\n".join(lines[:6]) + "\n" + lines[6][:20])
    second = evaluate_pairs(server, prompt, pairs, out, **kwargs)
    assert second["reused"] == 6 and second["judged_now"] == 4
    assert json.dumps(second["overall"]) == json.dumps(first["overall"])
    # the untrained tiny model writes no verdict: failures are counted, not scored
    assert first["overall"]["parse_failure_rate"] == 1.0 and first["overall"]["accuracy"] == 0.0
    assert sum(first["parse_failure_reasons"].values()) == 10
    # a different prompt is judged anew, not silently reused
    third = evaluate_pairs(server, get_prompt("binary"), pairs, out, **kwargs)
    assert third["judged_now"] == 10


def test_identical_requests_are_sent_once(tmp_path):
    server = CountingServer(tiny_server())
    prompt = get_prompt("rb2_rating")
    # three items, two of them the very same request (the same answer to the same question)
    tasks = [
        Task(RatedAnswer("q1:0", "Name a colour.", "Red."), prompt),
        Task(RatedAnswer("q1:1", "Name a colour.", "Blue."), prompt),
        Task(RatedAnswer("q2:0", "Name a colour.", "Red."), prompt),
    ]
    path = tmp_path / "j.jsonl"
    run = judge_tasks(server, tasks, path, max_new_tokens=4)
    assert len(server.sent) == 2 and run.counts["requests_sent"] == 2 and run.counts["deduplicated"] == 1
    assert run.records[0]["output"] == run.records[2]["output"]
    # a new item whose request was already answered in the saved file is not sent either
    more = tasks + [Task(RatedAnswer("q3:0", "Name a colour.", "Blue."), prompt)]
    run2 = judge_tasks(server, more, path, max_new_tokens=4)
    assert len(server.sent) == 2 and run2.counts["reused"] == 3 and run2.counts["deduplicated"] == 1
    assert len(path.read_text().splitlines()) == 4


def test_server_failures_are_counted_and_retried(tmp_path):
    inner = tiny_server()
    failing = CountingServer(inner, fail_when=lambda m: "Blue" in m[0]["content"])
    prompt = get_prompt("rb2_rating")
    tasks = [Task(RatedAnswer(f"q:{i}", "Name a colour.", a), prompt) for i, a in enumerate(["Red.", "Blue."])]
    path = tmp_path / "j.jsonl"
    run = judge_tasks(failing, tasks, path, max_new_tokens=4)
    assert run.counts["server_failures"] == 1
    failed = run.records[1]
    assert failed["server_error"].startswith("HTTP 500") and failed["parse_error"].startswith("server error")
    assert failed["pred_score"] is None and failed["output"] is None
    # the next run asks again for the failed item only
    healthy = CountingServer(inner)
    run2 = judge_tasks(healthy, tasks, path, max_new_tokens=4)
    assert len(healthy.sent) == 1 and run2.counts["reused"] == 1 and run2.counts["server_failures"] == 0
    assert not run2.records[1]["server_error"]


def test_a_failure_saved_under_the_old_engine_error_key_is_retried(tmp_path):
    inner = tiny_server()
    prompt = get_prompt("rb2_rating")
    tasks = [Task(RatedAnswer(f"q:{i}", "Name a colour.", a), prompt) for i, a in enumerate(["Red.", "Blue."])]
    path = tmp_path / "j.jsonl"
    judge_tasks(CountingServer(inner, fail_when=lambda m: "Blue" in m[0]["content"]), tasks, path, max_new_tokens=4)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for r in lines:  # as a run before the rename saved it
        r["engine_error"] = r.pop("server_error")
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    healthy = CountingServer(inner)
    run = judge_tasks(healthy, tasks, path, max_new_tokens=4)
    assert len(healthy.sent) == 1 and run.counts["reused"] == 1 and not run.records[1]["server_error"]


def test_pointwise_correctness_uses_the_rewards_threshold(tmp_path):
    from judge_rl.evaluation.harness import judgment_fields
    from judge_rl.data.pairs import PointwiseItem
    from judge_rl.prompts import Judgment
    from judge_rl.rewards import build_reward

    pair = PreferencePair("p", "s", "Q", "good", "bad")
    item = PointwiseItem(pair, "chosen", 1, 1)
    three = Judgment(None, None, None, score=3)
    assert judgment_fields(item, three, build_reward("pointwise"))["correct"]
    assert not judgment_fields(item, three, build_reward("pointwise", binary_threshold=4))["correct"]


def test_request_keys_name_the_judges_weights_not_its_name():
    """Two tiny judges of one name (other seed, other shape, one weight nudged) never share a key."""
    tok = load_tokenizer(TINY, CACHE_DIR)
    messages = [{"role": "user", "content": "Which is better?"}]

    def key(cfg=TINY, seed=0, nudge=False):
        model = load_model(cfg, CACHE_DIR, torch.device("cpu"), seed=seed)
        if nudge:
            with torch.no_grad():
                model.model.norm.weight[0] += 1e-3
        return HFServer(model, tok, 1, name="tiny-random").request_key(messages, 8)

    base = key()
    assert key() == base  # the same judge, loaded again
    assert key(seed=1) != base
    assert key(nudge=True) != base
    from dataclasses import replace

    assert key(cfg=replace(TINY, tiny=replace(TINY.tiny, hidden_size=32))) != base
    server = HFServer(load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0), tok, 1, name="tiny-random")
    assert server.request_key(messages, 8) != server.request_key(messages, 9)  # the decoding budget too


def test_a_prompt_beyond_the_models_context_is_refused_before_generation():
    server = tiny_server()
    assert server.too_long([{"role": "user", "content": "Hi"}], 8) is None
    reason = server.too_long([{"role": "user", "content": "word " * 3000}], 8)
    assert reason and "> the model's context of 2048" in reason
