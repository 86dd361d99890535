"""`python -m judge_rl.eval`: evaluate one judge on one benchmark, scored as the benchmark's authors do.

`run_eval(cfg)` is a plain function of a composed config (conf/evaluate.yaml) that returns the run's
summary; the Hydra entry point (judge_rl/eval.py) and the tests both call it. The judge is a judge_rl
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

from omegaconf import DictConfig, OmegaConf

from judge_rl.config import EVAL_NEUTRAL_KEYS, BenchmarkConfig, to_eval_config
from judge_rl.evaluation.benchmarks import get_benchmark
from judge_rl.servers import build_server
from judge_rl.evaluation.harness import ScoreWithheld, evaluate_benchmark, read_records
from judge_rl.prompts import get_prompt
from judge_rl.reports.benchmarks import print_benchmark_summary
from judge_rl.reports.console import console
from judge_rl.reports.logging import MetricsLogger
from judge_rl.reports.schema import entry_scalars, evaluation_entry, new_results, write_results
from judge_rl.rundir import claim_run_dir
from judge_rl.rewards import build_reward

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def load_benchmark_config(name: str, **overrides: Any) -> BenchmarkConfig:
    """conf/benchmark/<name>.yaml as a typed config (the main job names benchmarks this way)."""
    path = CONF_DIR / "benchmark" / f"{name}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise ValueError(f"eval.benchmarks: unknown benchmark {name!r}; known: {', '.join(known)}")
    option = OmegaConf.load(path)
    option.pop("defaults", None)  # its Hydra defaults list names the same schema merged here
    merged = OmegaConf.merge(OmegaConf.structured(BenchmarkConfig), option, overrides)
    return OmegaConf.to_object(merged)


def run_eval(cfg: DictConfig) -> dict[str, Any]:
    job = to_eval_config(cfg)
    reward = build_reward(job.reward.name, **job.reward.weights)
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
