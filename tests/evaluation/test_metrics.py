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


def test_paired_bootstrap_interval_of_a_difference():
    from judge_rl.evaluation.metrics import consistent_by_pair, paired_bootstrap

    recs = [
        {"pair_id": "p1", "chosen_position": "a", "correct": True}, {"pair_id": "p1", "chosen_position": "b", "correct": True},
        {"pair_id": "p2", "chosen_position": "a", "correct": True}, {"pair_id": "p2", "chosen_position": "b", "correct": False},
        {"pair_id": "p3", "chosen_position": "a", "correct": True},  # one order only: not a consistency unit
    ]
    assert consistent_by_pair(recs) == {"p1": 1.0, "p2": 0.0}
    before = {f"p{i}": 0.0 for i in range(40)}
    assert paired_bootstrap(before, {f"p{i}": 1.0 for i in range(40)}) == {"diff": 1.0, "low": 1.0, "high": 1.0, "n": 40.0, "level": 0.95}
    after = {f"p{i}": float(i % 4 == 0) for i in range(40)}  # 10 of 40 pairs gained
    gain = paired_bootstrap(before, {**after, "extra": 1.0})
    assert gain["n"] == 40 and gain["diff"] == 0.25 and 0.1 < gain["low"] < 0.25 < gain["high"] < 0.45
    same = paired_bootstrap(after, after)
    assert same["diff"] == same["low"] == same["high"] == 0.0


def test_length_preference_beside_how_often_the_better_response_is_the_longer():
    def r(pair, pos, winner, longer):
        return {**rec(pair, pos, winner), "longer_position": longer}

    records = [
        r("p1", "a", "a", "a"), r("p1", "b", "b", "b"),  # the better one is longer; the judge picks it
        r("p2", "a", "b", "b"), r("p2", "b", "a", "a"),  # the worse one is longer; the judge picks it both times
        r("p3", "a", None, "a"), r("p3", "b", "b", None),  # unparsed, and equal lengths: not counted
    ]
    m = pairwise_metrics(records)
    assert m["longer_preference_rate"] == pytest.approx(4 / 4)
    assert m["gold_longer_rate"] == pytest.approx(3 / 5)  # over every record whose lengths differ
    assert math.isnan(pairwise_metrics([rec("p", "a", "a")])["longer_preference_rate"])  # records from before the field
