"""What the pairwise benchmarks share: each row becomes one or more preference pairs, judged in both
orders by a pairwise judge (or, by a pointwise judge, each response scored alone), then scored as the
authors do (a `PairBenchmark` subclass's `official`).

Every pair is judged in both orders; an *outcome* is what one judgment says of the pair: "chosen",
"rejected", "tie" (a well-formed tie, or equal pointwise scores) or None (no readable verdict). The
official scores are computed from outcomes; where the authors run one random order (RewardBench), the
mean over both orders is the expectation of their score.

Also here: the harness's pairwise diagnostics (`harness_metrics`), sklearn's macro precision / recall / F1
(`macro_prf`, PandaLM and JudgeLM) and plain pairwise accuracy (`pairwise_benchmark_metrics`, LLMBar-format
sets and HH-RLHF).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Hashable, Iterable, Sequence

from judge_rl.data.loaders import MalformedRow, read_rows
from judge_rl.data.pairs import PreferencePair, both_orders, pointwise_items
from judge_rl.evaluation.benchmarks import Benchmark, Loaded, Task
from judge_rl.evaluation.metrics import mean_or_nan as _mean, metrics_by_source, pairwise_metrics, pointwise_metrics

Outcome = str | None  # "chosen" | "rejected" | "tie" | None


def pair_outcomes(records: Sequence[dict[str, Any]]) -> dict[str, list[tuple[str | None, Outcome]]]:
    """pair_id -> [(presentation, outcome)]: one per order for pairwise records (presentation = where the
    chosen response was shown), one per pair for pointwise records (presentation None; the pair's two
    scores compared, equal scores a tie, either unreadable None)."""
    out: dict[str, list[tuple[str | None, Outcome]]] = defaultdict(list)
    pointwise: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in records:
        if "chosen_position" in r:
            if r["parse_error"]:
                outcome = None
            elif r["winner"] == r["chosen_position"]:
                outcome = "chosen"
            elif r["winner"] in ("a", "b"):
                outcome = "rejected"
            else:
                outcome = "tie"
            out[r["pair_id"]].append((r["chosen_position"], outcome))
        else:
            pointwise[r["pair_id"]][r["which"]] = r
    for pair_id, both in pointwise.items():
        c, rj = both.get("chosen"), both.get("rejected")
        if c is None or rj is None or c["parse_error"] or rj["parse_error"]:
            outcome = None
        elif c["pred_score"] > rj["pred_score"]:
            outcome = "chosen"
        elif c["pred_score"] < rj["pred_score"]:
            outcome = "rejected"
        else:
            outcome = "tie"
        out[pair_id].append((None, outcome))
    return out


def harness_metrics(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The diagnostics every pairwise benchmark reports, overall and per subset."""
    if not records:
        return {"overall": {}, "by_subset": {}}
    fn = pairwise_metrics if "chosen_position" in records[0] else pointwise_metrics
    return {"overall": fn(records), "by_subset": metrics_by_source(records, fn)}


