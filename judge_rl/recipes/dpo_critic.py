"""Think-J's critic-guided offline learning (section 3.2.1): a critic writes the traces the judge did not, and
DPO with an SFT term trains the judge on them.

    setup -> SFT init (the judge) -> [eval SFT] -> critic (SFT on traces for a *given* verdict)
          -> per iteration: the judge judges training pairs; the critic writes the missing side; DPO + SFT
          -> evaluate -> DPO minus its init -> report

Each iteration takes the next `pairs_per_iteration` training pairs (balanced positions) and:
1. the judge (greedy, or sampled at `judge_temperature`) judges each;
2. where it is right, its output is the positive and the critic writes a trace for the *wrong* verdict as the
   negative; where it is wrong (or unparsed), its output is the negative and the critic writes a trace for the
   *right* verdict (the gold strength) as the positive;
3. only pairs whose critic trace parses to the intended verdict are kept (the counts say how many failed);
4. DPO trains the judge on them with TRL 1.16's combined loss `loss_type=["sigmoid", "sft"]`,
   `loss_weights=[1, sft_weight]` (the SFT term on the positive; Think-J: beta 0.1, SFT weight 1.0), the
   reference being the judge at the start of the iteration.
Every iteration writes `dpo/iter_<k>/pairs.jsonl` (prompt, chosen, rejected, which side the critic wrote and
why) and `counts.json`; its model is `dpo/iter_<k>/model`, and a resumed run skips finished iterations.

The critic is the configured model SFT-trained on the same gold traces as the init, each prompt followed by the
verdict it must reach (`critic_messages`); it is cached like the init.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from judge_rl.config import JobConfig, check_ranges
from judge_rl.data.pairs import JudgeItem
from judge_rl.models.loading import load_model, save_model
from judge_rl.recipes import register_recipe
from judge_rl.recipes.stages import Run, compare, evaluate, init_items, online_pairs, report, sample, setup, sft_init
from judge_rl.reports.console import console
from judge_rl.reports.jsonl import read_jsonl
from judge_rl.rewards import Reward
from judge_rl.updates.sft import run_sft, sft_examples
from judge_rl.updates.trl_run import steps_for, train, trl_args

CRITIC_INSTRUCTION = (
    "\n\nThe verdict is given: {verdict}\n"
    "Write the thinking that leads to it inside <think>...</think>, then that verdict line."
)


@dataclass
class DPOCriticModelConfig:
    """The critic: SFT on gold traces with the verdict given (optimisation: the `sft` group)."""

    num_examples: Optional[int] = None  # traces it is trained on (null: sft.num_examples)
    max_new_tokens: int = 80


@dataclass
class DPOCriticConfig:
    """`algorithm=dpo_critic`: Think-J's critic-guided DPO (TRL `DPOConfig` fields where they exist)."""

    name: str = "dpo_critic"
    recipe: str = "dpo_critic"  # judge_rl/recipes/dpo_critic.py
    iterations: int = 1  # rounds of judge -> critic -> DPO, each from the last one's judge
    # training pairs judged per round (the next ones each round, cycling); null: as many as online RL judges
    # (trainer.total_steps x trainer.prompts_per_step), so Table 4's rows see the same data
    pairs_per_iteration: Optional[int] = None
    judge_temperature: float = 0.0  # 0: greedy judgments
    max_new_tokens: int = 80
    beta: float = 0.1  # Think-J: 0.1
    sft_weight: float = 1.0  # weight of the SFT term on the positive (Think-J: 1.0); 0: plain DPO
    lr: float = 1.0e-5
    epochs: int = 1
    batch_size: int = 4
    max_length: int = 768  # prompt + completion tokens
    critic: DPOCriticModelConfig = field(default_factory=DPOCriticModelConfig)


RANGES = {
    "algorithm.iterations": ">= 1",
    "algorithm.pairs_per_iteration": ">= 1",
    "algorithm.judge_temperature": ">= 0",
    "algorithm.max_new_tokens": ">= 1",
    "algorithm.beta": "> 0",
    "algorithm.sft_weight": ">= 0",
    "algorithm.lr": "> 0",
    "algorithm.epochs": ">= 1",
    "algorithm.batch_size": ">= 1",
    "algorithm.max_length": ">= 1",
    "algorithm.critic.num_examples": ">= 1",
    "algorithm.critic.max_new_tokens": ">= 1",
}


