"""Pairwise judge metrics from per-item records, in both orders.

A pair is judged twice, the better response shown at (a) and then at (b). Besides accuracy per order,
`consistent_accuracy` counts a pair only when both verdicts are right (the metric Think-J and JudgeLRM
report for position robustness), and `position_consistency` is the share of pairs whose two verdicts
pick the same underlying response. A verdict that does not parse is wrong, and is counted.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable


def mean_or_nan(xs: Iterable[float]) -> float:
    """The mean, or NaN for no values (a metric with nothing to average is undefined, not 0)."""
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def pairwise_metrics(records: Iterable[dict[str, Any]]) -> dict[str, float]:
    records = list(records)
    by_pair: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in records:
        by_pair[r["pair_id"]][r["chosen_position"]] = r
    parsed = [r for r in records if not r["parse_error"]]
    full_pairs = [p for p in by_pair.values() if len(p) == 2]
    both_parsed = [p for p in full_pairs if not p["a"]["parse_error"] and not p["b"]["parse_error"]]
    return {
        "accuracy": mean_or_nan([float(r["correct"]) for r in records]),
        "accuracy_a": mean_or_nan([float(r["correct"]) for r in records if r["chosen_position"] == "a"]),
        "accuracy_b": mean_or_nan([float(r["correct"]) for r in records if r["chosen_position"] == "b"]),
        "consistent_accuracy": mean_or_nan([float(p["a"]["correct"] and p["b"]["correct"]) for p in full_pairs]),
        # same underlying response picked in both orders <=> the letter flips between orders
        "position_consistency": mean_or_nan([float(p["a"]["winner"] != p["b"]["winner"]) for p in both_parsed]),
        "a_preference_rate": mean_or_nan([float(r["winner"] == "a") for r in parsed]),
        # length bias: how often a verdict names the longer response, beside how often the better one is the longer
        "longer_preference_rate": mean_or_nan([float(r["winner"] == r["longer_position"]) for r in parsed
                                               if r.get("longer_position") is not None]),
        "gold_longer_rate": mean_or_nan([float(r["chosen_position"] == r["longer_position"]) for r in records
                                         if r.get("longer_position") is not None]),
        "parse_failure_rate": mean_or_nan([float(bool(r["parse_error"])) for r in records]),
        "n_items": float(len(records)),
        "n_pairs": float(len(by_pair)),
    }


def metrics_by_source(records: Iterable[dict[str, Any]], metrics_fn=None) -> dict[str, dict[str, float]]:
    metrics_fn = metrics_fn or pairwise_metrics
    groups: dict[str, list] = defaultdict(list)
    for r in records:
        groups[r["source"]].append(r)
    return {source: metrics_fn(rs) for source, rs in sorted(groups.items())}


def pointwise_metrics(records: Iterable[dict[str, Any]]) -> dict[str, float]:
    """A pointwise judge scores each response alone. Besides exact and within-1 accuracy of the score,
    the two responses of a pair are compared by their scores: `pairwise_accuracy` counts the pair when
    the chosen response scores strictly higher (a tie is not a preference, and is reported)."""
    records = list(records)
    by_pair: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in records:
        by_pair[r["pair_id"]][r["which"]] = r
    parsed = [r for r in records if not r["parse_error"]]
    graded = [r for r in parsed if r["scale"] > 1]
    full = [p for p in by_pair.values() if len(p) == 2]
    both = [p for p in full if not p["chosen"]["parse_error"] and not p["rejected"]["parse_error"]]
    prefers_chosen = [float(p["chosen"]["pred_score"] > p["rejected"]["pred_score"]) for p in both]
    return {
        "score_accuracy": mean_or_nan([float(r["correct"]) for r in records]),
        "within_1_accuracy": mean_or_nan([float(abs(r["pred_score"] - r["label"]) <= 1) for r in graded])
        if graded
        else float("nan"),
        # a pair with an unparsed score is not a preference: it counts as wrong
        "pairwise_accuracy": sum(prefers_chosen) / len(full) if full else float("nan"),
        "pairwise_tie_rate": mean_or_nan([float(p["chosen"]["pred_score"] == p["rejected"]["pred_score"]) for p in both]),
        "mean_score_chosen": mean_or_nan([float(r["pred_score"]) for r in parsed if r["which"] == "chosen"]),
        "mean_score_rejected": mean_or_nan([float(r["pred_score"]) for r in parsed if r["which"] == "rejected"]),
        "parse_failure_rate": mean_or_nan([float(bool(r["parse_error"])) for r in records]),
        "n_items": float(len(records)),
        "n_pairs": float(len(by_pair)),
    }


def consistent_by_pair(records: Iterable[dict[str, Any]]) -> dict[str, float]:
    """pair_id -> 1.0 when the verdicts of both orders are right, else 0.0 (pairs judged in both orders)."""
    by_pair: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in records:
        by_pair[r["pair_id"]][r["chosen_position"]] = r
    return {pid: float(p["a"]["correct"] and p["b"]["correct"]) for pid, p in by_pair.items() if len(p) == 2}


def paired_bootstrap(before: dict[str, float], after: dict[str, float], *, n_boot: int = 4000, seed: int = 0,
                     level: float = 0.95) -> dict[str, float]:
    """The difference of means `after - before` over the units both have (e.g. pairs' both-order
    correctness of two judges on the same held-out pairs), with a percentile interval from resampling the
    units with replacement (a paired bootstrap: each resample keeps a unit's two values together)."""
    import numpy as np

    units = sorted(set(before) & set(after))
    if not units:
        return {"diff": float("nan"), "low": float("nan"), "high": float("nan"), "n": 0.0}
    d = np.array([after[u] - before[u] for u in units])
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    tail = (1 - level) / 2
    return {"diff": float(d.mean()), "low": float(np.quantile(means, tail)), "high": float(np.quantile(means, 1 - tail)),
            "n": float(len(d)), "level": level}
