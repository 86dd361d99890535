"""Helpers of the benchmark tests (tests/evaluation/benchmarks/test_<benchmark>.py): a scripted judge whose
verdicts follow a rule read from the question, a server that fails some requests, and one call that runs a
benchmark end to end through the real harness."""

from __future__ import annotations

import json
import re

from judge_rl.config import BenchmarkConfig
from judge_rl.evaluation.benchmarks import get_benchmark
from judge_rl.evaluation.harness import evaluate_benchmark
from judge_rl.prompts import get_prompt
from judge_rl.servers import Completion, stable_hash

PAIRWISE = get_prompt("rewardbench_pairwise")
_ANSWER = re.compile(r"\[The Start of Assistant ([A-D])'s Answer\]\n(.*?)\n\[The End of", re.S)


class ScriptedJudge:
    """Answers like a judge following the rule named in the question ("rule=<name>")."""

    identity = "scripted"

    def __init__(self):
        self.requests = 0

    def request_key(self, messages, max_new_tokens):
        return stable_hash({"m": messages, "n": max_new_tokens})

    def complete(self, batch, *, max_new_tokens):
        self.requests += len(batch)
        return [Completion(self.answer(m[-1]["content"]), None, True) for m in batch]

    @staticmethod
    def answer(user: str) -> str:
        rule = re.search(r"rule=(\w+)", user).group(1)
        if "[Response]" in user:  # a rating prompt: "rate=N" in the answer
            response = user.split("[Response]\n", 1)[1]
            rating = re.search(r"rate=(\d+)", response).group(1)
            return f"Fine. {rating}" if rule != "garbage" else "no idea"
        answers = dict(_ANSWER.findall(user))
        if rule == "garbage":
            return "I cannot decide."
        if rule == "always_a":
            return "[[A]]"
        if rule == "wrong":
            return next(f"[[{k}]]" for k, v in answers.items() if "BAD" in v)
        if rule == "longer":
            best = max(answers, key=lambda k: (len(answers[k]), -ord(k)))  # equal length: the first shown
            return f"[[{best}]]"
        return next(f"[[{k}]]" for k, v in answers.items() if "GOOD" in v)  # rule=right


def check_real_file(path, kind, pairs, skipped):
    """A real benchmark file loads `pairs` units (malformed rows skipped and counted) and makes one task per pair
    and order, each with its own id."""
    cfg = BenchmarkConfig(name=kind, kind=kind, path=str(path), on_error="skip")
    loaded = get_benchmark(kind).load(cfg)
    assert len(loaded.units) == pairs and len(loaded.skipped) == skipped
    tasks = get_benchmark(kind).tasks(loaded.units, PAIRWISE, cfg)
    assert len(tasks) == 2 * pairs and len({t.item_id for t in tasks}) == 2 * pairs


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run(tmp_path, kind, path, prompt=PAIRWISE, **spec):
    server = ScriptedJudge()
    cfg = BenchmarkConfig(name=kind, kind=kind, path=str(path), **spec)
    summary = evaluate_benchmark(get_benchmark(kind), cfg, server, prompt, tmp_path / "out", max_new_tokens=16)
    return summary, server


class FlakyJudge(ScriptedJudge):
    """The scripted judge behind a server that gets no answer for questions with rule=down."""

    def complete(self, batch, *, max_new_tokens):
        self.requests += len(batch)
        return [Completion.failure("connection error (ConnectError): refused") if "rule=down" in m[-1]["content"]
                else Completion(self.answer(m[-1]["content"]), None, True) for m in batch]


def flaky_run(tmp_path, kind, path, max_rate, prompt=PAIRWISE, **spec):
    cfg = BenchmarkConfig(name=kind, kind=kind, path=str(path), **spec)
    return evaluate_benchmark(get_benchmark(kind), cfg, FlakyJudge(), prompt, tmp_path, max_new_tokens=16,
                              max_server_failure_rate=max_rate)
