"""judge_rl/data/real.py on the real sets of ../shared/data: split by prompt, the evaluation sets kept whole and out of
training, label traces for the SFT init, and one-line errors."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from judge_rl.data import check_loader_kwargs, load_dataset_pairs
from judge_rl.data.pairs import JudgeItem, verdict_line
from judge_rl.data.real import EVAL_ONLY, REAL_SETS, label_traces, prompt_key
from judge_rl.prompts.strength import StrengthPrompt

from conftest import SHARED_DATA as DATA, compose_config

requires_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"real data folder {DATA} is absent")

TRAINED = ["hh-rlhf/harmless-base", "llmbar/mt-bench-human", "llmbar/llmeval2"]


def _load(split: str, sets=TRAINED, **kwargs):
    return load_dataset_pairs("real_pairs", data_dir=DATA, sets=sets, split=split, **kwargs)


@requires_data
def test_no_prompt_is_on_both_sides_and_the_split_is_every_pair_of_the_trained_sets():
    train, test = _load("train"), _load("test")
    keys = {side: {(p.meta["set"], prompt_key(p)) for p in pairs} for side, pairs in (("train", train), ("test", test))}
    assert not keys["train"] & keys["test"]
    # MT-Bench-human: 200 pairs over 75 prompts, each prompt's pairs on one side
    mt = [p for p in [*train, *test] if p.meta["set"] == "llmbar/mt-bench-human"]
    by_prompt = Counter((prompt_key(p), p.meta["split"]) for p in mt)
    assert len({key for key, _ in by_prompt}) == len(by_prompt) == 75 - 2  # 2 prompts are FairEval's
    # every readable pair is on one side or left out for sharing an evaluation set's prompt
    readable = {name: len(load_dataset_pairs(REAL_SETS[name][0], path=DATA / REAL_SETS[name][1], on_error="skip"))
                for name in TRAINED}  # fmt: skip
    left_out = [line for line in train.skipped if "kept for evaluation" in line]
    # and a pair repeated within a set (same prompt and responses) is kept once, its repeats counted
    duplicates = [line for pairs in (train, test) for line in pairs.skipped if "duplicate of" in line]
    assert len(duplicates) == 5 and sum("duplicate of" in line for line in train.skipped) == 3
    assert len(train) + len(test) + len(left_out) + len(duplicates) == sum(readable.values())
    assert train.per_source == Counter(p.meta["set"] for p in train) and set(train.per_source) == set(TRAINED)
    assert all(line.startswith("llmbar/mt-bench-human-") for line in left_out) and len(left_out) == 4
    for name, count in readable.items():  # ~20% of each set's prompts held out
        share = sum(p.meta["set"] == name for p in test) / count
        assert 0.12 < share < 0.28, (name, share)
    assert len({p.pair_id for p in [*train, *test]}) == len(train) + len(test)


@requires_data
def test_the_split_does_not_depend_on_the_sets_asked_for_or_per_set():
    alone = {p.pair_id for p in _load("test", sets=["llmbar/llmeval2"])}
    mixed = {p.pair_id for p in _load("test") if p.meta["set"] == "llmbar/llmeval2"}
    assert alone == mixed
    first = _load("train", per_set=5)
    assert [p.pair_id for p in first] == [p.pair_id for p in _load("train", per_set=5)]
    assert Counter(p.meta["set"] for p in first) == dict.fromkeys(TRAINED, 5)
    assert [p.meta["set"] for p in first[:3]] == TRAINED  # interleaved set by set
    assert len(_load("train", n=7)) == 7 and len(_load("train", per_set=5, limit=4)) == 4


@requires_data
def test_the_evaluation_sets_are_never_trained_on_and_are_whole_on_the_test_side():
    with pytest.raises(ValueError, match=r"llmbar/natural is kept whole for evaluation and never trained on"):
        _load("train", sets=["llmbar/natural", "llmbar/llmeval2"])
    whole = _load("test", sets=list(EVAL_ONLY))
    assert Counter(p.meta["set"] for p in whole) == {"llmbar/natural": 100, "llmbar/faireval": 66}
    held = {prompt_key(p) for p in whole}
    assert not held & {prompt_key(p) for p in _load("train")}


@requires_data
def test_label_traces_quote_each_response_and_end_with_the_labels_verdict():
    pair = _load("train", per_set=1)[1]
    assert pair.traces == label_traces(pair)
    for pos in ("a", "b"):
        item = JudgeItem(pair, pos)
        trace = item.trace
        assert trace.startswith("<think>\n") and trace.endswith(verdict_line(pos, 2))
        judged = StrengthPrompt().parse(trace)  # the strength judge's own parser reads the verdict
        assert judged.ok and judged.winner == pos and judged.strength == 2
        opening_a, opening_b = item.response_a.split()[:5], item.response_b.split()[:5]
        assert f'Response (a) opens: "{" ".join(opening_a)}' in trace and f'Response (b) opens: "{" ".join(opening_b)}' in trace
    assert _load("test", per_set=1, traces=False)[0].traces is None


@requires_data
def test_bad_arguments_fail_in_one_line():
    with pytest.raises(ValueError, match="unknown set 'llmbar/nope'; known sets: hh-rlhf/harmless-base"):
        _load("train", sets=["llmbar/nope"])
    with pytest.raises(ValueError, match="split must be one of train, test, got 'dev'"):
        _load("dev")
    with pytest.raises(ValueError, match="sets must be a list of set names"):
        _load("train", sets="llmbar/llmeval2")
    with pytest.raises(ValueError, match=r"llmbar/llmeval2: no file .*missing/llmbar/llmeval2.json"):
        load_dataset_pairs("real_pairs", data_dir=DATA / "missing", sets=["llmbar/llmeval2"], split="test")


@requires_data
def test_data_real_pairs_composes_with_loader_arguments_the_loader_takes():
    cfg = compose_config(["data=real_pairs", "run_dir=/tmp/unused"])
    for key in ("train", "eval"):
        node = cfg.data[key]
        check_loader_kwargs(node.loader, dict(node.kwargs), f"data.{key}")
    eval_pairs = load_dataset_pairs(cfg.data.eval.loader, **cfg.data.eval.kwargs)
    assert len(eval_pairs) == 3 * 32 and all(p.meta["split"] == "test" for p in eval_pairs)
    json.dumps([p.meta for p in eval_pairs])  # what evaluation records carry


@requires_data
def test_a_benchmark_that_reads_a_training_file_is_refused_before_anything_loads():
    from judge_rl.jobs.train import to_job_config

    with pytest.raises(ValueError, match=r"eval.benchmarks: mt_bench_human reads .*mt-bench-human.json, which "
                                         r"data.train trains on: a judge is never scored on what it trained on"):
        to_job_config(compose_config(["data=real_pairs", "eval.benchmarks=[llmbar_natural,mt_bench_human]",
                                      "run_dir=/tmp/unused"]))  # fmt: skip
    with pytest.raises(ValueError, match=r"eval.benchmarks: hh_rlhf reads .*harmless-base-test.jsonl.gz, which data.train"):
        to_job_config(compose_config(["data=hh_rlhf", "eval.benchmarks=[hh_rlhf]", "run_dir=/tmp/unused"]))
    job = to_job_config(compose_config(["data=real_pairs", "eval.benchmarks=[llmbar_natural,faireval]", "run_dir=/tmp/unused"]))
    assert job.eval.benchmarks == ["llmbar_natural", "faireval"]


@requires_data
def test_a_set_that_contributes_nothing_fails_naming_it(tmp_path):
    """Issue 55: an empty file of one set gave 0 pairs with no message and no count."""
    for name in TRAINED:
        target = tmp_path / REAL_SETS[name][1]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((DATA / REAL_SETS[name][1]).read_bytes())
    for name in EVAL_ONLY:
        target = tmp_path / REAL_SETS[name][1]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((DATA / REAL_SETS[name][1]).read_bytes())
    (tmp_path / REAL_SETS["llmbar/llmeval2"][1]).write_bytes(b"")
    with pytest.raises(ValueError, match=r"real_pairs: llmbar/llmeval2: .*llmeval2.* holds no pairs"):
        load_dataset_pairs("real_pairs", data_dir=tmp_path, sets=TRAINED, split="train")
    with pytest.raises(ValueError, match=r"real_pairs: llmbar/mt-bench-human gives no test pairs \(test_percent=0\)"):
        _load("test", sets=["llmbar/mt-bench-human"], test_percent=0)
