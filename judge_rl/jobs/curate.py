"""The curation job: `run_curate(cfg)` reads the input, runs the three filters in order and writes the output.

`run_curate(cfg)` is a plain function of a composed config (conf/curate.yaml); the Hydra entry point
(judge_rl/curate/__main__.py) and the tests both call it. A bad config fails in `to_curate_config`, before any
data or model loads, with one line naming the key.

It writes `output` (the `pairs` JSONL), `counts.json` beside it (the count after each step and each filter's
drop reasons, also printed as a table), and in `run_dir` difficulty.jsonl and teacher.jsonl (saved judgments a
re-run reuses) and dropped.jsonl (every dropped pair, its filter and its reason).
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from judge_rl.curate.config import CURATE_NEUTRAL_KEYS, CurateConfig, curation_prompt, to_curate_config
from judge_rl.curate.filters import (
    Dropped,
    accuracy_filter,
    difficulty_filter,
    diversity_filter,
    load_embedder,
)
from judge_rl.curate.teacher import Teacher, load_judge
from judge_rl.data.pairs import PreferencePair

FILTERS = ("difficulty", "diversity", "accuracy")
COUNTS_FILE = "counts.json"
DIFFICULTY_FILE = "difficulty.jsonl"
TEACHER_FILE = "teacher.jsonl"
DROPPED_FILE = "dropped.jsonl"


def load_input(job: CurateConfig) -> tuple[list[PreferencePair], int]:
    """The input pairs (shuffled when `shuffle`), and how many rows the loader skipped."""
    from judge_rl.data.loaders import load_dataset_pairs

    loaded = load_dataset_pairs(job.data.loader, **dict(job.data.kwargs))
    pairs = list(loaded)
    seen: set[str] = set()
    for pair in pairs:
        if pair.pair_id in seen:
            raise ValueError(f"data: pair_id {pair.pair_id!r} occurs twice; curation keys its records on pair ids")
        seen.add(pair.pair_id)
    if job.shuffle:
        random.Random(job.seed).shuffle(pairs)
    return pairs, len(loaded.skipped)


def counts_table(counts: dict[str, Any]) -> str:
    """counts.json as a small plain-text table: the pairs after each step and the drop reasons."""
    rows = [("input", counts["input"], "")]
    for name in FILTERS:
        f = counts["filters"][name]
        if not f["enabled"]:
            rows.append((name, counts[f"after_{name}"], "(off)"))
            continue
        reasons = "; ".join(f"{reason}: {n}" for reason, n in sorted(f["dropped"].items(), key=lambda kv: -kv[1]))
        if f.get("not_checked"):
            reasons = "; ".join(x for x in (reasons, f"not checked (limit reached): {f['not_checked']}") if x)
        rows.append((name, counts[f"after_{name}"], reasons))
    rows.append(("written", counts["written"], f"limit {counts['limit']}" if counts["limit"] is not None else ""))
    width = max(len(r[0]) for r in rows)
    lines = [f"{'step':<{width}}  {'pairs':>6}  dropped"]
    lines += [f"{name:<{width}}  {n:>6}  {why}".rstrip() for name, n, why in rows]
    return "\n".join(lines)


def _needs_strength(prompt) -> bool:
    try:
        prompt.verdict("a", None)
    except ValueError:
        return True
    return False


def run_curate(cfg: DictConfig) -> dict[str, Any]:
    """Curate `data` into `output` (see judge_rl.curate's docstring); returns the counts written to counts.json."""
    import gc

    from judge_rl.data.loaders import write_pairs
    from judge_rl.reports.console import console
    from judge_rl.rundir import claim_run_dir

    job = to_curate_config(cfg)
    if job.accuracy.enabled and job.accuracy.teacher == "server":  # the teacher's endpoint answers (a bounded wait)
        from judge_rl.servers.reach import require_reachable

        require_reachable("accuracy.server.base_url", job.accuracy.server.base_url, "the teacher's server")
    prompt = curation_prompt(job.prompt)
    output = Path(job.output).expanduser()
    with claim_run_dir(Path(job.run_dir), asdict(job), resume=job.resume, neutral=CURATE_NEUTRAL_KEYS,
                       console=console) as run_dir:
        pairs, skipped_rows = load_input(job)
        counts: dict[str, Any] = {"input": len(pairs), "input_rows_skipped": skipped_rows, "filters": {}}
        dropped: list[Dropped] = []
        judge = None
        needs_judge = job.difficulty.enabled or (job.diversity.enabled and job.diversity.embedder == "judge")
        if needs_judge and pairs:
            judge = load_judge(job)
        current = pairs
        for name in FILTERS:
            spec = getattr(job, name)
            if not spec.enabled or not current:
                counts["filters"][name] = {"enabled": bool(spec.enabled), "in": len(current), "out": len(current),
                                           "dropped": {}}
                counts[f"after_{name}"] = len(current)
                continue
            if name == "difficulty":
                result = difficulty_filter(current, judge, prompt, job.difficulty, seed=job.seed,
                                           max_prompt_length=job.model.max_prompt_length,
                                           records_path=run_dir / DIFFICULTY_FILE)
            elif name == "diversity":
                model, tokenizer = load_embedder(job.diversity.embedder, judge, job.device)
                result = diversity_filter(current, model, tokenizer, job.diversity)
                del model, tokenizer
            else:
                judge = None  # free the judge before a local teacher loads
                gc.collect()
                teacher = Teacher(job, prompt, run_dir / TEACHER_FILE)
                try:
                    result = accuracy_filter(current, teacher, prompt, job.accuracy, limit=job.limit)
                finally:
                    teacher.close()
            counts["filters"][name] = result.summary(len(current))
            counts[f"after_{name}"] = len(result.kept)
            dropped += result.dropped
            current = result.kept
        written = current if job.limit is None else current[: job.limit]
        counts["written"] = len(written)
        counts["limit"] = job.limit
        counts["not_written_over_limit"] = len(current) - len(written)
        counts["output"] = str(output)
        write_pairs(written, output)
        counts_path = output.parent / COUNTS_FILE
        tmp = counts_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(counts, indent=2) + "\n")
        tmp.replace(counts_path)
        with (run_dir / DROPPED_FILE).open("w", encoding="utf-8") as f:
            for d in dropped:
                f.write(json.dumps({"pair_id": d.pair_id, "filter": d.filter, "reason": d.reason, **d.detail},
                                   ensure_ascii=False) + "\n")
        console.print(counts_table(counts), markup=False, highlight=False)
        console.print(f"curated pairs: {output} ({len(written)}); counts: {counts_path}", markup=False)
        unlabelled = sum(p.strength is None for p in written)
        if unlabelled and _needs_strength(prompt):
            console.print(f"[yellow]{unlabelled} curated pairs have no strength label: prompt={job.prompt} needs one "
                          "to render their SFT verdicts[/yellow]")
    return counts
