"""Grouped-query attention without copying the KV cache, for CPU judges.

transformers' SDPA path expands every key/value head to all query heads (`repeat_kv`) whenever an
attention mask is given, which is always the case for left-padded batches. For SmolLM2 (9 query heads,
3 KV heads) that copies the whole KV cache three times per layer per decode step: measured here at
~35 ms per layer call against ~2.5 ms with PyTorch's own `enable_gqa=True` (torch >= 2.5, exact same
output), i.e. most of a decode step. `use_gqa_sdpa(model)` switches a model to an attention function
that passes `enable_gqa` instead; everything else (masks, caching, dropout, scaling) is transformers'
SDPA behaviour.

Which attention each backend runs (one rule, `default_attention`): flash-attention 2 only where `flash_attn` imports
and the device is CUDA, PyTorch's SDPA everywhere else. flash-attn ships no wheel on the registry (2.8.3, an sdist,
predates torch 2.11; scripts/install_flash_attn.sh builds it), and transformers refuses `flash_attention_2` without it.
- verl's training models (actor, reference, critic) get `default_attention(cluster.device)` from the translator
  (judge_rl/backends/verl/translate.py, `attention_values`); an explicit setting in cluster.verl_overrides wins.
- The local backend loads with transformers' default, SDPA (GQA-aware SDPA on CPU, above), on every device: the
  same as the rule wherever flash_attn is absent. It does not ask for flash-attention where flash_attn is present
  either: flash-attention runs fp16/bf16 only, the embedded judge and every trained model's weights are float32
  (judge_rl/models/loading.py, `weights_dtype`), and that path has never run here.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util

import torch
import torch.nn.functional as F

NAME = "sdpa_gqa"
FLASH_ATTENTION = "flash_attention_2"
_registered = False


def sdpa_gqa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
                               is_causal=None, **kwargs):
    is_causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    is_causal = query.shape[2] > 1 and attention_mask is None and is_causal
    out = F.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling, is_causal=is_causal,
        enable_gqa=key.shape[1] != query.shape[1],
    )
    return out.transpose(1, 2).contiguous(), None


def _register() -> None:
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(NAME, sdpa_gqa_attention_forward)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)
    _registered = True


def use_gqa_sdpa(model) -> bool:
    """Switch `model` to GQA-aware SDPA when it has grouped KV heads and runs SDPA; returns whether it did."""
    config = model.config
    heads, kv_heads = getattr(config, "num_attention_heads", None), getattr(config, "num_key_value_heads", None)
    if heads is None or kv_heads is None or kv_heads == heads or config._attn_implementation != "sdpa":
        return False
    if tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 5):
        return False
    _register()
    model.set_attn_implementation(NAME)
    return True


def restore_sdpa(model) -> None:
    """Back to the stock name before saving, so a saved config never names a function only judge_rl registers."""
    if model.config._attn_implementation == NAME:
        model.set_attn_implementation("sdpa")


def import_error(module: str) -> str | None:
    """None when `module` imports in this process, else why not, in one line. Looked up first (cheap when it is
    absent), then imported for real: a binary package built for another torch is found but fails to import (an
    undefined symbol), and only the import shows it."""
    try:
        if importlib.util.find_spec(module) is None:
            return f"ModuleNotFoundError: No module named {module!r}"
        importlib.import_module(module)
    except Exception as e:  # ImportError, or the OSError / RuntimeError of an extension built for another torch
        text = " ".join(str(e).split())
        return f"{type(e).__name__}: {text}" if text else type(e).__name__
    return None


@functools.cache
def flash_attn_importable() -> bool:
    """Whether `flash_attn` imports in this process (looked up once)."""
    return import_error("flash_attn") is None


def default_attention(device: str) -> str:
    """The attention a model gets unless a setting names one: flash-attention 2 on CUDA where flash_attn imports,
    SDPA otherwise (the rule of the module docstring). `device`: cluster.device (cuda, cpu or auto)."""
    return FLASH_ATTENTION if device == "cuda" and flash_attn_importable() else "sdpa"
