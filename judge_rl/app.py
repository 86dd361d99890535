"""The main job: config -> data -> prompts -> (eval base) -> SFT init -> (eval) -> online RL -> (eval) -> report.

`run(cfg)` is a plain function of a composed config that returns the run's metrics; the Hydra entry
point (`python -m judge_rl`) and the tests both call it. Every stage writes into the run directory as
it goes, and re-running with the same `run_dir` picks up where a crash left off: the SFT init is
cached, RL resumes from its last checkpoint, and evaluations skip items already judged.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

import torch
from omegaconf import DictConfig

from judge_rl.config import NEUTRAL_KEYS, JobConfig, to_job_config
from judge_rl.data import load_dataset_pairs
from judge_rl.data.loaders import is_missing_local_file
from judge_rl.data.pairs import JudgeItem, PreferencePair, balanced_positions, pointwise_items
from judge_rl.evaluation.app import load_benchmark_config
from judge_rl.evaluation.benchmarks import get_benchmark
from judge_rl.evaluation.engines import HFEngine
from judge_rl.evaluation.harness import ScoreWithheld, evaluate_benchmark, evaluate_pairs, read_records
from judge_rl.evaluation.metrics import consistent_by_pair, paired_bootstrap
from judge_rl.models.loading import load_model, load_tokenizer, resolve_device
from judge_rl.prompts import get_prompt
from judge_rl.reports.console import console
from judge_rl.reports.logging import MetricsLogger
from judge_rl.reports.plots import write_plots
from judge_rl.reports.schema import HEADLINE, entry_scalars, evaluation_entry, new_results, write_results
from judge_rl.reports.summary import print_summary, reward_curve
from judge_rl.rewards import build_reward, compute_score
from judge_rl.rollouts import encode_chat
from judge_rl.rundir import claim_run_dir
from judge_rl.updates import ENGINES
from judge_rl.updates import rl_loop  # noqa: F401  (registers the local engine)
from judge_rl.engines.verl.launch import dry_run  # importing it registers the verl engine
from judge_rl.updates.sft import run_sft, sft_examples


def load_split(job: JobConfig, split: str) -> list[PreferencePair]:
    spec = getattr(job.data, split)
    pairs = load_dataset_pairs(spec.loader, **spec.kwargs)
    skipped = getattr(pairs, "skipped", None)
    if skipped:
        console.print(f"[yellow]data.{split}: skipped {len(skipped)} malformed rows, e.g. {skipped[0]}[/yellow]")
    if not pairs:
        raise ValueError(f"data.{split} ({spec.loader}, {spec.kwargs}) gave no pairs")
    return list(pairs)


def judging_mode(prompt) -> str:
    """pairwise (both responses in one prompt) or pointwise (one response scored alone)."""
    return prompt.kind


def training_items(pairs: Sequence[PreferencePair], prompt, seed: int) -> list:
    if judging_mode(prompt) == "pointwise":
        return pointwise_items(pairs)
    return balanced_positions(pairs, seed)


def fit_to_context(pairs: Sequence[PreferencePair], tokenizer, messages_fn, max_len: int, split: str, mode: str):
    """Drop pairs whose longest judge prompt exceeds model.max_prompt_length, and say how many."""

    def longest(p: PreferencePair) -> int:
        items = [JudgeItem(p, "a")] if mode == "pairwise" else pointwise_items([p])
        return max(len(encode_chat(tokenizer, messages_fn(it))) for it in items)

    kept = [p for p in pairs if longest(p) <= max_len]
    if len(kept) < len(pairs):
        console.print(
            f"[yellow]data.{split}: {len(pairs) - len(kept)} of {len(pairs)} pairs exceed "
            f"model.max_prompt_length={max_len} tokens and are left out[/yellow]"
        )
    if not kept:
        raise ValueError(f"data.{split}: every pair exceeds model.max_prompt_length={max_len}")
    return kept


def run(cfg: DictConfig) -> dict[str, Any]:
    job = to_job_config(cfg)
    with claim_run_dir(Path(job.run_dir), asdict(job), resume=job.resume, neutral=NEUTRAL_KEYS, console=console) as run_dir:
        return run_stages(job, run_dir)


def run_stages(job: JobConfig, run_dir: Path) -> dict[str, Any]:
    """The stages of a validated config, in a claimed run directory."""
    t_start = time.perf_counter()
    if job.dry_run:
        return dry_run(job, run_dir)
    torch.manual_seed(job.seed)
    if job.cluster.threads:
        torch.set_num_threads(job.cluster.threads)

    reward = build_reward(job.reward.name, **job.reward.weights)
    prompt = get_prompt(reward.prompt)
    # published benchmarks judged at each eval stage; an unknown name fails here, before any model loads
    limit = {} if job.eval.benchmark_limit is None else {"limit": job.eval.benchmark_limit}
    benchmark_specs = [load_benchmark_config(name, **limit) for name in job.eval.benchmarks]
    # the default benchmark reads ../shared/data; a machine without that file still runs the main job
    for spec in [s for s in benchmark_specs if is_missing_local_file(s.path)]:
        console.print(f"[yellow]eval.benchmarks: {spec.name} skipped, no file at {spec.path}[/yellow]")
        benchmark_specs.remove(spec)
    score_fn = functools.partial(compute_score, reward_name=job.reward.name, **job.reward.weights)
    mode = judging_mode(prompt)
    tokenizer = load_tokenizer(job.model, job.cache_dir)
    max_len = job.model.max_prompt_length
    train_pairs = fit_to_context(load_split(job, "train"), tokenizer, prompt.messages, max_len, "train", mode)
    eval_pairs = load_split(job, "eval")
    if job.eval.limit is not None:
        eval_pairs = eval_pairs[: job.eval.limit]
    eval_pairs = fit_to_context(eval_pairs, tokenizer, prompt.messages, max_len, "eval", mode)
    train_items = training_items(train_pairs, prompt, job.seed)

    logger = MetricsLogger(run_dir, job.logger, asdict(job))
    device = resolve_device(job.cluster.device)
    results = new_results("main", run_dir)  # judge_rl/reports/schema.py; saved after each stage
    evals: dict[str, dict[str, float]] = {}
    eval_ids = {p.pair_id for p in eval_pairs}
    held_out_records: dict[str, list[dict]] = {}  # stage -> its judgments of the held-out pairs
    bench_evals: dict[str, dict[str, dict[str, float]]] = {}
    withheld: list[str] = []  # scores with too many unanswered requests: the run fails once results are saved

    def evaluate(stage: str, label: str, checkpoint: Path | None) -> None:
        model = load_model(job.model, job.cache_dir, device, checkpoint=checkpoint, seed=job.seed)
        engine = HFEngine(model, tokenizer, job.eval.batch_size, name=job.model.name)
        t = time.perf_counter()
        out = evaluate_pairs(
            engine,
            prompt,
            eval_pairs,
            run_dir / "eval" / stage / "judgments.jsonl",
            max_new_tokens=job.eval.max_new_tokens,
            chunk_size=2 * job.eval.batch_size,
            reward=reward,
            label=label,
            max_engine_failure_rate=job.eval.max_engine_failure_rate,
        )
        out["seconds"] = time.perf_counter() - t
        (run_dir / "eval" / stage / "summary.json").write_text(json.dumps(out, indent=2))
        evals[label] = out["overall"]
        records = read_records(run_dir / "eval" / stage / "judgments.jsonl").values()
        held_out_records[stage] = [r for r in records if r.get("pair_id") in eval_ids]
        entry = results["evaluations"].setdefault(stage, {"held_out": None, "benchmarks": {}})
        entry["held_out"] = evaluation_entry(out, held_out_records[stage])
        logger.summary({f"eval/{stage}/{k}": v for k, v in out["overall"].items()})
        m = out["overall"]
        if out["scoring"]["status"] == "withheld":
            withheld.append(f"eval {stage}: {out['scoring']['reason']}")
            headline = "no score (withheld)"
        else:
            headline = ", ".join(f"{k} {m[k]:.3f}" for k in HEADLINE[mode])
        console.print(
            f"eval {label}: {headline} ({out['judged_now']} judged, {out['reused']} reused, {out['seconds']:.0f}s)"
        )
        for spec in benchmark_specs:
            summary = evaluate_benchmark(
                get_benchmark(spec.kind), spec, engine, prompt, run_dir / "eval" / stage / "benchmarks" / spec.name,
                max_new_tokens=job.eval.max_new_tokens, chunk_size=2 * job.eval.batch_size, reward=reward,
                label=f"judging {spec.name} ({label})", max_engine_failure_rate=job.eval.max_engine_failure_rate,
            )
            if summary["scoring"]["status"] == "withheld":
                withheld.append(f"eval {stage} {spec.name}: {summary['scoring']['reason']}")
            bench_dir = run_dir / "eval" / stage / "benchmarks" / spec.name
            entry["benchmarks"][spec.name] = evaluation_entry(summary, read_records(bench_dir / "judgments.jsonl").values())
            logger.summary({f"eval/{stage}/{spec.name}/{k}": v for k, v in entry_scalars(entry["benchmarks"][spec.name]).items()})
            bench_evals.setdefault(spec.name, {})[label] = summary["harness"]["overall"]
        write_results(run_dir, results)
        del model, engine
        if device.type == "cuda":
            torch.cuda.empty_cache()  # the next stage (or sweep point) starts with the memory free

    def periodic_eval(model, step: int) -> dict[str, float]:
        """The live RL policy on the held-out pairs (trainer.eval_every), greedy, both orders; judgments
        saved per step so a resumed run reuses them (the weights, hence the request keys, differ per step)."""
        engine = HFEngine(model, tokenizer, job.eval.batch_size, name=job.model.name)
        out_dir = run_dir / "eval" / f"step_{step}"
        out = evaluate_pairs(
            engine,
            prompt,
            val_pairs,
            out_dir / "judgments.jsonl",
            max_new_tokens=job.eval.max_new_tokens,
            chunk_size=2 * job.eval.batch_size,
            reward=reward,
            label=f"rl step {step}",
            max_engine_failure_rate=job.eval.max_engine_failure_rate,
        )
        (out_dir / "summary.json").write_text(json.dumps(out, indent=2))
        if out["scoring"]["status"] == "withheld":
            console.print(f"[yellow]rl step {step}: held-out evaluation withheld: {out['scoring']['reason']}[/yellow]")
        return {f"val/{k}": float(v) for k, v in out["overall"].items()}

    val_pairs = eval_pairs if job.trainer.eval_subset is None else eval_pairs[: job.trainer.eval_subset]
    eval_fn = periodic_eval if job.trainer.eval_every > 0 else None
    if eval_fn is not None and "rl" in job.stages and job.cluster.engine != "local":
        console.print(f"[yellow]trainer.eval_every={job.trainer.eval_every}: the periodic held-out evaluation runs "
                      f"on the local engine only; cluster.engine={job.cluster.engine} ignores it[/yellow]")

    init_model: Path | None = None
    if "eval_base" in job.stages:
        evaluate("base", "base", None)
    if "sft" in job.stages and job.sft.enabled:
        examples = sft_examples(train_items, prompt, job.sft.num_examples)
        init_model, sft_metrics = run_sft(job, examples)
        results["training"]["sft"] = sft_metrics
        write_results(run_dir, results)
        logger.summary(sft_metrics)
        console.print(
            f"sft: {int(sft_metrics['sft/steps'])} steps, loss {sft_metrics['sft/loss_first']:.3f} -> "
            f"{sft_metrics['sft/loss_last']:.3f}, {sft_metrics['sft/seconds_per_step']:.1f} s/step"
            + (" (reused cached init)" if sft_metrics.get("sft/reused") else "")
        )
        if "eval_sft" in job.stages:
            evaluate("sft", "sft init", init_model)
    if "rl" in job.stages:
        engine = ENGINES.get(job.cluster.engine)
        from judge_rl.updates.rl_loop import latest_checkpoint

        found = latest_checkpoint(run_dir / "checkpoints")
        logger.drop_steps_after(found[0] if found else 0)
        group_fn = reward.combine if getattr(reward, "both_orders", False) else None
        rl = engine(job, init_model, train_items, prompt.messages, score_fn, logger.log, run_dir, group_fn=group_fn,
                    eval_fn=eval_fn)
        history = logger.history()
        results["training"]["rl"] = training = {"resumed_from": rl.resumed_from, "steps": len(history)}
        curve = reward_curve(history)
        if curve:
            training["reward_curve"] = curve
            training["rewards"] = [h.get("critic/score/mean") for h in sorted(history, key=lambda h: h["step"])]
            step_s = [h["timing_s/step"] for h in history if "timing_s/step" in h]
            training["seconds_per_step"] = sum(step_s) / len(step_s)
        write_results(run_dir, results)
        if "eval_rl" in job.stages:
            evaluate("rl", "rl", rl.model_dir)
    if "rl" in evals and ("sft init" in evals or "base" in evals):
        # the claim that RL helped, with its noise: paired bootstrap over the same held-out pairs
        baseline = "sft" if "sft init" in evals else "base"

        def per_pair(stage: str) -> dict[str, float]:
            return consistent_by_pair(r for r in held_out_records[stage] if not r.get("engine_error"))

        if mode == "pairwise":
            gain = paired_bootstrap(per_pair(baseline), per_pair("rl"))
            results["comparisons"][f"rl_minus_{baseline}"] = {"consistent_accuracy": gain}
            console.print(
                f"RL - {baseline} consistent accuracy: {gain['diff']:+.3f} "
                f"[95% CI {gain['low']:+.3f}, {gain['high']:+.3f}] over {int(gain['n'])} held-out pairs (paired bootstrap)"
            )
    plots: list[Path] = []
    if "rl" in job.stages:
        # learning curves from every logged step (resumed runs included), next to metrics.jsonl
        plots = write_plots(logger.history(), run_dir)
        if plots:
            results["plots"] = [str(p) for p in plots]
            logger.log_images(plots)
    results["wall_s"] = time.perf_counter() - t_start
    print_summary(evals, results["training"].get("rl", {}).get("reward_curve"), results["wall_s"], mode, bench_evals,
                  plots=plots)
    write_results(run_dir, results)
    logger.finish()
    if withheld:
        raise ScoreWithheld("; ".join(withheld))
    return results
