"""PandaLM test set: macro P/R/F1 with ties, labels and gold majority by hand, and the benchmark end to end
with a scripted judge."""

from __future__ import annotations

import json

import pytest

from benchmark_support import run
from judge_rl.evaluation.benchmarks.pairwise import macro_prf
from judge_rl.evaluation.benchmarks.pandalm import pandalm_gold_label, pandalm_label, pandalm_metrics


def test_pandalm_macro_f1_by_hand():
    # confusion (rows true, cols pred 0/1/2/invalid): true0 -> 0,0,1; true1 -> 1,1,1,2; true2 -> 2,0,None
    y_true = [0, 0, 0, 1, 1, 1, 1, 2, 2, 2]
    y_pred = [0, 0, 1, 1, 1, 1, 2, 2, 0, None]
    out = pandalm_metrics(y_true, y_pred)
    # class 0: TP2 FP1 FN1 -> P 2/3 R 2/3 F1 2/3
    # class 1: TP3 FP1 FN1 -> P 3/4 R 3/4 F1 3/4
    # class 2: TP1 FP1 FN2 -> P 1/2 R 1/3 F1 2*(1/6)/(5/6) = 2/5
    assert out["per_class"][2]["f1"] == pytest.approx(2 / 5)
    assert out["precision"] == pytest.approx((2 / 3 + 3 / 4 + 1 / 2) / 3)  # 23/36
    assert out["recall"] == pytest.approx((2 / 3 + 3 / 4 + 1 / 3) / 3)  # 7/12
    assert out["f1"] == pytest.approx((2 / 3 + 3 / 4 + 2 / 5) / 3)  # 109/180
    assert out["accuracy"] == pytest.approx(6 / 10)


def test_macro_prf_zero_division_and_labels():
    # class 2 never predicted nor true: P=R=F1=0 but still averaged with fixed PandaLM labels
    out = pandalm_metrics([0, 1], [0, 1])
    assert out["f1"] == pytest.approx(2 / 3)
    # sklearn default: labels = union of present labels only
    out2 = macro_prf([0, 1], [0, 1])
    assert out2["f1"] == 1.0 and set(out2["per_class"]) == {0, 1}
    with pytest.raises(ValueError):
        macro_prf([0], [0, 1])


def test_pandalm_label():
    assert pandalm_label("a") == 1
    assert pandalm_label("b") == 2
    assert pandalm_label(None) == 0
    # as JudgeLRM scores PandaLM: an unreadable output is predicted "tie"
    assert pandalm_label(None, "no verdict") == 0
    assert pandalm_label("a", "no verdict") == 0


def test_pandalm_gold_label_is_majority_smallest_on_ties():
    assert pandalm_gold_label([2, 2, 1]) == 2
    assert pandalm_gold_label([0, 1, 1]) == 1
    assert pandalm_gold_label([2, 1, 0]) == 0  # no majority: the smallest label


def panda_row(i, annotators, rule):
    good, bad = f"GOOD {i}", f"BAD {i}"
    gold = max(set(annotators), key=lambda x: (annotators.count(x), -x))
    r1, r2 = (bad, good) if gold == 2 else (good, bad)
    if gold == 0:
        r1, r2 = f"same A {i}", f"same B {i}"
    return {"idx": str(i), "motivation_app": "x", "cmp_key": "k", "instruction": f"Do {i} rule={rule}", "input": "ctx",
            "response1": r1, "response2": r2, "annotator1": annotators[0], "annotator2": annotators[1], "annotator3": annotators[2]}


def test_pandalm_ties_and_macro_f1(tmp_path):
    path = tmp_path / "testset-v1.json"
    path.write_text(json.dumps([
        panda_row(0, [1, 1, 2], "right"),  # gold 1: predicted 1, 1
        panda_row(1, [2, 2, 0], "right"),  # gold 2: predicted 2, 2
        panda_row(2, [0, 0, 1], "garbage"),  # gold 0 (tie): unreadable predicts 0, 0 (as JudgeLRM)
        panda_row(3, [2, 1, 2], "always_a"),  # gold 2: response2 at (a) once -> 2, then response1 at (a) -> 1
    ]))
    summary, _ = run(tmp_path, "pandalm", path)
    off = summary["official"]
    # y_true 1 1 2 2 0 0 2 2 ; y_pred 1 1 2 2 0 0 2 1 -> 7/8
    assert off["accuracy"] == pytest.approx(7 / 8)
    # class 0: P1 R1; class 1: TP2 FP1 -> P 2/3, R 1; class 2: TP3 FN1 -> P 1, R 3/4
    assert off["precision"] == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert off["recall"] == pytest.approx((1 + 1 + 3 / 4) / 3)
    f1_1, f1_2 = 2 * (2 / 3) / (2 / 3 + 1), 2 * 0.75 / 1.75
    assert off["f1"] == pytest.approx((1 + f1_1 + f1_2) / 3)
    # the tie row stays out of the pairwise diagnostics; the question joins instruction and input
    assert summary["harness"]["overall"]["n_pairs"] == 3
