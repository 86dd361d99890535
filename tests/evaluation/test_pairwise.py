"""Evaluation resumes from saved judgments and never judges an item twice."""

from __future__ import annotations

import json

import torch

from judge_rl.config import ModelConfig
from judge_rl.data import generate_pairs
from judge_rl.evaluation.pairwise import evaluate_judge
from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.prompts import get_prompt

from conftest import CACHE_DIR

TINY = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")


def test_evaluation_resumes_after_a_crash(tmp_path):
    tok = load_tokenizer(TINY, CACHE_DIR)
    model = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
    prompt = get_prompt("strength")
    pairs = generate_pairs(5, seed=1, split="test")
    out = tmp_path / "judgments.jsonl"
    kwargs = dict(batch_size=4, max_new_tokens=8)
    first = evaluate_judge(model, tok, prompt.messages, prompt.parse, pairs, out, **kwargs)
    assert first["judged_now"] == 10 and first["reused"] == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 10
    # a crash: the last judgments were lost and the final line was cut in half
    out.write_text("\n".join(lines[:6]) + "\n" + lines[6][:20])
    second = evaluate_judge(model, tok, prompt.messages, prompt.parse, pairs, out, **kwargs)
    assert second["reused"] == 6 and second["judged_now"] == 4
    assert second["overall"] == first["overall"] or json.dumps(second["overall"]) == json.dumps(first["overall"])
    # the untrained tiny model writes no verdict: failures are counted, not scored
    assert first["overall"]["parse_failure_rate"] == 1.0 and first["overall"]["accuracy"] == 0.0
    # a different prompt is judged anew, not silently reused
    third = evaluate_judge(model, tok, get_prompt("binary").messages, get_prompt("binary").parse, pairs, out, **kwargs)
    assert third["judged_now"] == 10
