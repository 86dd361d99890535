"""RM-Bench: the 3x3 style matrix and its domains by hand, and the benchmark end to end with a length-biased
scripted judge."""

from __future__ import annotations

import json

import pytest

from benchmark_support import run, write_jsonl
from judge_rl.evaluation.benchmarks.rmbench import rmbench_accuracy, rmbench_scores_by_domain


RM_ITEMS = [
    # rows = chosen style, columns = rejected style; row0 [0,0,0], rows 1-2 [1,1,1]
    {"score_chosen": [3, 5, 7], "score_rejected": [4, 4, 4], "domain": "chat"},
    # every row [1,0,0]: 2 > 1, 2 == 2 is a tie (wrong), 2 < 3
    {"score_chosen": [2, 2, 2], "score_rejected": [1, 2, 3], "domain": "math"},
]


def test_rmbench_matrix_by_hand():
    out = rmbench_accuracy(RM_ITEMS)
    assert out["matrix"] == [[0.5, 0.0, 0.0], [1.0, 0.5, 0.5], [1.0, 0.5, 0.5]]
    assert out["hard_acc"] == pytest.approx((0 + 0 + 0.5) / 3)  # upper right: M01, M02, M12
    assert out["normal_acc"] == pytest.approx(0.5)  # diagonal
    assert out["easy_acc"] == pytest.approx((1 + 1 + 0.5) / 3)  # lower left: M10, M20, M21
    assert out["avg_acc"] == pytest.approx(4.5 / 9)


def test_rmbench_correct_matrix_and_domains():
    item = {"correct": [[1, 0, 0], [1, 1, 0], [1, 1, 1]]}
    out = rmbench_accuracy([item])
    assert out["hard_acc"] == 0.0 and out["normal_acc"] == 1.0 and out["easy_acc"] == 1.0
    by = rmbench_scores_by_domain(RM_ITEMS)
    # chat item alone: hard (0+0+1)/3, normal 2/3, easy 1; math item alone: hard 0, normal 1/3, easy (1+1+0)/3
    assert by["domains"]["chat"]["hard_acc"] == pytest.approx(1 / 3)
    assert by["domains"]["math"]["normal_acc"] == pytest.approx(1 / 3)
    assert by["overall"]["hard_acc"] == pytest.approx(1 / 6)
    assert by["overall"]["normal_acc"] == pytest.approx(0.5)
    assert by["overall"]["easy_acc"] == pytest.approx((1 + 2 / 3) / 2)
    with pytest.raises(ValueError):
        rmbench_accuracy([{"score_chosen": [1, 2], "score_rejected": [0, 0, 0]}])


def test_rmbench_pools_safety_domains_by_prefix():
    items = [
        {"score_chosen": [2, 2, 2], "score_rejected": [1, 1, 1], "domain": "safety-refuse"},
        {"score_chosen": [0, 0, 0], "score_rejected": [1, 1, 1], "domain": "safety-response"},
        {"score_chosen": [2, 2, 2], "score_rejected": [1, 1, 1], "domain": "code"},
    ]
    by = rmbench_scores_by_domain(items)
    assert set(by["domains"]) == {"safety", "code"}
    # pooled at the sample level: safety 1/2 in every cell; overall = mean over the two domains
    assert by["domains"]["safety"]["avg_acc"] == pytest.approx(0.5)
    assert by["overall"]["avg_acc"] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="matches none"):
        rmbench_scores_by_domain([{"score_chosen": [1] * 3, "score_rejected": [0] * 3, "domain": "poetry"}])


def test_rmbench_matrix_orientation_with_a_length_biased_judge(tmp_path):
    # a judge that prefers the longer response: chosen style i beats rejected style j iff i > j; equal
    # lengths go to the first shown, i.e. right in one order only (0.5)
    styles = lambda tag: [f"{tag} rule=longer", f"{tag} rule=longer" + " x" * 10, f"{tag} rule=longer" + " x" * 20]
    rows = [
        {"id": 1, "prompt": "Q rule=longer", "chosen": styles("GOOD"), "rejected": styles("BADD"), "domain": "chat"},
        {"id": 2, "prompt": "Q rule=longer", "chosen": styles("GOOD"), "rejected": styles("BADD"), "domain": "safety-refuse"},
    ]
    path = tmp_path / "total_dataset.json"
    path.write_text(json.dumps(rows))
    summary, server = run(tmp_path, "rmbench", path)
    off = summary["official"]
    assert set(off["domains"]) == {"chat", "safety"}
    for d in off["domains"].values():
        assert d["matrix"] == [[0.5, 0.0, 0.0], [1.0, 0.5, 0.0], [1.0, 1.0, 0.5]]
    assert off["overall"]["hard_acc"] == 0.0  # upper right: plainer chosen vs fancier rejected
    assert off["overall"]["normal_acc"] == 0.5 and off["overall"]["easy_acc"] == 1.0
    # the two rows differ only in domain: their 18 judge requests are identical and sent once
    assert summary["counts"]["items"] == 2 * 9 * 2
    assert server.requests == 18 and summary["counts"]["deduplicated"] == 18


def test_rmbench_rejects_rows_without_three_styles(tmp_path):
    path = write_jsonl(tmp_path / "rm.jsonl", [{"id": 1, "prompt": "Q", "chosen": ["a", "b"], "rejected": ["c", "d", "e"], "domain": "math"}])
    with pytest.raises(ValueError, match="row 1 .*'chosen' must be a list of 3 strings"):
        run(tmp_path, "rmbench", path)
