"""`python -m judge_rl.eval`: evaluate one judge on one benchmark, scored as the benchmark's authors do.

`run_eval(cfg)` is a plain function of a composed config (conf/evaluate.yaml) that returns the run's
summary; the Hydra entry point (`python -m judge_rl.eval`, judge_rl/eval.py) and the tests both call it. The judge is a judge_rl
model (conf/model, optionally with trained weights from `judge.checkpoint`) run by the `hf` or `vllm`
server, or any OpenAI-compatible endpoint (`server=openai server.base_url=...`). Re-running with the
same `run_dir` resumes: finished judgments are reused, not asked again (the run directory is claimed
first: one process at a time, one config; see judge_rl/rundir.py). A score whose requests went
unanswered beyond `eval.max_server_failure_rate` is withheld, and the job fails after saving the summary.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from judge_rl.data.loaders import is_missing_local_file
from judge_rl.config import (EVAL_NEUTRAL_KEYS, EVAL_RANGES, EvalJobConfig, check_device, check_ranges, typed_config,
                             validate_model)
from judge_rl.evaluation.benchmarks import BENCHMARKS, get_benchmark
from judge_rl.servers import SERVERS, build_server
from judge_rl.evaluation.harness import ScoreWithheld, evaluate_benchmark, read_records
from judge_rl.prompts import get_prompt
from judge_rl.reports.benchmarks import print_benchmark_summary
from judge_rl.reports.console import console
from judge_rl.reports.logging import MetricsLogger
from judge_rl.reports.schema import entry_scalars, evaluation_entry, new_results, write_results
from judge_rl.rundir import claim_run_dir
from judge_rl.servers.reach import require_reachable
from judge_rl.rewards import Reward, build_reward
from judge_rl.rollouts.vllm_engine import auto_server

def checked_eval(cfg: DictConfig) -> tuple[EvalJobConfig, Reward]:
    """Resolve and type-check the eval app's config; refuse what cannot work before a model loads. Returns the job
    and its reward, built once here and passed down."""
    job: EvalJobConfig = typed_config(cfg, EvalJobConfig)
    if job.server.name == "auto":  # the fastest installed here, chosen once: the run's config names it
        job.server.name = auto_server(job.model.source, job.server.device)
    return job, validate_eval(job)


def to_eval_config(cfg: DictConfig) -> EvalJobConfig:
    """`checked_eval`'s job alone (what the tests and the config checks read)."""
    return checked_eval(cfg)[0]


def validate_eval(job: EvalJobConfig) -> Reward:
    """The eval app's combinations: a known benchmark kind, server, reward and prompt, a scalar server only with a
    Bradley-Terry judge, ranges, and the judge's weights. Returns the job's reward (its one build)."""
    if job.benchmark.kind not in BENCHMARKS:
        raise ValueError(f"benchmark.kind={job.benchmark.kind!r}: known: {', '.join(BENCHMARKS.names())}")
    if job.server.name not in SERVERS:
        raise ValueError(f"server.name={job.server.name!r}: known: {', '.join(SERVERS.names())}")
    if job.benchmark.on_error not in ("raise", "skip"):
        raise ValueError(f"benchmark.on_error={job.benchmark.on_error!r}: expected raise or skip")
    if job.server.name == "openai" and not job.server.base_url:
        raise ValueError("server=openai needs server.base_url (e.g. server.base_url=http://127.0.0.1:8000/v1)")
    if (job.server.name == "scalar") != (job.judge.prompt == "scalar"):
        raise ValueError("a Bradley-Terry judge is server=scalar with judge.prompt=scalar (one without the other cannot work)")
    if job.server.name == "scalar" and job.judge.checkpoint is None:
        raise ValueError("server=scalar needs judge.checkpoint=<a reward model directory, e.g. <bt run_dir>/bt_model>")
    check_ranges(job, EVAL_RANGES)
    check_benchmark_path(job.benchmark.path)
    validate_model(job.model, job.judge.checkpoint)
    check_device(job.server.device, "server.device")
    reward = build_reward(job.reward.name, **job.reward.weights)
    if job.judge.prompt is not None:
        get_prompt(job.judge.prompt)  # an unknown prompt fails here, with the known ones
    return reward


def check_benchmark_path(path: str | None) -> None:
    """`benchmark.path` is a data file or a hub dataset name, checked before the judge is built (minutes with the
    default model): a directory or a missing local file fails in one line naming the key."""
    if not path:
        return
    if Path(path).expanduser().is_dir():
        raise ValueError(f"benchmark.path={path}: a directory; expected a data file (.json, .jsonl, .json(l).gz, "
                         ".parquet) or a hub dataset name")
    if is_missing_local_file(str(Path(path).expanduser())) and is_missing_local_file(path):
        raise ValueError(f"benchmark.path={path}: no such file")


def run_eval(cfg: DictConfig) -> dict[str, Any]:
    job, reward = checked_eval(cfg)
    if job.server.name == "openai":  # the endpoint answers, before the run dir is claimed (a bounded wait)
        require_reachable("server.base_url", job.server.base_url, "the judge's server")
    prompt = get_prompt(job.judge.prompt or reward.prompt)
    benchmark = get_benchmark(job.benchmark.kind)
    with claim_run_dir(Path(job.run_dir), asdict(job), resume=job.resume, neutral=EVAL_NEUTRAL_KEYS, console=console) as run_dir:
        server = build_server(job.server, job.model, job.cache_dir, job.judge.checkpoint, job.seed)
        logger = MetricsLogger(run_dir, job.logger, asdict(job))
        try:
            summary = evaluate_benchmark(
                benchmark, job.benchmark, server, prompt, run_dir,
                max_new_tokens=job.server.max_new_tokens, chunk_size=job.server.chunk_size, reward=reward,
                max_server_failure_rate=job.eval.max_server_failure_rate,
            )
        finally:
            close = getattr(server, "close", None)
            if close is not None:
                close()
        print_benchmark_summary(summary)
        name = job.benchmark.name
        results = new_results("eval", run_dir)  # judge_rl/reports/schema.py: the main job's schema, one stage
        entry = evaluation_entry(summary, read_records(run_dir / "judgments.jsonl").values())
        results["evaluations"]["eval"] = {"held_out": None, "benchmarks": {name: entry}}
        results["wall_s"] = summary["seconds"]
        write_results(run_dir, results)
        logger.summary({f"{name}/{k}": v for k, v in entry_scalars(entry).items()})
        logger.finish()
        if summary["scoring"]["status"] == "withheld":
            raise ScoreWithheld(f"benchmark {name}: {summary['scoring']['reason']} (details in {run_dir / 'summary.json'})")
    return summary
