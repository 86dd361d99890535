"""Any preference file: {prompt|question|input|instruction, chosen, rejected[, subset]} rows (.json,
.jsonl(.gz), .parquet) or a hub dataset with those columns. Official score: accuracy, overall and per
subset (`PairBenchmark.official`)."""

from __future__ import annotations

from typing import Any

from judge_rl.data.loaders import MalformedRow, require_text
from judge_rl.data.pairs import PreferencePair
from judge_rl.evaluation.benchmarks import register_benchmark
from judge_rl.evaluation.benchmarks.pairwise import PairBenchmark


def _question(record: dict[str, Any]) -> str:
    for name in ("prompt", "question", "input", "instruction"):
        if isinstance(record.get(name), str):
            return record[name]
    raise MalformedRow("missing field 'prompt' (or 'question' / 'input' / 'instruction')")


@register_benchmark("preference")
class PreferenceFileBenchmark(PairBenchmark):
    """Any preference file: {prompt (or question/input/instruction), chosen, rejected}, optional
    `subset` (or `source`) per row."""

    def row_subset(self, record):
        return str(record.get("subset", record.get("source", "")))

    def build(self, src, number, record):
        chosen, rejected = require_text(record, "chosen"), require_text(record, "rejected")
        if chosen.strip() == rejected.strip():
            raise MalformedRow("chosen and rejected responses are identical")
        subset = record.get("subset", record.get("source"))
        source = str(subset) if subset not in (None, "") else src
        return [PreferencePair(f"{src}-{number}", source, _question(record), chosen, rejected, meta={"row": number})]
