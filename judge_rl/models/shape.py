"""Shape models: random weights of a real architecture (`model.weights=random`), for speed and memory at the sizes
researchers train.

Real weights of a 1.5B or 7B judge cannot reach these machines, but throughput and memory do not need them: a model
of the real architecture with random weights costs the same FLOPs and bytes. Its architecture is the published
config.json's, declared in conf/model/<name>.yaml (`model.arch`); its tokenizer and chat template are the embedded
model's (SmolLM2's ChatML, the turn format Qwen uses too), extended with placeholder tokens up to the real vocabulary
so that the embedding and the logits keep their real size and every sampled id decodes. The weights are drawn once
from `model.weights_seed` and cached as an ordinary model directory, so the hf engine, vLLM and verl's FSDP actor all
load it as they load any local model. It makes no accuracy claim: a run on one says so (`shape_notice`).

Nothing here touches the cache or the embedded package: judge_rl/models/loading.py builds the directory
(`shape_model_dir`) with these functions.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from judge_rl.config import SHAPE_FIELDS, ArchConfig, ModelConfig

# ids past the embedded tokenizer's vocabulary decode to these (never produced by encoding text)
PLACEHOLDER = "<|shape_{}|>"
MARKER = "shape_model.json"
EMBEDDED_VOCAB = 49152  # SmolLM2's tokenizer, which every shape model (and the tiny random model) uses  # written into a shape model's directory: what it is, from what, and that it is random


def shape_key(model: ModelConfig) -> str:
    """A short digest of everything the weights depend on (architecture, dtype, seed): the cache directory's name."""
    spec = {"arch": asdict(model.arch), "dtype": model.dtype, "seed": model.weights_seed}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:10]


def extend_tokenizer(tokenizer, vocab_size: int, where: str):
    """The embedded tokenizer with placeholder tokens appended up to `vocab_size` ids (the real model's vocabulary), so
    a sampled id past the embedded vocabulary decodes to `<|shape_N|>` instead of failing or vanishing."""
    n = len(tokenizer)
    if vocab_size < n:
        raise ValueError(f"{where}.arch.vocab_size={vocab_size}: smaller than the embedded tokenizer's {n} tokens; a "
                         "shape model's ids must cover its tokenizer")
    if vocab_size > n:
        tokenizer.add_tokens([PLACEHOLDER.format(i) for i in range(n, vocab_size)], special_tokens=False)
    return tokenizer


def shape_config(arch: ArchConfig, tokenizer):
    """The transformers config of the declared architecture, with the (extended) tokenizer's special ids."""
    from transformers import AutoConfig

    fields = {f: getattr(arch, f) for f in SHAPE_FIELDS if f != "model_type"}
    if arch.head_dim is not None:
        fields["head_dim"] = arch.head_dim
    return AutoConfig.for_model(
        arch.model_type, **fields,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip


def write_shape_model(model: ModelConfig, tokenizer, target: Path, device: str = "cpu") -> None:
    """Draw the weights of `model`'s architecture from `model.weights_seed` (on `device`: a GPU makes a 7B shape in
    seconds) in `model.dtype`, and save them, the tokenizer and the marker into `target` (an empty directory)."""
    import torch
    from transformers import AutoModelForCausalLM

    config = shape_config(model.arch, tokenizer)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[model.dtype]
    with torch.random.fork_rng(devices=[torch.cuda.current_device()] if device == "cuda" else []):
        torch.manual_seed(model.weights_seed)
        with torch.device(device):
            lm = AutoModelForCausalLM.from_config(config, dtype=dtype)
    lm.generation_config.eos_token_id = tokenizer.eos_token_id
    lm.generation_config.pad_token_id = tokenizer.pad_token_id
    lm.save_pretrained(target)
    tokenizer.save_pretrained(target)
    n_params = sum(p.numel() for p in lm.parameters())
    (target / MARKER).write_text(json.dumps({
        "weights": "random", "model": model.name, "seed": model.weights_seed, "dtype": model.dtype,
        "parameters": n_params, "arch": asdict(model.arch), "tokenizer": "embedded (SmolLM2), extended with placeholders",
    }, indent=1))  # fmt: skip


def is_shape_dir(path: str | Path | None) -> bool:
    return path is not None and (Path(path).expanduser() / MARKER).is_file()


def shape_notice(model: ModelConfig) -> str | None:
    """The one line a run on random weights prints (console, results.json, report); None for real weights."""
    if model.weights != "random":
        return None
    a = model.arch
    vocab = (f"; the embedded tokenizer's {EMBEDDED_VOCAB} tokens are extended with placeholders to the real "
             f"vocabulary of {a.vocab_size}" if a.vocab_size != EMBEDDED_VOCAB else "")
    return (f"model.weights=random: {model.name} is a shape model (its architecture, {a.num_hidden_layers} layers x "
            f"{a.hidden_size}, with random weights, seed {model.weights_seed}){vocab}: its speed and memory are the "
            "real model's, its verdicts are noise, and no accuracy here means anything")


def model_record(model: ModelConfig) -> dict:
    """results.json's `model` section: the model's name and where its weights come from, with the shape notice when
    they are random (the report marks such rows)."""
    record = {"name": model.name, "weights": model.weights}
    notice = shape_notice(model)
    if notice:
        record.update(notice=notice, weights_seed=model.weights_seed)
    return record
