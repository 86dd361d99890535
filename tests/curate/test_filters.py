"""judge_rl/curate/filters.py: the diversity filter (embeddings, greedy clustering, the judge and a local model as
embedders), the difficulty filter and its resume, and the accuracy filter with the gold teacher. Real components:
the tiny-random judge (it never writes a valid verdict, so every pair is hard), synthetic pairs with their gold
traces, and SmolLM2-135M as a local embedder."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from judge_rl.config import ModelConfig
from judge_rl.curate.filters import embed_texts, near_duplicates
from judge_rl.jobs.curate import run_curate
from judge_rl.curate.traces import NO_VERDICT_AFTER_REASONING
from judge_rl.data.loaders import load_pairs, write_pairs
from judge_rl.models.loading import converted_gguf_dir, load_model, load_tokenizer
from judge_rl.rundir import RunDirError

from conftest import CACHE_DIR
from curate_support import QUESTIONS, TINY, TINY_MODEL, compose_curate, from_file, hand_built, lines, synthetic

# --------------------------------------------------------------------------- diversity


def test_near_duplicates_is_greedy_leader_clustering():
    e = torch.tensor([[1.0, 0.0], [0.96, 0.28], [0.8, 0.6], [0.0, 1.0], [1.0, 0.0]])
    got = near_duplicates(e, 0.95, center=False, block=2)  # blocks of 2: leaders carry across blocks
    # row 1 is at 0.96 of row 0; row 2 is at 0.96 of row 1 but only 0.8 of row 0, and row 1 is no leader: kept
    assert [owner for owner, _ in got] == [None, 0, None, None, 0]
    assert got[1][1] == pytest.approx(0.96) and got[4][1] == pytest.approx(1.0)
    # identical rows stay identical after centering, even when equal to the mean
    same = torch.ones((3, 4))
    assert [owner for owner, _ in near_duplicates(same, 1.0)] == [None, 0, 0]


def test_the_judge_embedder_puts_identical_questions_at_cosine_1_and_merges_them(tmp_path):
    tokenizer = load_tokenizer(TINY_MODEL, CACHE_DIR)
    model = load_model(TINY_MODEL, CACHE_DIR, torch.device("cpu"), seed=42)
    alone = embed_texts(model, tokenizer, QUESTIONS[:1], batch_size=1, max_length=64)
    batched = embed_texts(model, tokenizer, QUESTIONS, batch_size=8, max_length=64)  # padded next to longer ones
    assert torch.nn.functional.cosine_similarity(batched[0], batched[2], dim=0) == pytest.approx(1.0, abs=1e-6)
    assert torch.nn.functional.cosine_similarity(alone[0], batched[2], dim=0) == pytest.approx(1.0, abs=1e-5)
    assert tokenizer.padding_side == "left"  # restored for generation

    # through the app, the judge as embedder, threshold 1: only the identical question is merged
    out = tmp_path / "run" / "curated.jsonl"
    counts = run_curate(compose_curate([*TINY, *from_file(hand_built(tmp_path)), "difficulty.enabled=false",
                                        "accuracy.enabled=false", "diversity.threshold=1.0", "shuffle=false",
                                        f"run_dir={tmp_path / 'run'}", f"output={out}"]))
    assert counts["filters"]["diversity"]["dropped"] == {"near-duplicate question": 1}
    (drop,) = lines(tmp_path / "run" / "dropped.jsonl")
    assert drop["pair_id"] == "q2" and drop["duplicate_of"] == "q0" and drop["cosine"] == pytest.approx(1.0, abs=1e-5)
    assert [p.pair_id for p in load_pairs(out)] == ["q0", "q1", "q3", "q4", "q5", "q6", "q7"]


def test_a_local_embedder_merges_near_duplicate_questions(tmp_path):
    """SmolLM2-135M (the embedded model's converted directory) as a sentence-transformers-style embedder."""
    embedder = converted_gguf_dir(ModelConfig(), CACHE_DIR)
    out = tmp_path / "run" / "curated.jsonl"
    counts = run_curate(compose_curate([*TINY, *from_file(hand_built(tmp_path)), "difficulty.enabled=false",
                                        "accuracy.enabled=false", f"diversity.embedder={embedder}", "shuffle=false",
                                        f"run_dir={tmp_path / 'run'}", f"output={out}"]))
    assert counts["filters"]["diversity"]["dropped"] == {"near-duplicate question": 2}
    assert {(d["pair_id"], d["duplicate_of"]) for d in lines(tmp_path / "run" / "dropped.jsonl")} == {("q2", "q0"), ("q4", "q1")}
    assert [p.pair_id for p in load_pairs(out)] == ["q0", "q1", "q3", "q5", "q6", "q7"]


# --------------------------------------------------------------------------- difficulty and resume


def test_difficulty_keeps_what_the_tiny_judge_gets_wrong_and_resumes_without_resampling(tmp_path):
    run = tmp_path / "run"
    base = [*TINY, "data.kwargs.n=8", "diversity.enabled=false", f"run_dir={run}", f"output={run / 'out.jsonl'}"]
    first = run_curate(compose_curate(base))
    d = first["filters"]["difficulty"]
    assert d["sampled"] == 8 and d["reused"] == 0 and d["out"] == 8
    assert d["kept_because"] == {"unparsed judgments only": 8}  # a random model never writes a verdict
    records = lines(run / "difficulty.jsonl")
    assert len(records) == 8 and all(len(r["outputs"]) == 2 and r["right"] == 0 for r in records)
    positions = [r["position"] for r in records]
    assert positions.count("a") == positions.count("b") == 4  # balanced positions

    again = run_curate(compose_curate(base))
    assert again["filters"]["difficulty"]["sampled"] == 0 and again["filters"]["difficulty"]["reused"] == 8

    # a crash after 3 records, the 4th half written: only the 5 missing pairs are sampled
    text = (run / "difficulty.jsonl").read_text().splitlines(keepends=True)
    (run / "difficulty.jsonl").write_text("".join(text[:3]) + text[3][:40])
    resumed = run_curate(compose_curate([*base, "limit=5"]))  # limit may change on a resume
    assert resumed["filters"]["difficulty"]["sampled"] == 5 and resumed["filters"]["difficulty"]["reused"] == 3
    assert resumed["written"] == 5 and len(load_pairs(run / "out.jsonl")) == 5
    # a change that shapes the saved samples refuses to resume
    with pytest.raises(RunDirError, match="difficulty.samples: 2 -> 3"):
        run_curate(compose_curate([*base, "difficulty.samples=3"]))


# --------------------------------------------------------------------------- accuracy


def test_gold_teacher_drops_wrong_missing_and_unparsed_traces_and_counts_them(tmp_path):
    pairs = synthetic(8)
    wrong = pairs[1].traces["b"].replace("Response (b) is better", "Response (a) is better")
    pairs[1] = dataclasses.replace(pairs[1], traces={**pairs[1].traces, "b": wrong})
    pairs[3] = dataclasses.replace(pairs[3], traces={"a": pairs[3].traces["a"]})
    pairs[5] = dataclasses.replace(pairs[5], traces={**pairs[5].traces, "a": "<think>\nhmm\n</think>\nResponse (a), clearly."})
    out = tmp_path / "curated.jsonl"
    counts = run_curate(compose_curate([*TINY, *from_file(write_pairs(pairs, tmp_path / "in.jsonl")),
                                        "difficulty.enabled=false", "diversity.enabled=false", "shuffle=false",
                                        f"run_dir={tmp_path / 'run'}", f"output={out}"]))
    assert counts["filters"]["accuracy"]["dropped"] == {
        "wrong verdict": 1, "no gold trace": 1, f"unparsed: {NO_VERDICT_AFTER_REASONING}": 1}
    assert counts["after_accuracy"] == counts["written"] == 5
    dropped = {d["pair_id"]: d for d in lines(tmp_path / "run" / "dropped.jsonl")}
    assert dropped[pairs[1].pair_id]["positions"] == {"b": "wrong verdict"}
    assert dropped[pairs[3].pair_id]["positions"] == {"b": "no gold trace"}
    assert set(dropped) == {pairs[i].pair_id for i in (1, 3, 5)}
    kept = load_pairs(out)
    assert [p.pair_id for p in kept] == [pairs[i].pair_id for i in (0, 2, 4, 6, 7)]
    assert all(p.traces == pairs[i].traces and p.meta["curation"]["teacher"] == "gold" for p, i in zip(kept, (0, 2, 4, 6, 7)))


def test_accuracy_stops_at_the_limit(tmp_path):
    out = tmp_path / "curated.jsonl"
    counts = run_curate(compose_curate([*TINY, "data.kwargs.n=8", "difficulty.enabled=false", "diversity.enabled=false",
                                        "limit=3", "accuracy.server.chunk_size=2", f"run_dir={tmp_path / 'run'}",
                                        f"output={out}"]))
    acc = counts["filters"]["accuracy"]
    assert acc["checked"] == 3 and acc["not_checked"] == 5 and counts["written"] == 3 == len(load_pairs(out))
