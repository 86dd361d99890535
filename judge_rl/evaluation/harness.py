"""The evaluation harness: judge every task of a benchmark through a server, save each
judgment as it comes, and score the records as the benchmark's authors do.

Why it is built this way:
- Per-item JSONL (`judgments.jsonl`): one record per task with the request key (a hash of the judge,
  the rendered prompt and the generation budget), the raw output and the parsed verdict. Records are
  appended per chunk and fsynced, so a crash loses at most one chunk; a half-written last line is
  ignored.
- Resume and deduplication: a re-run reuses a saved record whose item id *and* request key match, and
  a request identical to one already answered (same key, another item, e.g. the same response rated
  twice) is answered from that answer instead of being sent again. A changed prompt, model or budget
  changes the key, so nothing stale is reused. Engine failures are saved and counted but never reused:
  the next run asks again.
- Parsing happens when records are built, from the saved raw output, so a record's verdict always
  matches the current parser.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from judge_rl.data.pairs import ChoiceItem, JudgeItem, PointwiseItem, PreferencePair, RatedAnswer
from judge_rl.evaluation.benchmarks import Benchmark, Task
from judge_rl.servers import Completion
from judge_rl.prompts import Judgment
from judge_rl.reports.console import console, progress_bar
from judge_rl.reports.jsonl import open_for_append, read_jsonl
from judge_rl.rewards import build_reward
from judge_rl.rewards.base import PointwiseTruth

SERVER_ERROR = "server error"


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """Saved records by item id (the last one wins); a line cut short by a crash is dropped. Records saved
    before servers were named servers carry `engine_error`: read as `server_error`, so they are retried."""
    records = {r["item_id"]: r for r in read_jsonl(path) if isinstance(r, dict) and "item_id" in r}
    for r in records.values():
        if "engine_error" in r:
            r["server_error"] = r.pop("engine_error")
    return records


def judgment_fields(item: JudgeItem | PointwiseItem, j: Judgment, reward=None) -> dict[str, Any]:
    """What a record keeps of a parsed pairwise or pointwise judgment, and whether it is right. A pointwise
    score is read on the label's scale by the pointwise reward (`reward.on_label_scale`), the same rule
    training is paid by."""
    if isinstance(item, PointwiseItem):
        score = j.score if j.ok else None
        correct = False
        if score is not None:
            if reward is None or not hasattr(reward, "on_label_scale"):
                reward = build_reward("pointwise")
            correct = reward.on_label_scale(score, PointwiseTruth(item.label, item.scale)) == item.label
        return {
            "pair_id": item.pair.pair_id,
            "source": item.pair.source,
            "which": item.which,
            "label": item.label,
            "scale": item.scale,
            "pred_score": score if score is not None else -1,
            "parse_error": j.error or "",
            "correct": bool(correct),
        }
    return {
        "pair_id": item.pair.pair_id,
        "source": item.pair.source,
        "chosen_position": item.chosen_position,
        "gt_strength": item.pair.strength,
        # where the longer response is shown (characters), None for equal lengths: the judge's length preference
        "longer_position": _longer_position(item.response_a, item.response_b),
        "winner": j.winner,
        "strength": j.strength,
        "scores": list(j.scores) if j.scores is not None else None,
        "parse_error": j.error or "",
        "correct": bool(j.ok and j.winner == item.chosen_position),
    }


def _longer_position(a: str, b: str) -> str | None:
    return None if len(a) == len(b) else "a" if len(a) > len(b) else "b"


def parse_task(task: Task, completion: Completion) -> Judgment:
    if not completion.ok:
        return Judgment.failure(f"{SERVER_ERROR}: {completion.error}")
    if isinstance(task.item, ChoiceItem):
        return task.prompt.parse(completion.text, n_answers=len(task.item.answers))
    return task.prompt.parse(completion.text)


def build_record(task: Task, key: str, completion: Completion, reward=None) -> dict[str, Any]:
    j = parse_task(task, completion)
    record: dict[str, Any] = {
        "item_id": task.item_id,
        "request_key": key,
        "prompt_name": task.prompt.name,
        "output": completion.text,
        "server_error": completion.error or "",
        "finished": completion.finished,
        **task.fields,
    }
    item = task.item
    if isinstance(item, (JudgeItem, PointwiseItem)):
        record.update(judgment_fields(item, j, reward))
    elif isinstance(item, RatedAnswer):
        record.update(pred_score=j.score if j.ok else None, parse_error=j.error or "")
    elif isinstance(item, ChoiceItem):
        picked = None
        if j.ok:
            picked = item.order["abcdefghijklmnopqrstuvwxyz".index(j.winner)]
        record.update(pick=j.winner, picked_index=picked, parse_error=j.error or "")
    else:
        raise TypeError(f"cannot record a {type(item).__name__}")
    return record


def _saved_completion(record: dict[str, Any]) -> Completion:
    return Completion(text=record["output"], error=record.get("server_error") or None, finished=record.get("finished", True))


@dataclass
class JudgeRun:
    records: list[dict[str, Any]]
    counts: dict[str, int]


def judge_tasks(
    server,
    tasks: Sequence[Task],
    path: Path,
    *,
    max_new_tokens: int,
    chunk_size: int = 64,
    label: str = "judging",
    reward=None,
) -> JudgeRun:
    """Records for `tasks`, in order: reused from `path`, answered from an identical request, or judged
    now (in chunks of `chunk_size` distinct requests, each chunk saved before the next is sent)."""
    messages = [t.prompt.messages(t.item) for t in tasks]
    keys = [server.request_key(m, max_new_tokens) for m in messages]
    ids = [t.item_id for t in tasks]
    if len(set(ids)) != len(ids):
        dup = next(i for i, c in Counter(ids).items() if c > 1)
        raise ValueError(f"{label}: two tasks share the item id {dup!r}")
    saved = read_records(path)
    answered = {r["request_key"]: r for r in saved.values() if not r.get("server_error") and "request_key" in r}
    records: list[dict[str, Any] | None] = [None] * len(tasks)
    pending: dict[str, list[int]] = {}
    fresh: list[int] = []  # records built from another item's answer: saved under their own id
    reused = 0
    for i, (task, key) in enumerate(zip(tasks, keys)):
        old = saved.get(task.item_id)
        if old is not None and old.get("request_key") == key and not old.get("server_error"):
            records[i] = build_record(task, key, _saved_completion(old), reward)
            reused += 1
        elif key in answered:
            records[i] = build_record(task, key, _saved_completion(answered[key]), reward)
            fresh.append(i)
        else:
            pending.setdefault(key, []).append(i)
    todo = list(pending)
    n_items_todo = sum(len(v) for v in pending.values())
    path.parent.mkdir(parents=True, exist_ok=True)
    server_failures = 0
    with progress_bar(f"{label}", len(todo)) as advance, open_for_append(path) as f:
        if fresh:
            f.writelines(json.dumps(records[i]) + "\n" for i in fresh)
        if hasattr(server, "on_batch"):
            server.on_batch = advance
        try:
            for start in range(0, len(todo), chunk_size):
                chunk = todo[start : start + chunk_size]
                completions = server.complete([messages[pending[k][0]] for k in chunk], max_new_tokens=max_new_tokens)
                if not hasattr(server, "on_batch"):
                    advance(len(chunk))
                for key, completion in zip(chunk, completions):
                    server_failures += not completion.ok
                    for i in pending[key]:
                        records[i] = build_record(tasks[i], key, completion, reward)
                        f.write(json.dumps(records[i]) + "\n")
                f.flush()
                os.fsync(f.fileno())
        finally:
            if hasattr(server, "on_batch"):
                server.on_batch = None
    counts = {
        "items": len(tasks),
        "reused": reused,
        "requests_sent": len(todo),
        "judged_now": n_items_todo,
        # items answered by an identical request instead of their own
        "deduplicated": len(fresh) + n_items_todo - len(todo),
        "server_failures": server_failures,
    }
    return JudgeRun(records, counts)  # type: ignore[arg-type]


def failure_reasons(records: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Unparsed judge outputs by reason. A request the server never answered has no output to parse: it
    is a server failure (`counts.server_failures`), not a parse failure."""
    reasons = Counter(r["parse_error"] for r in records if r["parse_error"] and not r.get("server_error"))
    return dict(reasons.most_common())


