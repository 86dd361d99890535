"""The online RL loop of the local backend: steps, checkpoints, resume.

Step k draws its prompts from a seeded permutation of the training items and seeds sampling with
(seed, k), so a resumed run makes exactly the draws the uninterrupted run would have made. A
checkpoint (policy, critic, optimizers, KL controller, step) is written every `save_every` steps into
`checkpoints/global_step_<k>/`, and `latest_checkpointed_iteration.txt` (verl's file name) is
updated only after it is complete, so a crash mid-save falls back to the previous one.

With `trainer.eval_every=K` (and an `eval_fn` from the app), the live policy also judges the held-out
pairs every K steps and at the last; its `val/*` metrics join that step's line of metrics.jsonl. The
evaluation leaves no trace on training: the RNG states are forked around it and the policy's train/eval
mode is restored, so a run with it logs the same training metrics as a run without, and resumes exactly.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from judge_rl.data.pairs import JudgeItem
from judge_rl.models.loading import (load_model, load_tokenizer, load_value_model, mixed_precision, resolve_device,
                                     save_model)
from judge_rl import stopping
from judge_rl.reports.console import console, progress_bar
from judge_rl.reports.jsonl import read_jsonl
from judge_rl.reports.logging import metrics_row
from judge_rl.backends import BACKENDS, LaunchJob, Log, RLResult, RLTask
from judge_rl.backends.local.backend import LocalBackend
from judge_rl.rollouts import build_sampler, resolve_rollout_engine

LATEST = "latest_checkpointed_iteration.txt"
TRAINED_STATE = "judge_rl_trained.json"  # in rl_model/: the init and step count it was trained with
STEP_METRICS = "metrics.jsonl"  # in global_step_<k>/: the metrics row of every step 1..k



def checkpointed(model, trainer):
    """`trainer.gradient_checkpointing`: the model recomputes each layer in the backward instead of keeping its
    activations (transformers' non-reentrant checkpointing; generation, in eval mode, is unchanged)."""
    if trainer.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model

def step_items(items: Sequence[JudgeItem], step: int, per_step: int, seed: int) -> list[JudgeItem]:
    """The prompts of step `step` (1-based): consecutive slices of a per-epoch seeded permutation."""
    n = len(items)
    out = []
    for k in range((step - 1) * per_step, step * per_step):
        epoch, pos = divmod(k, n)
        perm = np.random.default_rng([seed, epoch]).permutation(n)
        out.append(items[perm[pos]])
    return out


def checkpoint_problem(path: Path) -> str | None:
    """What keeps `global_step_<k>/` from being resumed (None: intact): save_checkpoint writes its models, the trainer
    state and last trainer_state.json, so a crash or a full disk mid-write, or a folder removed, leaves one of them out."""
    if not path.is_dir():
        return "missing"
    needed = ["trainer_state.json", "trainer_state.pt", "model/config.json"]
    missing = [n for n in needed if not (path / n).is_file()]
    if not any((path / "model" / w).is_file() for w in ("model.safetensors", "model.safetensors.index.json")):
        missing.append("model weights")
    return f"no {', '.join(missing)}" if missing else None


def latest_checkpoint(ckpt_root: Path, notes: list[str] | None = None,
                      problem: Callable[[Path], str | None] = checkpoint_problem) -> tuple[int, Path] | None:  # fmt: skip
    """The newest checkpoint a run can resume from: the one `latest_checkpointed_iteration.txt` names, or where that
    one is missing or damaged, the newest intact `global_step_<k>/` (said in `notes`); None: nothing to resume.
    `problem(path)`: what keeps a checkpoint from being resumed (this backend's layout, or verl's)."""
    marker = ckpt_root / LATEST
    named = int(marker.read_text().strip()) if marker.exists() and marker.read_text().strip().isdigit() else None
    steps = sorted({int(p.name.rsplit("_", 1)[1]) for p in ckpt_root.glob("global_step_*") if p.name.rsplit("_", 1)[1].isdigit()}
                   | ({named} if named is not None else set()), reverse=True)  # fmt: skip
    for step in steps:
        path = ckpt_root / f"global_step_{step}"
        why = problem(path)
        if why is None:
            return step, path
        if notes is not None and (named is None or step <= named):
            notes.append(f"{path} is {why if why == 'missing' else 'damaged (' + why + ')'}")
    return None


def say_resume_notes(label: str, notes: list[str], found: tuple[int, Path] | None) -> None:
    """latest_checkpoint's `notes` on the console, each with what the run does about it (`label`: who resumes)."""
    for note in notes:
        console.print(f"[yellow]{label}: {note}; " + (f"resuming from the newest intact one, {found[1].name}" if found
                      else "no intact checkpoint is left: starting from step 0") + "[/yellow]", soft_wrap=True)


def checkpoint_metrics(path: Path) -> list[dict[str, Any]]:
    """The metrics rows a checkpoint saved (one per step it covers; none for a checkpoint written before they were)."""
    file = Path(path) / STEP_METRICS
    return read_jsonl(file) if file.exists() else []


def read_trained_state(final_dir: Path) -> dict[str, Any] | None:
    """What a finished `rl_model/` was trained from and for how many steps (None: no finished model)."""
    if not (final_dir / "config.json").exists():
        return None
    marker = final_dir / TRAINED_STATE
    return json.loads(marker.read_text()) if marker.exists() else {"init": "unknown", "total_steps": "unknown"}


def save_checkpoint(backend: LocalBackend, tokenizer, ckpt_root: Path, step: int, keep: int, init: str = "base",
                    rows: Sequence[dict[str, Any]] = ()) -> Path:  # fmt: skip
    """`global_step_<step>/`: policy, critic, optimizer and controller state, and `rows`, the metrics row of every
    step it covers (metrics.jsonl's lines, so a resume can rewrite one a crash tore)."""
    path = ckpt_root / f"global_step_{step}"
    path.mkdir(parents=True, exist_ok=True)
    save_model(backend.policy, tokenizer, path / "model")
    if backend.critic is not None:
        save_model(backend.critic, tokenizer, path / "critic")
    torch.save(backend.state_dict(), path / "trainer_state.pt")
    (path / STEP_METRICS).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step, "init": init}))
    tmp = ckpt_root / (LATEST + ".tmp")
    tmp.write_text(str(step))
    tmp.replace(ckpt_root / LATEST)
    steps = sorted(int(p.name.rsplit("_", 1)[1]) for p in ckpt_root.glob("global_step_*"))
    for old in steps[:-keep] if keep > 0 else []:
        shutil.rmtree(ckpt_root / f"global_step_{old}", ignore_errors=True)
    return path


