"""LLMBar {input, output_1, output_2, label} (princeton-nlp/LLMBar: Natural, Adversarial/*), and the files
published in its format: MT-Bench human judgments, FairEval, LLMEval^2. Official score: accuracy
(`PairBenchmark.official`)."""

from __future__ import annotations

from judge_rl.data.loaders import pair_builder, parse_llmbar
from judge_rl.evaluation.benchmarks import register_benchmark
from judge_rl.evaluation.benchmarks.pairwise import PairBenchmark


@register_benchmark("llmbar")
class LLMBarBenchmark(PairBenchmark):
    """LLMBar (Natural, Adversarial/*) and the files in its format: MT-Bench human, FairEval, LLMEval^2."""

    dataset = "llmbar"
    build_pair = staticmethod(pair_builder(parse_llmbar))
