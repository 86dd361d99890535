"""JudgeBench: both-order netting and accuracy by hand, and the benchmark end to end with a scripted judge."""

from __future__ import annotations

import pytest

from benchmark_support import run, write_jsonl
from judge_rl.evaluation.benchmarks.judgebench import judgebench_accuracy, judgebench_pair_decision


@pytest.mark.parametrize(
    "o1,o2,expected",
    [
        # order 2 is raw (responses swapped): its "B>A" means original A wins
        ("A>B", "B>A", "A>B"),  # both orders agree on A
        ("A>B", "A=B", "A>B"),  # one for A, one tie
        ("A>B", None, "A>B"),  # unparsed counts as a tie
        ("A>B", "A>B", "A=B"),  # inconsistent: positional bias -> no decision
        ("A=B", "B>A", "A>B"),
        ("A=B", "A=B", "A=B"),
        ("A=B", "A>B", "B>A"),
        ("B>A", "B>A", "A=B"),  # inconsistent
        ("B>A", "A=B", "B>A"),
        ("B>A", "A>B", "B>A"),  # both agree on B
        (None, None, "A=B"),
    ],
)
def test_judgebench_netting_truth_table(o1, o2, expected):
    assert judgebench_pair_decision(o1, o2) == expected


def test_judgebench_accuracy():
    pairs = [
        {"label": "A>B", "verdict_order1": "A>B", "verdict_order2": "B>A", "source": "mmlu-pro-law"},  # right
        {"label": "A>B", "verdict_order1": "A>B", "verdict_order2": "A>B", "source": "mmlu-pro-math"},  # tie: wrong
        {"label": "B>A", "verdict_order1": "A=B", "verdict_order2": "A>B", "source": "livecodebench"},  # right
        {"label": "B>A", "verdict_order1": "A>B", "verdict_order2": "A=B", "source": "livebench-math"},  # wrong
    ]
    out = judgebench_accuracy(pairs)
    assert out["accuracy"] == pytest.approx(2 / 4)
    assert out["knowledge"] == pytest.approx(1 / 2)
    assert out["coding"] == 1.0 and out["math"] == 0.0
    assert "reasoning" not in out
    single = judgebench_accuracy([{"label": "A>B", "verdict_order1": "A>B"}, {"label": "B>A", "verdict_order1": "A=B"}])
    assert single["accuracy"] == pytest.approx(0.5)


def jb_row(i, label, source, rule):
    good, bad = f"GOOD {i}", f"BAD {i}"
    a, b = (good, bad) if label == "A>B" else (bad, good)
    return {"pair_id": f"p{i}", "original_id": str(i), "source": source, "question": f"Q{i} rule={rule}",
            "response_model": "gpt-4o", "response_A": a, "response_B": b, "label": label}


def test_judgebench_netting(tmp_path):
    path = write_jsonl(tmp_path / "gpt.jsonl", [
        jb_row(0, "A>B", "mmlu-pro-law", "right"),  # right twice: correct
        jb_row(1, "B>A", "mmlu-pro-law", "always_a"),  # right once, wrong once: nets to 0, not correct
        jb_row(2, "A>B", "livecodebench", "garbage"),  # no verdict twice: not correct
        jb_row(3, "B>A", "livebench-math", "right"),
    ])
    summary, _ = run(tmp_path, "judgebench", path)
    off = summary["official"]
    assert off["accuracy"] == 0.5 and off["knowledge"] == 0.5 and off["coding"] == 0.0 and off["math"] == 1.0
    assert set(summary["harness"]["by_subset"]) == {"knowledge", "coding", "math"}
    with pytest.raises(ValueError, match="label must be 'A>B' or 'B>A'"):
        run(tmp_path / "bad", "judgebench", write_jsonl(tmp_path / "bad.jsonl", [{**jb_row(0, "A>B", "x", "right"), "label": "A=B"}]))
