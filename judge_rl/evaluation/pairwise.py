"""Held-out evaluation of a judge: greedy judgments of every pair in both orders (pairwise judges) or of
each response alone (pointwise judges), saved as they come.

Each judgment is appended to a JSONL file as soon as its batch finishes. A re-run reads that file and
only judges items it lacks, matching on the item id and a hash of the exact prompt tokens, so a
changed prompt or tokenizer is judged anew rather than silently reused.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from judge_rl.data.pairs import JudgeItem, PointwiseItem, PreferencePair, both_orders, pointwise_items
from judge_rl.evaluation.metrics import metrics_by_source, pairwise_metrics, pointwise_metrics
from judge_rl.reports.console import progress_bar
from judge_rl.rollouts import encode_chat, generate


def prompt_hash(token_ids: Sequence[int]) -> str:
    return hashlib.sha256(json.dumps(list(token_ids)).encode()).hexdigest()[:16]


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """Saved records by item id; a line cut short by a crash is ignored (it will be judged again)."""
    records: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return records
    with path.open() as f:
        for line in f:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            records[r["item_id"]] = r
    return records


def judgment_fields(item: JudgeItem | PointwiseItem, j, binary_threshold: int = 2) -> dict[str, Any]:
    """What a record keeps of a parsed judgment, and whether it is right (for a binary label, a 0-4
    score of `binary_threshold` or more means "good", as in the pointwise reward)."""
    if isinstance(item, PointwiseItem):
        score = getattr(j, "score", None)
        if item.scale > 1:
            correct = j.ok and score == item.label
        else:
            correct = j.ok and int(score >= binary_threshold) == item.label
        return {
            "which": item.which,
            "label": item.label,
            "scale": item.scale,
            "pred_score": score if j.ok else -1,
            "parse_error": j.error or "",
            "correct": bool(correct),
        }
    return {
        "chosen_position": item.chosen_position,
        "gt_strength": item.pair.strength,
        "winner": j.winner,
        "strength": j.strength,
        "parse_error": j.error or "",
        "correct": bool(j.ok and j.winner == item.chosen_position),
    }


def evaluate_judge(
    model,
    tokenizer,
    messages_fn: Callable[[JudgeItem], list[dict[str, str]]],
    parse_fn: Callable[[str], Any],
    pairs: Sequence[PreferencePair],
    out_path: Path,
    *,
    batch_size: int,
    max_new_tokens: int,
    label: str = "eval",
    mode: str = "pairwise",
    binary_threshold: int = 2,
) -> dict[str, Any]:
    """Judge every pair in both orders (or, `mode="pointwise"`, each response); returns overall
    metrics, per-source metrics and the counts."""
    if mode not in ("pairwise", "pointwise"):
        raise ValueError(f"evaluation mode {mode!r}: expected pairwise or pointwise")
    items = both_orders(pairs) if mode == "pairwise" else pointwise_items(pairs)
    prompts = [encode_chat(tokenizer, messages_fn(it)) for it in items]
    hashes = [prompt_hash(p) for p in prompts]
    saved = read_records(out_path)
    todo = [i for i, it in enumerate(items) if saved.get(it.item_id, {}).get("prompt_hash") != hashes[i]]
    out_path.parent.mkdir(parents=True, exist_ok=True)
    chunk = batch_size * 2
    with progress_bar(f"judging ({label})", len(items)) as advance, out_path.open("a") as f:
        advance(len(items) - len(todo))
        for start in range(0, len(todo), chunk):
            idx = todo[start : start + chunk]
            gens = generate(
                model,
                tokenizer,
                [prompts[i] for i in idx],
                max_new_tokens=max_new_tokens,
                batch_size=batch_size,
                on_batch=advance,
            )
            for i, (g,) in zip(idx, gens):
                it = items[i]
                record = {
                    "item_id": it.item_id,
                    "pair_id": it.pair.pair_id,
                    "source": it.pair.source,
                    "prompt_hash": hashes[i],
                    "output": g.text,
                    "finished": g.finished,
                    **judgment_fields(it, parse_fn(g.text), binary_threshold),
                }
                saved[it.item_id] = record
                f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())
    records = [saved[it.item_id] for it in items]
    metrics_fn = pairwise_metrics if mode == "pairwise" else pointwise_metrics
    return {
        "overall": metrics_fn(records),
        "by_source": metrics_by_source(records, metrics_fn),
        "judged_now": len(todo),
        "reused": len(items) - len(todo),
    }
