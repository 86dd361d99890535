"""The main job: a composed config -> its training recipe -> results.

`run(cfg)` is a plain function of a composed config that returns the run's results document; the Hydra
entry point (`python -m judge_rl`) and the tests both call it. `algorithm.recipe` picks the recipe
(judge_rl/recipes/: online_rl for GRPO, PPO, REINFORCE++, RLOO, ...), which runs its stages top to bottom
in the claimed run directory. Every stage writes into the run directory as it goes, and re-running with
the same `run_dir` picks up where a crash left off: the SFT init is cached, RL resumes from its last
checkpoint, and evaluations skip items already judged.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from judge_rl.config import NEUTRAL_KEYS, JobConfig, to_job_config
from judge_rl.recipes import RECIPES
from judge_rl.reports.console import console
from judge_rl.rundir import claim_run_dir


def run(cfg: DictConfig) -> dict[str, Any]:
    job = to_job_config(cfg)
    with claim_run_dir(Path(job.run_dir), asdict(job), resume=job.resume, neutral=NEUTRAL_KEYS, console=console) as run_dir:
        return run_job(job, run_dir)


def run_job(job: JobConfig, run_dir: Path) -> dict[str, Any]:
    """A validated config in a claimed run directory: its recipe, or (verl backend, `--dry-run`) the verl
    command and config it would launch."""
    if job.dry_run:
        from judge_rl.backends.verl.launch import dry_run

        return dry_run(job, run_dir)
    return RECIPES.get(job.algorithm.recipe).run(job, run_dir)