def eval_due(step: int, total: int, every: int) -> bool:
    """Whether the periodic held-out evaluation runs after step `step`: every `every` steps and at the last."""
    return every > 0 and (step % every == 0 or step == total)


def evaluate_live(eval_fn: Callable[[Any, int], dict[str, float]], model, step: int) -> dict[str, float]:
    """`eval_fn(model, step)` on the policy in the middle of training, leaving no trace on the run: every
    RNG it could draw from (torch's CPU and the model's CUDA device, numpy's and Python's global ones) is
    restored afterwards, so later sampling makes the draws it would have made without the evaluation, and
    the model goes back to the train/eval mode it was in."""
    device = next(model.parameters()).device
    was_training = model.training
    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []), torch.no_grad():
            model.eval()
            return dict(eval_fn(model, step))
    finally:
        model.train(was_training)
        np.random.set_state(np_state)
        random.setstate(py_state)


@BACKENDS.register("local")
def train_local(job: LaunchJob, run_dir: Path, task: RLTask, log: Log) -> RLResult:
    """RL on the local backend: `run_local_loop` with the task's step object (`task.make_step`), its live
    held-out evaluation (`task.eval_fn` where `task.eval_at` says) and its console line."""
    if task.make_step is None:
        raise ValueError(f"reward={task.reward_name}: this task has no local step (it was built for a verl launch)")
    return run_local_loop(job, task.init_model, task.items, task.make_step, log, run_dir, eval_fn=task.eval_fn,
                          eval_at=task.eval_at, describe=task.describe or judge_step_line,
                          forecast=task.forecast or True)  # fmt: skip


