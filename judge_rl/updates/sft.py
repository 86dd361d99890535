"""Thinking initialisation: SFT on gold judgment traces before RL (Think-J, section 3.1).

An untrained small model never writes the verdict format, so every GRPO sample would score the same
and the advantages would all be zero. A short SFT on traces teaches the format (and a first way of
judging) so that RL has reward differences to learn from.

Uses TRL's SFTTrainer on prompt-completion conversations: the prompt is the judge prompt, the
completion the trace, and TRL puts the loss on the completion (the assistant turn) only. The result
is cached under `cache_dir/sft/<key>`, the key hashing everything that shapes it, so later runs with
the same model, data and SFT settings reuse it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

from judge_rl.config import JobConfig
from judge_rl.data.pairs import JudgeItem, PointwiseItem
from judge_rl.prompts.strength import StrengthPrompt
from judge_rl.models.loading import load_model, load_tokenizer, resolve_device, save_model
from judge_rl.updates.trl_run import steps_for, train, trl_args

THINKING = re.compile(r"<think>(.*?)</think>", re.DOTALL)


def pointwise_trace(item: PointwiseItem, prompt) -> str | None:
    """A gold pointwise judgment for data whose pairs know the right answer (the synthetic generator's
    `meta["answer"]`): check the response against it, then the item's label on the 0-4 scale."""
    answer = item.pair.meta.get("answer")
    if answer is None:
        return None
    verdict = "states it, so it is correct" if item.which == "chosen" else "does not, so it is wrong"
    thinking = f"The correct answer is {answer}. The response {verdict}."
    score = item.label if item.scale > 1 else 4 * item.label
    return prompt.output(thinking, score)


def trace_for_prompt(item: JudgeItem | PointwiseItem, prompt) -> str | None:
    """The item's gold trace as the active prompt wants it: its thinking, then that prompt's verdict line.

    Traces are stored with the strength verdict; a binary judge must learn its own verdict line, so
    the thinking is kept and the verdict re-rendered from the pair's labels (a pair without a strength label keeps
    its trace's own strength: the label traces of real pairs, judge_rl/data/real.py).
    """
    if isinstance(item, PointwiseItem):
        return pointwise_trace(item, prompt)
    if hasattr(prompt, "direct_instruction"):  # a verdict-only prompt: the labels are enough, no trace needed
        if item.pair.strength is None and prompt.name == "strength_direct":
            return None
        return prompt.output(None, item.chosen_position, item.pair.strength)
    trace = item.trace
    if not trace:
        return None
    match = THINKING.search(trace)
    if match is None:
        raise ValueError(f"pair {item.pair.pair_id}: its trace has no <think>...</think> block")
    strength = item.pair.strength if item.pair.strength is not None else StrengthPrompt().parse(trace).strength
    out = prompt.output(match.group(1), item.chosen_position, strength)
    judgment = prompt.parse(out)
    if not (judgment.ok and judgment.winner == item.chosen_position):  # a trace that contradicts its label
        raise ValueError(f"pair {item.pair.pair_id}: its trace does not parse as a right verdict ({judgment.error})")
    return out


def sft_examples(items: Sequence[JudgeItem], prompt, limit: int, messages=None) -> list[dict]:
    """Up to `limit` prompt-completion examples: each pair with a trace in both orders. `messages(item)` renders
    each prompt (default: the judge prompt's; dpo_critic's critic adds the verdict to reach).

    Both orders of a pair have the same responses and opposite verdicts, so the position of a
    response carries no signal: a judge initialised on them cannot fit its traces by always
    naming (a), the failure a one-order SFT showed on the embedded model.
    """
    messages = messages or prompt.messages
    examples = []
    for it in items:
        for shown in (it, it.swapped()) if isinstance(it, JudgeItem) else (it,):
            trace = trace_for_prompt(shown, prompt)
            if trace is not None and len(examples) < limit:
                examples.append({"prompt": messages(shown), "completion": [{"role": "assistant", "content": trace}]})
        if len(examples) >= limit:
            break
    if not examples:
        raise ValueError(
            "sft: the training data has no judgment traces (PreferencePair.traces); use data whose loader writes "
            "them (data=synthetic) or drop the sft stage (stages=[eval_base,rl,eval_rl])"
        )
    return examples


def sft_cache_key(job: JobConfig, examples: list[dict], init: Path | None = None) -> str:
    extra = {} if init is None else {"init": str(Path(init).resolve())}
    if job.model.dtype != "float32":  # bf16/fp16 inits trained before mixed precision held bf16 weights: not reused
        extra["precision"] = "mixed"
    payload = json.dumps(
        {"model": asdict(job.model), "sft": asdict(job.sft), "seed": job.seed, "examples": examples, **extra}, sort_keys=True
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def run_sft(job: JobConfig, examples: list[dict], output_root: Path | None = None, init: Path | None = None,
            name: str | None = None) -> tuple[Path, dict]:
    """Train (or reuse) a judge by SFT on `examples` (with `job.sft`'s optimisation), from `init` (a model
    directory) or the configured model; returns its model directory and metrics. `name` labels the progress bar."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    key = sft_cache_key(job, examples, init)
    root = output_root or Path(job.cache_dir).expanduser() / "sft"
    target = root / f"{job.model.name}-{key}"
    metrics_file = target / "sft_metrics.json"
    if metrics_file.exists():
        return target, {**json.loads(metrics_file.read_text()), "sft/reused": 1.0}

    device = resolve_device(job.cluster.device)
    tokenizer = load_tokenizer(job.model, job.cache_dir)
    tokenizer.padding_side = "right"
    model = load_model(job.model, job.cache_dir, device, checkpoint=init, seed=job.seed, train=True)
    work = root / f".{target.name}-work"
    steps = steps_for(len(examples), job.sft.batch_size, job.sft.epochs)
    args = trl_args(SFTConfig, work, device, dtype=job.model.dtype, lr=job.sft.lr, epochs=job.sft.epochs,
                    batch_size=job.sft.batch_size,
                    max_length=job.sft.max_length, seed=job.seed, warmup_steps=round(job.sft.warmup_ratio * steps),
                    completion_only_loss=True)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(examples), processing_class=tokenizer)
    run = train(trainer, work, name or "sft", steps)  # a crashed SFT resumes from TRL's last checkpoint
    metrics = {
        "sft/steps": run["steps"],
        "sft/examples": float(len(examples)),
        "sft/loss_first": run["loss_first"],
        "sft/loss_last": run["loss_last"],
        "sft/train_loss": run["train_loss"],
        "sft/seconds": run["seconds"],
        "sft/seconds_per_step": run["seconds_per_step"],
    }
    tokenizer.padding_side = "left"
    save_model(trainer.model, tokenizer, target)
    metrics_file.write_text(json.dumps(metrics, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return target, metrics
