"""A trained judge's lean to one position, and what it knows with the lean removed (judge_rl/evaluation/lean.py), on the
pairs its run judged: `python scripts/verdict_lean.py <run dir> [--stage sft|rl] [--limit N]`.

Reads the run's resolved_config.yaml, its judge at <run dir>/<stage>_model and the pairs of eval/<stage>/ (the
held-out pairs and each benchmark's, the ones the run judged); writes eval/<stage>/lean.json and prints one row a set
(the decoded, greedy, metrics of the same judge are the run's own: eval/<stage>/summary.json).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
from omegaconf import OmegaConf


def judged_pair_ids(path: Path) -> tuple[set[str], str]:
    """The pair ids of a judgments.jsonl and the prompt it was judged with."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not rows:
        raise ValueError(f"{path}: no judgments")
    return {r["pair_id"] for r in rows}, rows[0]["prompt_name"]


def ci(x: dict) -> str:
    return f"{x['mean']:.3f} [{x['low']:.3f}, {x['high']:.3f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--stage", default="sft", help="sft or rl: <run dir>/<stage>_model, eval/<stage>/")
    parser.add_argument("--limit", type=int, default=None, help="at most this many pairs a set")
    args = parser.parse_args(argv)

    from judge_rl.config.paths import load_benchmark_config
    from judge_rl.evaluation.benchmarks import get_benchmark
    from judge_rl.evaluation.lean import item_margins, summarize
    from judge_rl.jobs.train import to_job_config
    from judge_rl.models.loading import load_model, load_tokenizer
    from judge_rl.prompts import get_prompt
    from judge_rl.recipes.stages import load_split
    from judge_rl.rollouts.generation import encode_chat

    run_dir, stage = args.run_dir, args.stage
    eval_dir, checkpoint = run_dir / "eval" / stage, run_dir / f"{stage}_model"
    for path in (run_dir / "resolved_config.yaml", eval_dir / "judgments.jsonl", checkpoint):
        if not path.exists():
            sys.exit(f"verdict_lean: no {path} (a finished run of the main job with stage {stage})")
    job = to_job_config(OmegaConf.load(run_dir / "resolved_config.yaml"))
    held_ids, prompt_name = judged_pair_ids(eval_dir / "judgments.jsonl")
    prompt = get_prompt(prompt_name)
    sets = {"held_out": [p for p in load_split(job, "eval") if p.pair_id in held_ids]}
    for name in job.eval.benchmarks:
        path = eval_dir / "benchmarks" / name / "judgments.jsonl"
        if path.is_file():
            spec = load_benchmark_config(name)
            ids, _ = judged_pair_ids(path)
            sets[name] = [u for u in get_benchmark(spec.kind).load(spec).units if u.pair_id in ids]
    torch.manual_seed(job.seed)
    tokenizer = load_tokenizer(job.model, job.cache_dir)
    model = load_model(job.model, job.cache_dir, torch.device("cpu"), checkpoint=checkpoint).eval()
    out = {"run_dir": str(run_dir), "stage": stage, "prompt": prompt_name, "sets": {}}
    print(f"{'set':<16} pairs  acc (likelihood verdict)  acc@a  acc@b  consistent             A-pref  p(a)   "
          "calibrated acc")
    for name, pairs in sets.items():
        pairs = pairs[: args.limit] if args.limit else pairs
        start = time.perf_counter()
        margins = item_margins(model, tokenizer, prompt, pairs, lambda m: encode_chat(tokenizer, m))
        summary = summarize(margins, seed=job.seed)
        out["sets"][name] = {"summary": asdict(summary), "margins": margins, "seconds": time.perf_counter() - start}
        print(f"{name:<16} {summary.n_pairs:>5}  {ci(summary.accuracy):<24} {summary.acc_at_a:.3f}  {summary.acc_at_b:.3f}  "
              f"{ci(summary.consistent_accuracy):<22} {summary.a_preference['mean']:.3f}  {summary.p_a['mean']:.3f}  "
              f"{ci(summary.calibrated_accuracy)}", flush=True)
    (eval_dir / "lean.json").write_text(json.dumps(out, indent=1))
    print(f"wrote {eval_dir / 'lean.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
