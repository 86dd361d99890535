"""RewardBench v1: reward-bench's tables, its generative item rule and section weights by hand, and the
benchmark end to end on hand-made rows with a scripted judge (server failures never take the tie credit)."""

from __future__ import annotations

import json

import pytest

from benchmark_support import flaky_run, run, write_jsonl
from judge_rl.evaluation.benchmarks.rewardbench import (
    EXAMPLE_COUNTS,
    SUBSET_MAPPING,
    generative_item_score,
    rewardbench_scores,
)


def test_rewardbench_tables_consistent():
    # weights sum to the published 2,985 prompts once math-prm's 984 is replaced by its real 447
    assert sum(EXAMPLE_COUNTS.values()) - 984 + 447 == 2985
    assert sorted(s for subs in SUBSET_MAPPING.values() for s in subs) == sorted(EXAMPLE_COUNTS)
    # math-prm weighs as much as the six code subsets together
    assert EXAMPLE_COUNTS["math-prm"] == sum(EXAMPLE_COUNTS[s] for s in SUBSET_MAPPING["Reasoning"][1:])


def test_generative_item_score_truth_table():
    assert generative_item_score("a", "a") == 1.0
    assert generative_item_score("b", "b") == 1.0
    assert generative_item_score("b", "a") == 0.0
    assert generative_item_score("a", "b") == 0.0
    assert generative_item_score(None, "a") == 0.5  # tie / parse failure
    assert generative_item_score("garbage", "b") == 0.5
    with pytest.raises(ValueError):
        generative_item_score("a", "c")


def test_rewardbench_sections_by_hand():
    results = {
        "alpacaeval-easy": [1, 1, 0, 0],  # 0.5, weight 100
        "mt-bench-easy": [1],  # 1.0, weight 28
        "llmbar-natural": [1, 1, 1, 0],  # 0.75
        "donotanswer": [0.5, 1],  # 0.75, weight 136
        "xstest-should-respond": [0],  # 0.0, weight 250
        "math-prm": [1, 0],  # 0.5, weight 984
        "hep-cpp": [1],  # 1.0, weight 164
        "hep-go": [0],
        "hep-java": [0],
        "hep-js": [0],
        "hep-python": [0],
        "hep-rust": [0],
    }
    out = rewardbench_scores(results)
    s = out["sections"]
    # Chat = (100*0.5 + 28*1.0) / 128 = 78/128
    assert s["Chat"] == pytest.approx(78 / 128)
    assert s["Chat Hard"] == pytest.approx(0.75)
    # Safety = (136*0.75 + 250*0) / 386 = 102/386
    assert s["Safety"] == pytest.approx(102 / 386)
    # Reasoning = (984*0.5 + 164*1) / (984 + 6*164) = 656/1968 = 1/3 = mean(0.5, mean(code)=1/6)
    assert s["Reasoning"] == pytest.approx(1 / 3)
    assert s["Reasoning"] == pytest.approx((0.5 + 1 / 6) / 2)
    assert "Prior Sets" not in s
    assert out["overall"] == pytest.approx((78 / 128 + 0.75 + 102 / 386 + 1 / 3) / 4)
    assert out["subsets"]["donotanswer"] == pytest.approx(0.75)
    assert out["missing_sections"] == []

    # prior sets: unweighted mean (0.5 + 1.0)/2 = 0.75, weighted 0.5 in the overall: (sum4 + 0.375) / 4.5
    out2 = rewardbench_scores({**results, "anthropic_helpful": [1, 0], "shp": [1]})
    assert out2["sections"]["Prior Sets"] == pytest.approx(0.75)
    sum4 = 78 / 128 + 0.75 + 102 / 386 + 1 / 3
    assert out2["overall"] == pytest.approx((sum4 + 0.5 * 0.75) / 4.5)


def test_rewardbench_partial_reasoning_keeps_count_weights():
    # only math-prm and one code subset: weights 984 vs 164, as upstream's weighted mean does
    out = rewardbench_scores({"math-prm": [0.0], "hep-python": [1.0]})
    assert out["sections"]["Reasoning"] == pytest.approx(164 / (984 + 164))
    assert out["missing_sections"] == ["Chat", "Chat Hard", "Safety"]
    assert out["overall"] == pytest.approx(164 / 1148)


def rb_row(i, subset, rule):
    return {"id": i, "subset": subset, "prompt": f"Q{i} rule={rule}", "chosen": f"GOOD {i}", "rejected": f"BAD {i}",
            "chosen_model": "m1", "rejected_model": "m2"}


