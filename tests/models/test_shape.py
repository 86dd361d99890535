"""Shape models (judge_rl/models/shape.py, model.weights=random): the declared architecture with random weights, the
embedded tokenizer extended to the real vocabulary, drawn once per seed and cached, said in every result."""

from __future__ import annotations

import json
import os

import pytest
import torch

from judge_rl.config import validate_model
from judge_rl.config.paths import load_model_config
from judge_rl.jobs.train import run, to_job_config
from judge_rl.models.loading import load_model, load_tokenizer, model_files, shape_model_dir
from judge_rl.models.shape import MARKER, PLACEHOLDER, shape_notice

from conftest import CACHE_DIR, compose_config

# Qwen2.5-0.5B's layout (Qwen2 attention with q/k/v biases, tied embeddings, its 151,936-id vocabulary) shrunk in
# depth and width so that a CPU draws it in a second
SMALL = {"num_hidden_layers": 2, "hidden_size": 128, "intermediate_size": 256, "num_attention_heads": 4,
         "num_key_value_heads": 2}


def small_shape(seed: int = 0):
    cfg = load_model_config("qwen2.5-0.5b-instruct")
    cfg.weights, cfg.weights_seed, cfg.dtype = "random", seed, "float32"
    for k, v in SMALL.items():
        setattr(cfg.arch, k, v)
    return cfg


def test_the_tokenizer_keeps_the_embedded_one_and_decodes_every_id_of_the_real_vocabulary():
    cfg = small_shape()
    tok = load_tokenizer(cfg, CACHE_DIR)
    embedded = load_tokenizer(load_model_config("smollm2-135m"), CACHE_DIR)
    assert len(tok) == 151936 and len(embedded) == 49152
    text = "Which response is better, (a) or (b)?"
    assert tok(text).input_ids == embedded(text).input_ids  # the embedded encoding, unchanged
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert tok.decode([151935]) == PLACEHOLDER.format(151935) and tok.decode([49152]) == PLACEHOLDER.format(49152)


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_weights_are_drawn_once_per_seed_and_cached(tmp_path):
    a, b = small_shape(0), small_shape(1)
    first = shape_model_dir(a, tmp_path)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert shape_model_dir(a, tmp_path) == first and (first / "model.safetensors").stat().st_mtime_ns == stamp
    assert shape_model_dir(b, tmp_path) != first
    marker = json.loads((first / MARKER).read_text())
    assert marker["weights"] == "random" and marker["seed"] == 0 and marker["arch"]["vocab_size"] == 151936
    m0, m0b, m1 = (load_model(c, tmp_path, torch.device("cpu")) for c in (a, small_shape(0), b))
    assert torch.equal(m0.model.embed_tokens.weight, m0b.model.embed_tokens.weight)
    assert not torch.equal(m0.model.embed_tokens.weight, m1.model.embed_tokens.weight)
    assert m0.config.model_type == "qwen2" and m0.config.vocab_size == 151936 and m0.config.tie_word_embeddings
    assert m0.model.layers[0].self_attn.q_proj.bias is not None  # Qwen2's q/k/v biases
    # sampled ids decode: a random judge's greedy answer is placeholders and tokens, never an error
    tok = load_tokenizer(a, tmp_path)
    prompt = tok("Which is better?").input_ids
    ids = m0.generate(torch.tensor([prompt]), max_new_tokens=8, min_new_tokens=8, do_sample=False)[0, len(prompt):].tolist()
    assert isinstance(tok.decode(ids), str) and len(ids) == 8
    # vLLM and verl load the same directory
    assert model_files(a, tmp_path) == str(first) and model_files(a, tmp_path, build=False) == str(first)


def test_a_shape_needs_its_architecture_declared():
    cfg = load_model_config("qwen2.5-7b-instruct")
    cfg.weights = "random"
    validate_model(cfg)  # complete
    cfg.arch.intermediate_size = None
    with pytest.raises(ValueError, match=r"model.weights=random: model=qwen2.5-7b-instruct does not declare "
                                         r"model.arch.intermediate_size"):
        validate_model(cfg)
    tiny = load_model_config("tiny-random")
    tiny.weights = "random"
    with pytest.raises(ValueError, match="random already"):
        validate_model(tiny)
    cfg.weights = "fresh"
    with pytest.raises(ValueError, match=r"model.weights='fresh': expected pretrained or random"):
        validate_model(cfg)


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_run_on_random_weights_says_so_in_its_results_and_the_sweep_report(tmp_path):
    """One local GRPO step of the small Qwen2.5 shape: the notice in results.json, the report's note."""
    shrink = [f"model.arch.{k}={v}" for k, v in SMALL.items()]
    over = ["debug=tiny", "model=qwen2.5-0.5b-instruct", "model.weights=random", "model.dtype=float32", *shrink,
            "stages=[rl]", "trainer.total_steps=1", "trainer.rollout_engine=hf", f"run_dir={tmp_path / 'run'}"]
    out = run(compose_config(over))
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["model"]["weights"] == "random" and "no accuracy here means anything" in results["model"]["notice"]
    assert "151936" in results["model"]["notice"] and results["training"]["rl"]["steps"] == 1
    assert out is not None
    from judge_rl.report import write_report

    files = write_report([tmp_path / "run"], out_dir=tmp_path)
    assert "Random weights (model.weights=random, shape models)" in files["markdown"].read_text()
    assert shape_notice(to_job_config(compose_config(over)).model) is not None
    assert shape_notice(load_model_config("smollm2-135m")) is None
    assert os.path.isdir(shape_model_dir(to_job_config(compose_config(over)).model, CACHE_DIR, build=False))
