"""Real preference pairs to train a judge on, split by prompt, with the sets it is measured on kept whole.

Why: every judge the synthetic data trains learns arithmetic pairs; what users train on is real preference data.
`../shared/data` holds five real sets with human or objective labels (its README). Three are split here into train and
test *by prompt*: a prompt's pairs all land on one side (MT-Bench-human has 200 pairs over 75 prompts, so a split by
pair would put one prompt's pairs on both sides). Two are never trained on and kept whole for evaluation:
LLMBar-Natural (RewardBench's "Chat Hard" subset, objective labels) and FairEval (human labels); a training pair whose
prompt is also one of theirs is left out (MT-Bench-human shares 2 prompts with FairEval) and counted in `skipped`.

A prompt's key is its first user turn, lower-cased with its whitespace collapsed (HH-RLHF's transcripts: the first
Human turn, so two conversations that open alike stay together); its side is a hash of the set and the key, so the
split does not depend on the order of the rows, on `per_set` or on the other sets asked for.

Traces for the SFT init: these pairs carry a label and no rationale. `label_traces` writes them the way the synthetic
gold traces are written (judge_rl/data/synthetic.py: short steps the judge can copy, then the verdict line): what
each response opens with, quoted from its own text, then which one the label prefers. They teach the format and the
verdict, not reasons the data does not have. (Rejection sampling, `sft_cot`, needs a judge that already writes
useful rationales, which the 135M default does not.) The verdict's strength is 2, the middle of 1..3: the labels have
no strength, and the binary and consistency rewards read only the winner.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace
from itertools import zip_longest
from pathlib import Path

from judge_rl.data.loaders import ASSISTANT, DATASETS, FILES_READ, LoadedPairs, OnError, load_dataset_pairs
from judge_rl.data.pairs import PreferencePair, percent_of, verdict_line

# name -> (loader, file under the data folder); the names are the pairs' `meta["set"]`
REAL_SETS = {
    "hh-rlhf/harmless-base": ("hh_rlhf", "hh-rlhf/harmless-base-test.jsonl.gz"),
    "llmbar/mt-bench-human": ("llmbar", "llmbar/mt-bench-human.json"),
    "llmbar/llmeval2": ("llmbar", "llmbar/llmeval2.json"),
    "llmbar/faireval": ("llmbar", "llmbar/faireval.json"),
    "llmbar/natural": ("llmbar", "llmbar/natural.json"),
}
# never trained on: evaluated whole (their benchmarks: conf/benchmark/llmbar_natural.yaml, faireval.yaml)
EVAL_ONLY = ("llmbar/natural", "llmbar/faireval")
SPLITS = ("train", "test")
# the strength in the verdict line of a label trace (the labels have none; module docstring)
LABEL_TRACE_STRENGTH = 2
_QUOTE_WORDS = 6


def prompt_key(pair: PreferencePair) -> str:
    """The pair's first user turn, lower-cased, whitespace collapsed (HH-RLHF: the first Human turn)."""
    question = pair.question
    if question.lstrip().startswith("Human:"):
        question = question.lstrip()[len("Human:"):].split(ASSISTANT, 1)[0]
    return re.sub(r"\s+", " ", question).strip().lower()


def split_of(set_name: str, key: str, test_percent: int) -> str:
    """"test" for `test_percent`% of the prompts of a set, by a hash of the set and the prompt key; else "train"."""
    return "test" if percent_of(f"judge_rl.real/{set_name}/{key}") < test_percent else "train"


def _opening(text: str) -> str:
    words = text.split()
    return " ".join(words[:_QUOTE_WORDS]) + (" ..." if len(words) > _QUOTE_WORDS else "")


def label_thinking(response_a: str, response_b: str, winner: str) -> str:
    """The thinking of a label trace: each response's opening quoted, then the preference for `winner` ("a" or "b")."""
    return (f'Response (a) opens: "{_opening(response_a)}" Response (b) opens: "{_opening(response_b)}" '
            f"Response ({winner}) serves the request better.")


def label_traces(pair: PreferencePair) -> dict[str, str]:
    """The gold trace for each order of a labelled pair without a rationale (module docstring), keyed by the position
    of `chosen`: each response's opening quoted, then the label's preference, then the verdict line."""
    traces = {}
    for pos in ("a", "b"):
        shown = {pos: pair.chosen, ("b" if pos == "a" else "a"): pair.rejected}
        thinking = label_thinking(shown["a"], shown["b"], pos)
        traces[pos] = f"<think>\n{thinking}\n</think>\n" + verdict_line(pos, LABEL_TRACE_STRENGTH)
    return traces


def _set_file(data_dir: Path, name: str) -> tuple[str, Path]:
    if name not in REAL_SETS:
        raise ValueError(f"real_pairs: unknown set {name!r}; known sets: {', '.join(REAL_SETS)}")
    loader, relative = REAL_SETS[name]
    path = data_dir / relative
    if not path.is_file():
        raise ValueError(f"real_pairs: {name}: no file {path} (data_dir={data_dir}: the folder ../shared/data)")
    return loader, path


