"""LLMBar-format files (LLMBar-Natural, MT-Bench human, FairEval, LLMEval^2): the real files in
../shared/data load and make one task per pair and order."""

from __future__ import annotations

import pytest

from benchmark_support import PAIRWISE
from judge_rl.config import BenchmarkConfig
from judge_rl.evaluation.benchmarks import get_benchmark


@pytest.mark.parametrize(
    "file,kind,pairs,skipped",
    [("llmbar/natural.json", "llmbar", 100, 0), ("llmbar/mt-bench-human.json", "llmbar", 200, 0),
     ("llmbar/faireval.json", "llmbar", 66, 0), ("llmbar/llmeval2.json", "llmbar", 199, 1)],
)
def test_real_files_load(shared_data, file, kind, pairs, skipped):
    cfg = BenchmarkConfig(name=kind, kind=kind, path=str(shared_data / file), on_error="skip")
    loaded = get_benchmark(kind).load(cfg)
    assert len(loaded.units) == pairs and len(loaded.skipped) == skipped
    tasks = get_benchmark(kind).tasks(loaded.units, PAIRWISE, cfg)
    assert len(tasks) == 2 * pairs and len({t.item_id for t in tasks}) == 2 * pairs
