"""Statistics of IFEval records (judge_rl.reports.ifeval_stats): intervals that resample prompts around the pooled
statistic, and a paired change."""

from __future__ import annotations

import pytest

from judge_rl.reports.ifeval_stats import ifeval_ci, ifeval_gain, per_prompt


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
