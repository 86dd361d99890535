"""SHP (stanfordnlp/SHP) rows end to end with a scripted judge: `labels` picks the chosen comment (1: A, 0: B),
the subset is the subreddit without its split suffix, subsets select rows, and a malformed row is skipped with
its reason. Added as one file (judge_rl/evaluation/benchmarks/shp.py) and its conf/benchmark/shp.yaml."""

from __future__ import annotations

import pytest

from benchmark_support import run, write_jsonl
from judge_rl.config import BenchmarkConfig
from judge_rl.evaluation.benchmarks import get_benchmark


def shp_row(i: int, domain: str, rule: str, label: int, **extra) -> dict:
    good, bad = f"GOOD comment {i}", f"BAD comment {i}"
    a, b = (good, bad) if label == 1 else (bad, good)
    return {"post_id": f"p{i}", "domain": domain, "upvote_ratio": 0.9, "history": f"Post {i} rule={rule}",
            "human_ref_A": a, "human_ref_B": b, "labels": label, "score_ratio": 2.5 + i, **extra}


def test_labels_pick_the_preferred_comment_and_subreddits_are_the_subsets(tmp_path):
    rows = [shp_row(0, "askculinary_test", "right", 1), shp_row(1, "askculinary_test", "right", 0),
            shp_row(2, "legaladvice_test", "wrong", 1), shp_row(3, "legaladvice_test", "wrong", 0)]
    path = write_jsonl(tmp_path / "shp.jsonl", rows)
    pairs = get_benchmark("shp").load(BenchmarkConfig(name="shp", kind="shp", path=str(path))).units
    assert [p.chosen for p in pairs] == [f"GOOD comment {i}" for i in range(4)]
    assert [p.source for p in pairs] == ["askculinary", "askculinary", "legaladvice", "legaladvice"]
    assert pairs[1].meta["labels"] == 0 and pairs[1].meta["score_ratio"] == 3.5
    summary, server = run(tmp_path, "shp", path)
    assert summary["official"]["by_subset"] == {"askculinary": 1.0, "legaladvice": 0.0}
    assert summary["official"]["accuracy"] == 0.5 and server.requests == 8  # both orders of each pair
    only, _ = run(tmp_path / "sub", "shp", path, subsets=["legaladvice"])
    assert only["official"]["by_subset"] == {"legaladvice": 0.0}


@pytest.mark.parametrize("bad, reason", [({"labels": 2}, "labels must be 1"), ({"labels": True}, "labels must be 1"),
                                         ({"human_ref_B": "GOOD comment 9"}, "identical"), ({"history": None}, "history")])
def test_a_malformed_row_is_skipped_with_its_reason(tmp_path, bad, reason):
    path = write_jsonl(tmp_path / "shp.jsonl", [shp_row(8, "askhr_test", "right", 1), shp_row(9, "askhr_test", "right", 1, **bad)])
    loaded = get_benchmark("shp").load(BenchmarkConfig(name="shp", kind="shp", path=str(path), on_error="skip"))
    assert len(loaded.units) == 1 and len(loaded.skipped) == 1
    assert reason in str(loaded.skipped[0])