def validate_dpo_critic(job: JobConfig, reward: Reward) -> None:
    check_ranges(job, RANGES)
    from judge_rl.prompts import get_prompt

    prompt = get_prompt(reward.prompt)
    if prompt.kind != "pairwise":
        raise ValueError(f"algorithm=dpo_critic trains a pairwise judge; reward={job.reward.name} judges one response "
                         f"at a time ({prompt.name})")


def critic_messages(prompt, item: JudgeItem, winner: str, strength: int | None) -> list[dict]:
    """The judge prompt followed by the verdict the critic must reach."""
    msgs = prompt.messages(item)
    verdict = prompt.verdict(winner, strength if strength is not None else 2)
    return [*msgs[:-1], {"role": "user", "content": msgs[-1]["content"] + CRITIC_INSTRUCTION.format(verdict=verdict)}]


def critic_examples(run: Run, limit: int) -> list[dict]:
    """SFT examples for the critic: each init pair (`sft.data`, else data.train) in both orders, its gold trace after
    its gold verdict."""
    try:
        return sft_examples(init_items(run), run.prompt, limit, messages=lambda shown: critic_messages(
            run.prompt, shown, shown.chosen_position, shown.pair.strength))
    except ValueError:
        raise ValueError("dpo_critic: the training data has no gold traces to train the critic on "
                         "(PreferencePair.traces)") from None


def complete(run: Run, model_dir: Path | None, conversations: list[list[dict]], max_new_tokens: int,
             temperature: float) -> list[str]:
    """One output per conversation from the causal LM at `model_dir` (greedy at temperature 0)."""
    return [g[0].text for g in sample(run, model_dir, conversations, max_new_tokens, temperature)]


def build_pairs(run: Run, judge_dir: Path | None, critic_dir: Path, items: list[JudgeItem], out: Path) -> list[dict]:
    """Steps 1-3 of an iteration: the preference pairs it trains on, saved with counts (reused when saved)."""
    a, prompt = run.job.algorithm, run.prompt
    pairs_file, counts_file = out / "pairs.jsonl", out / "counts.json"
    if counts_file.exists():
        return [r for r in read_jsonl(pairs_file) if r["kept"]]
    outputs = complete(run, judge_dir, [prompt.messages(x) for x in items], a.max_new_tokens, a.judge_temperature)
    judged = [prompt.parse(o) for o in outputs]
    right = [j.ok and j.winner == x.chosen_position for j, x in zip(judged, items)]
    # the critic writes the side the judge did not: the wrong verdict where it was right, the right one where not
    targets = [("b" if x.chosen_position == "a" else "a") if ok else x.chosen_position for x, ok in zip(items, right)]
    critic_out = complete(run, critic_dir,
                          [critic_messages(prompt, x, t, x.pair.strength) for x, t in zip(items, targets)],
                          a.critic.max_new_tokens, 0.0)
    records, reasons = [], Counter()
    for x, out_text, j, ok, target, c_text in zip(items, outputs, judged, right, targets, critic_out):
        c = prompt.parse(c_text)
        reached = c.ok and c.winner == target
        if not c.ok:
            reasons[c.error] += 1
        chosen, rejected = (out_text, c_text) if ok else (c_text, out_text)
        records.append({
            "item_id": x.item_id, "prompt": prompt.messages(x),
            "chosen": [{"role": "assistant", "content": chosen}], "rejected": [{"role": "assistant", "content": rejected}],
            "judge_right": ok, "judge_parse_error": j.error or "", "critic_wrote": "rejected" if ok else "chosen",
            "critic_target": target, "critic_parse_error": c.error or "", "critic_reached": reached,
            "kept": reached and chosen != rejected,
        })
    counts = {
        "judged": len(items), "judge_right": sum(right), "judge_unparsed": sum(not j.ok for j in judged),
        "critic_negatives_asked": sum(right), "critic_positives_asked": len(items) - sum(right),
        "critic_reached_verdict": sum(r["critic_reached"] for r in records),
        "kept": sum(r["kept"] for r in records), "critic_parse_failure_reasons": dict(reasons),
    }
    out.mkdir(parents=True, exist_ok=True)
    pairs_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    counts_file.write_text(json.dumps(counts, indent=2))
    return [r for r in records if r["kept"]]


