"""A Bradley-Terry judge (Think-J Table 3's "Bradley-Terry" row, OpenJudge's BT baseline): a reward model
trained with TRL's `RewardTrainer`, scored by the same harness and benchmarks as generative judges.

    setup -> train the reward model on the training pairs -> evaluate (chosen must score strictly higher) -> report

The model is the judge's transformer with one scalar per sequence (`AutoModelForSequenceClassification`,
num_labels=1, judge_rl.models.loading.load_score_model). It reads the question (with the pair's reference
answer when it has one: the information a generative judge is shown) and one response, as the conversation
of the `scalar` prompt, tokenized by `scalar_ids` in training and scoring alike. Loss: -log sigmoid(r_chosen -
r_rejected - margin) (`margin: true` uses the pair's strength label, 0 without one), plus
`center_rewards_coefficient` * mean((r_chosen + r_rejected)^2) when set (TRL's options, Think-J's BT
baseline uses neither). The harness judges each response alone through `ScalarServer` and saves every score
per item (`eval/bt/judgments.jsonl`); a pair is right when its chosen response scores strictly higher, as
RewardBench scores classifiers (`pairwise_accuracy`; the order of a pair cannot matter to a scalar judge).
The trained model is `bt_model/` in the run directory (TRL checkpoints under `bt_work/` resume a crash);
`python -m judge_rl.eval server=scalar judge.prompt=scalar judge.checkpoint=<run_dir>/bt_model` scores it
on any benchmark, and `data.strength_from=<run_dir>/bt_model` labels strengths with it (judge_rl/recipes/strength_from.py).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Optional

from judge_rl.config import JobConfig, check_ranges
from judge_rl.models.loading import load_score_model, save_model
from judge_rl.prompts.scalar import scalar_messages
from judge_rl.recipes import register_recipe
from judge_rl.recipes.stages import Run, evaluate, online_pairs, report, setup
from judge_rl.reports.console import console
from judge_rl.rewards import Reward
from judge_rl.servers.scalar import ScalarServer, scalar_ids
from judge_rl.updates.trl_run import steps_for, train, trl_args


@dataclass
class BTConfig:
    """`algorithm=bt`: a Bradley-Terry reward model (TRL `RewardConfig` fields where they exist)."""

    scalar: ClassVar[bool] = True  # judged with the `scalar` prompt through ScalarServer

    name: str = "bt"
    recipe: str = "bt"  # judge_rl/recipes/bt.py
    # training pairs (the first of data.train that fit max_length); null: every pair the SFT-then-RL judge learns
    # from (sft.num_examples / 2 pairs in both orders, plus trainer.total_steps x prompts_per_step), same data
    num_pairs: Optional[int] = None
    lr: float = 2.0e-5
    epochs: int = 1
    batch_size: int = 8  # pairs per optimizer step
    max_length: int = 512  # tokens of one conversation; longer pairs are left out and counted
    margin: bool = False  # the pair's strength (1..3) as the margin of the loss (0 without a label)
    center_rewards_coefficient: Optional[float] = None  # TRL's reward centring (e.g. 0.01); null: off
    warmup_ratio: float = 0.0


RANGES = {
    "algorithm.num_pairs": ">= 1",
    "algorithm.lr": "> 0",
    "algorithm.epochs": ">= 1",
    "algorithm.batch_size": ">= 1",
    "algorithm.max_length": ">= 1",
    "algorithm.center_rewards_coefficient": ">= 0",
    "algorithm.warmup_ratio": "[0, 1]",
}


def validate_bt(job: JobConfig, reward: Reward) -> None:
    """Ranges only: `stages` are the online recipe's; a BT run always trains and evaluates its reward model."""
    check_ranges(job, RANGES)


