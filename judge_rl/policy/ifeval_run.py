"""IFEval on a policy: greedy answers to the IFEval prompts, scored by judge_rl/evaluation/ifeval.

`evaluate_policy(model, tokenizer, prompts, out_dir, ...)` answers each prompt (one user turn, the chat
template, greedy, `max_new_tokens`), appends each batch of answers to `out_dir/responses.jsonl` as it goes
(a crash loses at most one batch; a rerun answers only the prompts without a saved answer), scores them
(strict and loose, prompt and instruction level, as the published checkers define them), and writes
`out_dir/records.jsonl` (what every checker said) and `out_dir/summary.json`.

`ifeval_entry(summary, records)` is the results.json <evaluation> of it (official: the four accuracies;
ci: a bootstrap interval of each over prompts), and `per_prompt(records, level)` the per-prompt values a
paired before/after comparison resamples.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from judge_rl.evaluation.ifeval import IFEvalPrompt, load_ifeval, score
from judge_rl.policy.config import IFEvalRunConfig
from judge_rl.reports.console import console
from judge_rl.reports.jsonl import open_for_append, read_jsonl
from judge_rl.reports.schema import bootstrap_ci
from judge_rl.rollouts import encode_chat, generate

OFFICIAL = ("prompt_level_strict_accuracy", "instruction_level_strict_accuracy", "prompt_level_loose_accuracy",
            "instruction_level_loose_accuracy")  # fmt: skip


def ifeval_prompts(cfg: IFEvalRunConfig) -> list[IFEvalPrompt]:
    """The IFEval prompts this run evaluates: the first `limit`, or all 541 with `full` (or limit null)."""
    return load_ifeval(cfg.path, limit=None if cfg.full else cfg.limit)


def evaluate_policy(model, tokenizer, prompts: Sequence[IFEvalPrompt], out_dir: Path, *, max_new_tokens: int,
                    batch_size: int, label: str = "ifeval") -> dict[str, Any]:  # fmt: skip
    """Answer, save, score (module docstring); returns the summary (the accuracies, counts, breakdowns)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    responses_path = out_dir / "responses.jsonl"
    saved = {str(r["key"]): r["response"] for r in read_jsonl(responses_path)}
    todo = [p for p in prompts if str(p.key) not in saved]
    if len(todo) < len(prompts):
        console.print(f"[dim]{label}: {len(prompts) - len(todo)} answers found in {responses_path}[/dim]")
    for start in range(0, len(todo), batch_size):
        chunk = todo[start : start + batch_size]
        encoded = [encode_chat(tokenizer, [{"role": "user", "content": p.prompt}]) for p in chunk]
        groups = generate(model, tokenizer, encoded, max_new_tokens=max_new_tokens, batch_size=len(chunk))
        with open_for_append(responses_path) as f:
            for p, group in zip(chunk, groups):
                saved[str(p.key)] = group[0].text
                f.write(json.dumps({"key": p.key, "response": group[0].text, "finished": group[0].finished}) + "\n")
        console.print(f"[dim]{label}: {min(start + batch_size, len(todo))}/{len(todo)} answered[/dim]")
    records_path = out_dir / "records.jsonl"
    result = score(prompts, {p.key: saved[str(p.key)] for p in prompts}, previous=read_jsonl(records_path))
    records = result.pop("records")
    records_path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (out_dir / "summary.json").write_text(json.dumps(result, indent=2))
    return {**result, "records": records}


def per_prompt(records: Sequence[dict[str, Any]], metric: str) -> dict[str, float]:
    """{prompt key: value} whose mean is `metric` (one of OFFICIAL) over these records."""
    out = {}
    for r in records:
        level, _, kind = metric.partition("_level_")
        strict = kind.startswith("strict")
        if level == "prompt":
            value = float(bool(r["follow_all_instructions_strict" if strict else "follow_all_instructions_loose"]))
        else:
            follows = r["follow_instruction_list_strict" if strict else "follow_instruction_list_loose"]
            value = sum(map(bool, follows)) / len(follows)
        out[str(r["key"])] = value
    return out


def ifeval_entry(result: dict[str, Any]) -> dict[str, Any]:
    """The results.json <evaluation> of an IFEval result (judge_rl/reports/schema.py)."""
    records = result["records"]
    official = {k: result[k] for k in OFFICIAL}
    ci = {k: bootstrap_ci(list(per_prompt(records, k).values())) for k in OFFICIAL}
    return {"official": official, "metrics": {}, "ci": ci, "counts": result["counts"],
            "by_category": result["by_category"]}  # fmt: skip


def ifeval_metrics(result: dict[str, Any], prefix: str = "ifeval") -> dict[str, float]:
    """The four accuracies as logged metrics (`ifeval/prompt_strict`, ...)."""
    short = {"prompt_level_strict_accuracy": "prompt_strict", "instruction_level_strict_accuracy": "instruction_strict",
             "prompt_level_loose_accuracy": "prompt_loose", "instruction_level_loose_accuracy": "instruction_loose"}
    return {f"{prefix}/{short[k]}": float(result[k]) for k in OFFICIAL}