@DATASETS.register("real_pairs")
def load_real_pairs(
    *,
    data_dir: str | Path,
    sets: Sequence[str],
    split: str,
    test_percent: int = 20,
    per_set: int | None = None,
    n: int | None = None,
    limit: int | None = None,
    on_error: OnError = "skip",
    traces: bool = True,
) -> LoadedPairs:
    """The pairs of `sets` (REAL_SETS) on `split` ("train" or "test"; an EVAL_ONLY set is "test" whole and cannot be
    trained on), at most `per_set` from each set (in file order), interleaved set by set, at most `n` in all (as the
    synthetic loader's `n`, so `debug=tiny` shrinks these too; None: all) and at most `limit`.
    `test_percent`: the share of each set's prompts on the test side. `traces`: label traces (label_traces) for the
    SFT init. Pair ids and sources are the files' ("llmbar/natural-17"); `meta` adds set, prompt key and split.
    Skipped: the files' malformed rows (`on_error`), the training pairs whose prompt an EVAL_ONLY set holds, and a
    pair repeated within a set (same prompt and responses). A set whose file holds no pairs, or that gives none on
    `split`, fails naming it. `per_source` counts each set's pairs (results.json's data.splits)."""
    if split not in SPLITS:
        raise ValueError(f"real_pairs: split must be one of {', '.join(SPLITS)}, got {split!r}")
    if not 0 <= test_percent <= 100:
        raise ValueError(f"real_pairs: test_percent must be within 0..100, got {test_percent}")
    if isinstance(sets, str) or not sets:
        raise ValueError(f"real_pairs: sets must be a list of set names ({', '.join(REAL_SETS)}), got {sets!r}")
    trained_whole = [name for name in sets if name in EVAL_ONLY and split == "train"]
    if trained_whole:
        raise ValueError(f"real_pairs: {', '.join(trained_whole)} is kept whole for evaluation and never trained on "
                         f"(real.EVAL_ONLY); train on {', '.join(n for n in REAL_SETS if n not in EVAL_ONLY)}")
    root = Path(data_dir)
    # the sets kept whole are read for their prompts only where a training split must leave them out
    files = {name: _set_file(root, name) for name in dict.fromkeys([*sets, *(EVAL_ONLY if split == "train" else ())])}
    held: set[str] = set()  # the prompts of the sets kept whole
    skipped: list[str] = []
    loaded: dict[str, list[PreferencePair]] = {}
    for name, (loader, path) in files.items():
        read = load_dataset_pairs(loader, path=path, on_error=on_error)
        if not read.pairs:  # an empty or wholly malformed file would contribute nothing without a word
            raise ValueError(f"real_pairs: {name}: {path} holds no pairs ({len(read.skipped)} malformed rows skipped)")
        if name in EVAL_ONLY:
            held |= {prompt_key(pair) for pair in read}
        if name in sets:
            loaded[name] = read.pairs
            skipped += read.skipped
    chosen: dict[str, list[PreferencePair]] = {}
    for name in sets:
        kept = []
        seen: dict[tuple[str, frozenset[str]], str] = {}  # a pair's prompt and its two responses -> its first id
        for pair in loaded[name]:
            key = prompt_key(pair)
            side = "test" if name in EVAL_ONLY else split_of(name, key, test_percent)
            if side != split:
                continue
            if split == "train" and key in held:
                skipped.append(f"{pair.pair_id}: its prompt is in a set kept for evaluation ({', '.join(EVAL_ONLY)})")
                continue
            same = (key, frozenset((pair.chosen.strip(), pair.rejected.strip())))
            if same in seen:  # a repeated pair would count twice in training and in a held-out score
                skipped.append(f"{pair.pair_id}: duplicate of {seen[same]} (same prompt and responses)")
                continue
            seen[same] = pair.pair_id
            digest = hashlib.sha256(key.encode()).hexdigest()[:12]
            kept.append(replace(pair, meta={**pair.meta, "set": name, "prompt_key": digest, "split": split}))
            if per_set is not None and len(kept) >= per_set:
                break
        if not kept:
            raise ValueError(f"real_pairs: {name} gives no {split} pairs (test_percent={test_percent})")
        chosen[name] = kept
    mixed = [pair for group in zip_longest(*chosen.values()) for pair in group if pair is not None]
    for cap in (n, limit):
        if cap is not None:
            mixed = mixed[:cap]
    if traces:
        mixed = [pair if pair.traces else replace(pair, traces=label_traces(pair)) for pair in mixed]
    per_set_counts = {name: sum(pair.meta["set"] == name for pair in mixed) for name in sets}
    return LoadedPairs(mixed, skipped, per_source=per_set_counts)


FILES_READ["real_pairs"] = lambda kwargs: [Path(str(kwargs["data_dir"])) / REAL_SETS[name][1]
                                           for name in kwargs.get("sets") or () if name in REAL_SETS]
