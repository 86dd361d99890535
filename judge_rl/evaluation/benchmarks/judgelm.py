"""JudgeLM's validation set (baaivision/JudgeLM; hub dataset BAAI/JudgeLM-100K): rows {question_id,
question_body, answer1_body, answer2_body, score [s1, s2] | text "s1 s2"}; agreement, macro P/R/F1 over the
labels present, swap consistency. A PandaLM benchmark (gold 0 a tie, the harness's diagnostics over non-tie
rows) with its own rows and its own official numbers, as JudgeLM's `eval_model_judgement.py` computes them.
"""

from __future__ import annotations

from typing import Any

from judge_rl.data.loaders import MalformedRow, read_rows, require_text
from judge_rl.data.pairs import PreferencePair
from judge_rl.evaluation.benchmarks import Loaded, register_benchmark
from judge_rl.evaluation.benchmarks.pandalm import PandaLMBenchmark
from judge_rl.evaluation.benchmarks.pairwise import macro_prf
from judge_rl.evaluation.metrics import mean_or_nan as _mean


@register_benchmark("judgelm")
class JudgeLMBenchmark(PandaLMBenchmark):
    """JudgeLM's validation set (baaivision/JudgeLM; hub dataset BAAI/JudgeLM-100K), the other benchmark
    JudgeLRM reports: a question, two answers and the reference judge's (GPT-4's) two scores per row.

    Rows: `{question_id, question_body, answer1_body, answer2_body, score: [s1, s2]}` (the train format, or
    val rows merged with their judgments). `judgelm_val_5k.jsonl` alone holds generation statistics under
    `score`, not judgments: `benchmark.options.labels` names `judgelm_val_5k_gpt4.jsonl` (a local file, or
    `hf://datasets/BAAI/JudgeLM-100K/judgelm_val_5k_gpt4.jsonl` online), joined by `question_id`; its first
    line of `text` ("8 7") is the pair of scores, as JudgeLM's `parse_score` reads it (`score` if no text).

    Scored as JudgeLM's `eval_model_judgement.calculate_metrics` and JudgeLRM do: the gold label is answer 1
    better (s1 > s2), answer 2 better, or a tie (equal scores); rows whose reference did not parse ([-1, -1])
    are dropped, as JudgeLM drops them. A verdict predicts answer 1 or 2; a tie or an unreadable verdict
    predicts a tie (JudgeLM's `[-1, -1]` difference 0). `agreement` is the accuracy, precision / recall / F1
    are sklearn's macro averages over the labels present (its default), over every judgment (both orders).
    `consistency` is JudgeLM's swap consistency: the share of pairs whose two orders name the same answer
    (or both a tie). Here labels are 1, 2 and 0 (tie); JudgeLM writes 1, -1 and 0."""

    dataset = "judgelm"

    def load(self, spec) -> Loaded:
        self.labels = self._read_labels(spec.options.get("labels")) if spec.options.get("labels") else None
        return super().load(spec)

    def _read_labels(self, where: str) -> dict[str, tuple[float, float]]:
        path = _hub_file(where)

        def build(src, number, record):
            if "question_id" not in record:
                raise MalformedRow("a judgment row needs 'question_id'")
            return str(record["question_id"]), judgelm_scores(record)

        rows, _ = read_rows(path, build, dataset="judgelm", split="train", limit=None, on_error="raise",
                            source=None, hub_kwargs=None)
        return dict(rows)

    def build(self, src, number, record):
        qid = str(record.get("question_id", number))
        if self.labels is not None:
            if qid not in self.labels:
                raise MalformedRow(f"question_id {qid} has no row in benchmark.options.labels")
            s1, s2 = self.labels[qid]
        else:
            s1, s2 = judgelm_scores(record)
        if s1 == -1 and s2 == -1:
            raise MalformedRow("the reference judgment did not parse (scores -1 -1); JudgeLM drops such rows")
        gold = 1 if s1 > s2 else 2 if s2 > s1 else 0
        question = require_text(record, "question_body")
        a1, a2 = require_text(record, "answer1_body"), require_text(record, "answer2_body")
        chosen, rejected = (a2, a1) if gold == 2 else (a1, a2)
        subset = "tie" if gold == 0 else "preference"
        return [PreferencePair(f"judgelm-{qid}", subset, question, chosen, rejected,
                               meta={"row": number, "gold": gold, "reference_scores": [s1, s2]})]

    # score (PandaLM's): official metrics over every judgment, the harness's diagnostics over non-tie rows

    def official(self, pairs, outcomes):
        y_true, y_pred, same = [], [], []
        for pid, outs in outcomes.items():
            gold = pairs[pid].meta["gold"]
            chosen_label = 2 if gold == 2 else 1  # which original answer sits in the "chosen" slot
            labels = [{"chosen": chosen_label, "rejected": 3 - chosen_label}.get(o, 0) for _, o in outs]
            y_true += [gold] * len(labels)
            y_pred += labels
            if len(labels) == 2:
                same.append(float(labels[0] == labels[1]))
        m = macro_prf(y_true, y_pred)  # labels=None: the labels present, as sklearn's default
        return {"agreement": m["accuracy"], "precision": m["precision"], "recall": m["recall"], "f1": m["f1"],
                "consistency": _mean(same), "per_class": m["per_class"], "n_judgments": float(len(y_true))}


def judgelm_scores(record: dict[str, Any]) -> tuple[float, float]:
    """The reference judge's two scores of a JudgeLM row: the first line of `text` ("8 7" or "8, 7"), as
    JudgeLM's `parse_score` reads it ([-1, -1] when that line is not two numbers), else `score`."""
    text = record.get("text")
    if isinstance(text, str):
        first = text.strip().split("\n")[0].replace(",", " ").split()
        try:
            return (float(first[0]), float(first[1])) if len(first) == 2 else (-1.0, -1.0)
        except ValueError:
            return (-1.0, -1.0)
    score = record.get("score")
    if isinstance(score, (list, tuple)) and len(score) == 2 and all(isinstance(s, dict) for s in score):
        raise MalformedRow("'score' holds generation statistics, not a judgment (judgelm_val_5k.jsonl): set "
                           "benchmark.options.labels to the judgments file (judgelm_val_5k_gpt4.jsonl)")
    if (not isinstance(score, (list, tuple)) or len(score) != 2
            or not all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in score)):
        raise MalformedRow(f"needs 'score' [s1, s2] (the reference judge's two scores) or 'text', got {score!r}")
    return float(score[0]), float(score[1])


def _hub_file(where: str) -> str:
    """A local path as is; `hf://datasets/<owner>/<name>/<file>` downloaded from the hub (online only)."""
    prefix = "hf://datasets/"
    if not str(where).startswith(prefix):
        return where
    parts = str(where)[len(prefix):].split("/", 2)
    if len(parts) != 3:
        raise ValueError(f"benchmark.options.labels={where!r}: expected hf://datasets/<owner>/<name>/<file>")
    from huggingface_hub import hf_hub_download

    return hf_hub_download(repo_id=f"{parts[0]}/{parts[1]}", filename=parts[2], repo_type="dataset")
