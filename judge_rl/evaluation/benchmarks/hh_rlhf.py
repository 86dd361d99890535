"""Anthropic HH-RLHF {chosen, rejected} transcripts as a pairwise benchmark. Official score: accuracy
(`PairBenchmark.official`)."""

from __future__ import annotations

from judge_rl.data.loaders import pair_builder, parse_hh_rlhf
from judge_rl.evaluation.benchmarks import register_benchmark
from judge_rl.evaluation.benchmarks.pairwise import PairBenchmark


@register_benchmark("hh_rlhf")
class HHRLHFBenchmark(PairBenchmark):
    dataset = "hh-rlhf"
    build_pair = staticmethod(pair_builder(parse_hh_rlhf))
