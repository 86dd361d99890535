"""`greedy_generate` (evaluation) makes the same greedy decisions as transformers' `generate`, for
prompts of different lengths, rows that stop early, and any batch size; and GQA-aware SDPA changes
no output."""

from __future__ import annotations

import pytest
import torch

from judge_rl.config import ModelConfig
from judge_rl.models.attention import NAME, restore_sdpa, use_gqa_sdpa
from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.rollouts import encode_chat, generate, greedy_generate, sample_generate, sample_tokens

from conftest import CACHE_DIR

TINY = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
QUESTIONS = ["Hi", "What is 2 + 2? Answer briefly.", "Name three colours, then explain which one you like best and why.",
             "Is the sky blue?", "Write one sentence about judges, fairness, and the law of large numbers in statistics."]


class EndsOn:
    """The real tokenizer with another end token, so that rows of a random model stop mid-answer."""

    def __init__(self, tokenizer, eos_id: int):
        self._tok, self.eos_token_id, self.pad_token_id = tokenizer, eos_id, tokenizer.pad_token_id

    def decode(self, *args, **kwargs):
        return self._tok.decode(*args, **kwargs)


@pytest.fixture(scope="module")
def tiny():
    tokenizer = load_tokenizer(TINY, CACHE_DIR)
    model = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():  # larger weights: greedy outputs that differ by prompt
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.5, generator=g)
    prompts = [encode_chat(tokenizer, [{"role": "user", "content": q}]) for q in QUESTIONS]
    return model, tokenizer, prompts


@pytest.mark.parametrize("batch_size", [1, 2, 5])
def test_greedy_generate_matches_generate(tiny, batch_size):
    model, tokenizer, prompts = tiny
    assert model.config._attn_implementation == NAME  # CPU models load with GQA-aware SDPA
    ref = generate(model, tokenizer, prompts, max_new_tokens=12, batch_size=batch_size)
    # an end token the model does emit, so some rows finish early and leave the batch
    eos = ref[2][0].response_ids[3]
    ends = EndsOn(tokenizer, eos)
    ref = generate(model, ends, prompts, max_new_tokens=12, batch_size=batch_size)
    out = greedy_generate(model, ends, prompts, max_new_tokens=12, batch_size=batch_size)
    assert [g.response_ids for g in out] == [r.response_ids for (r,) in ref]
    assert [g.finished for g in out] == [r.finished for (r,) in ref]
    assert any(g.finished for g in out) and not all(g.finished for g in out)


def test_gqa_sdpa_gives_the_stock_outputs(tiny):
    model, tokenizer, prompts = tiny
    fast = greedy_generate(model, tokenizer, prompts, max_new_tokens=8, batch_size=5)
    restore_sdpa(model)
    try:
        stock = greedy_generate(model, tokenizer, prompts, max_new_tokens=8, batch_size=5)
    finally:
        assert use_gqa_sdpa(model)
    assert [g.response_ids for g in fast] == [g.response_ids for g in stock]


def test_sampler_at_temperature_zero_gives_generates_tokens(tiny):
    model, tokenizer, prompts = tiny
    ref = generate(model, tokenizer, prompts, max_new_tokens=12, batch_size=5)
    eos = ref[2][0].response_ids[3]
    ends = EndsOn(tokenizer, eos)
    ref = generate(model, ends, prompts, max_new_tokens=12, batch_size=5)
    out = sample_generate(model, ends, prompts, num_samples=3, max_new_tokens=12, batch_size=6, temperature=0.0)
    for (r,), group in zip(ref, out):
        assert len(group) == 3 and all(g.response_ids == r.response_ids and g.finished == r.finished for g in group)


def test_sampled_groups_are_valid_reproducible_and_stop_at_the_end_token(tiny):
    model, tokenizer, prompts = tiny
    ends = EndsOn(tokenizer, generate(model, tokenizer, prompts, max_new_tokens=12, batch_size=5)[2][0].response_ids[3])

    def draw(seed):
        torch.manual_seed(seed)
        return sample_generate(model, ends, prompts, num_samples=4, max_new_tokens=10, batch_size=8, temperature=0.5)

    first, again, other = draw(1), draw(1), draw(2)
    assert [[g.response_ids for g in grp] for grp in first] == [[g.response_ids for g in grp] for grp in again]
    assert [[g.response_ids for g in grp] for grp in first] != [[g.response_ids for g in grp] for grp in other]
    for prompt, group in zip(prompts, first):
        assert len(group) == 4 and all(g.prompt_ids == prompt for g in group)
        assert len({tuple(g.response_ids) for g in group}) > 1  # the samples of a prompt differ
        for g in group:
            assert 1 <= len(g.response_ids) <= 10 and all(0 <= t < len(tokenizer) for t in g.response_ids)
            # a finished sample ends at its end token and holds no other one; an unfinished one ran out of budget
            assert g.finished == (g.response_ids[-1] == ends.eos_token_id)
            assert ends.eos_token_id not in g.response_ids[:-1]
            assert g.finished or len(g.response_ids) == 10
    assert any(g.finished for grp in first for g in grp) and not all(g.finished for grp in first for g in grp)


def test_top_p_keeps_the_smallest_set_reaching_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    torch.manual_seed(0)
    draws = {int(sample_tokens(logits, 1.0, top_p=0.75)) for _ in range(200)}
    assert draws == {0, 1}
    assert int(sample_tokens(logits, 0.0)) == 0
