"""The main job: a composed config -> its training recipe -> results.

`run(cfg)` is a plain function of a composed config that returns the run's results document; the Hydra
entry point (`python -m judge_rl`, judge_rl/__main__.py) and the tests both call it. `checked_job(cfg)` types
and checks the config before any model loads: the keys every recipe reads here, then the recipe's own checks; the
job's reward is built there, once, and handed to the recipe. `algorithm.recipe` picks the recipe
(judge_rl/recipes/: online_rl for GRPO, PPO, REINFORCE++, RLOO, ...), which runs its stages top to bottom
in the claimed run directory. Every stage writes into the run directory as it goes, and re-running with
the same `run_dir` picks up where a crash left off: the SFT init is cached, RL resumes from its last
checkpoint, and evaluations skip items already judged.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, field, make_dataclass
from pathlib import Path
from typing import Any, Mapping

from omegaconf import DictConfig, OmegaConf

from judge_rl.recipes.stages import eval_engine
from judge_rl.rollouts.samplers import resolve_rollout_engine
from judge_rl.updates.batch import resolve_logprob_pass
from judge_rl.backends import check_cluster
from judge_rl.backends.memory import check_plan, job_plan, plan_record
from judge_rl.config import (
    JOB_RANGES,
    NEUTRAL_KEYS,
    STAGES,
    JobConfig,
    RewardConfig,
    check_local_machine,
    check_ranges,
    typed_config,
    validate_model,
)
from judge_rl.config.model_dirs import require_model_dir
from judge_rl.config.paths import CONF_DIR, load_benchmark_config, load_group_file
from judge_rl.data.loaders import check_loader_kwargs, files_read
from judge_rl.recipes import RECIPES
from judge_rl.reports.console import console
from judge_rl.rewards import Reward, build_reward
from judge_rl.rundir import claim_run_dir


def run(cfg: DictConfig) -> dict[str, Any]:
    job, reward = checked_job(cfg)
    check_memory(job)
    with claim_run_dir(Path(job.run_dir), asdict(job), resume=job.resume, neutral=NEUTRAL_KEYS, console=console) as run_dir:
        return run_job(job, run_dir, reward)


def run_job(job: JobConfig, run_dir: Path, reward: Reward) -> dict[str, Any]:
    """A validated config in a claimed run directory, with its reward (`checked_job`): its recipe, or (verl
    backend, `--dry-run`) the verl command and config it would launch."""
    plan = job_plan(job)
    if job.dry_run and job.cluster.backend != "verl":
        console.print(plan.table() if plan else f"memory plan: none (the local backend plans online RL; algorithm="
                      f"{job.algorithm.name} with model={job.model.name}: an offline method, or model.arch not declared)",
                      markup=False, highlight=False)
        return {"run_dir": str(run_dir), "memory_plan": plan_record(plan)}
    if job.dry_run:
        from judge_rl.backends.verl.launch import dry_run
        from judge_rl.recipes.online_rl import judge_rl_task

        return dry_run(job, run_dir, judge_rl_task(job, reward))
    if plan is not None:
        console.print(plan.line(), markup=False, highlight=False, soft_wrap=True)
    check_local_machine(job.cluster)
    return RECIPES.get(job.algorithm.recipe).run(job, run_dir, reward)


def checked_job(cfg: DictConfig) -> tuple[JobConfig, Reward]:
    """Resolve and type-check a composed config; unknown keys and wrong types raise with the key name. The
    `algorithm` node is typed by its recipe's config dataclass (`algorithm.recipe`, judge_rl/recipes/). Returns the
    job and its reward, built once here (before any model loads) and passed down to the recipe."""
    recipe = OmegaConf.select(cfg, "algorithm.recipe", default="online_rl")
    _refuse_verl_for_offline(recipe, OmegaConf.select(cfg, "cluster.backend", default="local"), cfg.algorithm.get("name"))
    job: JobConfig = typed_config(cfg, job_schema(recipe))
    return job, validate(job)


def to_job_config(cfg: DictConfig) -> JobConfig:
    """`checked_job`'s job alone (what the tests and the config checks read)."""
    return checked_job(cfg)[0]


def _refuse_verl_for_offline(recipe: str, backend: str, name: str | None) -> None:
    """Checked before typing: a verl cluster option sets online-RL batch keys an offline method does not have, so
    the typed merge would otherwise fail on those keys instead of saying what is wrong."""
    if backend == "verl" and recipe != "online_rl":
        raise ValueError(f"cluster.backend=verl runs online RL; algorithm={name} (recipe {recipe}) trains in one process "
                         "with TRL: use cluster=local (cluster.device=cuda on a GPU; scripts/gpu_thinkj_tables.sh)")


def get_recipe(name: str):
    """The registered training recipe `name`; an unknown one fails naming the key and the known recipes."""
    try:
        return RECIPES.get(name)
    except KeyError as e:
        raise ValueError(f"algorithm.recipe={name!r}: {e.args[0]}") from None


def job_schema(recipe_name: str) -> type:
    """JobConfig with its `algorithm` field typed by the recipe's config."""
    return _job_schema(get_recipe(recipe_name).config)