def unit_key(unit) -> str:
    """A benchmark unit's id: a preference pair's, or a multi-answer row's (RewardBench 2)."""
    return unit.pair_id if isinstance(unit, PreferencePair) else unit.unit_id


def task_unit(task: Task) -> str:
    return task.fields.get("unit_id") or task.item.pair.pair_id


def record_unit(record: dict[str, Any]) -> str:
    return record.get("unit_id") or record["pair_id"]


class ScoreWithheld(RuntimeError):
    """Too many requests got no answer from the server for a score to stand; the summary was written."""


def fit_context(server, tasks: Sequence[Task], max_new_tokens: int, what: str) -> tuple[list[Task], dict[str, str]]:
    """Leave out every unit with a task whose prompt, with `max_new_tokens`, exceeds the server's model
    context (servers that know it: `server.too_long`), and say how many: such a request would run for
    minutes and fail, taking the good requests of its chunk with it."""
    too_long_fn = getattr(server, "too_long", None)
    if too_long_fn is None:
        return list(tasks), {}
    too_long: dict[str, str] = {}
    for t in tasks:
        unit = task_unit(t)
        if unit not in too_long:
            reason = too_long_fn(t.prompt.messages(t.item), max_new_tokens)
            if reason:
                too_long[unit] = reason
    if too_long:
        n_units = len({task_unit(t) for t in tasks})
        first = next(iter(too_long.items()))
        console.print(f"[yellow]{what}: {len(too_long)} of {n_units} units exceed the judge's context and are left out, "
                      f"e.g. {first[0]}: {first[1]}[/yellow]")
        if len(too_long) == n_units:
            raise ValueError(f"{what}: every unit exceeds the judge's context (e.g. {first[0]}: {first[1]})")
    return [t for t in tasks if task_unit(t) not in too_long], too_long


