"""JudgeBench (ScalerLab/JudgeBench): rows {pair_id, question, response_A, response_B, label "A>B"|"B>A",
source}; both orders netted per pair, accuracy overall and per category.

Official scoring reproduced from ScalerLab/JudgeBench @e2c52c2 (`utils/metrics.py`).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from judge_rl.data.loaders import MalformedRow, require_text
from judge_rl.data.pairs import PreferencePair
from judge_rl.evaluation.benchmarks import register_benchmark
from judge_rl.evaluation.benchmarks.pairwise import PairBenchmark
from judge_rl.evaluation.metrics import mean_or_nan as _mean


def _judgebench_category(source: str) -> str:
    for category, prefix in JUDGEBENCH_CATEGORIES.items():
        if source.startswith(prefix):
            return category
    return source


@register_benchmark("judgebench")
class JudgeBenchBenchmark(PairBenchmark):
    """JudgeBench (ScalerLab/JudgeBench): both orders netted per pair (`utils/metrics.py`); accuracy over
    pairs, and per category by source prefix."""

    dataset = "judgebench"

    def row_subset(self, record):
        return _judgebench_category(require_text(record, "source"))

    def build(self, src, number, record):
        label = require_text(record, "label")
        if label not in ("A>B", "B>A"):
            raise MalformedRow(f"label must be 'A>B' or 'B>A', got {label!r}")
        a, b = require_text(record, "response_A"), require_text(record, "response_B")
        chosen, rejected = (a, b) if label == "A>B" else (b, a)
        source = require_text(record, "source")
        pair_id = record.get("pair_id", f"{src}-{number}")
        return [
            PreferencePair(f"judgebench-{pair_id}", _judgebench_category(source), require_text(record, "question"), chosen,
                           rejected, meta={"row": number, "label": label, "source": source})
        ]

    def official(self, pairs, outcomes):
        judged = []
        for pid, outs in outcomes.items():
            label = pairs[pid].meta["label"]
            verdict = {"chosen": label, "rejected": judgebench_flip(label), "tie": "A=B", None: None}
            a_first = "a" if label == "A>B" else "b"  # where the chosen response sits when A is shown first
            entry = {"label": label, "source": pairs[pid].meta["source"]}
            for presentation, outcome in outs:
                if presentation is None:  # pointwise: one comparison, the single-game rule
                    entry["verdict_order1"] = verdict[outcome]
                elif presentation == a_first:
                    entry["verdict_order1"] = verdict[outcome]
                else:  # the swapped run's raw verdict: its "A" is the original B
                    entry["verdict_order2"] = judgebench_flip(verdict[outcome])
            entry.setdefault("verdict_order1", None)
            judged.append(entry)
        return judgebench_accuracy(judged)


# ----------------------------------------------------------------------------- official scoring

JUDGEBENCH_DECISIONS = ("A>B", "B>A", "A=B")


def judgebench_flip(decision: str | None) -> str | None:
    """`flip` of ScalerLab/JudgeBench (utils): A>B <-> B>A; anything else (A=B, None) unchanged."""
    return {"A>B": "B>A", "B>A": "A>B"}.get(decision, decision) if decision is not None else None


def _vote(decision: str | None) -> int:
    return {"A>B": 1, "B>A": -1}.get(decision, 0) if decision is not None else 0


def judgebench_pair_decision(verdict_order1: str | None, verdict_order2: str | None) -> str:
    """Net decision of a JudgeBench pair judged in both orders, in the original (order-1) orientation.

    Reproduces the netting in ScalerLab/JudgeBench `utils/metrics.py`: the order-2 verdict (responses swapped) is flipped back; each verdict votes +1 for A, -1 for B,
    0 for a tie (A=B) or an unparsed verdict (None); the sum decides:
      A>B + A>B -> A>B;  A>B + A=B -> A>B;  A=B + A=B -> A=B;  A>B + B>A (inconsistent) -> A=B.
    Upstream counts a pair correct when this counter, signed toward the label, is > 0, which is exactly
    `judgebench_pair_decision(...) == label` since labels are only A>B or B>A.
    `verdict_order2` is the raw verdict of the swapped run ("A" there is original response B).
    """
    total = _vote(verdict_order1) + _vote(judgebench_flip(verdict_order2))
    return "A>B" if total > 0 else "B>A" if total < 0 else "A=B"


#: JudgeBench source prefixes, as `utils/metrics.py` filters them (`source.startswith(prefix)`); the category
#: names are the paper's (the code prints the prefixes).
JUDGEBENCH_CATEGORIES: dict[str, str] = {
    "knowledge": "mmlu-pro",
    "reasoning": "livebench-reasoning",
    "math": "livebench-math",
    "coding": "livecodebench",
}


def judgebench_accuracy(pairs: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """JudgeBench accuracy, overall and per category.

    Each pair: {"label": "A>B" | "B>A", "verdict_order1": ..., "verdict_order2": ... (raw verdict of the
    swapped-order run; leave the key out for a single-order run), "source": str}. A pair is correct iff
    `judgebench_pair_decision` equals the label. Overall is over all pairs (not a mean of categories);
    categories are matched by source prefix (JUDGEBENCH_CATEGORIES) and only reported when non-empty.
    Single-order runs (no "verdict_order2" key): correct iff verdict_order1 == label, as upstream's
    `reverse_order=False` branch.
    """
    pairs = list(pairs)

    def correct(p: Mapping[str, Any]) -> float:
        if p["label"] not in ("A>B", "B>A"):
            raise ValueError(f"JudgeBench labels are A>B or B>A, got {p['label']!r}")
        if "verdict_order2" not in p:
            return float(p["verdict_order1"] == p["label"])
        return float(judgebench_pair_decision(p["verdict_order1"], p["verdict_order2"]) == p["label"])

    out = {"accuracy": _mean([correct(p) for p in pairs]), "n_pairs": float(len(pairs))}
    for cat, prefix in JUDGEBENCH_CATEGORIES.items():
        sel = [correct(p) for p in pairs if str(p.get("source", "")).startswith(prefix)]
        if sel:
            out[cat] = _mean(sel)
    return out
