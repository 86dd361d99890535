"""Online RL of a judge (Think-J 3.2.2, JudgeLRM, OpenJudge's GRPO, J1): SFT init, then GRPO / PPO /
REINFORCE++ / RLOO with a rule reward, on the local backend or on verl.

    setup -> [eval base] -> SFT init -> [eval SFT] -> RL -> [eval RL] -> RL minus its init -> report

`stages` picks which of eval_base, sft, eval_sft, rl and eval_rl run. `cluster.backend` picks what trains:
`local` (one process, verl's core_algos) or `verl` (Ray, vLLM, GPUs); both read the same `algorithm.*`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from judge_rl.backends import RLTask, train_online
from judge_rl.backends.algorithm import RL_RANGES, AlgorithmConfig, check_online_algorithm
from judge_rl.backends.local.loop import eval_due
from judge_rl.config import JobConfig, check_ranges
from judge_rl.prompts import get_prompt
from judge_rl.recipes import register_recipe
from judge_rl.recipes.stages import Run, compare, evaluate, live_eval_pairs, live_evaluator, report, setup, sft_init
from judge_rl.reports.console import console
from judge_rl.reports.summary import reward_summary
from judge_rl.rewards import Reward


def validate_online_rl(job: JobConfig, reward: Reward) -> None:
    """The online RL recipe's checks: its `algorithm.*` (ranges, group shapes verl's estimators need, critic and
    KL: backends/algorithm.py, shared with the policy job), and what a judge's reward asks of the groups."""
    check_ranges(job, RL_RANGES)
    a = job.algorithm
    if (getattr(reward, "both_orders", False) or a.group_both_orders) and (a.rollout_n < 2 or a.rollout_n % 2):
        why = f"reward={job.reward.name}" if getattr(reward, "both_orders", False) else "algorithm.group_both_orders=true"
        raise ValueError(
            f"{why} rolls out both orders of a pair, half the samples each: "
            f"algorithm.rollout_n={a.rollout_n} must be even and >= 2"
        )
    if a.group_both_orders:
        if get_prompt(reward.prompt).kind != "pairwise":
            raise ValueError(f"algorithm.group_both_orders=true needs a pairwise judge; reward={job.reward.name} judges "
                             f"one response at a time ({reward.prompt})")
    check_online_algorithm(a, job.trainer.prompts_per_step)


def judge_rl_task(job: JobConfig, reward: Reward, run: Any = None, init_model: Path | None = None,
                  eval_live: Any = None) -> RLTask:  # fmt: skip
    """The judge job's RL as the backends take it (judge_rl/backends/__init__.py): its training items judged with
    the reward's prompt (`reward`, the job's, built once by judge_rl/jobs/train.py) and scored by it (the local backend's LocalBackend step; on verl, its pairs exported and
    judge_rl/rewards/__init__.py:compute_score), the live held-out evaluation every trainer.eval_every steps (local).
    `run`: the recipe's setup (recipes/stages.py); None for a task only launched on verl (a dry run)."""

    def make_step(policy, reference, tokenizer, critic):
        from judge_rl.backends.local.backend import LocalBackend

        group_fn = run.reward.combine if getattr(run.reward, "both_orders", False) else None
        return LocalBackend(policy, reference, tokenizer, job.algorithm, job.trainer, run.prompt.messages, run.score_fn,
                            critic, group_fn=group_fn)  # fmt: skip

    def verl_task(run_dir: Path):
        from judge_rl.backends.verl.export import judge_verl_task

        if run is None:  # a dry run, or the machine check before setup: the over-long rows are only printed
            return judge_verl_task(job, run_dir, reward)
        # the rows verl will drop as over-long, counted into results.json's data.splits (verl.train, verl.val)
        task = judge_verl_task(job, run_dir, reward, run.results.setdefault("data", {}).setdefault("splits", {}))
        run.save()
        return task

    every = job.trainer.eval_every
    return RLTask(
        reward_name=job.reward.name,
        items=run.train_items if run is not None else (),
        make_step=make_step if run is not None else None,
        verl_task=verl_task,
        init_model=init_model,
        eval_fn=eval_live,
        eval_at=(lambda step, total: eval_due(step, total, every)) if eval_live is not None else None,
        forecast=work_after_rl(run, eval_live is not None) if run is not None else None,
    )  # fmt: skip


def work_after_rl(run: Run, live: bool) -> Callable[[int], list[tuple[str, float]]]:
    """For the forecast printed after RL's first step (the local backend): the live held-out evaluations still due
    after step `step` and the RL judge's evaluation, each at the pace of the last evaluation that judged afresh (the
    SFT init's, or the base model's); nothing where none did (a resumed run that reused its judgments)."""

    def then(step: int) -> list[tuple[str, float]]:
        if getattr(run, "eval_pace", None) is None:
            return []
        job = run.job
        per_pair, benchmarks = run.eval_pace
        total, out = job.trainer.total_steps, []
        due = sum(eval_due(s, total, job.trainer.eval_every) for s in range(step + 1, total + 1)) if live else 0
        if due:
            out.append((f"{due} live evaluations", due * per_pair * len(live_eval_pairs(run))))
        if "eval_rl" in job.stages:
            out.append(("evaluating the RL judge", per_pair * len(run.eval_pairs) + benchmarks))
        return out

    return then


@register_recipe("online_rl", config=AlgorithmConfig, validate=validate_online_rl)
def online_rl(job: JobConfig, run_dir: Path, reward: Reward) -> dict[str, Any]:
    # setup: everything that can fail on a bad config or bad data fails before a model loads
    if "rl" in job.stages and job.cluster.backend == "verl":  # this machine can launch verl (vllm, GPUs, flash_attn)
        from judge_rl.backends.verl.launch import check_launch_machine

        check_launch_machine(job, run_dir, judge_rl_task(job, reward))
    run = setup(job, run_dir, reward)
    eval_live = live_evaluator(run)
    if eval_live is not None and "rl" in job.stages and job.cluster.backend != "local":
        console.print(f"[yellow]trainer.eval_every={job.trainer.eval_every}: the periodic held-out evaluation runs "
                      f"on the local backend only; cluster.backend={job.cluster.backend} ignores it[/yellow]")

    # the untrained judge, then the thinking initialisation
    if "eval_base" in job.stages:
        evaluate(run, "base", "base", None)
    init_model: Path | None = None
    if "sft" in job.stages and job.sft.enabled:
        init_model = sft_init(run)
        if "eval_sft" in job.stages:
            evaluate(run, "sft", "sft init", init_model)

    # online RL from the init (resuming from the last checkpoint of this run directory)
    if "rl" in job.stages:
        rl = train_online(job, run_dir, judge_rl_task(job, reward, run, init_model, eval_live), run.logger)
        history = run.logger.history()
        training = rl.trained(history)
        run.results["training"]["rl"] = training
        rewards = reward_summary(history)
        if "reward_curve" in rewards:  # only when a step logged a reward
            training.update(rewards)
        run.save()
        if "eval_rl" in job.stages:
            evaluate(run, "rl", "rl", rl.model_dir)

    # did RL help? both orders, with the noise of the held-out set
    compare(run, "sft" if "sft" in run.held_out else "base", "rl")
    # the judge this run produced: the last stage evaluated (stages=[sft, eval_sft] makes an SFT judge)
    final = next((s for s in ("rl", "sft", "base") if s in run.results["evaluations"]), "rl")
    return report(run, final=final, plot="rl" in job.stages)
