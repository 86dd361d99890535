"""What verl's reward workers graded, written where the policy job can read it back: one JSON line per sample.

On the local backend the grader runs in the job's own process and its counts go straight into each step's
metrics (judge_rl/policy/backend.py). On verl the grading happens in Ray reward workers
(judge_rl/policy/verl/reward_manager.py) whose failed samples never reach the trainer, so verl's own metrics
cannot count them: without this file the job's summary would say "0 failed samples" for a run whose judge failed.

The policy job names the file in `OUTCOMES_ENV` (forwarded to Ray's workers; <run_dir>/verl/reward_outcomes.jsonl,
which the workers can reach on one machine or with `cluster.shared_fs`); each reward worker appends, per sample:

    {"host": str, "pid": int, "time": float, "failed": 0|1, "reason": str | null,
     "judge": {"calls", "cache_hits", "prompt_tokens", "completion_tokens", "failures",
               "latency_p50_s", "latency_p95_s"}}      the process's judge calls so far (cumulative)

`read_outcomes(path)` sums them: samples and failures per reason from every line; judge call totals from each
process's last line. Counts cover every launch of the run (a resumed run's redone step graded again is counted
again) and are totals, not per step: a reward worker does not know verl's step.
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Mapping

from judge_rl.reports.jsonl import read_jsonl

OUTCOMES_ENV = "JUDGE_RL_REWARD_OUTCOMES"
OUTCOMES_FILE = "reward_outcomes.jsonl"
JUDGE_COUNTERS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "failures")
JUDGE_LATENCIES = ("latency_p50_s", "latency_p95_s")

_LOCK = threading.Lock()


def combine(parts: list[Mapping[str, Any]]) -> dict[str, float | None]:
    """Judge call totals over several {calls, ..., latency_p50_s, latency_p95_s} mappings: counters summed,
    latency percentiles the call-weighted mean (None without calls)."""
    out: dict[str, float | None] = {k: float(sum(p.get(k) or 0.0 for p in parts)) for k in JUDGE_COUNTERS}
    for k in JUDGE_LATENCIES:
        pairs = [(float(p[k]), float(p.get("calls") or 0.0)) for p in parts
                 if isinstance(p.get(k), (int, float)) and math.isfinite(p[k])]  # fmt: skip
        weight = sum(w for _, w in pairs)
        out[k] = sum(v * w for v, w in pairs) / weight if weight else None
    return out


def judge_totals(summaries: list[Mapping[str, float]]) -> dict[str, float | None]:
    """One process's judge calls so far, from its graders' `JudgeTelemetry.summary()`s."""
    return combine([{k: s.get(f"judge/{k}") for k in (*JUDGE_COUNTERS, *JUDGE_LATENCIES)} for s in summaries])


def record_outcome(failed: bool, reason: str | None, judge: Mapping[str, Any], path: str | None = None) -> None:
    """Append one sample's outcome to the file named by `OUTCOMES_ENV` (nothing when it is unset: a reward
    manager used outside the policy job)."""
    path = path or os.environ.get(OUTCOMES_ENV)
    if not path:
        return
    line = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "time": time.time(), "failed": int(failed),
                       "reason": reason, "judge": dict(judge)})  # fmt: skip
    with _LOCK, open(path, "a", encoding="utf-8") as f:  # one short write per line: appends from processes interleave whole
        f.write(line + "\n")


def read_outcomes(path: str | Path) -> dict[str, Any] | None:
    """The totals of an outcomes file (module docstring), or None when there is none. A torn last line (a worker
    killed mid-write) is left out; a damaged line elsewhere is an error naming the file and line
    (judge_rl/reports/jsonl.py)."""
    path = Path(path)
    if not path.is_file():
        return None
    samples, reasons, last = 0, Counter(), {}
    for i, row in enumerate(read_jsonl(path), 1):
        try:
            failed, process, judge = int(row["failed"]), (str(row["host"]), int(row["pid"])), dict(row["judge"])
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{path}: record {i} is not a reward outcome ({type(e).__name__}: {e})") from None
        samples += 1
        if failed:
            reasons[str(row.get("reason") or "unknown")] += 1
        last[process] = judge
    failures = sum(reasons.values())
    return {"samples": samples, "failures": failures, "rate": failures / samples if samples else None,
            "reasons": dict(reasons), "judge": combine(list(last.values())), "processes": len(last)}  # fmt: skip


def summary_sections(outcomes: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """`read_outcomes`' totals as the "judge" and "judge_failure" sections of the policy job's training summary
    (the shape `judge_rl.jobs.policy.training_summary` gives a local run), marked with their source."""
    source = f"verl reward workers ({OUTCOMES_FILE}; totals over every launch, not per step)"
    samples, failures = outcomes["samples"], outcomes["failures"]
    return {
        "judge": {**outcomes["judge"], "source": source},
        "judge_failure": {"samples": float(failures), "rate": outcomes["rate"], "dropped_samples": 0.0,
                          "trained_samples": float(samples - failures), "reasons": dict(outcomes["reasons"]),
                          "source": source},  # fmt: skip
    }
