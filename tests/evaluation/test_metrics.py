from __future__ import annotations

import math

import pytest

from judge_rl.evaluation.metrics import metrics_by_source, pairwise_metrics


def rec(pair, pos, winner, source="s"):
    return {
        "pair_id": pair,
        "source": source,
        "chosen_position": pos,
        "winner": winner,
        "parse_error": "" if winner else "missing <think> block",
        "correct": winner == pos,
    }


def test_pairwise_metrics_by_hand():
    records = [
        rec("p1", "a", "a"), rec("p1", "b", "b"),  # right both orders, consistent
        rec("p2", "a", "a"), rec("p2", "b", "a"),  # always says (a): inconsistent, one right
        rec("p3", "a", None), rec("p3", "b", "b"),  # a parse failure counts as wrong
        rec("p4", "a", "b"), rec("p4", "b", "a"),  # wrong both orders but consistent
    ]
    m = pairwise_metrics(records)
    assert m["accuracy"] == pytest.approx(4 / 8)
    assert m["accuracy_a"] == pytest.approx(2 / 4)
    assert m["accuracy_b"] == pytest.approx(2 / 4)
    assert m["consistent_accuracy"] == pytest.approx(1 / 4)
    assert m["position_consistency"] == pytest.approx(2 / 3)  # p1, p4 of the 3 fully parsed pairs
    assert m["a_preference_rate"] == pytest.approx(4 / 7)
    assert m["parse_failure_rate"] == pytest.approx(1 / 8)
    assert m["n_pairs"] == 4 and m["n_items"] == 8


def test_metrics_by_source_split_records():
    records = [rec("p1", "a", "a", "x"), rec("p1", "b", "b", "x"), rec("p2", "a", "b", "y"), rec("p2", "b", "b", "y")]
    by = metrics_by_source(records)
    assert set(by) == {"x", "y"}
    assert by["x"]["consistent_accuracy"] == 1.0 and by["y"]["consistent_accuracy"] == 0.0
    assert math.isclose(by["y"]["accuracy"], 0.5)
