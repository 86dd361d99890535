"""HH-RLHF harmless-base test: the real file in ../shared/data loads (malformed transcripts skipped) and
makes one task per pair and order."""

from __future__ import annotations

import pytest

from benchmark_support import check_real_file


@pytest.mark.parametrize(
    "file,kind,pairs,skipped",
    [("hh-rlhf/harmless-base-test.jsonl.gz", "hh_rlhf", 2307, 5)],
)
def test_real_files_load(shared_data, file, kind, pairs, skipped):
    check_real_file(shared_data / file, kind, pairs, skipped)