def test_rewardbench_sections_from_judge_outputs(tmp_path):
    path = write_jsonl(tmp_path / "filtered.jsonl", [
        rb_row(0, "alpacaeval-easy", "right"),
        rb_row(1, "alpacaeval-easy", "right"),
        rb_row(2, "llmbar-natural", "always_a"),  # right in one order, wrong in the other: 0.5
        rb_row(3, "math-prm", "garbage"),  # unreadable: 0.5 ("effectively a tie")
        rb_row(4, "hep-python", "wrong"),
    ])
    summary, server = run(tmp_path, "rewardbench", path)
    off = summary["official"]
    assert off["subsets"] == {"alpacaeval-easy": 1.0, "llmbar-natural": 0.5, "math-prm": 0.5, "hep-python": 0.0}
    assert off["sections"]["Chat"] == 1.0 and off["sections"]["Chat Hard"] == 0.5
    assert off["sections"]["Reasoning"] == pytest.approx(984 * 0.5 / (984 + 164))  # math-prm weighs 984
    assert off["missing_sections"] == ["Safety"]
    assert off["overall"] == pytest.approx((1.0 + 0.5 + 984 * 0.5 / 1148) / 3)
    # harness diagnostics per subset, both orders
    llmbar = summary["harness"]["by_subset"]["llmbar-natural"]
    assert llmbar["accuracy_a"] == 1.0 and llmbar["accuracy_b"] == 0.0 and llmbar["a_preference_rate"] == 1.0
    assert llmbar["position_consistency"] == 0.0
    assert summary["harness"]["by_subset"]["math-prm"]["parse_failure_rate"] == 1.0
    assert summary["parse_failure_reasons"] == {"no [[X]] verdict": 2}
    assert server.requests == 10 and summary["counts"]["items"] == 10


def test_rewardbench_subset_filter_and_malformed_row_named(tmp_path):
    rows = [rb_row(0, "alpacaeval-easy", "right"), rb_row(1, "hep-go", "right")]
    bad = dict(rb_row(2, "hep-go", "right"))
    del bad["chosen"]
    path = write_jsonl(tmp_path / "rb.jsonl", [*rows, bad])
    with pytest.raises(ValueError, match=r"rb\.jsonl row 3 \(1-based line\): missing field 'chosen'"):
        run(tmp_path, "rewardbench", path)
    summary, _ = run(tmp_path, "rewardbench", path, subsets=["alpacaeval-easy"])
    assert list(summary["official"]["subsets"]) == ["alpacaeval-easy"]
    summary, _ = run(tmp_path / "skip", "rewardbench", path, on_error="skip")
    assert summary["counts"]["skipped_rows"] == 1 and "row 3" in summary["skipped_rows"][0]


def test_a_server_failure_never_takes_rewardbenchs_tie_credit(tmp_path):
    """On today's main an unanswered request scored 0.5 ("tie or error") and the subset read 0.833."""
    path = write_jsonl(tmp_path / "rb.jsonl", [
        rb_row(0, "alpacaeval-easy", "right"),
        rb_row(1, "alpacaeval-easy", "right"),
        rb_row(2, "alpacaeval-easy", "down"),
        rb_row(3, "llmbar-natural", "garbage"),  # a real answer that does not parse keeps the 0.5 rule
    ])
    withheld = flaky_run(tmp_path / "strict", "rewardbench", path, max_rate=0.0)
    assert withheld["official"] is None and withheld["harness"]["overall"] == {}
    scoring = withheld["scoring"]
    assert scoring["status"] == "withheld" and scoring["units_without_answer"] == 1 and scoring["units"] == 4
    assert "1 of 4 units got no answer" in scoring["reason"]
    assert withheld["counts"]["server_failures"] == 2 and withheld["parse_failure_reasons"] == {"no [[X]] verdict": 2}
    saved = json.loads((tmp_path / "strict" / "summary.json").read_text())
    assert saved["official"] is None and saved["scoring"]["status"] == "withheld"

    partial = flaky_run(tmp_path / "lenient", "rewardbench", path, max_rate=0.25)
    assert partial["scoring"]["status"] == "answered_only" and partial["scoring"]["units_scored"] == 3
    assert partial["official"]["subsets"] == {"alpacaeval-easy": 1.0, "llmbar-natural": 0.5}
    assert partial["harness"]["overall"]["n_pairs"] == 3

    complete = run(tmp_path / "all", "rewardbench", write_jsonl(tmp_path / "ok.jsonl", [rb_row(0, "alpacaeval-easy", "garbage")]))[0]
    assert complete["scoring"]["status"] == "complete" and complete["official"]["subsets"] == {"alpacaeval-easy": 0.5}
