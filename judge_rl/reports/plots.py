"""Learning curves of an RL run as PNG files, from its logged steps (`metrics.jsonl` rows).

`write_plots(history, run_dir)` writes into `<run_dir>/plots/`:

  reward_curve.png     critic/score/mean per step, its spread over the step's samples (mean +- std, within
                       min..max) and a running mean over the last RUNNING_MEAN steps: one step of 4 prompts is
                       noisy, the running mean shows the trend
  heldout.png          held-out accuracy and consistent accuracy: the live policy's periodic evaluation
                       (trainer.eval_every, on trainer.eval_subset pairs) against step, with the evaluation stages
                       as anchors (`Anchor`): the SFT init at step 0 (on the same subset, and on the full set) and
                       the final RL judge (full set) at the last step, so SFT and RL are on one figure
  a_preference.png     the share of verdicts naming Response (a): judge/a_preference of the sampled
                       rollouts and val/a_preference_rate of the held-out judgments, with 0.5 marked
  parse_failures.png   reward/parse_failure_rate and its split by reason (judge/parse_failure/<reason>)

A plot whose series are all empty is not written. Drawing uses matplotlib's Agg canvas through the
object API (no pyplot, no display, no global backend switch), so it runs headless and in threads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

PLOTS_DIR = "plots"
RUNNING_MEAN = 3  # steps in the reward's running mean
HELD_OUT_RATES = ("accuracy", "consistent_accuracy", "pairwise_accuracy")  # drawn in heldout.png (a/parse: own plots)


@dataclass(frozen=True)
class Anchor:
    """An evaluation stage drawn on heldout.png at `step`: its held-out metrics ({"accuracy": ..}), `label`led, and
    whether they are on the live evaluation's subset (same pairs as the curve) or the full held-out set."""

    label: str
    step: float
    metrics: dict[str, float]
    subset: bool


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


def _figure(title: str, ylabel: str, height: float = 4):
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(7, height), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_xlabel("RL step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    return fig, ax


def _save(fig, path: Path, ax, legend_below: bool = False) -> Path:
    if ax.get_legend_handles_labels()[0]:
        if legend_below:  # many entries: under the axes, never over the curves
            ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
        else:
            ax.legend(fontsize="small")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _line(ax, xs, ys, label: str, **kw) -> None:
    # a single point is a marker, not an invisible zero-length line
    ax.plot(xs, ys, label=label, marker="o" if len(xs) <= 20 else None, markersize=3, **kw)


def running_mean(values: Sequence[float], window: int = RUNNING_MEAN) -> list[float]:
    """The mean of each value and the up to `window - 1` before it."""
    return [sum(values[max(0, i - window + 1): i + 1]) / (i + 1 - max(0, i - window + 1)) for i in range(len(values))]


def reward_plot(history, out_dir: Path) -> Path | None:
    xs, ys = series(history, "critic/score/mean")
    if not xs:
        return None
    fig, ax = _figure("RL reward of the sampled judgments", "score")
    lo_x, lo = series(history, "critic/score/min")
    hi_x, hi = series(history, "critic/score/max")
    sd_x, sd = series(history, "critic/score/std")
    if sd_x == xs:  # the step's spread: mean +- std over its samples, never past the step's min..max
        low = [max(m - s, lo[i]) if lo_x == xs else m - s for i, (m, s) in enumerate(zip(ys, sd))]
        high = [min(m + s, hi[i]) if hi_x == xs else m + s for i, (m, s) in enumerate(zip(ys, sd))]
        ax.fill_between(xs, low, high, alpha=0.2, label="step mean +- std over its samples")
    elif lo_x == xs and hi_x == xs:
        ax.fill_between(xs, lo, hi, alpha=0.2, label="step min..max")
    _line(ax, xs, ys, "step mean (critic/score/mean)", linewidth=1, alpha=0.6)
    if len(xs) >= RUNNING_MEAN:
        ax.plot(xs, running_mean(ys), linewidth=2.5, color="black", label=f"running mean ({RUNNING_MEAN} steps)")
    return _save(fig, out_dir / "reward_curve.png", ax)


def heldout_plot(history, out_dir: Path, anchors: Sequence[Anchor] = ()) -> Path | None:
    drawn = [(k, *series(history, f"val/{k}")) for k in HELD_OUT_RATES]
    drawn = [d for d in drawn if d[1]]
    anchors = [Anchor(a.label, a.step, {k: float(v) for k, v in a.metrics.items() if isinstance(v, (int, float))
                                        and not isinstance(v, bool) and math.isfinite(v)}, a.subset)
               for a in anchors]  # a stage with no answered pair has NaN rates: not drawn  # fmt: skip
    anchors = [a for a in anchors if any(k in a.metrics for k in HELD_OUT_RATES)]
    if not drawn and not anchors:
        return None
    fig, ax = _figure("held-out judging (both orders, greedy)", "rate", height=5.2)
    colors = {}
    for key, xs, ys in drawn:  # the live policy on the subset, joined to the SFT init's value on the same pairs
        start = [a for a in anchors if a.subset and key in a.metrics and a.step < xs[0]]
        xs, ys = [a.step for a in start] + xs, [a.metrics[key] for a in start] + ys
        line = ax.plot(xs, ys, marker="o", markersize=3, label=f"{key}, live policy on the subset")[0]
        colors[key] = line.get_color()
    for a in anchors:
        if a.subset and drawn:
            continue  # drawn as the curve's first point
        for key in HELD_OUT_RATES:
            if key in a.metrics:
                ax.plot([a.step], [a.metrics[key]], marker="*" if "rl" in a.label.lower() else "D", markersize=10,
                        linestyle="none", color=colors.get(key), label=f"{key}, {a.label}")  # fmt: skip
                ax.annotate(f"{a.metrics[key]:.3f}", (a.step, a.metrics[key]), textcoords="offset points",
                            xytext=(6, -4 if key == "consistent_accuracy" else 4), fontsize="small")  # fmt: skip
    values = [v for _, _, ys in drawn for v in ys] + [a.metrics[k] for a in anchors for k in HELD_OUT_RATES if k in a.metrics]
    ax.set_ylim(max(0.0, math.floor(10 * min(values)) / 10 - 0.1), 1.02)  # the rates' range: differences visible
    return _save(fig, out_dir / "heldout.png", ax, legend_below=True)


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


def write_plots(history: list[dict], run_dir: Path, anchors: Sequence[Anchor] = ()) -> list[Path]:
    """Write the learning-curve PNGs of `history` (logged steps) under `<run_dir>/plots/`, the evaluation stages'
    `anchors` on heldout.png; the paths written."""
    out_dir = Path(run_dir) / PLOTS_DIR
    paths = [reward_plot(history, out_dir), heldout_plot(history, out_dir, anchors), a_preference_plot(history, out_dir),
             parse_failure_plot(history, out_dir)]  # fmt: skip
    return [p for p in paths if p is not None]
