"""IFEval on a policy: greedy answers to the IFEval prompts, scored by judge_rl/evaluation/ifeval.

`evaluate_policy(model, tokenizer, prompts, out_dir, ...)` answers each prompt (one user turn, the chat
template, greedy, `max_new_tokens`), appends each batch of answers to `out_dir/responses.jsonl` as it goes
(a crash loses at most one batch; a rerun answers only the prompts without a saved answer), scores them
(strict and loose, prompt and instruction level, as the published checkers define them), and writes
`out_dir/records.jsonl` (what every checker said) and `out_dir/summary.json`.

`ifeval_entry(result)` is the results.json <evaluation> of it (official: the four accuracies; ci: a bootstrap
interval of each, resampling prompts). The statistics of the records (those intervals, `ifeval_gain(before, after,
metric)`, the change with a paired bootstrap interval, and `after_versus` of the report) are report logic:
judge_rl/reports/ifeval_stats.py.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

from judge_rl.evaluation.ifeval import IFEvalPrompt, load_ifeval, score
from judge_rl.evaluation.ifeval.scoring import aggregate
from judge_rl.policy.config import IFEvalRunConfig
from judge_rl.reports.console import console
from judge_rl.reports.ifeval_stats import OFFICIAL, ifeval_ci
from judge_rl.reports.jsonl import open_for_append, read_jsonl
from judge_rl.rollouts import encode_chat, generate

Guard = Callable[[Any, str], "str | None"]  # (prompt key, response) -> why the response fails, or None


def ifeval_prompts(cfg: IFEvalRunConfig) -> list[IFEvalPrompt]:
    """The IFEval prompts this run evaluates: the first `limit`, or all 541 with `full` (or limit null)."""
    return load_ifeval(cfg.path, limit=None if cfg.full else cfg.limit)


def heldout_task_prompts(task_eval, data) -> tuple[list[IFEvalPrompt], Guard | None]:
    """The policy task's held-out prompts (`TaskEvalConfig`): generated on the test split's base tasks with the
    training data's constraint mix, as IFEval prompts (key: the prompt id) for `evaluate_policy`; and the guard
    their true score applies (judge_rl/policy/tasks/guard.py), or None with `task_eval.guard=false`."""
    from judge_rl.policy.tasks.prompts import generate_policy_prompts
    from judge_rl.policy.tasks.guard import guard_failure

    prompts = generate_policy_prompts(task_eval.n, seed=task_eval.seed, split="test", instruction_ids=data.instruction_ids,
                                      min_constraints=data.min_constraints, max_constraints=data.max_constraints)  # fmt: skip
    tasks = {p.prompt_id: (p.meta["task_id"], p.instruction_id_list) for p in prompts}
    guard = (lambda key, response: guard_failure(response, *tasks[str(key)])) if task_eval.guard else None
    return [IFEvalPrompt(p.prompt_id, p.prompt, tuple(p.instruction_id_list), tuple(p.kwargs)) for p in prompts], guard


def apply_guard(records: Sequence[dict[str, Any]], guard: Guard) -> list[dict[str, Any]]:
    """Records whose instructions count as followed only where the response also passes `guard`: each record gets
    `guard` (the failure, or None) and keeps what the checkers alone said in `checkers_strict` / `checkers_loose`."""
    out = []
    for r in records:
        r = dict(r)
        r.setdefault("checkers_strict", list(r["follow_instruction_list_strict"]))
        r.setdefault("checkers_loose", list(r["follow_instruction_list_loose"]))
        r["guard"] = guard(r["key"], r["response"])
        ok = r["guard"] is None
        for kind in ("strict", "loose"):
            follows = [ok and bool(f) for f in r[f"checkers_{kind}"]]
            r[f"follow_instruction_list_{kind}"] = follows
            r[f"follow_all_instructions_{kind}"] = all(follows)
        out.append(r)
    return out


def evaluate_policy(model, tokenizer, prompts: Sequence[IFEvalPrompt], out_dir: Path, *, max_new_tokens: int,
                    batch_size: int, label: str = "ifeval", guard: Guard | None = None) -> dict[str, Any]:  # fmt: skip
    """Answer, save, score (module docstring); returns the summary (the accuracies, counts, breakdowns). With a
    `guard` the accuracies are the guarded ones (`apply_guard`); `checkers` then has the checkers' alone, and
    `guard_failures` how many responses failed the guard, by reason."""
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
    if guard is not None:
        checkers = {k: result[k] for k in OFFICIAL}
        records = apply_guard(records, guard)
        result = {**aggregate(records), "checkers": checkers,
                  "guard_failures": dict(Counter(r["guard"] for r in records if r["guard"] is not None))}  # fmt: skip
    records_path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (out_dir / "summary.json").write_text(json.dumps(result, indent=2))
    return {**result, "records": records}


def ifeval_entry(result: dict[str, Any]) -> dict[str, Any]:
    """The results.json <evaluation> of an IFEval result (judge_rl/reports/schema.py); a guarded result's metrics
    add what the checkers alone said (`checkers/<accuracy>`) and the share of responses the guard failed."""
    records = result["records"]
    official = {k: result[k] for k in OFFICIAL}
    metrics = {}
    if "checkers" in result:
        metrics = {f"checkers/{k}": float(v) for k, v in result["checkers"].items()}
        failed = result["guard_failures"]
        metrics["guard/failed_share"] = sum(failed.values()) / len(records) if records else float("nan")
        metrics.update({f"guard/{reason.replace(' ', '_')}": float(n) for reason, n in failed.items()})
    return {"official": official, "metrics": metrics, "ci": {k: ifeval_ci(records, k) for k in OFFICIAL},
            "counts": result["counts"], "by_category": result["by_category"]}  # fmt: skip


def ifeval_metrics(result: dict[str, Any], prefix: str = "ifeval") -> dict[str, float]:
    """The four accuracies as logged metrics (`ifeval/prompt_strict`, ...)."""
    short = {"prompt_level_strict_accuracy": "prompt_strict", "instruction_level_strict_accuracy": "instruction_strict",
             "prompt_level_loose_accuracy": "prompt_loose", "instruction_level_loose_accuracy": "instruction_loose"}
    return {f"{prefix}/{short[k]}": float(result[k]) for k in OFFICIAL}
