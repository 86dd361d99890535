"""LLMBar-format files (LLMBar-Natural, MT-Bench human, FairEval, LLMEval^2): the real files in
../shared/data load and make one task per pair and order."""

from __future__ import annotations

import pytest

from benchmark_support import check_real_file


@pytest.mark.parametrize(
    "file,kind,pairs,skipped",
    [("llmbar/natural.json", "llmbar", 100, 0), ("llmbar/mt-bench-human.json", "llmbar", 200, 0),
     ("llmbar/faireval.json", "llmbar", 66, 0), ("llmbar/llmeval2.json", "llmbar", 199, 1)],
)
def test_real_files_load(shared_data, file, kind, pairs, skipped):
    check_real_file(shared_data / file, kind, pairs, skipped)
