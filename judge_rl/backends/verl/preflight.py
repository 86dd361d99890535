"""Checks a verl job passes on a CPU before it is handed to GPUs (`--dry-run` runs them; so does every
launch, first).

verl validates its own config (translate.validate); these are the mistakes it would only find minutes
into a paid GPU run, once Ray, vLLM and the workers are up:
- rollout tensor parallelism against the model's attention and KV heads and the GPUs of a node (vLLM
  refuses a TP that does not divide the heads);
- prompt + response length against the model's context (`max_position_embeddings`, and the rollout's
  `max_model_len` when set);
- the reward file imports through verl's own loader in a fresh process with the job's environment (what
  a Ray worker does);
- the logger can start in the mode the job gets (W&B online needs a key; wandb importable);
- the checkpoint, merge and metrics paths are writable.
(That batch sizes divide over the GPUs is verl's own check, in translate.validate.)

Each failed check is one line naming the key and the numbers; all of them are reported together.
"""

from __future__ import annotations

import netrc
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Mapping

from omegaconf import DictConfig

from judge_rl.config import ArchConfig
from judge_rl.backends.verl.translate import VerlTranslationError

ROLLOUT = "actor_rollout_ref.rollout"


class PreflightError(VerlTranslationError):
    """A verl job that would fail on its GPUs; the message lists every failed check, one per line."""


def check_tensor_parallel(cfg: DictConfig, arch: ArchConfig, model_key: str) -> list[str]:
    tp = int(cfg.actor_rollout_ref.rollout.tensor_model_parallel_size)
    gpus = int(cfg.trainer.n_gpus_per_node)
    problems = []
    if gpus % tp:
        problems.append(f"{ROLLOUT}.tensor_model_parallel_size={tp} does not divide trainer.n_gpus_per_node={gpus}")
    if arch.num_attention_heads is None or arch.num_key_value_heads is None:
        problems.append(f"{ROLLOUT}.tensor_model_parallel_size={tp} cannot be checked: the attention and KV heads of "
                        f"{model_key} are unknown (no local config.json; declare model.arch.num_attention_heads and "
                        "model.arch.num_key_value_heads in its conf/model file)")
        return problems
    for name in ("num_attention_heads", "num_key_value_heads"):
        heads = getattr(arch, name)
        if heads % tp:
            problems.append(f"{ROLLOUT}.tensor_model_parallel_size={tp} does not divide the model's {name}={heads} "
                            f"({model_key}): vLLM refuses it")
    return problems


def check_lengths(cfg: DictConfig, arch: ArchConfig, model_key: str) -> list[str]:
    prompt, response = int(cfg.data.max_prompt_length), int(cfg.data.max_response_length)
    problems = []
    context = arch.max_position_embeddings
    if context is not None and prompt + response > context:
        problems.append(f"data.max_prompt_length={prompt} + data.max_response_length={response} = {prompt + response} "
                        f"exceeds the model's max_position_embeddings={context} ({model_key})")
    max_model_len = cfg.actor_rollout_ref.rollout.get("max_model_len")
    if max_model_len is not None and prompt + response > int(max_model_len):
        problems.append(f"data.max_prompt_length={prompt} + data.max_response_length={response} = {prompt + response} "
                        f"exceeds {ROLLOUT}.max_model_len={max_model_len}")
    return problems


_IMPORT_REWARD = """
import sys
from omegaconf import OmegaConf
from verl.trainer.ppo.reward import get_custom_reward_fn
fn = get_custom_reward_fn(OmegaConf.load(sys.argv[1]))
if fn is None or not callable(fn):
    sys.exit("verl's loader found no reward function")
"""


def check_reward_import(config_path: Path, env: Mapping[str, str]) -> list[str]:
    """verl's own `get_custom_reward_fn` on the written config, in a fresh process with the job's
    environment and another working directory, as a Ray worker loads it."""
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run([sys.executable, "-c", _IMPORT_REWARD, str(config_path.resolve())], env=dict(env),
                              cwd=cwd, capture_output=True, text=True, timeout=300)
    if proc.returncode == 0:
        return []
    # verl re-raises an import failure as its own RuntimeError: name the cause too
    raised = [line.strip() for line in proc.stderr.splitlines() if re.match(r"^[\w.]+(Error|Exception)\b", line.strip())]
    why = "; raised from ".join(reversed(list(dict.fromkeys(raised)))) or proc.stderr.strip()[-300:] or f"exit {proc.returncode}"
    return [f"reward.custom_reward_function.path does not load in a fresh process: {why}"]


def _wandb_key_in_netrc() -> bool:
    try:
        return netrc.netrc().authenticators("api.wandb.ai") is not None
    except (OSError, netrc.NetrcParseError):
        return False


def check_logger(cfg: DictConfig, env: Mapping[str, str]) -> list[str]:
    if "wandb" not in list(cfg.trainer.logger):
        return []
    problems = []
    try:
        import wandb  # noqa: F401
    except ImportError:
        problems.append("trainer.logger includes wandb but wandb is not installed (pip install wandb, or logger=none)")
    mode = env.get("WANDB_MODE")
    if mode is None:
        problems.append("trainer.logger includes wandb but the job's environment sets no WANDB_MODE: verl's wandb.init "
                        "in a Ray actor would ask for a login")
    elif mode == "online" and not env.get("WANDB_API_KEY") and not _wandb_key_in_netrc():
        problems.append("trainer.logger includes wandb in online mode (WANDB_MODE=online) but no WANDB_API_KEY is in the "
                        "environment: wandb.init would fail in the Ray actor (export the key, or logger.mode=offline)")
    return problems


def _writable(directory: Path) -> str | None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".preflight-"):
            pass
    except OSError as e:
        return f"{type(e).__name__}: {e.strerror or e}"
    return None


def check_paths(paths: Mapping[str, Path]) -> list[str]:
    problems = []
    for key, directory in paths.items():
        why = _writable(Path(directory))
        if why:
            problems.append(f"{key}={directory} is not writable ({why})")
    return problems


def preflight(cfg: DictConfig, config_path: Path, arch: ArchConfig, model_key: str, env: Mapping[str, str],
              paths: Mapping[str, Path]) -> None:
    """Run every check; raise PreflightError listing each failure on its own line."""
    problems = [
        *check_tensor_parallel(cfg, arch, model_key),
        *check_lengths(cfg, arch, model_key),
        *check_logger(cfg, env),
        *check_paths(paths),
    ]
    problems += check_reward_import(config_path, env)
    if problems:
        raise PreflightError("verl preflight failed:\n" + "\n".join(f"  {p}" for p in problems))
