"""What the pairwise benchmarks share: a pointwise judge on pairs, a choice prompt refused, and plain pairwise
accuracy matching the harness's metrics."""

from __future__ import annotations

import pytest

from benchmark_support import run, write_jsonl
from judge_rl.evaluation.benchmarks.pairwise import pairwise_benchmark_metrics
from judge_rl.evaluation.metrics import pairwise_metrics
from judge_rl.prompts import get_prompt


def test_pointwise_judge_on_a_pairwise_benchmark(tmp_path):
    # each response rated alone; the pair is right when the chosen one is rated strictly higher
    rows = [{"prompt": "Q rule=right", "chosen": "GOOD rate=8", "rejected": "BAD rate=3"},
            {"prompt": "Q rule=right", "chosen": "GOOD rate=5", "rejected": "BAD rate=5"}]
    summary, _ = run(tmp_path, "preference", write_jsonl(tmp_path / "p.jsonl", rows), prompt=get_prompt("rb2_rating"))
    assert summary["official"]["accuracy"] == 0.5
    assert summary["harness"]["overall"]["pairwise_tie_rate"] == 0.5


def test_choice_prompt_refused_on_pairs(tmp_path):
    rows = [{"prompt": "Q", "chosen": "a", "rejected": "b"}]
    with pytest.raises(ValueError, match="judges pairs: prompt 'rb2_choice' is a choice prompt"):
        run(tmp_path, "preference", write_jsonl(tmp_path / "p.jsonl", rows), prompt=get_prompt("rb2_choice"))


def test_pairwise_wrapper_matches_metrics():
    recs = [
        {"pair_id": "p1", "source": "llmbar", "chosen_position": "a", "winner": "a", "parse_error": "", "correct": True},
        {"pair_id": "p1", "source": "llmbar", "chosen_position": "b", "winner": "a", "parse_error": "", "correct": False},
        {"pair_id": "p2", "source": "faireval", "chosen_position": "a", "winner": "a", "parse_error": "", "correct": True},
        {"pair_id": "p2", "source": "faireval", "chosen_position": "b", "winner": "b", "parse_error": "", "correct": True},
    ]
    recs = [{**r, "longer_position": "a"} for r in recs]  # every metric defined (NaN never equals NaN)
    assert pairwise_benchmark_metrics(recs) == pairwise_metrics(recs)
    out = pairwise_benchmark_metrics(recs, by_source=True)
    assert out["overall"]["accuracy"] == pytest.approx(3 / 4)
    assert out["by_source"]["llmbar"]["accuracy"] == pytest.approx(1 / 2)
    assert out["by_source"]["faireval"]["consistent_accuracy"] == 1.0