def judge_step_line(step: int, total: int, metrics: dict[str, float]) -> str:
    """The console line of a judge's RL step."""
    val_acc = metrics.get("val/accuracy", metrics.get("val/score_accuracy"))  # pairwise / pointwise
    val = f"  val acc {val_acc:.2f}" if isinstance(val_acc, float) else ""
    # no actor update during the critic's warm-up (PPO): say so instead of a pg_loss of nan
    pg = f"pg_loss {metrics['actor/pg_loss']:+.4f}" if "actor/pg_loss" in metrics else "critic warm-up"
    return (
        f"rl step {step}/{total}: score {metrics['critic/score/mean']:.3f}  "
        f"acc {metrics.get('reward/correct', float('nan')):.2f}  "
        f"parse-fail {metrics['reward/parse_failure_rate']:.2f}  "
        f"{pg}  {metrics['timing_s/step']:.1f}s{val}"
    )


def run_local_loop(
    job: LaunchJob,
    init_model: Path | None,
    items: Sequence[Any],
    make_backend: Callable[[Any, Any, Any, Any], LocalBackend],
    log: Callable[[dict[str, float], int], None],
    run_dir: Path,
    eval_fn: Callable[[Any, int], dict[str, float]] | None = None,
    eval_at: Callable[[int, int], bool] | None = None,
    describe: Callable[[int, int, dict[str, float]], str] = judge_step_line,
    forecast: bool | Callable[[int], list[tuple[str, float]]] = True,
) -> RLResult:
    """The local backend's loop, for any backend `make_backend(policy, reference, tokenizer, critic)` builds
    (a judge's LocalBackend, the policy job's PolicyBackend): load the policy (and reference, critic) from
    `init_model` or the last checkpoint, run `backend.step(items of the step)` to `trainer.total_steps`,
    evaluate the live policy where `eval_at(step, total)` says, log, checkpoint, save `rl_model/`; after the first
    step, say how long the rest will take (`forecast`: the work after the steps, reports/console.progress_bar)."""
    final_dir = run_dir / "rl_model"
    ckpt_root = run_dir / "checkpoints"
    # what this training starts from; a checkpoint or final model made from another init is never continued
    origin = {"init": Path(init_model).name if init_model is not None else "base", "total_steps": job.trainer.total_steps}
    finished = read_trained_state(final_dir)
    if finished is not None:
        if finished == origin:
            console.print(f"[dim]rl: finished model found in {final_dir}, skipping training[/dim]")
            return RLResult(final_dir, resumed_from=job.trainer.total_steps)  # nothing left to train
        raise ValueError(f"{final_dir} was trained from {finished}, this run asks for {origin}: "
                         "use another run_dir, or resume=false to start afresh")
    if job.cluster.threads:
        torch.set_num_threads(job.cluster.threads)
    device = resolve_device(job.cluster.device)
    tokenizer = load_tokenizer(job.model, job.cache_dir)
    start = 0
    notes: list[str] = []
    found = latest_checkpoint(ckpt_root, notes)
    say_resume_notes("rl", notes, found)  # a newest checkpoint lost or torn: resume from the newest intact one
    policy_source = init_model
    if found:
        start, path = found
        saved_init = json.loads((path / "trainer_state.json").read_text()).get("init", origin["init"])
        if saved_init != origin["init"]:
            raise ValueError(f"{path} continues RL from {saved_init}, this run starts from {origin['init']} "
                             "(was the sft stage dropped or changed?): use another run_dir, or resume=false")
        policy_source = path / "model"
        console.print(f"[yellow]rl: resuming from {path} (step {start})[/yellow]")
    # the trained models hold float32 weights and compute in model.dtype (mixed precision); the reference only answers
    policy = mixed_precision(checkpointed(load_model(job.model, job.cache_dir, device, checkpoint=policy_source,
                                                     seed=job.seed, train=True), job.trainer), job.model.dtype, device)
    needs_ref = job.algorithm.use_kl_loss or job.algorithm.use_kl_in_reward
    reference = load_model(job.model, job.cache_dir, device, checkpoint=init_model, seed=job.seed) if needs_ref else None
    critic = None
    if job.algorithm.critic.enabled:
        critic_source = found[1] / "critic" if found else init_model
        critic = mixed_precision(checkpointed(load_value_model(job.model, job.cache_dir, device, checkpoint=critic_source,
                                                               seed=job.seed, train=True), job.trainer),
                                 job.model.dtype, device)
    backend = make_backend(policy, reference, tokenizer, critic)
    engine = resolve_rollout_engine(job.trainer.rollout_engine, device.type, job.model.source)
    if engine != backend.sampler.name:
        t = time.perf_counter()
        backend.use_sampler(build_sampler(engine, policy, tokenizer))
        console.print(f"[dim]rl: rollouts sampled by {engine} (trainer.rollout_engine={job.trainer.rollout_engine}), "
                      f"ready in {time.perf_counter() - t:.1f}s[/dim]")  # fmt: skip
    try:
        return _train(job, backend, tokenizer, items, log, run_dir, found, origin, eval_fn, eval_at, describe, forecast)
    finally:
        backend.close()


