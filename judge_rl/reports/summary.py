"""The end-of-run summary: held-out accuracy of each judge stage, the RL reward curve, and the plots written."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from rich.table import Table

from judge_rl.reports.console import console
from judge_rl.reports.schema import PAIRWISE_COLUMNS, POINTWISE_COLUMNS

COLUMNS = PAIRWISE_COLUMNS  # the held-out table of each judge stage


def _fmt(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.3f}"


def print_summary(
    evals: dict[str, dict[str, float]],
    curve: dict[str, float] | None,
    wall_s: float,
    mode: str = "pairwise",
    benchmarks: dict[str, dict[str, dict[str, float]]] | None = None,
    plots: Sequence[Path] = (),
) -> None:
    """The held-out table (one row per judge stage), then one table per published benchmark, the reward
    curve and the learning-curve files (`reports.plots.write_plots`)."""
    _stage_table(evals, mode, "held-out")
    for name, by_stage in (benchmarks or {}).items():
        _stage_table(by_stage, mode, name)
    if curve:
        console.print(
            f"RL reward curve: steps {int(curve['steps'])}, score first {_fmt(curve['first'])} -> last {_fmt(curve['last'])} "
            f"(mean of first / last {int(curve['window'])} steps: {_fmt(curve['first_mean'])} -> {_fmt(curve['last_mean'])})"
        )
    if plots:
        console.print(f"plots ({Path(plots[0]).parent}): {', '.join(Path(p).name for p in plots)}")
    console.print(f"wall time {wall_s:.0f} s")


def _stage_table(evals: dict[str, dict[str, float]], mode: str, what: str) -> None:
    if mode == "pointwise":
        columns = POINTWISE_COLUMNS
        table = Table(
            title=f"{what} judge quality, pointwise (each response scored alone, 0-4)",
            caption="pairwise acc: the better response of a pair scored strictly higher",
        )
    else:
        columns = COLUMNS
        table = Table(
            title=f"{what} judge quality, both orders (acc@a: better response shown first)",
            caption="consistent: right in both orders; pos.cons: same response picked in both orders",
        )
    table.add_column("judge")
    for _, title in columns:
        table.add_column(title, justify="right")
    table.add_column("pairs", justify="right")
    for name, m in evals.items():
        table.add_row(name, *[_fmt(m.get(k)) for k, _ in columns], str(int(m.get("n_pairs", 0))))
    console.print(table)


def reward_curve(history: list[dict[str, Any]], key: str = "critic/score/mean") -> dict[str, float] | None:
    scores = [h[key] for h in sorted(history, key=lambda h: h["step"]) if h.get(key) is not None]
    if not scores:
        return None
    w = max(1, min(3, len(scores) // 2))
    return {
        "steps": float(len(scores)),
        "first": scores[0],
        "last": scores[-1],
        "window": float(w),
        "first_mean": sum(scores[:w]) / w,
        "last_mean": sum(scores[-w:]) / w,
    }


def metric_mean(history: list[dict[str, Any]], key: str) -> float | None:
    """The mean of `key` over the metrics rows that logged it as a number (None when none did)."""
    vals = [h[key] for h in history if isinstance(h.get(key), (int, float))]
    return float(np.mean(vals)) if vals else None


def reward_summary(history: list[dict[str, Any]]) -> dict[str, Any]:
    """What both jobs' results.json say of an RL run's reward and pace, from its metrics rows: the reward curve (when
    any step has a reward), each step's mean reward in step order, and the mean seconds a step (None without timings)."""
    rows = sorted(history, key=lambda h: h["step"])
    out: dict[str, Any] = {"rewards": [h.get("critic/score/mean") for h in rows],
                           "seconds_per_step": metric_mean(rows, "timing_s/step")}  # fmt: skip
    curve = reward_curve(rows)
    return {"reward_curve": curve, **out} if curve else out