def train_dpo(run: Run, policy_dir: Path | None, rows: list[dict], out: Path) -> tuple[Path, dict[str, float]]:
    """Step 4: DPO + SFT from `policy_dir` on `rows`; the model is saved to `out/model` (TRL checkpoints in
    `out/work` resume a crash)."""
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    job, a = run.job, run.job.algorithm
    target = out / "model"
    tokenizer = run.tokenizer
    tokenizer.padding_side = "right"
    model = load_model(job.model, job.cache_dir, run.device, checkpoint=policy_dir, seed=job.seed, train=True)
    work = out / "work"
    steps = steps_for(len(rows), a.batch_size, a.epochs)
    args = trl_args(DPOConfig, work, run.device, dtype=job.model.dtype, lr=a.lr, epochs=a.epochs,
                    batch_size=a.batch_size,
                    max_length=a.max_length, seed=job.seed, beta=a.beta, loss_type=["sigmoid", "sft"],
                    loss_weights=[1.0, a.sft_weight])
    data = Dataset.from_list([{"prompt": r["prompt"], "chosen": r["chosen"], "rejected": r["rejected"]} for r in rows])
    # the reference is the policy as the iteration starts (a second copy: TRL would reload it by name)
    reference = load_model(job.model, job.cache_dir, run.device, checkpoint=policy_dir, seed=job.seed)
    trainer = DPOTrainer(model=model, ref_model=reference, args=args, train_dataset=data, processing_class=tokenizer)
    try:
        summary = train(trainer, work, f"dpo {out.name}", steps)
    finally:
        tokenizer.padding_side = "left"
    metrics = {
        **{k: summary[k] for k in ("steps", "loss_first", "loss_last", "train_loss", "seconds", "seconds_per_step")},
        "pairs": float(len(rows)),
        "reward_accuracy_last": summary.get("last/rewards/accuracies", float("nan")),
        "reward_margin_last": summary.get("last/rewards/margins", float("nan")),
    }
    save_model(trainer.model, tokenizer, target)
    (out / "dpo_metrics.json").write_text(json.dumps(metrics, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return target, metrics


@register_recipe("dpo_critic", config=DPOCriticConfig, validate=validate_dpo_critic)
def dpo_critic(job: JobConfig, run_dir: Path, reward: Reward) -> dict[str, Any]:
    a = job.algorithm
    # setup, then the judge's thinking initialisation (cached and shared with online RL)
    run = setup(job, run_dir, reward)
    policy: Path | None = None
    if job.sft.enabled:
        policy = sft_init(run)
        if "eval_sft" in job.stages:
            evaluate(run, "sft", "sft init", policy)

    # the critic: SFT on the same gold traces, each after the verdict it reaches (cached)
    critic_dir, critic_metrics = run_sft(job, critic_examples(run, a.critic.num_examples or job.sft.num_examples),
                                         name="critic")
    run.results["training"]["critic"] = critic_metrics

    # rounds of judge -> critic -> DPO + SFT
    training: dict[str, Any] = {}
    n_items = len(run.train_items)
    for k in range(1, a.iterations + 1):
        out = run_dir / "dpo" / f"iter_{k}"
        if (out / "dpo_metrics.json").exists():
            policy = out / "model"
            training[f"iter_{k}"] = {**json.loads((out / "counts.json").read_text()),
                                     **json.loads((out / "dpo_metrics.json").read_text())}
            console.print(f"dpo iteration {k}: reused {policy}")
            continue
        per_round = a.pairs_per_iteration or online_pairs(job)
        start = ((k - 1) * per_round) % n_items
        items = [run.train_items[(start + i) % n_items] for i in range(min(per_round, n_items))]
        rows = build_pairs(run, policy, critic_dir, items, out)
        counts = json.loads((out / "counts.json").read_text())
        console.print(f"dpo iteration {k}: judge right on {counts['judge_right']}/{counts['judged']}, critic reached its "
                      f"verdict on {counts['critic_reached_verdict']}, {counts['kept']} pairs kept")
        if not rows:
            raise ValueError(f"dpo_critic iteration {k}: no pair kept (counts in {out / 'counts.json'}: {counts}); the "
                             "critic never wrote a trace that reaches the verdict it was given")
        policy, metrics = train_dpo(run, policy, rows, out)
        training[f"iter_{k}"] = {**counts, **metrics}
        run.results["training"]["dpo"] = training
        run.save()
        console.print(f"dpo iteration {k}: {int(metrics['steps'])} steps, loss {metrics['loss_first']:.3f} -> "
                      f"{metrics['loss_last']:.3f}")
    run.results["training"]["dpo"] = {**training, "pairs_kept": float(sum(t["kept"] for t in training.values()))}
    run.save()
    run.logger.summary({f"dpo/{it}/{k}": float(v) for it, t in training.items() for k, v in t.items()
                        if isinstance(v, (int, float))})

    # the judge it made, and what it added to its init, in both orders
    evaluate(run, "dpo", "dpo", policy)
    compare(run, "sft" if "sft" in run.held_out else "base", "dpo")
    return report(run, final="dpo")
