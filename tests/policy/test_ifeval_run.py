"""IFEval on a policy (judge_rl.policy.ifeval_run): answers saved as they come and reused, the published
accuracies, and intervals that resample prompts around the pooled statistic."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import CACHE_DIR
from judge_rl.evaluation.ifeval import make_prompt
from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.policy.ifeval_run import OFFICIAL, evaluate_policy, ifeval_ci, ifeval_entry, ifeval_gain, per_prompt
from judge_rl.servers.http import load_model_config


def record(key, strict: list[bool], loose: list[bool] | None = None) -> dict:
    loose = strict if loose is None else loose
    return {"key": key, "follow_instruction_list_strict": strict, "follow_instruction_list_loose": loose,
            "follow_all_instructions_strict": all(strict), "follow_all_instructions_loose": all(loose)}  # fmt: skip


def test_gain_is_the_pooled_statistic_with_a_paired_interval():
    before = [record(1, [True, False, False]), record(2, [False]), record(3, [True, True])]
    after = [record(1, [True, True, False]), record(2, [True]), record(3, [True, True])]
    # instruction level pools instructions: 3/6 -> 5/6; prompt level: 1/3 -> 2/3
    g = ifeval_gain(before, after, "instruction_level_strict_accuracy")
    assert g["diff"] == pytest.approx(5 / 6 - 3 / 6) and g["n"] == 3 and g["low"] <= g["diff"] <= g["high"]
    assert ifeval_gain(before, after, "prompt_level_strict_accuracy")["diff"] == pytest.approx(1 / 3)
    assert per_prompt(before, "instruction_level_loose_accuracy") == {"1": (1, 3), "2": (0, 1), "3": (2, 2)}
    # nothing changed: a zero-width interval at zero
    same = ifeval_gain(before, before, "instruction_level_strict_accuracy")
    assert same["diff"] == same["low"] == same["high"] == 0.0
    ci = ifeval_ci(before, "instruction_level_strict_accuracy")
    assert ci["mean"] == pytest.approx(0.5) and 0.0 <= ci["low"] <= 0.5 <= ci["high"] <= 1.0


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
