"""Stanford Human Preferences (stanfordnlp/SHP, Ethayarajh et al., ICML 2022): a Reddit post (`history`) and two of
its top-level comments (`human_ref_A`, `human_ref_B`); `labels` is 1 when A is the collectively preferred one, 0
when B is. A comment written *later* but scored higher is preferred (the dataset's timestamp rule), so the label
is a preference of many readers, not of one annotator. `domain` is the subreddit and split
(`askculinary_train`); the subset is the subreddit. Official score: accuracy, overall and per subreddit
(`PairBenchmark.official`), the metric the SHP card reports for SteamSHP.

`min_score_ratio` is not applied here: the card suggests keeping pairs whose `score_ratio` is at least 2 for
training; for evaluation every row is a pair, and a row's `score_ratio` is kept in the pair's meta.
"""

from __future__ import annotations

import re

from judge_rl.data.loaders import MalformedRow, require_text
from judge_rl.data.pairs import PreferencePair
from judge_rl.evaluation.benchmarks import register_benchmark
from judge_rl.evaluation.benchmarks.pairwise import PairBenchmark

_SPLIT_SUFFIX = re.compile(r"_(train|validation|test)$")


@register_benchmark("shp")
class SHPBenchmark(PairBenchmark):
    """SHP rows {post_id, domain, history, human_ref_A, human_ref_B, labels, score_ratio, ...}."""

    dataset = "shp"

    def row_subset(self, record):
        return _SPLIT_SUFFIX.sub("", require_text(record, "domain"))

    def build(self, src, number, record):
        question = require_text(record, "history")
        a, b = require_text(record, "human_ref_A"), require_text(record, "human_ref_B")
        label = record.get("labels")
        if isinstance(label, bool) or label not in (0, 1):
            raise MalformedRow(f"labels must be 1 (A preferred) or 0 (B preferred), got {label!r}")
        if a.strip() == b.strip():
            raise MalformedRow("human_ref_A and human_ref_B are identical")
        chosen, rejected = (a, b) if label == 1 else (b, a)
        row_id = record.get("post_id", number)
        meta = {"row": number, "labels": label, "score_ratio": record.get("score_ratio")}
        return [PreferencePair(f"shp-{row_id}-{number}", self.row_subset(record), question, chosen, rejected, meta=meta)]
