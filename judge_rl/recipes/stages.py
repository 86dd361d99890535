"""Stages that several training recipes share: setup, the SFT init, judging held-out pairs and benchmarks,
the RL-minus-baseline comparison, and the closing report.

A recipe (judge_rl/recipes/<method>.py) calls these top to bottom. They share one `Run`: the validated
job, its run directory, the data and prompt, the logger and the results document (`results.json`,
judge_rl/reports/schema.py), which each stage fills and saves as it finishes, so a crash loses nothing
that finished before it.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from judge_rl.config import JobConfig
from judge_rl.data import load_dataset_pairs
from judge_rl.data.loaders import is_missing_local_file
from judge_rl.data.pairs import JudgeItem, PreferencePair, balanced_positions, pointwise_items
from judge_rl.config.paths import load_benchmark_config
from judge_rl.evaluation.benchmarks import get_benchmark
from judge_rl.evaluation.harness import ScoreWithheld, evaluate_benchmark, evaluate_pairs, read_records
from judge_rl.evaluation.metrics import consistent_by_pair, paired_bootstrap
from judge_rl.models.loading import load_model, load_tokenizer, resolve_device
from judge_rl.models.shape import model_record
from judge_rl.prompts import get_prompt
from judge_rl.prompts.scalar import SignRule
from judge_rl.reports.console import console
from judge_rl.reports.logging import MetricsLogger
from judge_rl.reports.plots import Anchor, write_plots
from judge_rl.reports.schema import HEADLINE, entry_scalars, evaluation_entry, new_results, write_results
from judge_rl.reports.summary import print_summary
from judge_rl.rewards import Reward, compute_score
from judge_rl.rollouts import encode_chat
from judge_rl.rollouts.generation import generate
from judge_rl.rundir import run_wall_s
from judge_rl.config.schema import ServerConfig
from judge_rl.servers import HFServer, VLLMServer
from judge_rl.rollouts.vllm_engine import auto_server
from judge_rl.updates.sft import run_sft, sft_examples

# ------------------------------------------------------------------ data


def load_split(job: JobConfig, split: str, counts: dict[str, dict] | None = None) -> list[PreferencePair]:
    """`data.<split>` loaded; malformed rows are skipped and counted, an empty split fails with its name."""
    return load_spec(getattr(job.data, split), f"data.{split}", counts)


def load_spec(spec, key: str, counts: dict[str, dict] | None = None) -> list[PreferencePair]:
    """The pairs of a DatasetSpec (`key` names it in messages). `counts[key]` gets the pairs loaded and the malformed
    rows skipped, with the first reasons (results.json's `data.splits`)."""
    pairs = load_dataset_pairs(spec.loader, **spec.kwargs)
    skipped = list(getattr(pairs, "skipped", None) or [])
    if skipped:
        console.print(f"[yellow]{key}: skipped {len(skipped)} malformed rows, e.g. {skipped[0]}[/yellow]")
    if not pairs:
        raise ValueError(f"{key} ({spec.loader}, {spec.kwargs}) gave no pairs")
    if counts is not None:
        counts[key] = {"pairs_loaded": len(pairs), "skipped_rows": len(skipped), "skipped": [str(x) for x in skipped[:20]]}
        if getattr(pairs, "per_source", None):
            counts[key]["per_set"] = dict(pairs.per_source)
    return list(pairs)


def init_items(run: "Run") -> list:
    """The items whose gold traces train the thinking initialisation (and dpo_critic's critic): `sft.data`
    (a curated set, e.g. LIMJ-style from `python -m judge_rl.curate`) when set, else the RL training items."""
    job = run.job
    if job.sft.data is None:
        return run.train_items
    counts = run.results.setdefault("data", {}).setdefault("splits", {})
    pairs = fit_to_context(load_spec(job.sft.data, "sft.data", counts), run.tokenizer, run.prompt.messages,
                           job.model.max_prompt_length, "sft.data", run.mode, counts)
    run.save()
    return training_items(pairs, run.prompt, job.seed)


def judge_prompt_name(job: JobConfig, reward) -> str:
    """The prompt the judge is asked with: the reward's (what RL pays for), its verdict-only variant
    (`<prompt>_direct`) when the method sets `algorithm.thinking=false`, or `scalar` for a reward model."""
    a = job.algorithm
    if getattr(a, "scalar", False):
        return "scalar"
    if getattr(a, "thinking", True) is False:
        return f"{reward.prompt}_direct"
    return reward.prompt


def validate_judge_prompt(job: JobConfig, reward: Reward) -> None:
    """The judge's prompt exists (a reward without a verdict-only variant cannot run `thinking=false`)."""
    from judge_rl.prompts import PROMPTS

    name = judge_prompt_name(job, reward)
    if name not in PROMPTS:
        raise ValueError(f"algorithm.thinking=false asks reward={job.reward.name} for the prompt {name!r}, which does not "
                         f"exist; verdict-only prompts: {', '.join(n for n in PROMPTS.names() if n.endswith('_direct'))}")


def online_pairs(job: JobConfig) -> int:
    """How many training pairs online RL judges (`trainer.total_steps` x `trainer.prompts_per_step`): the
    default data budget of the offline methods, so a Table 3 / Table 4 row differs by method, not by data."""
    return job.trainer.total_steps * job.trainer.prompts_per_step


def judging_mode(prompt) -> str:
    """pairwise (both responses in one prompt) or pointwise (one response scored alone)."""
    return prompt.kind


def training_items(pairs: Sequence[PreferencePair], prompt, seed: int) -> list:
    """The judge items RL trains on: both positions balanced (pairwise), or one item per response (pointwise)."""
    if judging_mode(prompt) == "pointwise":
        return pointwise_items(pairs)
    return balanced_positions(pairs, seed)


def fit_to_context(pairs: Sequence[PreferencePair], tokenizer, messages_fn, max_len: int, key: str, mode: str,
                   counts: dict[str, dict] | None = None) -> list[PreferencePair]:  # fmt: skip
    """Drop pairs whose longest judge prompt exceeds model.max_prompt_length, say how many, and count them, with their
    reason and lengths, in `counts[key]` (key: "data.train", "data.eval", "sft.data")."""

    def longest(p: PreferencePair) -> int:
        items = [JudgeItem(p, "a")] if mode == "pairwise" else pointwise_items([p])
        return max(len(encode_chat(tokenizer, messages_fn(it))) for it in items)

    too_long = {p.pair_id: n for p in pairs if (n := longest(p)) > max_len}
    kept = [p for p in pairs if p.pair_id not in too_long]
    if too_long:
        console.print(
            f"[yellow]{key}: {len(too_long)} of {len(pairs)} pairs exceed "
            f"model.max_prompt_length={max_len} tokens and are left out[/yellow]"
        )
    if counts is not None:
        entry = counts.setdefault(key, {})
        entry.update(pairs_kept=len(kept), too_long_units=len(too_long),
                     too_long_reason=f"judge prompt longer than model.max_prompt_length={max_len} tokens",
                     too_long=dict(list(too_long.items())[:20]))  # fmt: skip
    if not kept:
        raise ValueError(f"{key}: every pair exceeds model.max_prompt_length={max_len}")
    return kept


# ------------------------------------------------------------------ the run every stage shares


@dataclass
class Run:
    """What a recipe's stages share. `evals` and `bench_evals` hold each judged stage's metrics for the
    closing summary; `held_out` each stage's judgments of the held-out pairs (for the comparison);
    `withheld` the scores that too many unanswered requests left without a value (the run fails at the end,
    after everything is saved)."""

    job: JobConfig
    run_dir: Path
    reward: Any  # what RL pays (job.reward); with a scalar judge, the rule that reads a score on a label scale
    prompt: Any
    mode: str
    score_fn: Callable
    tokenizer: Any
    device: torch.device
    benchmark_specs: list
    train_items: list
    eval_pairs: list[PreferencePair]
    logger: MetricsLogger
    results: dict[str, Any]
    t_start: float
    evals: dict[str, dict[str, float]] = field(default_factory=dict)
    bench_evals: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    held_out: dict[str, list[dict]] = field(default_factory=dict)
    withheld: list[str] = field(default_factory=list)
    # the pace of the last evaluation that judged every pair afresh (held-out seconds per pair, benchmarks' seconds):
    # the forecast printed after RL's first step (recipes/online_rl.py) times the evaluations still to come with it
    eval_pace: tuple[float, float] | None = None

    def save(self) -> None:
        write_results(self.run_dir, self.results)


def setup(job: JobConfig, run_dir: Path, reward: Reward) -> Run:
    """Prompt, benchmarks, tokenizer, data and logger for the job and its reward (built once, judge_rl/jobs/train.py):
    everything that can fail on a bad config or bad data fails here, before any model loads."""
    torch.manual_seed(job.seed)
    if job.cluster.threads:
        torch.set_num_threads(job.cluster.threads)
    prompt = get_prompt(judge_prompt_name(job, reward))
    # published benchmarks judged at each eval stage; an unknown name fails here, before any model loads
    limit = {} if job.eval.benchmark_limit is None else {"limit": job.eval.benchmark_limit}
    benchmark_specs = [load_benchmark_config(name, **limit) for name in job.eval.benchmarks]
    # the default benchmark reads ../shared/data; a machine without that file still runs the main job
    for spec in [s for s in benchmark_specs if is_missing_local_file(s.path)]:
        console.print(f"[yellow]eval.benchmarks: {spec.name} skipped, no file at {spec.path}[/yellow]")
        benchmark_specs.remove(spec)
    mode = judging_mode(prompt)
    tokenizer = load_tokenizer(job.model, job.cache_dir)
    max_len = job.model.max_prompt_length
    counts: dict[str, dict] = {}  # per split: pairs loaded, malformed rows skipped, pairs too long (results.json)
    train_pairs = fit_to_context(load_split(job, "train", counts), tokenizer, prompt.messages, max_len, "data.train",
                                 mode, counts)  # fmt: skip
    eval_pairs = load_split(job, "eval", counts)
    if job.eval.limit is not None:
        eval_pairs = eval_pairs[: job.eval.limit]
        counts["data.eval"]["eval_limit"] = job.eval.limit
    eval_pairs = fit_to_context(eval_pairs, tokenizer, prompt.messages, max_len, "data.eval", mode, counts)
    results = new_results("main", run_dir)  # saved after each stage
    results["data"] = {"splits": counts}
    results["model"] = model_record(job.model)
    if results["model"].get("notice"):
        console.print(f"[bold yellow]{results['model']['notice']}[/bold yellow]")
    if job.data.strength_from:  # Think-J 3.2.2: strengths from a BT model's margin, terciles of the training split
        from judge_rl.recipes.strength_from import label_strengths

        train_pairs, eval_pairs, info = label_strengths(train_pairs, eval_pairs, job.data.strength_from, job, tokenizer,
                                                        resolve_device(job.cluster.device))
        results["data"]["strength_from"] = info
        console.print(f"data.strength_from: {info['labelled']['train']} train / {info['labelled']['eval']} held-out pairs "
                      f"labelled, margin edges {info['edges'][0]:.3f} / {info['edges'][1]:.3f}, strengths "
                      f"{info['strengths']['train']} (train)")
    return Run(
        job=job,
        run_dir=run_dir,
        reward=SignRule() if prompt.name == "scalar" else reward,
        prompt=prompt,
        mode=mode,
        score_fn=functools.partial(compute_score, reward_name=job.reward.name, **job.reward.weights),
        tokenizer=tokenizer,
        device=resolve_device(job.cluster.device),
        benchmark_specs=benchmark_specs,
        train_items=training_items(train_pairs, prompt, job.seed),
        eval_pairs=eval_pairs,
        logger=MetricsLogger(run_dir, job.logger, asdict(job)),
        results=results,
        t_start=time.perf_counter(),
    )


# ------------------------------------------------------------------ stages


def _judge_pairs(run: Run, server, pairs, out_dir: Path, label: str) -> dict[str, Any]:
    job = run.job
    out = evaluate_pairs(
        server,
        run.prompt,
        pairs,
        out_dir / "judgments.jsonl",
        max_new_tokens=job.eval.max_new_tokens,
        chunk_size=2 * job.eval.batch_size,
        reward=run.reward,
        label=label,
        max_server_failure_rate=job.eval.max_server_failure_rate,
    )
    return out


def evaluate(run: Run, stage: str, label: str, checkpoint: Path | None, server=None) -> None:
    """The judge at `checkpoint` (None: the base model) on the held-out pairs in both orders and on each of
    `eval.benchmarks`, greedy; judgments under eval/<stage>/, reused on resume. `server`: another way to run
    the judge (e.g. a reward model's `ScalarServer`) instead of generating with the causal LM at `checkpoint`."""
    job = run.job
    model = None
    if server is None and eval_engine(job.eval.server, job.model.source, run.device.type) == "vllm":
        server = VLLMServer.from_config(ServerConfig(name="vllm"), job.model, job.cache_dir, checkpoint, job.seed)
    elif server is None:
        model = load_model(job.model, job.cache_dir, run.device, checkpoint=checkpoint, seed=job.seed)
        server = HFServer(model, run.tokenizer, job.eval.batch_size, name=job.model.name)
    try:
        _evaluate_with(run, stage, label, server)
    finally:
        close = getattr(server, "close", None)
        if close is not None:
            close()  # a vLLM engine's KV cache is freed now, before the next stage builds its own
    del model, server
    if run.device.type == "cuda":
        torch.cuda.empty_cache()  # the next stage (or sweep point) starts with the memory free


def eval_engine(choice: str, model_source: str, device_type: str) -> str:
    """What `eval.server=choice` runs the eval stages with: hf or vllm (auto: vllm on a CPU where it can serve the
    model, `rollouts.vllm_engine.auto_server`; hf on a GPU, where the trainer's memory is not measured beside it yet)."""
    if choice not in ("auto", "hf", "vllm"):
        raise ValueError(f"eval.server={choice!r}: expected auto, hf or vllm")
    if choice == "auto":
        return auto_server(model_source, "cpu") if device_type == "cpu" else "hf"
    return choice


def _evaluate_with(run: Run, stage: str, label: str, server) -> None:
    """`evaluate`'s judging and bookkeeping with a built server."""
    job = run.job
    t = time.perf_counter()
    out = _judge_pairs(run, server, run.eval_pairs, run.run_dir / "eval" / stage, label)
    out["seconds"] = time.perf_counter() - t
    with_left_out(out, run.results.get("data", {}).get("splits", {}).get("data.eval", {}))
    (run.run_dir / "eval" / stage / "summary.json").write_text(json.dumps(out, indent=2))
    run.evals[label] = out["overall"]
    eval_ids = {p.pair_id for p in run.eval_pairs}
    records = read_records(run.run_dir / "eval" / stage / "judgments.jsonl").values()
    run.held_out[stage] = [r for r in records if r.get("pair_id") in eval_ids]
    entry = run.results["evaluations"].setdefault(stage, {"held_out": None, "benchmarks": {}})
    entry["held_out"] = evaluation_entry(out, run.held_out[stage])
    run.logger.summary({f"eval/{stage}/{k}": v for k, v in out["overall"].items()})
    m = out["overall"]
    if out["scoring"]["status"] == "withheld":
        run.withheld.append(f"eval {stage}: {out['scoring']['reason']}")
        headline = "no score (withheld)"
    else:
        headline = ", ".join(f"{k} {m[k]:.3f}" for k in HEADLINE[run.mode])
    console.print(f"eval {label}: {headline} ({out['judged_now']} judged, {out['reused']} reused, {out['seconds']:.0f}s)")
    for spec in run.benchmark_specs:
        bench_dir = run.run_dir / "eval" / stage / "benchmarks" / spec.name
        summary = evaluate_benchmark(
            get_benchmark(spec.kind), spec, server, run.prompt, bench_dir,
            max_new_tokens=job.eval.max_new_tokens, chunk_size=2 * job.eval.batch_size, reward=run.reward,
            label=f"judging {spec.name} ({label})", max_server_failure_rate=job.eval.max_server_failure_rate,
        )
        if summary["scoring"]["status"] == "withheld":
            run.withheld.append(f"eval {stage} {spec.name}: {summary['scoring']['reason']}")
        entry["benchmarks"][spec.name] = evaluation_entry(summary, read_records(bench_dir / "judgments.jsonl").values())
        run.logger.summary({f"eval/{stage}/{spec.name}/{k}": v for k, v in entry_scalars(entry["benchmarks"][spec.name]).items()})
        run.bench_evals.setdefault(spec.name, {})[label] = summary["harness"]["overall"]
    if out["reused"] == 0 and run.eval_pairs:
        run.eval_pace = (out["seconds"] / len(run.eval_pairs), time.perf_counter() - t - out["seconds"])
    run.save()


def with_left_out(out: dict[str, Any], split: dict[str, Any]) -> dict[str, Any]:
    """A held-out summary counting the pairs setup left out of data.eval as too long (`too_long_units`, with the reason
    and their prompt lengths) and its malformed rows, beside those the harness itself found too long for the judge."""
    counts = out.setdefault("counts", {})
    counts["too_long_units"] = counts.get("too_long_units", 0) + split.get("too_long_units", 0)
    counts["skipped_rows"] = split.get("skipped_rows", 0)
    if split.get("too_long_units"):
        out["too_long"] = {**split.get("too_long", {}), **out.get("too_long", {})}
        out["too_long_reason"] = split["too_long_reason"]
    return out


def sample(run: Run, model_dir: Path | None, conversations: list[list[dict]], max_new_tokens: int, temperature: float,
           n: int = 1) -> list[list]:
    """`n` generations per conversation (a list each, in input order) from the causal LM at `model_dir` (None:
    the configured model), greedy at temperature 0: the judge or critic outputs offline recipes learn from."""
    if not conversations:
        return []
    job = run.job
    model = load_model(job.model, job.cache_dir, run.device, checkpoint=model_dir, seed=job.seed)
    prompts = [encode_chat(run.tokenizer, m) for m in conversations]
    return generate(model, run.tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=job.eval.batch_size,
                    num_samples=n, do_sample=temperature > 0, temperature=temperature if temperature > 0 else 1.0)


def live_eval_pairs(run: Run) -> list[PreferencePair]:
    """The held-out pairs the live policy judges every trainer.eval_every steps: the first trainer.eval_subset."""
    subset = run.job.trainer.eval_subset
    return list(run.eval_pairs if subset is None else run.eval_pairs[:subset])


def heldout_anchors(run: Run) -> list[Anchor]:
    """The evaluation stages heldout.png draws beside the live curve: the SFT init at step 0 (on the live subset,
    from its saved judgments, and on the full set) and the RL judge at the last step (full set)."""
    from judge_rl.evaluation.benchmarks.pairwise import harness_metrics

    anchors = []
    if "sft init" in run.evals:
        anchors.append(Anchor("SFT init, full held-out set", 0, dict(run.evals["sft init"]), subset=False))
        if run.job.trainer.eval_every > 0 and run.held_out.get("sft") and run.mode == "pairwise":
            ids = {p.pair_id for p in live_eval_pairs(run)}
            records = [r for r in run.held_out["sft"] if r.get("pair_id") in ids and not r.get("server_error")]
            if records:
                anchors.append(Anchor("SFT init", 0, dict(harness_metrics(records)["overall"]), subset=True))
    if "rl" in run.evals:
        anchors.append(Anchor("RL judge, full held-out set", run.job.trainer.total_steps, dict(run.evals["rl"]),
                              subset=False))  # fmt: skip
    return anchors


def live_evaluator(run: Run) -> Callable[[Any, int], dict[str, float]] | None:
    """`trainer.eval_every=K`: a function that has the live policy judge the held-out pairs (the first
    `trainer.eval_subset`) in both orders, greedy, its judgments saved per step so a resumed run reuses
    them (the weights, hence the request keys, differ per step); None when K is 0."""
    job = run.job
    if job.trainer.eval_every <= 0:
        return None
    val_pairs = live_eval_pairs(run)

    def evaluate_live_policy(model, step: int) -> dict[str, float]:
        server = HFServer(model, run.tokenizer, job.eval.batch_size, name=job.model.name)
        out_dir = run.run_dir / "eval" / f"step_{step}"
        out = _judge_pairs(run, server, val_pairs, out_dir, f"rl step {step}")
        (out_dir / "summary.json").write_text(json.dumps(out, indent=2))
        if out["scoring"]["status"] == "withheld":
            console.print(f"[yellow]rl step {step}: held-out evaluation withheld: {out['scoring']['reason']}[/yellow]")
        return {f"val/{k}": float(v) for k, v in out["overall"].items()}

    return evaluate_live_policy


def sft_init(run: Run) -> Path:
    """The thinking initialisation (Think-J 3.1): SFT on `sft.num_examples` gold traces, cached and reused. The run
    directory's `sft_model` links to it, so the SFT judge can be served by path (`judge.checkpoint=<run>/sft_model`)."""
    examples = sft_examples(init_items(run), run.prompt, run.job.sft.num_examples)
    init_model, metrics = run_sft(run.job, examples)
    link = run.run_dir / "sft_model"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(init_model.resolve(), target_is_directory=True)
    run.results["training"]["sft"] = metrics
    run.save()
    run.logger.summary(metrics)
    console.print(
        f"sft: {int(metrics['sft/steps'])} steps, loss {metrics['sft/loss_first']:.3f} -> "
        f"{metrics['sft/loss_last']:.3f}, {metrics['sft/seconds_per_step']:.1f} s/step"
        + (" (reused cached init)" if metrics.get("sft/reused") else "")
    )
    return init_model


def compare(run: Run, baseline: str, candidate: str) -> None:
    """The claim that `candidate` beats `baseline`, with its noise: a paired bootstrap of the difference in
    both-order consistent accuracy over the same held-out pairs (pairwise judging only)."""
    if run.mode != "pairwise" or baseline not in run.held_out or candidate not in run.held_out:
        return

    def per_pair(stage: str) -> dict[str, float]:
        return consistent_by_pair(r for r in run.held_out[stage] if not r.get("server_error"))

    gain = paired_bootstrap(per_pair(baseline), per_pair(candidate))
    run.results["comparisons"][f"{candidate}_minus_{baseline}"] = {"consistent_accuracy": gain}
    console.print(
        f"{candidate.upper()} - {baseline} consistent accuracy: {gain['diff']:+.3f} "
        f"[95% CI {gain['low']:+.3f}, {gain['high']:+.3f}] over {int(gain['n'])} held-out pairs (paired bootstrap)"
    )


def report(run: Run, final: str, plot: bool = False) -> dict[str, Any]:
    """The closing summary: which evaluation stage holds the judge this recipe produced (`final`, read by
    report columns `judge/...`), learning-curve PNGs from every logged step (`plot`), the stage table, wall
    time, results.json; then fail if a score was withheld (everything is saved by then)."""
    run.results["final_stage"] = final
    plots: list[Path] = []
    if plot:
        plots = write_plots(run.logger.history(), run.run_dir, heldout_anchors(run))
        if plots:
            run.results["plots"] = [str(p) for p in plots]
            run.logger.log_images(plots)
    run.results["wall_s"] = run_wall_s(run.run_dir, run.t_start)
    print_summary(run.evals, run.results["training"].get("rl", {}).get("reward_curve"), run.results["wall_s"], run.mode,
                  run.bench_evals, plots=plots)
    run.save()
    run.logger.finish()
    if run.withheld:
        raise ScoreWithheld("; ".join(run.withheld))
    return run.results
