"""Learning curves of an RL run as PNG files, from its logged steps (`metrics.jsonl` rows).

`write_plots(history, run_dir)` writes into `<run_dir>/plots/`:

  reward_curve.png     critic/score/mean per step (the band: the step's min..max score)
  heldout.png          the periodic held-out evaluation (trainer.eval_every) against step: every val/* rate
  a_preference.png     the share of verdicts naming Response (a): judge/a_preference of the sampled
                       rollouts and val/a_preference_rate of the held-out judgments, with 0.5 marked
  parse_failures.png   reward/parse_failure_rate and its split by reason (judge/parse_failure/<reason>)

A plot whose series are all empty is not written. Drawing uses matplotlib's Agg canvas through the
object API (no pyplot, no display, no global backend switch), so it runs headless and in threads.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

PLOTS_DIR = "plots"
# val/* keys that are not rates in [0, 1]: counts and pointwise mean scores stay out of the rates' plot
VAL_NOT_RATES = ("val/n_", "val/mean_score")


def series(history: Sequence[dict[str, Any]], key: str) -> tuple[list[float], list[float]]:
    """(steps, values) of `key` over the logged steps, in step order; steps without a finite value are skipped."""
    points = []
    for h in history:
        step, value = h.get("step", h.get("training/global_step")), h.get(key)
        if step is None or value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(float(value)):
            points.append((float(step), float(value)))
    points.sort()
    return [p[0] for p in points], [p[1] for p in points]


def _keys(history: Sequence[dict[str, Any]], prefix: str) -> list[str]:
    return sorted({k for h in history for k in h if k.startswith(prefix)})


def _figure(title: str, ylabel: str):
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(7, 4), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_xlabel("RL step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    return fig, ax


def _save(fig, path: Path, ax) -> Path:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _line(ax, xs, ys, label: str, **kw) -> None:
    # a single point is a marker, not an invisible zero-length line
    ax.plot(xs, ys, label=label, marker="o" if len(xs) <= 20 else None, markersize=3, **kw)


def reward_plot(history, out_dir: Path) -> Path | None:
    xs, ys = series(history, "critic/score/mean")
    if not xs:
        return None
    fig, ax = _figure("RL reward", "score")
    lo_x, lo = series(history, "critic/score/min")
    hi_x, hi = series(history, "critic/score/max")
    if lo_x == xs and hi_x == xs:
        ax.fill_between(xs, lo, hi, alpha=0.2, label="min..max")
    _line(ax, xs, ys, "critic/score/mean")
    return _save(fig, out_dir / "reward_curve.png", ax)


def heldout_plot(history, out_dir: Path) -> Path | None:
    keys = [k for k in _keys(history, "val/") if not k.startswith(VAL_NOT_RATES)]
    drawn = [(k, *series(history, k)) for k in keys]
    drawn = [d for d in drawn if d[1]]
    if not drawn:
        return None
    fig, ax = _figure("held-out judging by the live policy (both orders, greedy)", "rate")
    for key, xs, ys in drawn:
        _line(ax, xs, ys, key)
    ax.set_ylim(-0.05, 1.05)
    return _save(fig, out_dir / "heldout.png", ax)


def a_preference_plot(history, out_dir: Path) -> Path | None:
    drawn = [(k, *series(history, k)) for k in ("judge/a_preference", "val/a_preference_rate")]
    drawn = [d for d in drawn if d[1]]
    if not drawn:
        return None
    fig, ax = _figure("position bias: verdicts naming Response (a)", "share of parsed verdicts")
    for key, xs, ys in drawn:
        _line(ax, xs, ys, {"judge/a_preference": "rollouts (judge/a_preference)",
                           "val/a_preference_rate": "held-out (val/a_preference_rate)"}[key])
    ax.axhline(0.5, color="grey", linestyle="--", linewidth=1, label="no position bias")
    ax.set_ylim(-0.05, 1.05)
    return _save(fig, out_dir / "a_preference.png", ax)


def parse_failure_plot(history, out_dir: Path) -> Path | None:
    keys = ["reward/parse_failure_rate", *_keys(history, "judge/parse_failure/")]
    drawn = [(k, *series(history, k)) for k in keys]
    drawn = [d for d in drawn if d[1]]
    if not drawn:
        return None
    fig, ax = _figure("parse failures of the sampled judgments", "share of samples")
    for key, xs, ys in drawn:
        _line(ax, xs, ys, key.removeprefix("judge/parse_failure/"), linewidth=2.5 if key.startswith("reward/") else 1.2)
    ax.set_ylim(-0.05, 1.05)
    return _save(fig, out_dir / "parse_failures.png", ax)


PLOTS = (reward_plot, heldout_plot, a_preference_plot, parse_failure_plot)


def write_plots(history: list[dict], run_dir: Path) -> list[Path]:
    """Write the learning-curve PNGs of `history` (logged steps) under `<run_dir>/plots/`; the paths written."""
    out_dir = Path(run_dir) / PLOTS_DIR
    return [path for plot in PLOTS if (path := plot(history, out_dir)) is not None]