@functools.cache
def _job_schema(algorithm_cls: type) -> type:
    return make_dataclass(
        f"JobConfig_{algorithm_cls.__name__}",
        [("algorithm", algorithm_cls, field(default_factory=algorithm_cls))],
        bases=(JobConfig,),
    )



def validate(job: JobConfig) -> Reward:
    """Refuse combinations that cannot work, before any model is loaded: the keys every recipe reads here, then
    the recipe's own checks (`Recipe.validate`). Returns the job's reward (built here, the one build of the job)."""
    unknown = [s for s in job.stages if s not in STAGES]
    if unknown:
        raise ValueError(f"stages: unknown stage(s) {unknown}; known: {list(STAGES)}")
    check_ranges(job, JOB_RANGES)
    validate_model(job.model)
    resolve_rollout_engine(job.trainer.rollout_engine, "cpu", job.model.source)  # an unknown or absent engine: one line
    resolve_logprob_pass(job.trainer.logprob_pass, "cpu", job.trainer.gradient_checkpointing)  # an unknown pass: one line
    eval_engine(job.eval.server, job.model.source, "cpu")  # an unknown eval.server: one line
    for split in ("train", "eval"):
        spec = getattr(job.data, split)
        check_loader_kwargs(spec.loader, dict(spec.kwargs), f"data.{split}")
    if job.sft.data is not None:
        check_loader_kwargs(job.sft.data.loader, dict(job.sft.data.kwargs), "sft.data")
    check_benchmarks_held_out(job)
    if job.data.strength_from is not None:
        require_model_dir(job.data.strength_from, "data.strength_from")
        if not (Path(job.data.strength_from).expanduser() / "bt_metrics.json").exists():
            raise ValueError(f"data.strength_from={job.data.strength_from}: not a Bradley-Terry model written by algorithm=bt "
                             "(no bt_metrics.json)")
    reward = build_reward(job.reward.name, **job.reward.weights)  # unknown weights / failure > wrong raise here
    a = job.algorithm
    recipe = get_recipe(a.recipe)
    if not isinstance(a, recipe.config):
        raise ValueError(f"algorithm={a.name}: recipe {a.recipe} takes a {recipe.config.__name__}, not {type(a).__name__}")
    check_cluster(job.cluster, job.dry_run)
    check_ignored_groups(job, recipe)
    if recipe.validate is not None:
        recipe.validate(job, reward)
    return reward


def check_memory(job: JobConfig) -> None:
    """The local backend's memory plan against this machine's device (a machine check, like check_local_machine: a
    config composes and validates anywhere), before the run directory is claimed or any model loads; a dry run prints
    the plan instead. verl jobs are planned from their translated config at launch (judge_rl/backends/verl/launch.py)."""
    plan = job_plan(job)
    if plan is not None and not job.dry_run:
        check_plan(plan)


def check_benchmarks_held_out(job: JobConfig) -> None:
    """A benchmark of eval.benchmarks may not read a file the training data reads (data.train, sft.data): it would
    score the judge on pairs it trained on (e.g. data=real_pairs trains on 80% of MT-Bench-human's prompts, whose
    benchmark `mt_bench_human` is the whole file; its held-out prompts are data.eval)."""
    trained = {path.resolve(): key for key, spec in (("data.train", job.data.train), ("sft.data", job.sft.data))
               if spec is not None for path in files_read(spec.loader, dict(spec.kwargs))}  # fmt: skip
    for name in job.eval.benchmarks:
        path = Path(load_benchmark_config(name).path)
        if path.resolve() in trained:
            raise ValueError(f"eval.benchmarks: {name} reads {path}, which {trained[path.resolve()]} trains on: a judge "
                             "is never scored on what it trained on; drop it (the held-out part is data.eval)")


# the groups a recipe may declare it ignores, with the schema of their options
IGNORABLE_GROUPS = {"reward": RewardConfig}


def default_option(group: str) -> Any:
    """The option conf/config.yaml's defaults list picks for `group`, typed. Read from the file: the composed config
    holds only the option chosen (and Hydra's runtime choices only its name), never what the default would have been."""
    for entry in OmegaConf.load(CONF_DIR / "config.yaml").defaults:
        if isinstance(entry, Mapping) and group in entry:
            return load_group_file(group, entry[group], IGNORABLE_GROUPS[group], group)
    raise ValueError(f"conf/config.yaml: no default option for the group {group!r}")


def check_ignored_groups(job: JobConfig, recipe) -> None:
    """Refuse a group the recipe does not read (`Recipe.ignores`) set away from its default: on the main before this,
    `algorithm=bt reward=consistency` trained and reported as if the reward had mattered."""
    for group in recipe.ignores:
        default, value = default_option(group), getattr(job, group)
        if value != default:
            raise ValueError(f"{group}={value.name}: algorithm={job.algorithm.name} (recipe {recipe.name}) does not read "
                             f"`{group}`, so this setting would change nothing; leave it at its default "
                             f"({group}={default.name}, no {group}.* overrides)")