def _train(job: LaunchJob, backend: LocalBackend, tokenizer, items, log, run_dir: Path, found, origin, eval_fn, eval_at,
           describe, forecast) -> RLResult:  # fmt: skip
    """The steps of `run_local_loop`, from the checkpoint `found` (or the start) to `rl_model/`."""
    final_dir = run_dir / "rl_model"
    ckpt_root = run_dir / "checkpoints"
    device = backend.device
    start = found[0] if found else 0
    if found:
        backend.load_state_dict(torch.load(found[1] / "trainer_state.pt", map_location=device))
        backend.global_step = start

    result = RLResult(final_dir, resumed_from=start)
    total = job.trainer.total_steps
    rows = checkpoint_metrics(found[1]) if found else []  # every step's metrics row so far, saved with each checkpoint
    with progress_bar("rl", total, forecast=forecast) as advance:
        if start:
            advance(start, done_before=True)
        for step in range(start + 1, total + 1):
            # a SIGTERM (judge_rl/stopping.py) lets the step finish, be logged and checkpointed, then stops the run
            with stopping.deferred():
                torch.manual_seed(job.seed * 1_000_003 + step)
                metrics = backend.step(step_items(items, step, job.trainer.prompts_per_step, job.seed))
                metrics["training/global_step"] = float(step)
                if eval_fn is not None and eval_at is not None and eval_at(step, total):
                    # before the step is logged and checkpointed: a crash here redoes the step, and the
                    # redone policy (same draws, same weights) finds its saved judgments
                    t = time.perf_counter()
                    metrics.update(evaluate_live(eval_fn, backend.policy, step))
                    metrics["timing_s/testing"] = time.perf_counter() - t  # verl's name for validation time
                result.history.append(metrics)
                log(metrics, step)
                rows.append(metrics_row(metrics, step))
                console.print(describe(step, total, metrics))
                if step % job.trainer.save_every == 0 or step == total or stopping.requested():
                    save_checkpoint(backend, tokenizer, ckpt_root, step, job.trainer.keep_checkpoints, origin["init"],
                                    rows=rows)  # fmt: skip
                    if stopping.requested():
                        console.print(f"[yellow]rl: stopped by {stopping.signal_name()} after step {step}, "
                                      "checkpointed; a re-run resumes[/yellow]")  # fmt: skip
                advance(1)
    with stopping.deferred():  # the final model and its marker, whole: a half-written pair would block the resume
        save_model(backend.policy, tokenizer, final_dir)
        (final_dir / TRAINED_STATE).write_text(json.dumps(origin))
    return result
