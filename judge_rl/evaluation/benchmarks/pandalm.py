"""PandaLM test set (WeOpenML/PandaLM `data/testset-v1.json`): rows {idx, instruction, input, response1,
response2, annotator1..3 | label}; macro precision / recall / F1 and accuracy over 3 classes with ties.

Official scoring reproduced from NuoJohnChen/JudgeLRM's PandaLM evaluation (`eval/pandalm/calculate_result.py`,
`judgelrm_inference.py`, `data/step1_label_testset_v1.py`).
"""

from __future__ import annotations

from typing import Any, Sequence

from judge_rl.data.loaders import MalformedRow, require_text
from judge_rl.data.pairs import PreferencePair
from judge_rl.evaluation.benchmarks import register_benchmark
from judge_rl.evaluation.benchmarks.pairwise import PairBenchmark, harness_metrics, macro_prf, pair_outcomes


@register_benchmark("pandalm")
class PandaLMBenchmark(PairBenchmark):
    """PandaLM test set (WeOpenML/PandaLM `data/testset-v1.json`): gold = majority of 3 annotators (or a
    `label` field), 0 a tie; precision / recall / F1 (macro over 0, 1, 2) and accuracy over every
    judgment (both orders). For a tie row the "chosen" slot holds response1; the harness's pairwise
    diagnostics leave tie rows out."""

    dataset = "pandalm"

    def build(self, src, number, record):
        if "label" in record and record["label"] is not None:
            gold = record["label"]
        else:
            try:
                gold = pandalm_gold_label([int(record[f"annotator{k}"]) for k in (1, 2, 3)])
            except (KeyError, TypeError, ValueError):
                raise MalformedRow("needs 'label' or integer 'annotator1'..'annotator3'") from None
        if gold not in PANDALM_LABELS:
            raise MalformedRow(f"label must be 0 (tie), 1 or 2, got {gold!r}")
        r1, r2 = require_text(record, "response1"), require_text(record, "response2")
        question = require_text(record, "instruction")
        extra = record.get("input")
        if isinstance(extra, str) and extra.strip():
            question = f"{question}\n\n{extra}"
        chosen, rejected = (r2, r1) if gold == 2 else (r1, r2)
        row_id = record.get("idx", number)
        subset = "tie" if gold == 0 else "preference"
        return [PreferencePair(f"pandalm-{row_id}", subset, question, chosen, rejected, meta={"row": number, "gold": gold})]

    def score(self, units, records, spec):
        pairs = {p.pair_id: p for p in units}
        non_tie = [r for r in records if pairs[r["pair_id"]].meta["gold"] != 0]
        return {"official": self.official(pairs, pair_outcomes(records)), "harness": harness_metrics(non_tie)}

    def official(self, pairs, outcomes):
        y_true, y_pred = [], []
        for pid, outs in outcomes.items():
            gold = pairs[pid].meta["gold"]
            chosen_label = 2 if gold == 2 else 1  # which original response sits in the "chosen" slot
            for _, outcome in outs:
                y_true.append(gold)
                # as JudgeLRM: a tie or an unreadable verdict predicts 0
                y_pred.append({"chosen": chosen_label, "rejected": 3 - chosen_label}.get(outcome, 0))
        return pandalm_metrics(y_true, y_pred)


# ----------------------------------------------------------------------------- official scoring

#: PandaLM label convention: 0 = tie, 1 = response 1 better, 2 = response 2 better.
PANDALM_LABELS = (0, 1, 2)


def pandalm_label(winner: str | None, parse_error: str = "") -> int:
    """Map a judgment record's verdict to a PandaLM label: "a" -> 1, "b" -> 2, a tie -> 0.

    As JudgeLRM scores PandaLM (`judgelrm_inference.py`) and as PandaLM's own parser does, an output that
    does not parse is predicted 0 (tie); the harness still counts it as a parse failure.
    """
    if parse_error:
        return 0
    return {"a": 1, "b": 2, None: 0}[winner]


def pandalm_gold_label(annotations: Sequence[int]) -> int:
    """The PandaLM test set's gold label: the majority of the three annotators (0 tie, 1, 2), the smallest
    label on a tied count (JudgeLRM `data/step1_label_testset_v1.py`, `majority_vote`)."""
    counts = {label: list(annotations).count(label) for label in set(annotations)}
    top = max(counts.values())
    return min(label for label, c in counts.items() if c == top)


def pandalm_metrics(y_true: Sequence[int], y_pred: Sequence[int | None]) -> dict[str, Any]:
    """PandaLM test set metrics: accuracy and macro precision/recall/F1 over the 3 classes (0 tie, 1, 2),
    as JudgeLRM's `eval/pandalm/calculate_result.py` computes them with sklearn (`average="macro"`).

    The three classes are fixed (labels=PANDALM_LABELS), so a class absent from a small sample still
    counts (P=R=F1=0); sklearn's macro average over the labels present agrees whenever all three occur,
    as on the full test set.
    """
    return macro_prf(y_true, y_pred, labels=PANDALM_LABELS)
