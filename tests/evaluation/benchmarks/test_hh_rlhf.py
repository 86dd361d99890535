"""HH-RLHF harmless-base test: the real file in ../shared/data loads (malformed transcripts skipped) and
makes one task per pair and order."""

from __future__ import annotations

import pytest

from benchmark_support import PAIRWISE
from judge_rl.config import BenchmarkConfig
from judge_rl.evaluation.benchmarks import get_benchmark


@pytest.mark.parametrize(
    "file,kind,pairs,skipped",
    [("hh-rlhf/harmless-base-test.jsonl.gz", "hh_rlhf", 2307, 5)],
)
def test_real_files_load(shared_data, file, kind, pairs, skipped):
    cfg = BenchmarkConfig(name=kind, kind=kind, path=str(shared_data / file), on_error="skip")
    loaded = get_benchmark(kind).load(cfg)
    assert len(loaded.units) == pairs and len(loaded.skipped) == skipped
    tasks = get_benchmark(kind).tasks(loaded.units, PAIRWISE, cfg)
    assert len(tasks) == 2 * pairs and len({t.item_id for t in tasks}) == 2 * pairs
