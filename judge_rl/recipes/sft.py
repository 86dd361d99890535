"""SFT baselines of Think-J Table 3: a judge fine-tuned on judgments, with or without thinking.

    setup -> [SFT init (sampler=init)] -> examples (gold verdicts | rejection-sampled traces) -> SFT
          -> evaluate -> [minus the init] -> report

- `sft_direct` ("SFT w/o CoT"): SFT on the verdict line alone (`thinking: false`, the reward's `_direct`
  prompt), from the gold labels of the training pairs.
- `sft_cot` ("SFT w/ CoT"): rejection sampling. A judge samples `rejection.samples` judgments of each of the
  first `rejection.pairs` training pairs in both orders; the distinct ones whose verdict is right become the
  SFT set. `rejection.sampler` picks that judge: `base`, the model as configured, trained from itself (Think-J's
  setting, for instruct models that already write the format); `init`, the thinking initialisation (SFT on the
  gold traces, Think-J 3.1), fine-tuned on its own right judgments (one round of rejection-sampling
  fine-tuning from the same init GRPO starts from). The untrained SmolLM2-135M never writes the format, so
  on the embedded default only `init` has samples to keep.

Samples are saved with their verdicts under `rejection/` (a resumed run reuses them); the counts (sampled,
parsed, right, kept) go to results.json.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from judge_rl.config import JobConfig, check_ranges
from judge_rl.recipes import register_recipe
from judge_rl.recipes.stages import (Run, compare, evaluate, online_pairs, report, sample, setup, sft_init,
                                     validate_judge_prompt)
from judge_rl.reports.console import console
from judge_rl.reports.jsonl import read_jsonl
from judge_rl.rewards import Reward
from judge_rl.updates.sft import run_sft, sft_examples


@dataclass
class RejectionConfig:
    """Rejection sampling for `sft_cot`."""

    sampler: str = "init"  # init: the gold-trace SFT init samples and is fine-tuned; base: the model as configured
    pairs: Optional[int] = None  # training pairs sampled, each in both orders; null: as many as online RL judges
    samples: int = 4  # judgments sampled per pair and order
    temperature: float = 1.0
    max_new_tokens: int = 80


@dataclass
class SFTMethodConfig:
    """`algorithm=sft_direct` / `sft_cot`: SFT on judgments (optimisation: the `sft` group)."""

    name: str = "sft_cot"
    recipe: str = "sft"  # judge_rl/recipes/sft.py
    thinking: bool = True  # false: verdict-only outputs and prompt (the reward's `<prompt>_direct`)
    traces: str = "rejection"  # gold: the training pairs' gold outputs; rejection: sampled, right judgments
    rejection: RejectionConfig = field(default_factory=RejectionConfig)


RANGES = {
    "algorithm.rejection.pairs": ">= 1",
    "algorithm.rejection.samples": ">= 1",
    "algorithm.rejection.temperature": "> 0",
    "algorithm.rejection.max_new_tokens": ">= 1",
}


def validate_sft_method(job: JobConfig, reward: Reward) -> None:
    a = job.algorithm
    validate_judge_prompt(job, reward)
    check_ranges(job, RANGES)
    if a.traces not in ("gold", "rejection"):
        raise ValueError(f"algorithm.traces={a.traces!r}: expected gold or rejection")
    if a.rejection.sampler not in ("init", "base"):
        raise ValueError(f"algorithm.rejection.sampler={a.rejection.sampler!r}: expected init or base")
    if a.traces == "rejection" and a.rejection.sampler == "init" and not job.sft.enabled:
        raise ValueError("algorithm.rejection.sampler=init samples from the SFT init, but sft.enabled=false")


def rejection_examples(run: Run, sampler_dir: Path | None) -> list[dict]:
    """Sample judgments from the judge at `sampler_dir` (None: the configured model) and keep the distinct
    right ones as SFT examples (at most `sft.num_examples`); samples and counts are saved under rejection/."""
    job, cfg = run.job, run.job.algorithm.rejection
    out = run.run_dir / "rejection"
    samples_file, counts_file = out / "samples.jsonl", out / "counts.json"
    shown = [x for it in run.train_items[: cfg.pairs or online_pairs(job)] for x in (it, it.swapped())]
    if counts_file.exists():  # a resumed run keeps the samples it drew
        records = list(read_jsonl(samples_file))
        counts = json.loads(counts_file.read_text())
        console.print(f"rejection sampling: reused {len(records)} saved samples")
    else:
        gens = sample(run, sampler_dir, [run.prompt.messages(x) for x in shown], cfg.max_new_tokens, cfg.temperature,
                      n=cfg.samples)
        records, reasons, kept = [], Counter(), 0
        for index, (x, samples) in enumerate(zip(shown, gens)):
            seen: set[str] = set()
            for g in samples:
                j = run.prompt.parse(g.text)
                right = j.ok and j.winner == x.chosen_position
                keep = right and g.finished and g.text not in seen and kept < job.sft.num_examples
                seen.add(g.text)
                kept += keep
                if not j.ok:
                    reasons[j.error] += 1
                records.append({"index": index, "item_id": x.item_id, "output": g.text, "parse_error": j.error or "",
                                "right": right, "kept": keep})
        counts = {"sampled": len(records), "parsed": sum(not r["parse_error"] for r in records),
                  "right": sum(r["right"] for r in records), "kept": kept, "parse_failure_reasons": dict(reasons)}
        out.mkdir(parents=True, exist_ok=True)
        samples_file.write_text("".join(json.dumps(r) + "\n" for r in records))
        counts_file.write_text(json.dumps(counts, indent=2))
    run.results["training"]["rejection"] = counts
    run.save()
    console.print(f"rejection sampling: {counts['sampled']} sampled, {counts['parsed']} parsed, {counts['right']} right, "
                  f"{counts['kept']} kept")
    examples = [{"prompt": run.prompt.messages(shown[r["index"]]), "completion": [{"role": "assistant", "content": r["output"]}]}
                for r in records if r["kept"]]
    if not examples:
        who = "the SFT init" if sampler_dir is not None else f"{job.model.name} as configured"
        hint = ("train a stronger init (sft.*)" if sampler_dir is not None
                else "use algorithm.rejection.sampler=init (the gold-trace SFT init samples)")
        raise ValueError(
            f"sft_cot: none of {counts['sampled']} judgments sampled by {who} was right (parse failures: "
            f"{counts['parse_failure_reasons']}, saved in {samples_file}); nothing to keep: {hint}"
        )
    return examples


@register_recipe("sft", config=SFTMethodConfig, validate=validate_sft_method)
def sft_method(job: JobConfig, run_dir: Path, reward: Reward) -> dict[str, Any]:
    a = job.algorithm
    # setup: data, prompt and benchmarks are checked before any model loads
    run = setup(job, run_dir, reward)

    # the training set: gold verdicts, or right judgments sampled from the base model or the SFT init
    start: Path | None = None
    if a.traces == "gold":
        examples = sft_examples(run.train_items, run.prompt, job.sft.num_examples)
    else:
        if a.rejection.sampler == "init":
            start = sft_init(run)
            if "eval_sft" in job.stages:
                evaluate(run, "sft", "sft init", start)
        examples = rejection_examples(run, start)

    # SFT (cached like the init: the same model, examples and settings reuse it)
    model_dir, metrics = run_sft(job, examples, init=start, name=a.name)
    run.results["training"][a.name] = metrics
    run.save()
    run.logger.summary({f"{a.name}/{k.split('/', 1)[1]}": v for k, v in metrics.items()})
    console.print(f"{a.name}: {int(metrics['sft/steps'])} SFT steps on {len(examples)} examples, loss "
                  f"{metrics['sft/loss_first']:.3f} -> {metrics['sft/loss_last']:.3f}"
                  + (" (reused cached model)" if metrics.get("sft/reused") else ""))

    # the judge it made, and (from an init) what the fine-tuning added
    evaluate(run, a.name, a.name, model_dir)
    compare(run, "sft", a.name)
    return report(run, final=a.name)
