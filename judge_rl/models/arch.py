"""The judge's attention heads, context length and layer sizes, known before any GPU is touched.

A GPU job needs them early: vLLM refuses a tensor parallelism that does not divide the attention heads,
and a prompt plus response longer than the context fails minutes in. A CPU job on verl sizes vLLM's KV
cache from the layers and heads (translate.cpu_kv_cache_bytes).
Where the model's files are local (the embedded model's converted copy, a local directory, an SFT init)
its config.json is read; a hub model's come from the HF cache when it has them, else from `model.arch` in
conf/model/<name>.yaml.
"""

from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path

from judge_rl.config import ArchConfig, ModelConfig

FIELDS = tuple(f.name for f in fields(ArchConfig))


def _from_config_json(path: Path) -> ArchConfig:
    data = json.loads(path.read_text())
    data = data.get("text_config", data)  # multimodal wrappers keep the language model's fields inside
    heads = data.get("num_attention_heads")
    return ArchConfig(**{**{f: data.get(f) for f in FIELDS}, "num_key_value_heads": data.get("num_key_value_heads", heads)})


def _cached_hub_config(name: str) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(name, "config.json")
    except ValueError:  # not a hub repo id (e.g. a local path that does not exist yet)
        return None
    return Path(found) if isinstance(found, str) else None


def model_arch(model: ModelConfig, model_path: str | None = None) -> ArchConfig:
    """The heads, context and sizes of the model verl will load from `model_path` (a local directory or a hub
    name); fields no source knows stay None."""
    found = None
    if model_path is not None and (Path(model_path).expanduser() / "config.json").is_file():
        found = _from_config_json(Path(model_path).expanduser() / "config.json")
    elif model_path is not None and model.source == "hub":
        cached = _cached_hub_config(model_path)
        if cached is not None:
            found = _from_config_json(cached)
    if found is None:
        return model.arch
    # a field the files do not state falls back to the declared one
    return replace(found, **{f: getattr(model.arch, f) for f in FIELDS if getattr(found, f) is None})
