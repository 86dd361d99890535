"""IFEval on a policy (judge_rl.policy.ifeval_run): answers saved as they come and reused, and the published
accuracies (their intervals: tests/reports/test_ifeval_stats.py)."""

from __future__ import annotations

import json

import torch

from conftest import CACHE_DIR
from judge_rl.evaluation.ifeval import make_prompt
from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.policy.ifeval_run import evaluate_policy, ifeval_entry
from judge_rl.reports.ifeval_stats import OFFICIAL
from judge_rl.config.paths import load_model_config


def test_answers_are_saved_and_reused(tmp_path):
    cfg = load_model_config("tiny-random")
    model, tokenizer = load_model(cfg, CACHE_DIR, torch.device("cpu"), seed=0), load_tokenizer(cfg, CACHE_DIR)
    prompts = [make_prompt({"key": k, "prompt": f"Say {k} in lowercase.", "instruction_id_list": ["change_case:english_lowercase"],
                            "kwargs": [{}]}) for k in (7, 8, 9)]  # fmt: skip
    result = evaluate_policy(model, tokenizer, prompts, tmp_path, max_new_tokens=6, batch_size=2)
    saved = [json.loads(line) for line in (tmp_path / "responses.jsonl").read_text().splitlines()]
    assert [r["key"] for r in saved] == [7, 8, 9] and result["counts"]["prompts"] == 3
    assert set(OFFICIAL) <= set(result) and len(result["records"]) == 3
    entry = ifeval_entry(result)
    assert entry["official"]["prompt_level_strict_accuracy"] == result["prompt_level_strict_accuracy"]
    # a rerun answers nothing again (no model is needed) and scores the same
    again = evaluate_policy(None, tokenizer, prompts, tmp_path, max_new_tokens=6, batch_size=2)
    assert {k: again[k] for k in OFFICIAL} == {k: result[k] for k in OFFICIAL}
    assert len((tmp_path / "responses.jsonl").read_text().splitlines()) == 3
