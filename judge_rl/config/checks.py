"""Checks of a typed config that need no registry: types and unknown keys (`typed_config`), numeric ranges
(`check_ranges`), and where a model's weights are (`validate_model`). The checks that consult a registry
(recipes, rewards, benchmarks, servers, loaders) sit above them, in judge_rl/jobs/ and each recipe."""

from __future__ import annotations

import math
from typing import Any, Optional

from omegaconf import DictConfig, OmegaConf

from judge_rl.config.model_dirs import looks_local, require_model_dir
from judge_rl.config.schema import ModelConfig


def typed_config(cfg: DictConfig, schema: type):
    """Resolve a composed config and merge it onto its dataclass: unknown keys and wrong types raise with
    the key's full name."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra", None)
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), plain))


# Numeric fields and the values they accept ("op bound", or an interval "[a, b]" / "(a, b]"); None, where
# a field is Optional, means "not set" and passes. Checked before any model loads, with the key named; inf and
# nan are refused by every rule (`algorithm.lr=inf` would pass "> 0" and fail as nan probabilities at step 2).
MODEL_RANGES = {"model.max_prompt_length": ">= 1"}
# every job's seed: numpy, torch and Python's random all take it (numpy refuses a negative one, deep inside a stage)
SEED_RANGE = {"seed": "[0, 4294967295]"}
JOB_RANGES = {
    **MODEL_RANGES,
    **SEED_RANGE,
    "trainer.total_steps": ">= 1",
    "trainer.prompts_per_step": ">= 1",
    "trainer.max_new_tokens": ">= 1",
    "trainer.save_every": ">= 1",
    "trainer.keep_checkpoints": ">= 0",
    "trainer.eval_every": ">= 0",
    "trainer.eval_subset": ">= 1",
    "trainer.temperature": "> 0",
    "trainer.top_p": "(0, 1]",
    "sft.num_examples": ">= 1",
    "sft.epochs": ">= 1",
    "sft.lr": "> 0",
    "sft.batch_size": ">= 1",
    "sft.warmup_ratio": "[0, 1]",
    "sft.max_length": ">= 1",
    "eval.batch_size": ">= 1",
    "eval.max_new_tokens": ">= 1",
    "eval.limit": ">= 1",
    "eval.benchmark_limit": ">= 1",
    "eval.max_server_failure_rate": "[0, 1]",
    "cluster.threads": ">= 1",
    "cluster.n_gpus_per_node": ">= 1",
    "cluster.nnodes": ">= 1",
    "cluster.rollout_tp": ">= 1",
}
EVAL_RANGES = {
    **MODEL_RANGES,
    **SEED_RANGE,
    "benchmark.limit": ">= 1",
    "eval.max_server_failure_rate": "[0, 1]",
    "server.max_new_tokens": ">= 1",
    "server.chunk_size": ">= 1",
    "server.batch_size": ">= 1",
    "server.concurrency": ">= 1",
    "server.timeout_s": "> 0",
    "server.max_retries": ">= 0",
    "server.backoff_s": ">= 0",
    "server.tensor_parallel_size": ">= 1",
    "server.gpu_memory_utilization": "(0, 1]",
    "server.max_model_len": ">= 1",
}


def _accepts(value: float, rule: str) -> bool:
    if not math.isfinite(value):
        return False
    rule = rule.strip()
    if rule[0] in "[(":
        lo, hi = (float(x) for x in rule[1:-1].split(","))
        above = value >= lo if rule[0] == "[" else value > lo
        below = value <= hi if rule[-1] == "]" else value < hi
        return above and below
    op, bound = rule.split()
    return {">=": value >= float(bound), ">": value > float(bound)}[op]


def check_ranges(job: Any, ranges: dict[str, str]) -> None:
    """Refuse a numeric field outside its range, or not finite, naming the key: `trainer.save_every=0: expected >= 1`,
    `algorithm.lr=inf: expected a finite number > 0`."""
    for key, rule in ranges.items():
        value = job
        for part in key.split("."):
            value = getattr(value, part)
        if value is not None and not _accepts(value, rule):
            finite = "" if math.isfinite(value) else "a finite number "
            raise ValueError(f"{key}={value}: expected {finite}{rule}")


MODEL_SOURCES = ("gguf_package", "hub", "local", "tiny_random")
MODEL_WEIGHTS = ("pretrained", "random")
# what a shape model (model.weights=random) is built from; head_dim may stay null (hidden_size / heads)
SHAPE_FIELDS = ("model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "vocab_size", "max_position_embeddings", "rope_theta", "tie_word_embeddings")


DEVICES = ("auto", "cpu", "cuda")


def check_device(value: str, key: str) -> None:
    """A device key (`cluster.device`, `server.device`, `judge.device`, ...) is auto, cpu or cuda; the error names
    `key`. Whether this machine has the device is checked when the job starts (`check_local_machine`: a config for a
    GPU composes and validates anywhere)."""
    if value not in DEVICES:
        raise ValueError(f"{key}={value!r}: expected {', '.join(DEVICES[:-1])} or {DEVICES[-1]}")


def check_local_machine(cluster: Any) -> None:
    """A local-backend job on cuda sees a CUDA device: one line when a job starts, before any data or model loads
    (verl launches check their GPUs in their preflight, judge_rl/backends/verl/preflight.py)."""
    if cluster.backend == "local" and cluster.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"cluster={cluster.name} (cluster.device=cuda): no CUDA device is visible here; "
                             "use cluster=local (cpu, or cuda where one is visible)")


def validate_model(model: ModelConfig, checkpoint: Optional[str] = None, checkpoint_key: str = "judge.checkpoint") -> None:
    """The judge's weights can be found: a known source, an existing directory where one is named."""
    if model.source not in MODEL_SOURCES:
        raise ValueError(f"model.source={model.source!r}: expected one of {', '.join(MODEL_SOURCES)}")
    if model.dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"model.dtype={model.dtype!r}: expected float32, bfloat16 or float16")
    if model.weights not in MODEL_WEIGHTS:
        raise ValueError(f"model.weights={model.weights!r}: expected {' or '.join(MODEL_WEIGHTS)}")
    if model.weights == "random":
        if model.source == "tiny_random":
            raise ValueError(f"model.weights=random: model={model.name} is random already (model.tiny.* sets its shape)")
        missing = [f"model.arch.{f}" for f in SHAPE_FIELDS if getattr(model.arch, f) is None]
        if missing:
            raise ValueError(f"model.weights=random: model={model.name} does not declare {', '.join(missing)} "
                             "(the published config.json values, in conf/model/<name>.yaml)")
        return  # a shape model is built from `arch` with the embedded tokenizer: no files of `source` are read
    if model.source == "local" or (model.source == "hub" and looks_local(model.path)):
        require_model_dir(model.path, "model.path")
    if checkpoint is not None:
        require_model_dir(checkpoint, checkpoint_key)
