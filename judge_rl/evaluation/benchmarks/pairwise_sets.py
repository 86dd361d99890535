"""Pairwise benchmarks: each row becomes one or more preference pairs, judged in both orders by a
pairwise judge (or, by a pointwise judge, each response scored alone), then scored as the authors do.

  kind            rows (published format)                                      official score
  preference      {prompt|question, chosen, rejected[, subset]} (any file)     accuracy
  llmbar          LLMBar {input, output_1, output_2, label}; also MT-Bench      accuracy
                  human, FairEval, LLMEval^2 in that format
  hh_rlhf         HH-RLHF {chosen, rejected} transcripts                       accuracy
  rewardbench     RewardBench v1 {prompt, chosen, rejected, subset, id}         4 sections, count-weighted
  rmbench         RM-Bench {id, prompt, chosen[3], rejected[3], domain}         3x3 style matrix per domain
  judgebench      JudgeBench {pair_id, question, response_A, response_B,        both orders netted per pair
                  label "A>B"|"B>A", source}
  pandalm         PandaLM test set {idx, instruction, input, response1,         macro P/R/F1 and accuracy, 3
                  response2, annotator1..3 | label}                             classes with ties
  judgelm         JudgeLM val {question_id, question_body, answer1_body,       agreement, macro P/R/F1 over
                  answer2_body, score [s1, s2] | text "s1 s2"}                  the labels present, consistency

Every pair is judged in both orders; an *outcome* is what one judgment says of the pair: "chosen",
"rejected", "tie" (a well-formed tie, or equal pointwise scores) or None (no readable verdict). The
official scores are computed from outcomes; where the authors run one random order (RewardBench), the
mean over both orders is the expectation of their score.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

from judge_rl.data.loaders import MalformedRow, require_text, pair_builder, parse_hh_rlhf, parse_llmbar, read_rows
from judge_rl.data.pairs import PreferencePair, both_orders, pointwise_items
from judge_rl.evaluation.benchmarks import Benchmark, Loaded, Task, register_benchmark
from judge_rl.evaluation.benchmarks import scoring
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

    def build(self, src: str, number: int, record: dict[str, Any]) -> list[PreferencePair]:
        raise NotImplementedError

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


# ----------------------------------------------------------------------------- plain accuracy sets


@register_benchmark("llmbar")
class LLMBarBenchmark(PairBenchmark):
    """LLMBar (Natural, Adversarial/*) and the files in its format: MT-Bench human, FairEval, LLMEval^2."""

    dataset = "llmbar"
    build_pair = staticmethod(pair_builder(parse_llmbar))

    def build(self, src, number, record):
        return [self.build_pair(src, number, record)]


@register_benchmark("hh_rlhf")
class HHRLHFBenchmark(PairBenchmark):
    dataset = "hh-rlhf"
    build_pair = staticmethod(pair_builder(parse_hh_rlhf))

    def build(self, src, number, record):
        return [self.build_pair(src, number, record)]


def _question(record: dict[str, Any]) -> str:
    for name in ("prompt", "question", "input", "instruction"):
        if isinstance(record.get(name), str):
            return record[name]
    raise MalformedRow("missing field 'prompt' (or 'question' / 'input' / 'instruction')")


@register_benchmark("preference")
class PreferenceFileBenchmark(PairBenchmark):
    """Any preference file: {prompt (or question/input/instruction), chosen, rejected}, optional
    `subset` (or `source`) per row."""

    def row_subset(self, record):
        return str(record.get("subset", record.get("source", "")))

    def build(self, src, number, record):
        chosen, rejected = require_text(record, "chosen"), require_text(record, "rejected")
        if chosen.strip() == rejected.strip():
            raise MalformedRow("chosen and rejected responses are identical")
        subset = record.get("subset", record.get("source"))
        source = str(subset) if subset not in (None, "") else src
        return [PreferencePair(f"{src}-{number}", source, _question(record), chosen, rejected, meta={"row": number})]


# ----------------------------------------------------------------------------- RewardBench v1


@register_benchmark("rewardbench")
class RewardBenchBenchmark(PairBenchmark):
    """RewardBench v1 (allenai/reward-bench, split "filtered"): per-subset accuracy with reward-bench's
    generative scoring (a tie or unreadable verdict counts 0.5), the four count-weighted sections and
    the overall mean (Prior Sets at half weight when present)."""

    dataset = "rewardbench"

    def row_subset(self, record):
        return require_text(record, "subset")

    def build(self, src, number, record):
        chosen, rejected = require_text(record, "chosen"), require_text(record, "rejected")
        row_id = record.get("id", number)
        return [
            PreferencePair(f"rewardbench-{row_id}", self.row_subset(record), require_text(record, "prompt"), chosen, rejected,
                           meta={"row": number})
        ]

    def official(self, pairs, outcomes):
        credit = {"chosen": 1.0, "rejected": 0.0}
        per_subset: dict[str, list[float]] = defaultdict(list)
        for pid, outs in outcomes.items():
            per_subset[pairs[pid].source].append(_mean([credit.get(o, 0.5) for _, o in outs]))
        return scoring.rewardbench_scores(per_subset)


# ----------------------------------------------------------------------------- RM-Bench


@register_benchmark("rmbench")
class RMBenchBenchmark(PairBenchmark):
    """RM-Bench (THU-KEG/RM-Bench): every row has 3 chosen and 3 rejected responses in the styles
    concise / detailed plain / detailed markdown; all 9 (chosen style, rejected style) pairs are judged,
    giving the 3x3 matrix; hard / normal / easy accuracies per domain, averaged over domains."""

    dataset = "rmbench"

    def row_subset(self, record):
        return scoring.rmbench_domain(require_text(record, "domain"))

    def build(self, src, number, record):
        prompt, domain = require_text(record, "prompt"), require_text(record, "domain")
        try:
            scoring.rmbench_domain(domain)
        except ValueError as e:
            raise MalformedRow(str(e)) from None
        styles = {}
        for name in ("chosen", "rejected"):
            value = record.get(name)
            if not isinstance(value, list) or len(value) != 3 or not all(isinstance(x, str) for x in value):
                raise MalformedRow(f"field {name!r} must be a list of 3 strings (concise, detailed plain, detailed markdown)")
            styles[name] = value
        row_id = record.get("id", number)
        return [
            PreferencePair(
                f"rmbench-{row_id}-{i}{j}", scoring.rmbench_domain(domain), prompt, styles["chosen"][i],
                styles["rejected"][j], meta={"row": number, "row_id": str(row_id), "cell": (i, j), "domain": domain},
            )
            for i in range(3)
            for j in range(3)
        ]

    def official(self, pairs, outcomes):
        rows: dict[str, dict[str, Any]] = {}
        for pid, outs in outcomes.items():
            meta = pairs[pid].meta
            row = rows.setdefault(meta["row_id"], {"domain": meta["domain"], "correct": [[0.0] * 3 for _ in range(3)], "cells": 0})
            i, j = meta["cell"]
            row["correct"][i][j] = _mean([float(o == "chosen") for _, o in outs])
            row["cells"] += 1
        complete = [r for r in rows.values() if r["cells"] == 9]
        if not complete:
            return {"error": "no RM-Bench row has all 9 cells judged"}
        return scoring.rmbench_scores_by_domain(complete)


# ----------------------------------------------------------------------------- JudgeBench


def _judgebench_category(source: str) -> str:
    for category, prefix in scoring.JUDGEBENCH_CATEGORIES.items():
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
            verdict = {"chosen": label, "rejected": scoring.judgebench_flip(label), "tie": "A=B", None: None}
            a_first = "a" if label == "A>B" else "b"  # where the chosen response sits when A is shown first
            entry = {"label": label, "source": pairs[pid].meta["source"]}
            for presentation, outcome in outs:
                if presentation is None:  # pointwise: one comparison, the single-game rule
                    entry["verdict_order1"] = verdict[outcome]
                elif presentation == a_first:
                    entry["verdict_order1"] = verdict[outcome]
                else:  # the swapped run's raw verdict: its "A" is the original B
                    entry["verdict_order2"] = scoring.judgebench_flip(verdict[outcome])
            entry.setdefault("verdict_order1", None)
            judged.append(entry)
        return scoring.judgebench_accuracy(judged)


# ----------------------------------------------------------------------------- PandaLM


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
                gold = scoring.pandalm_gold_label([int(record[f"annotator{k}"]) for k in (1, 2, 3)])
            except (KeyError, TypeError, ValueError):
                raise MalformedRow("needs 'label' or integer 'annotator1'..'annotator3'") from None
        if gold not in scoring.PANDALM_LABELS:
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
        return scoring.pandalm_metrics(y_true, y_pred)


# ----------------------------------------------------------------------------- JudgeLM


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
        m = scoring.macro_prf(y_true, y_pred)  # labels=None: the labels present, as sklearn's default
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
