"""Backends: what runs online RL. `cluster.backend` picks one by name (`BACKENDS.get(name)`); every job reaches
them the same way, the main (judge) job from judge_rl/recipes/online_rl.py and the policy job from
judge_rl/jobs/policy.py.

  local   judge_rl.backends.local   one process, CPU or one CUDA device; the step calls verl's own
                                    `core_algos` (advantages, policy loss, KL), so the math is verl's
  verl    judge_rl.backends.verl    verl 0.9.x on Ray, vLLM and GPUs: judge_rl's config is TRANSLATED into
                                    verl's `ppo_trainer` config, never merged into its namespace (verl owns
                                    Hydra groups named model/algorithm/reward/data, and a same-named group
                                    would silently replace its files)

A backend is a function `(job: LaunchJob, run_dir, task: RLTask, log) -> RLResult`:
  LaunchJob  what a backend reads from a job's config (model, algorithm, trainer, cluster, logger, seed,
             cache_dir); the main job's JobConfig and the policy job's PolicyJobConfig both are one
  RLTask     what the job adds: its items and, for each backend, how its reward is computed there (the local
             backend's step object; the verl launch's VerlTask: data files, reward function and its kwargs,
             extra keys and environment)
So adding a backend is one module that registers a function here; adding a job is building an RLTask.
(Servers, which answer judge prompts, are `judge_rl.servers`.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from judge_rl.backends.algorithm import AlgorithmConfig
from judge_rl.config import ClusterConfig, LoggerConfig, ModelConfig, TrainerConfig, check_device
from judge_rl.registry import Registry

# the modules that register backends are imported on the first lookup (the local one imports torch and
# verl's core_algos; the verl one verl's config machinery)
BACKENDS: Registry = Registry("backend", modules=("judge_rl.backends.local.loop", "judge_rl.backends.verl.launch"))


def check_cluster(cluster: ClusterConfig, dry_run: bool) -> None:
    """The `cluster` keys every job that trains checks alike (the main job, judge_rl/jobs/train.py, and the policy
    job, judge_rl/policy/config.py): a known backend and device. A dry run prints the verl launch on verl, and the
    memory plan on either backend."""
    if cluster.backend not in BACKENDS:
        raise ValueError(f"cluster.backend={cluster.backend!r}: expected one of {', '.join(BACKENDS.names())}")
    check_device(cluster.device, "cluster.device")


class LaunchJob(Protocol):
    """What a backend reads from a job's config."""

    seed: int
    cache_dir: str
    model: ModelConfig
    algorithm: AlgorithmConfig
    trainer: TrainerConfig
    cluster: ClusterConfig
    logger: LoggerConfig


@dataclass
class VerlTask:
    """What a job's reward adds to a verl launch (judge_rl/backends/verl/launch.py):
    data_files     {"train": parquet, "val": parquet} in verl's RL schema
    reward_module  the file verl imports the reward function from (reward.custom_reward_function.path)
    reward_kwargs  reward.custom_reward_function.reward_kwargs
    stages         the job's stages that set verl's validation (eval_base, eval_rl)
    keys           further dotted verl keys (the reward function's name, a reward manager); cluster.verl_overrides
                   are set after them
    env            variables added to the launch's environment and forwarded by name to Ray's workers (values
                   stay in memory); `forward` names more variables to forward whose values come from outside
    judge          the judge client's config when the reward asks a judge (preflight checks its address)"""

    data_files: Mapping[str, str]
    reward_module: str
    reward_kwargs: Mapping[str, Any]
    stages: Sequence[str] = ()
    keys: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    forward: Sequence[str] = ()
    judge: Any = None


@dataclass
class RLTask:
    """One online-RL run as the backends need it described.
    reward_name  names the run (verl's experiment name) and errors
    items        what the policy is prompted with (judge items, policy prompts)
    make_step    local backend: `(policy, reference, tokenizer, critic) -> object with .step(items) -> metrics`
                 (None: a task only launched on verl, e.g. a dry run)
    verl_task    verl backend: `run_dir -> VerlTask` (exports the data under run_dir/verl/)
    init_model   the checkpoint RL starts from (None: the job's model)
    eval_fn, eval_at, describe   local backend: the live held-out evaluation `eval_fn(policy, step)`, the steps it
                 runs after (`eval_at(step, total)`), the console line of a step (None: the judge's)
    forecast     local backend: `forecast(step)`, the (what, seconds) of the job's work after the steps, for the line
                 of how long the rest will take printed after the first step (None: the steps alone)
A task that means something else on verl than locally says so from `verl_task` (VerlTranslationError)."""

    reward_name: str
    items: Sequence[Any]
    make_step: Callable[[Any, Any, Any, Any], Any] | None
    verl_task: Callable[[Path], VerlTask]
    init_model: Path | None = None
    eval_fn: Callable[[Any, int], dict[str, float]] | None = None
    eval_at: Callable[[int, int], bool] | None = None
    describe: Callable[[int, int, dict[str, float]], str] | None = None
    forecast: Callable[[int], list[tuple[str, float]]] | None = None


@dataclass
class RLResult:
    model_dir: Path
    history: list[dict[str, float]] = field(default_factory=list)
    resumed_from: int = 0
    unlogged_steps: list[int] = field(default_factory=list)  # trained and checkpointed, with no metrics row (verl)

    def trained(self, history: Sequence[dict[str, float]]) -> dict[str, Any]:
        """What a job's results.json says of the RL it ran, given its metrics rows: the step it resumed from and the
        steps trained, counting the ones verl checkpointed but never logged (named under `unlogged_steps`)."""
        out: dict[str, Any] = {"resumed_from": self.resumed_from, "steps": len(history) + len(self.unlogged_steps)}
        if self.unlogged_steps:
            out["unlogged_steps"] = list(self.unlogged_steps)
        return out


Log = Callable[[dict[str, float], int], None]


def train_online(job: LaunchJob, run_dir: Path, task: RLTask, logger: Any) -> RLResult:
    """A job's online RL on its `cluster.backend`, resuming: the metrics rows logged after the run's last local
    checkpoint are dropped first (the resumed steps log them again; a row the checkpoint holds but the file lost is
    written back), then the backend trains `task`. The one launch the main job's recipe (recipes/online_rl.py) and the
    policy job (jobs/policy.py) share; `logger`: the job's MetricsLogger (judge_rl/reports/logging.py)."""
    from judge_rl.backends.local.loop import checkpoint_metrics, latest_checkpoint

    found = latest_checkpoint(Path(run_dir) / "checkpoints")  # verl's are under verl/: it logs its steps again
    logger.drop_steps_after(found[0] if found else 0, checkpoint_metrics(found[1]) if found else ())
    return BACKENDS.get(job.cluster.backend)(job, run_dir, task, logger.log)


__all__ = ["BACKENDS", "LaunchJob", "check_cluster", "Log", "RLResult", "RLTask", "VerlTask", "train_online"]
