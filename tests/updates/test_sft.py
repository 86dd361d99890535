from __future__ import annotations

import pytest

from judge_rl.data import generate_pairs
from judge_rl.data.pairs import JudgeItem, PreferencePair, balanced_positions
from judge_rl.prompts import get_prompt
from judge_rl.updates.sft import sft_examples, trace_for_prompt


def test_sft_examples_show_each_pair_in_both_orders_with_matching_verdicts():
    items = balanced_positions(generate_pairs(10, seed=0), seed=0)
    prompt = get_prompt("strength")
    examples = sft_examples(items, prompt, limit=8)
    assert len(examples) == 8
    verdicts = [prompt.parse(e["completion"][0]["content"]) for e in examples]
    assert all(v.ok for v in verdicts)
    assert [v.winner for v in verdicts].count("a") == 4  # exact balance
    for first, second in zip(examples[::2], examples[1::2]):
        a1 = first["prompt"][1]["content"]
        assert a1 != second["prompt"][1]["content"]  # same pair, swapped
    # the verdict names where the chosen response is shown
    for e, v in zip(examples, verdicts):
        assert v.strength in (1, 2, 3)


def test_binary_prompt_gets_its_own_verdict_line_from_a_strength_trace():
    item = balanced_positions(generate_pairs(2, seed=0), seed=0)[0]
    out = trace_for_prompt(item, get_prompt("binary"))
    assert get_prompt("binary").parse(out).winner == item.chosen_position
    assert "strength" not in out.splitlines()[-1]


def test_data_without_traces_is_refused_with_a_hint():
    pair = PreferencePair("p", "s", "q", "good", "bad")
    with pytest.raises(ValueError, match="no judgment traces"):
        sft_examples([JudgeItem(pair, "a")], get_prompt("strength"), limit=4)
