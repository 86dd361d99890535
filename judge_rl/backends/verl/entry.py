"""`python -m judge_rl.backends.verl.entry <ppo_trainer.yaml>`: one verl training job in its own process.

Loads the translated config judge_rl wrote, adds the W&B / HF settings present in this process's
environment to Ray's runtime environment (in memory only: never written back), and hands the config
to verl's own `main_ppo.main`, which validates it and runs the Ray trainer.
"""

from __future__ import annotations

import os
import sys
from typing import Mapping

from omegaconf import OmegaConf, open_dict

from judge_rl.backends.verl.launch import EXTRA_FORWARDED_ENV, FORWARDED_ENV


def with_forwarded_env(cfg, environ: Mapping[str, str]):
    """The config with the W&B / HF variables of `environ` added to Ray's runtime env (in memory), and those
    named in `environ[EXTRA_FORWARDED_ENV]` (comma-separated)."""
    names = (*FORWARDED_ENV, *(n.strip() for n in environ.get(EXTRA_FORWARDED_ENV, "").split(",") if n.strip()))
    env = {k: environ[k] for k in names if environ.get(k)}
    if env:
        with open_dict(cfg):
            runtime = cfg.ray_kwargs.ray_init
            if runtime.get("runtime_env") is None:
                runtime.runtime_env = {}
            if runtime.runtime_env.get("env_vars") is None:
                runtime.runtime_env.env_vars = {}
            runtime.runtime_env.env_vars.update(env)
    return cfg


def main(path: str) -> None:
    from verl.trainer.main_ppo import main as verl_main

    cfg = with_forwarded_env(OmegaConf.load(path), os.environ)
    verl_main(cfg)  # hydra.main passes a given config straight to the task function


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m judge_rl.backends.verl.entry <ppo_trainer.yaml>")
    main(sys.argv[1])
