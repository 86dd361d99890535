"""What judge_rl's TRL trainers share (SFT: judge_rl/updates/sft.py, DPO: recipes/dpo_critic.py, reward
modelling: recipes/bt.py): the same arguments (cosine schedule, a log line per step, a checkpoint every 10 steps
and only the last kept, no reporting integrations, mixed precision when `model.dtype` asks for it), a progress bar
driven by the training loop (step, loss, rate; TRL's raw per-step dicts are not printed), a clean stop on SIGTERM,
resume from the trainer's own last checkpoint after a crash, and one summary of the run."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback

from judge_rl import stopping
from judge_rl.reports.console import progress_bar


def steps_for(n_rows: int, batch_size: int, epochs: int) -> int:
    """Optimizer steps of `epochs` passes over `n_rows` in batches of `batch_size` (the last one partial)."""
    return epochs * -(-n_rows // batch_size)


def trl_args(config_cls: type, work: Path, device: torch.device, *, dtype: str, lr: float, epochs: int,
             batch_size: int, max_length: int, seed: int, warmup_steps: int = 0, **fields: Any):
    """A TRL config (SFTConfig, DPOConfig, RewardConfig) with judge_rl's shared settings and `fields` on top.
    `dtype` is `model.dtype`: bfloat16 or float16 train in mixed precision (the model loaded with float32 weights,
    `load_model(train=True)`; accelerate autocasts its forward, and scales float16 losses)."""
    return config_cls(
        output_dir=str(work),
        num_train_epochs=epochs,
        learning_rate=lr,
        per_device_train_batch_size=batch_size,
        warmup_steps=warmup_steps,
        lr_scheduler_type="cosine",
        max_length=max_length,
        logging_steps=1,
        save_strategy="steps",
        save_steps=10,
        save_total_limit=1,
        report_to="none",
        seed=seed,
        use_cpu=device.type == "cpu",
        bf16=dtype == "bfloat16",  # float32 by default: bf16 autocast is ~7x slower on CPU
        fp16=dtype == "float16",
        dataloader_num_workers=0,
        disable_tqdm=True,
        **fields,
    )


class _Progress(TrainerCallback):
    """Drives the progress bar from TRL's training loop, the step's loss beside it (TRL's own per-step dicts are not
    printed: they go to the run's summary and the trainer's log history), and stops training at the end of the step
    a SIGTERM arrived in, its checkpoint saved (judge_rl/stopping.py)."""

    def __init__(self, advance):
        self.advance = advance
        self.shown = None  # the global step the bar has reached

    def on_train_begin(self, args, state, control, **kwargs):
        self.shown = state.global_step  # a resumed run starts past 0
        if state.global_step:
            self.advance(state.global_step, done_before=True)

    def on_step_end(self, args, state, control, **kwargs):
        if stopping.requested():
            control.should_save = True
            control.should_training_stop = True

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and isinstance(logs.get("loss"), (int, float)) and state.global_step > (self.shown or 0):
            self.advance(state.global_step - (self.shown or 0), f"loss {float(logs['loss']):.4f}")
            self.shown = state.global_step


def train(trainer, work: Path, name: str, total_steps: int) -> dict[str, float]:
    """`trainer.train()` under a progress bar, resumed from `work/checkpoint-*` when a crashed run left one;
    returns the run's summary: steps, first and last logged loss, mean train loss, seconds (total and per step)
    and the last logged value of every other metric the trainer reports (e.g. DPO's rewards/accuracies)."""
    t = time.perf_counter()
    trainer.remove_callback(PrinterCallback)  # its raw dicts, one a step: the bar says it, the summary keeps it
    with progress_bar(name, total_steps, lines=8, forecast=True) as advance, stopping.deferred():
        trainer.add_callback(_Progress(advance))
        result = trainer.train(resume_from_checkpoint=True if any(work.glob("checkpoint-*")) else None)
    elapsed = time.perf_counter() - t
    logs = [h for h in trainer.state.log_history if "loss" in h]
    steps = max(1, trainer.state.global_step)
    summary = {
        "steps": float(steps),
        "loss_first": float(logs[0]["loss"]) if logs else math.nan,
        "loss_last": float(logs[-1]["loss"]) if logs else math.nan,
        "train_loss": float(result.training_loss),
        "seconds": elapsed,
        "seconds_per_step": elapsed / steps,
    }
    for key, value in (logs[-1] if logs else {}).items():
        if key not in ("loss", "epoch", "step") and isinstance(value, (int, float)):
            summary[f"last/{key}"] = float(value)
    return summary