class PairBenchmark(Benchmark):
    """Rows -> preference pairs (source = subset); tasks in both orders; official score from outcomes."""

    dataset: str = ""
    default_subset: str | None = None  # the subset name when rows carry none (default: the pair source)
    # `(src, number, record) -> PreferencePair` for a benchmark whose row is one pair (data.loaders.pair_builder of
    # a row parser); a benchmark whose row holds several pairs overrides `build` instead
    build_pair = None

    def build(self, src: str, number: int, record: dict[str, Any]) -> list[PreferencePair]:
        """The pairs of one row: by default the one `build_pair` makes."""
        if self.build_pair is None:
            raise NotImplementedError(f"{type(self).__name__}: set build_pair (one pair a row) or override build")
        return [self.build_pair(src, number, record)]

    def row_subset(self, record: dict[str, Any]) -> str:
        raise MalformedRow("this benchmark has no subsets to select")

    def load(self, spec) -> Loaded:
        keep = None
        if spec.subsets:
            wanted = set(spec.subsets)
            keep = lambda record: self.row_subset(record) in wanted  # noqa: E731
        built, skipped = read_rows(
            spec.path,
            self.build,
            dataset=self.dataset or spec.name,
            split=spec.split,
            limit=spec.limit,
            on_error=spec.on_error,
            source=spec.source,
            hub_kwargs=spec.hub_kwargs,
            keep=keep,
        )
        return Loaded([pair for pairs in built for pair in pairs], skipped)

    def tasks(self, units: Sequence[PreferencePair], prompt, spec) -> list[Task]:
        if prompt.kind == "pairwise":
            items = both_orders(units)
        elif prompt.kind == "pointwise":
            items = pointwise_items(units)
        else:
            raise ValueError(
                f"benchmark {getattr(spec, 'name', 'pairs')} judges pairs: prompt {prompt.name!r} is a {prompt.kind} prompt; "
                "use a pairwise or pointwise prompt (judge.prompt=...)"
            )
        return [Task(item, prompt) for item in items]

    def score(self, units, records, spec) -> dict[str, Any]:
        pairs = {p.pair_id: p for p in units}
        return {"official": self.official(pairs, pair_outcomes(records)), "harness": harness_metrics(records)}

    def official(self, pairs: dict[str, PreferencePair], outcomes) -> dict[str, Any]:
        """Accuracy: the share of judgments preferring the chosen response (a tie or no verdict is wrong),
        overall and per subset."""
        per_pair = {pid: _mean([float(o == "chosen") for _, o in outs]) for pid, outs in outcomes.items()}
        by_subset: dict[str, list[float]] = defaultdict(list)
        for pid, acc in per_pair.items():
            by_subset[pairs[pid].source].append(acc)
        return {
            "accuracy": _mean(list(per_pair.values())),
            "by_subset": {s: _mean(v) for s, v in sorted(by_subset.items())},
        }


# ----------------------------------------------------------------------------- shared scoring


def macro_prf(
    y_true: Sequence[Hashable], y_pred: Sequence[Hashable], labels: Sequence[Hashable] | None = None
) -> dict[str, Any]:
    """Macro precision/recall/F1 and accuracy, as sklearn `precision_recall_fscore_support(average="macro")`
    and `accuracy_score`.

    Per class c: P = TP/(TP+FP), R = TP/(TP+FN), F1 = 2PR/(P+R); 0/0 -> 0 (sklearn's zero_division default
    result). Macro = unweighted mean over classes; macro F1 is the mean of per-class F1 (not the F1 of macro
    P and R). `labels=None` uses the sorted union of labels in y_true and y_pred, like sklearn; with explicit
    labels, predictions outside them (e.g. None for a parse failure) are no class's TP/FP but still a FN of
    the true class. Accuracy is over all items.
    """
    if len(y_true) != len(y_pred):
        raise ValueError("y_true and y_pred differ in length")
    if labels is None:
        labels = sorted(set(y_true) | set(y_pred), key=repr)
    per_class = {}
    for c in labels:
        tp = sum(1 for t, p in zip(y_true, y_pred) if t == c and p == c)
        fp = sum(1 for t, p in zip(y_true, y_pred) if t != c and p == c)
        fn = sum(1 for t, p in zip(y_true, y_pred) if t == c and p != c)
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        per_class[c] = {"precision": prec, "recall": rec, "f1": f1, "support": float(tp + fn)}
    return {
        "accuracy": _mean([float(t == p) for t, p in zip(y_true, y_pred)]),
        "precision": _mean([v["precision"] for v in per_class.values()]),
        "recall": _mean([v["recall"] for v in per_class.values()]),
        "f1": _mean([v["f1"] for v in per_class.values()]),
        "per_class": per_class,
    }


def pairwise_benchmark_metrics(records: Iterable[dict[str, Any]], by_source: bool = False) -> dict[str, Any]:
    """Pairwise accuracy for LLMBar, MT-Bench human judgments, FairEval, LLMEval^2 and HH-RLHF.

    Thin wrapper over `judge_rl.evaluation.metrics.pairwise_metrics` (records: pair_id, source,
    chosen_position, winner, parse_error, correct). These benchmarks report plain accuracy of the verdict
    against the human label; `accuracy` averages over both presentation orders, `consistent_accuracy`
    counts a pair only when both orders are right. ASSUMPTION: human-tie items (MT-Bench human, LLMEval^2,
    FairEval) were filtered out upstream, as in the papers that report 2-way accuracy on them.
    With `by_source=True` returns {"overall": ..., "by_source": {source: metrics}}.
    """
    records = list(records)
    if not by_source:
        return pairwise_metrics(records)
    return {"overall": pairwise_metrics(records), "by_source": metrics_by_source(records)}
