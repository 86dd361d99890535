"""`python -m judge_rl.backends.verl.entry <ppo_trainer.yaml>`: one verl training job in its own process.

Loads the translated config judge_rl wrote, adds the non-secret W&B / verl settings present in this process's
environment to Ray's runtime environment (in memory only: never written back), and hands the config to verl's own
`main_ppo.main`, which validates it and runs the Ray trainer.

A secret (an API key or token: `launch.is_secret`) never goes into the runtime environment: verl prints it (`ray init
kwargs`, its whole config in every worker's log), Ray's runtime-env agent logs it and verl's W&B run saves the config.
The Ray this process starts (no cluster.ray_address) inherits this process's environment, its workers with it, so
they read the key from there. On an existing cluster the workers read it from their node's environment: start each
node with it (`WANDB_API_KEY=... ray start ...`); this process names the secrets it does not forward.

This process leads its own process group (launch.py starts it in a new session), which verl's Ray processes and
vLLM's engines join: the job that launched it stops the group when it ends, and a watchdog does when it is killed.
"""

from __future__ import annotations

import os
import sys
from typing import Mapping

from omegaconf import OmegaConf, open_dict

from judge_rl.backends.verl.launch import EXTRA_FORWARDED_ENV, FORWARDED_ENV, is_secret


def forwarded_names(environ: Mapping[str, str]) -> tuple[str, ...]:
    """FORWARDED_ENV and the names in `environ[EXTRA_FORWARDED_ENV]` (comma-separated), in order, once each."""
    extra = (n.strip() for n in environ.get(EXTRA_FORWARDED_ENV, "").split(",") if n.strip())
    return tuple(dict.fromkeys((*FORWARDED_ENV, *extra)))


def withheld_secrets(environ: Mapping[str, str]) -> list[str]:
    """The forwarded names that are set in `environ` and are secrets: never put in Ray's runtime env."""
    return [k for k in forwarded_names(environ) if environ.get(k) and is_secret(k)]


def with_forwarded_env(cfg, environ: Mapping[str, str]):
    """The config with the non-secret variables of `environ` named by `forwarded_names` added to Ray's runtime env
    (in memory). Secrets are left out: Ray's workers inherit them from the Ray this process starts, or read them
    from their node's environment on an existing cluster (module docstring)."""
    env = {k: environ[k] for k in forwarded_names(environ) if environ.get(k) and not is_secret(k)}
    if env:
        with open_dict(cfg):
            runtime = cfg.ray_kwargs.ray_init
            if runtime.get("runtime_env") is None:
                runtime.runtime_env = {}
            if runtime.runtime_env.get("env_vars") is None:
                runtime.runtime_env.env_vars = {}
            runtime.runtime_env.env_vars.update(env)
    return cfg


def cluster_note(environ: Mapping[str, str]) -> str | None:
    """On an existing Ray cluster (RAY_ADDRESS), the line naming the secrets set here that its workers must read from
    their node's environment; None when this process starts its own Ray (its workers inherit them)."""
    withheld = withheld_secrets(environ)
    if not withheld or not environ.get("RAY_ADDRESS"):
        return None
    return (f"judge_rl: {', '.join(withheld)} not forwarded to the Ray cluster at {environ['RAY_ADDRESS']} (a secret "
            "never goes into Ray's runtime env, which verl and Ray log): its workers read them from their node's "
            "environment; start each node with them set (`WANDB_API_KEY=... ray start ...`)")


def main(path: str) -> None:
    from verl.trainer.main_ppo import main as verl_main

    note = cluster_note(os.environ)
    if note:
        print(note, flush=True)
    cfg = with_forwarded_env(OmegaConf.load(path), os.environ)
    verl_main(cfg)  # hydra.main passes a given config straight to the task function


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m judge_rl.backends.verl.entry <ppo_trainer.yaml>")
    main(sys.argv[1])