# how servers refuse a prompt longer than their context: vLLM (offline and its HTTP server), OpenAI's API,
# llama.cpp's server, judge_rl.servers.http
CONTEXT_REFUSAL = re.compile(r"maximum context length|context_length_exceeded|exceeds? the available context|"
                             r"prompt contains at least \d+ input tokens", re.I)


def refused_as_too_long(records: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The units a server refused as longer than its context (an endpoint whose context this process could not
    learn before sending, `fit_context`), by unit id with the server's reason: too long, like the ones left out
    before sending, not a server failure that withholds the score."""
    out: dict[str, str] = {}
    for r in records:
        error = r.get("server_error") or ""
        if error and CONTEXT_REFUSAL.search(error):
            out.setdefault(record_unit(r), f"refused by the server: {' '.join(error.split())[:300]}")
    return out


def _move_refused(run: JudgeRun, too_long: dict[str, str], what: str) -> None:
    """Count the units the server refused as too long (`refused_as_too_long`) with the too-long ones, not as failures."""
    refused = refused_as_too_long(run.records)
    if not refused:
        return
    first = next(iter(refused.items()))
    console.print(f"[yellow]{what}: the server refused {len(refused)} units as longer than its context, e.g. "
                  f"{first[0]}: {first[1]}[/yellow]")
    run.counts["server_failures"] -= sum(record_unit(r) in refused and bool(r.get("server_error")) for r in run.records)
    too_long.update(refused)


def answered_units(units: Sequence[Any], records: Sequence[dict[str, Any]], max_failure_rate: float):
    """Split off the units any of whose requests got no answer (a server failure is not a verdict, and
    never takes a benchmark's credit for a tie or an unreadable output). Returns the units and records to
    score, and the `scoring` block of the summary: "complete" (every unit answered), "answered_only"
    (scores cover the answered units; failure rate <= max_failure_rate) or "withheld" (no score)."""
    failed = {record_unit(r) for r in records if r.get("server_error")}
    kept_units = [u for u in units if unit_key(u) not in failed]
    n_failed = len(units) - len(kept_units)
    rate = n_failed / len(units) if units else 0.0
    if not n_failed:
        status = "complete"
    elif rate > max_failure_rate or not kept_units:
        status = "withheld"
    else:
        status = "answered_only"
    scoring = {
        "status": status,
        "units": len(units),
        "units_scored": 0 if status == "withheld" else len(kept_units),
        "units_without_answer": n_failed,
        "server_failure_rate": rate,
        "max_server_failure_rate": max_failure_rate,
    }
    if status == "withheld":
        scoring["reason"] = (f"{n_failed} of {len(units)} units got no answer from the server (rate {rate:.3f} > "
                             f"eval.max_server_failure_rate={max_failure_rate}): the score is withheld")
        return [], [], scoring
    return kept_units, [r for r in records if record_unit(r) not in failed], scoring


def evaluate_benchmark(
    benchmark: Benchmark,
    spec,
    server,
    prompt,
    out_dir: Path,
    *,
    max_new_tokens: int,
    chunk_size: int = 64,
    reward=None,
    label: str | None = None,
    max_server_failure_rate: float = 0.0,
) -> dict[str, Any]:
    """Load, judge, score and save one benchmark; returns (and writes to out_dir/summary.json) the
    summary: official scores, harness diagnostics, the `scoring` status (which units the scores cover),
    counts, parse-failure reasons, timing. Scores cover only units whose every request was answered;
    above `max_server_failure_rate` unanswered units they are withheld (None)."""
    t0 = time.perf_counter()
    loaded = benchmark.load(spec)
    if loaded.skipped:
        console.print(f"[yellow]benchmark {spec.name}: skipped {len(loaded.skipped)} malformed rows, e.g. {loaded.skipped[0]}[/yellow]")
    if not loaded.units:
        raise ValueError(f"benchmark {spec.name}: {spec.path} gave no rows (subsets={list(spec.subsets)}, limit={spec.limit})")
    tasks, too_long = fit_context(server, benchmark.tasks(loaded.units, prompt, spec), max_new_tokens, f"benchmark {spec.name}")
    run = judge_tasks(
        server, tasks, out_dir / "judgments.jsonl", max_new_tokens=max_new_tokens, chunk_size=chunk_size,
        label=label or f"judging {spec.name}", reward=reward,
    )
    _move_refused(run, too_long, f"benchmark {spec.name}")
    units = [u for u in loaded.units if unit_key(u) not in too_long]
    records = [r for r in run.records if record_unit(r) not in too_long]
    scored_units, scored_records, scoring = answered_units(units, records, max_server_failure_rate)
    if scoring["status"] == "withheld":
        scores: dict[str, Any] = {"official": None, "harness": {"overall": {}, "by_subset": {}}}
    else:
        scores = benchmark.score(scored_units, scored_records, spec)
    seconds = time.perf_counter() - t0
    summary = {
        "benchmark": spec.name,
        "kind": benchmark.kind,
        "path": str(spec.path),
        "judge": getattr(server, "identity", repr(server)),
        "prompt": prompt.name,
        "max_new_tokens": max_new_tokens,
        "scoring": scoring,
        **scores,
        "counts": {
            **run.counts,
            "units": len(loaded.units),
            "skipped_rows": len(loaded.skipped),
            "too_long_units": len(too_long),
            "parse_failures": sum(bool(r["parse_error"]) and not r.get("server_error") for r in records),
        },
        "parse_failure_reasons": failure_reasons(records),
        "skipped_rows": loaded.skipped[:20],
        "too_long": dict(list(too_long.items())[:20]),
        "seconds": seconds,
        "requests_per_s": run.counts["requests_sent"] / seconds if run.counts["requests_sent"] else None,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def evaluate_pairs(
    server,
    prompt,
    pairs: Sequence[PreferencePair],
    out_path: Path,
    *,
    max_new_tokens: int,
    chunk_size: int = 64,
    reward=None,
    label: str = "eval",
    max_server_failure_rate: float = 0.0,
) -> dict[str, Any]:
    """Held-out pairs (the main job's `data.eval`): every pair in both orders, or each response alone for a
    pointwise prompt; returns overall and per-source metrics over the answered pairs (empty when
    withheld, see `answered_units`), the `scoring` status and the counts."""
    from judge_rl.evaluation.benchmarks.pairwise import PairBenchmark, harness_metrics

    tasks, too_long = fit_context(server, PairBenchmark().tasks(pairs, prompt, spec=None), max_new_tokens, label)
    run = judge_tasks(server, tasks, out_path, max_new_tokens=max_new_tokens, chunk_size=chunk_size,
                      label=f"judging ({label})", reward=reward)
    _move_refused(run, too_long, label)
    kept = [p for p in pairs if p.pair_id not in too_long]
    records = [r for r in run.records if record_unit(r) not in too_long]
    _, scored_records, scoring = answered_units(kept, records, max_server_failure_rate)
    metrics = harness_metrics(scored_records)
    return {
        "overall": metrics["overall"],
        "by_source": metrics["by_subset"],
        "scoring": scoring,
        "judged_now": run.counts["judged_now"],
        "reused": run.counts["reused"],
        "counts": {**run.counts, "too_long_units": len(too_long)},
        "parse_failure_reasons": failure_reasons(records),
        "too_long": dict(list(too_long.items())[:20]),
    }