def bt_rows(run: Run) -> tuple[list[dict], int]:
    """RewardTrainer rows (pre-tokenized `chosen_ids` / `rejected_ids`, `margin` when enabled) from the first
    `num_pairs` training pairs, and how many pairs were left out as longer than `max_length`."""
    a, tok = run.job.algorithm, run.tokenizer
    pairs = list({it.pair.pair_id: it.pair for it in run.train_items}.values())  # each pair once, in order
    rows, too_long = [], 0
    budget = a.num_pairs or (run.job.sft.num_examples // 2 + online_pairs(run.job))
    for p in pairs:
        if len(rows) >= budget:
            break
        ref = p.meta.get("reference")
        chosen = scalar_ids(tok, scalar_messages(p.question, p.chosen, ref))
        rejected = scalar_ids(tok, scalar_messages(p.question, p.rejected, ref))
        if max(len(chosen), len(rejected)) > a.max_length:
            too_long += 1
            continue
        row = {"chosen_ids": chosen, "rejected_ids": rejected}
        if a.margin:
            row["margin"] = float(p.strength or 0)
        rows.append(row)
    if not rows:
        raise ValueError(f"algorithm=bt: no training pair fits algorithm.max_length={a.max_length} tokens")
    return rows, too_long


def train_bt(run: Run) -> tuple[Path, dict[str, float]]:
    """Train (or, when `bt_model/` exists, reuse) the reward model; returns its directory and metrics."""
    import json

    from datasets import Dataset
    from trl import RewardConfig, RewardTrainer

    job, a = run.job, run.job.algorithm
    target = run.run_dir / "bt_model"
    metrics_file = target / "bt_metrics.json"
    if metrics_file.exists():
        return target, {**json.loads(metrics_file.read_text()), "bt/reused": 1.0}
    rows, too_long = bt_rows(run)
    model = load_score_model(job.model, job.cache_dir, run.device, seed=job.seed, train=True)
    work = run.run_dir / "bt_work"
    steps = steps_for(len(rows), a.batch_size, a.epochs)
    args = trl_args(RewardConfig, work, run.device, dtype=job.model.dtype, lr=a.lr, epochs=a.epochs,
                    batch_size=a.batch_size,
                    max_length=a.max_length, seed=job.seed, warmup_steps=round(a.warmup_ratio * steps),
                    center_rewards_coefficient=a.center_rewards_coefficient)
    trainer = RewardTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=run.tokenizer)
    summary = train(trainer, work, "bt", steps)
    metrics = {
        "bt/steps": summary["steps"],
        "bt/pairs": float(len(rows)),
        "bt/pairs_too_long": float(too_long),
        "bt/loss_first": summary["loss_first"],
        "bt/loss_last": summary["loss_last"],
        "bt/train_loss": summary["train_loss"],
        "bt/train_accuracy_last": summary.get("last/accuracy", float("nan")),
        "bt/seconds": summary["seconds"],
        "bt/seconds_per_step": summary["seconds_per_step"],
    }
    save_model(trainer.model, run.tokenizer, target)
    metrics_file.write_text(json.dumps(metrics, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return target, metrics


@register_recipe("bt", config=BTConfig, validate=validate_bt, ignores=("reward",))  # it scores; no reward pays it
def bt(job: JobConfig, run_dir: Path, reward: Reward) -> dict[str, Any]:
    # setup: the `scalar` prompt (pointwise: each response scored alone), data and benchmarks, before any model
    run = setup(job, run_dir, reward)

    # train the reward model (reused when this run directory already holds it)
    model_dir, metrics = train_bt(run)
    run.results["training"]["bt"] = metrics
    run.save()
    run.logger.summary(metrics)
    console.print(f"bt: {int(metrics['bt/steps'])} steps on {int(metrics['bt/pairs'])} pairs, loss "
                  f"{metrics['bt/loss_first']:.3f} -> {metrics['bt/loss_last']:.3f}"
                  + (" (reused)" if metrics.get("bt/reused") else ""))

    # evaluate: every response scored alone, a pair right when chosen scores strictly higher
    model = load_score_model(job.model, job.cache_dir, run.device, checkpoint=model_dir)
    evaluate(run, "bt", "bt", model_dir, server=ScalarServer(model, run.tokenizer, job.eval.batch_size, name=job.model.name))
    return report(run, final="bt")
