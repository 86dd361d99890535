"""`python -m judge_rl.curate`: LIMJ-style curation (difficulty, diversity, accuracy) and the `pairs` format it
writes. Real components throughout: the tiny-random judge (it never writes a valid verdict, so every pair is
hard), synthetic pairs with their gold traces, the project's own OpenAI-compatible server, a saved model
directory as a teacher, and SmolLM2-135M as a local embedder."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir

from judge_rl.config import ModelConfig
from judge_rl.curate import (
    NO_VERDICT_AFTER_REASONING,
    NOTHING_TO_KEEP,
    ClippedTrace,
    clip_trace,
    embed_texts,
    near_duplicates,
    run_curate,
    tail_at_sentence,
    to_curate_config,
)
from judge_rl.data.loaders import load_dataset_pairs, load_pairs, write_pairs
from judge_rl.data.pairs import PreferencePair, balanced_positions
from judge_rl.models.loading import converted_gguf_dir, load_model, load_tokenizer, save_model
from judge_rl.prompts import get_prompt
from judge_rl.rundir import RunDirError
from judge_rl.servers.http import ChatCompletionServer
from judge_rl.updates.sft import sft_examples

from conftest import CACHE_DIR, CONF_DIR, REPO_ROOT

FAMILIES = ["arithmetic", "counting", "unit_conversion", "string_manipulation"]
TINY_MODEL = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
# the tiny judge, 2 samples of 8 tokens per pair: seconds
TINY = ["model=tiny-random", "device=cpu", "difficulty.samples=2", "difficulty.max_new_tokens=8"]
STRENGTH = get_prompt("strength")


def compose_curate(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="curate", overrides=[f"cache_dir={CACHE_DIR}", *overrides])


def synthetic(n: int = 8) -> list[PreferencePair]:
    return list(load_dataset_pairs("synthetic", n=n, seed=0, split="train", reference=True, families=FAMILIES))


def from_file(path: Path) -> list[str]:
    """Overrides that curate a `pairs` file (the synthetic kwargs are replaced, not merged)."""
    return ["data.loader=pairs", "~data.kwargs", f"+data.kwargs={{path: '{path}'}}"]


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


# --------------------------------------------------------------------------- the pairs format


def test_pairs_format_round_trips_every_field(tmp_path):
    pairs = synthetic(4) + [
        PreferencePair("plain-1", "hand", "Q?", "good", "bad"),  # no strength, traces or meta
        PreferencePair("half-1", "hand", "Q2?", "yes", "no", 1, {"b": "<think>\nx\n</think>\nverdict"}, {"k": [1, "é"]}),
    ]
    path = write_pairs(pairs, tmp_path / "out" / "pairs.jsonl")
    assert [p.name for p in path.parent.iterdir()] == ["pairs.jsonl"]  # written atomically: no temporary left
    loaded = load_pairs(path)
    assert loaded.pairs == pairs and loaded.skipped == []
    assert load_dataset_pairs("pairs", path=path, limit=2).pairs == pairs[:2]
    row = json.loads(path.read_text().splitlines()[4])
    assert row == {"pair_id": "plain-1", "source": "hand", "question": "Q?", "chosen": "good", "rejected": "bad",
                   "strength": None, "trace_a": None, "trace_b": None, "meta": {}}
    # rows without pair_id/source get "<source>-<row>" like the other loaders
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({"question": "Q", "chosen": "a", "rejected": "b"}) + "\n")
    assert load_pairs(bare)[0].pair_id == "pairs/bare-1" and load_pairs(bare, source="x")[0].source == "x"


def test_pairs_format_reports_malformed_rows_by_file_and_row(tmp_path):
    good = {"pair_id": "p1", "question": "Q", "chosen": "a", "rejected": "b"}
    path = tmp_path / "bad.jsonl"
    rows = [good, {**good, "pair_id": "p2", "strength": 4}, {**good, "pair_id": "p1"}, {**good, "pair_id": "p3", "trace_c": "x"},
            {**good, "pair_id": "p4", "meta": [1]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=rf"^{path} row 2 \(1-based line\): strength must be null or 1, 2 or 3, got 4$"):
        load_pairs(path)
    loaded = load_pairs(path, on_error="skip")
    assert [p.pair_id for p in loaded] == ["p1"]
    assert [s.split(": ", 1)[1] for s in loaded.skipped] == [
        "strength must be null or 1, 2 or 3, got 4", "duplicate pair_id 'p1'",
        "unknown field(s) 'trace_c'; expected pair_id, source, question, chosen, rejected, strength, trace_a, trace_b, meta",
        "field 'meta' is a list, not an object"]
    with pytest.raises(ValueError, match="pair_id 'p1' occurs twice"):
        write_pairs([loaded[0], loaded[0]], tmp_path / "twice.jsonl")
    assert not (tmp_path / "twice.jsonl").exists()


# --------------------------------------------------------------------------- clip

R1_OUTPUT = """<think>
Okay, let me look at the question first. The user asks for 172 + 478. Let me add: 172 + 478. 100 + 400 = 500, 72 + 78 = 150, so 650.
Hmm, wait. Let me double-check: 478 + 172 = 650. Yes. Response (a) says 650. Response (b) says 688, off by 38. So (a) is right.
</think>

Response (a) computes the sum correctly (650), while Response (b) gives 688, which is off by 38.

Therefore, Response (a) is better, and the strength is [[2]]."""


def test_clip_keeps_the_final_explanation_of_an_r1_style_output():
    assert not STRENGTH.parse(R1_OUTPUT).ok  # the explanation between </think> and the verdict breaks the format
    read = clip_trace(R1_OUTPUT, STRENGTH, 2000)
    assert read.clipped and read.error is None
    assert read.trace == ("<think>\nResponse (a) computes the sum correctly (650), while Response (b) gives 688, which "
                          "is off by 38.\n</think>\nTherefore, Response (a) is better, and the strength is [[2]].")
    assert STRENGTH.parse(read.trace).winner == "a"
    # an explanation longer than the budget keeps its end, from a sentence start
    long = R1_OUTPUT.replace("Response (a) computes", "First point. Second point is here. Response (a) computes")
    clipped = clip_trace(long, STRENGTH, 100).trace
    assert clipped.startswith("<think>\nResponse (a) computes") or clipped.startswith("<think>\nSecond point")
    thinking = clipped.split("<think>\n", 1)[1].split("\n</think>", 1)[0]
    assert len(thinking) <= 100 and thinking[0].isupper()


def test_clip_without_explanation_keeps_the_end_of_the_reasoning_and_without_think_keeps_the_answer():
    no_explanation = R1_OUTPUT.replace(
        "Response (a) computes the sum correctly (650), while Response (b) gives 688, which is off by 38.\n\n", "")
    assert STRENGTH.parse(no_explanation).ok  # R1's reasoning in the prompt's own <think> block: rule a
    trace = clip_trace(no_explanation, STRENGTH, 80).trace  # the last 80 characters, from a sentence start
    assert trace == ("<think>\nYes. Response (a) says 650. Response (b) says 688, off by 38. So (a) is right.\n</think>\n"
                     "Therefore, Response (a) is better, and the strength is [[2]].")
    # not the prompt's format (text before <think>) and no explanation: the end of the reasoning
    preamble = "Sure, here goes. " + no_explanation
    assert STRENGTH.parse(preamble).error == "text before <think>"
    assert clip_trace(preamble, STRENGTH, 20).trace == (
        "<think>\nSo (a) is right.\n</think>\nTherefore, Response (a) is better, and the strength is [[2]].")
    # an API that returns the reasoning apart (DeepSeek's reasoning_content): the answer alone
    answer_only = "Response (b) states the right count.\nTherefore, Response (b) is better, and the strength is [[1]]."
    assert clip_trace(answer_only, STRENGTH, 2000).trace == (
        "<think>\nResponse (b) states the right count.\n</think>\nTherefore, Response (b) is better, and the strength is [[1]].")
    # already in the prompt's format: as it is, its thinking cut when too long
    gold = synthetic(1)[0].traces["a"]
    assert clip_trace(gold, STRENGTH, 5000) == ClippedTrace(gold, None, False)
    assert clip_trace(gold, STRENGTH, 40) == ClippedTrace(
        "<think>\nThe reference 650 is in Response (a).\n</think>\n"
        "Therefore, Response (a) is better, and the strength is [[2]].", None, True)
    # no verdict the prompt reads, or nothing to keep
    assert clip_trace("<think>long</think>\nResponse (a) is best!", STRENGTH, 100).error == NO_VERDICT_AFTER_REASONING
    assert clip_trace("Therefore, Response (a) is better, and the strength is [[2]].", STRENGTH, 100).error == NOTHING_TO_KEEP
    assert clip_trace("<think>\n</think>\n**Therefore, Response (a) is better, and the strength is [[2]].**",
                      STRENGTH, 100).error == NO_VERDICT_AFTER_REASONING


def test_tail_at_sentence():
    text = "One two three. Four five six! Seven eight nine? Ten."
    assert tail_at_sentence(text, 1000) == text
    assert tail_at_sentence(text, 25) == "Seven eight nine? Ten."  # the window starts mid-sentence: cut forward
    assert tail_at_sentence(text, 22) == "Seven eight nine? Ten."  # exactly at a sentence start
    assert tail_at_sentence(text, 21) == "Ten."  # one character short of the last sentence but one
    assert tail_at_sentence("no sentence ends in this long line", 12) == "long line"  # no sentence start: a word start
    assert tail_at_sentence("abcdefghij", 4) == "ghij"
    assert tail_at_sentence("Line one\nline two", 12) == "line two"


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


QUESTIONS = [
    "What is 172 + 478?",
    "Count the letter 'r' in the word 'stream'.",
    "What is 172 + 478?",  # identical to 0
    "Name three mammals that live in the ocean.",
    "Count the letter 'r' in the word 'stream'?",  # near-duplicate of 1
    "How many minutes are in 3 hours?",
    "Translate 'good morning' into French.",
    "Write a haiku about autumn leaves.",
]


def hand_built(tmp_path: Path) -> Path:
    pairs = [PreferencePair(f"q{i}", "hand", q, f"good answer {i}", f"bad answer {i}", 2) for i, q in enumerate(QUESTIONS)]
    return write_pairs(pairs, tmp_path / "questions.jsonl")


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


@pytest.fixture
def tiny_endpoint():
    model = load_model(TINY_MODEL, CACHE_DIR, torch.device("cpu"), seed=0)
    server = ChatCompletionServer(model, load_tokenizer(TINY_MODEL, CACHE_DIR), "tiny-random", 0).start()
    yield server
    server.shutdown()


def test_server_teacher_is_asked_once_per_order_and_its_unparsed_judgments_drop_the_pairs(tmp_path, tiny_endpoint):
    base = [*TINY, "data.kwargs.n=4", "difficulty.enabled=false", "diversity.enabled=false", "accuracy.teacher=server",
            f"accuracy.server.base_url={tiny_endpoint.base_url}", "accuracy.server.served_model=tiny-random",
            "accuracy.server.max_new_tokens=8", "accuracy.server.backoff_s=0", f"run_dir={tmp_path / 'run'}",
            f"output={tmp_path / 'curated.jsonl'}"]
    counts = run_curate(compose_curate(base))
    acc = counts["filters"]["accuracy"]
    assert acc["requests"] == 8 and tiny_endpoint.requests_seen == 8
    assert counts["written"] == 0 and sum(acc["dropped"].values()) == 4
    assert all(reason.startswith("unparsed: ") for reason in acc["dropped"])
    assert len(lines(tmp_path / "run" / "teacher.jsonl")) == 8
    again = run_curate(compose_curate(base))  # answered from teacher.jsonl
    assert again["filters"]["accuracy"]["reused"] == 8 and again["filters"]["accuracy"]["requests"] == 0
    assert tiny_endpoint.requests_seen == 8


def test_checkpoint_teacher_runs_a_local_model_directory(tmp_path):
    teacher = tmp_path / "teacher"
    save_model(load_model(TINY_MODEL, CACHE_DIR, torch.device("cpu"), seed=3), load_tokenizer(TINY_MODEL, CACHE_DIR), teacher)
    counts = run_curate(compose_curate([*TINY, "data.kwargs.n=2", "difficulty.enabled=false", "diversity.enabled=false",
                                        "accuracy.teacher=checkpoint", f"accuracy.checkpoint={teacher}",
                                        "accuracy.server.max_new_tokens=6", "accuracy.server.device=cpu",
                                        f"run_dir={tmp_path / 'run'}", f"output={tmp_path / 'curated.jsonl'}"]))
    acc = counts["filters"]["accuracy"]
    assert acc["teacher"] == f"checkpoint:{teacher}" and acc["requests"] == 4 and acc["checked"] == 2
    assert counts["written"] == 0


# --------------------------------------------------------------------------- end to end


def test_end_to_end_output_feeds_the_sft_init_and_counts_match_the_file(tmp_path):
    out = tmp_path / "set" / "curated.jsonl"
    counts = run_curate(compose_curate([*TINY, "data.kwargs.n=8", f"run_dir={tmp_path / 'run'}", f"output={out}"]))
    pairs = load_dataset_pairs("pairs", path=out)
    saved = json.loads((out.parent / "counts.json").read_text())
    assert saved == counts and saved["written"] == len(pairs) == len(out.read_text().splitlines())
    chain = [saved["input"], saved["after_difficulty"], saved["after_diversity"], saved["after_accuracy"], saved["written"]]
    assert chain[0] == 8 and chain == sorted(chain, reverse=True)
    for name, before in zip(("difficulty", "diversity", "accuracy"), chain):
        f = saved["filters"][name]
        assert f["enabled"] and f["in"] == before and f["in"] - f["out"] == sum(f["dropped"].values())
    assert len(lines(tmp_path / "run" / "dropped.jsonl")) == 8 - len(pairs)
    assert len(pairs) >= 4 and all(p.traces and set(p.traces) == {"a", "b"} for p in pairs)
    examples = sft_examples(balanced_positions(pairs, 0), get_prompt("strength"), 8)
    assert len(examples) == 8
    assert all(STRENGTH.parse(e["completion"][0]["content"]).ok for e in examples)
    # and the main job's config accepts the file as its SFT data
    from conftest import compose_config
    from judge_rl.config import to_job_config

    job = to_job_config(compose_config(["run_dir=/tmp/unused", "model=tiny-random", "data.train.loader=pairs",
                                        "~data.train.kwargs", f"+data.train.kwargs={{path: '{out}'}}"]))
    assert load_dataset_pairs(job.data.train.loader, **job.data.train.kwargs).pairs == pairs.pairs


def test_python_m_judge_rl_curate(tmp_path):
    env = {**os.environ, "JUDGE_RL_CACHE": CACHE_DIR, "HYDRA_FULL_ERROR": "0"}
    out = tmp_path / "curated.jsonl"
    done = subprocess.run([sys.executable, "-m", "judge_rl.curate", *TINY, "data.kwargs.n=4", "diversity.enabled=false",
                           f"run_dir={tmp_path / 'run'}", f"output={out}", f"hydra.run.dir={tmp_path / 'hydra'}"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "written" in done.stdout and len(load_pairs(out)) == json.loads((tmp_path / "counts.json").read_text())["written"]
    bad = subprocess.run([sys.executable, "-m", "judge_rl.curate", *TINY, "diversity.threshold=1.5",
                          f"run_dir={tmp_path / 'bad'}", f"hydra.run.dir={tmp_path / 'hydra-bad'}"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1
    assert "judge_rl: error: ValueError: diversity.threshold=1.5: expected (0, 1]" in bad.stderr
    assert not (tmp_path / "bad").exists()  # refused before the run directory was claimed
    assert json.loads((tmp_path / "hydra-bad" / "status.json").read_text())["status"] == "failed"


# --------------------------------------------------------------------------- config errors


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["data.loader=nope"], "data.loader: unknown loader 'nope'; known loaders: "),
        (["+data.kwargs.nn=3"], "data.kwargs.nn: loader 'synthetic' has no argument 'nn'"),
        (["accuracy.teacher=server"], "accuracy.server.base_url: teacher=server needs the endpoint's URL"),
        (["accuracy.teacher=server", "accuracy.server.base_url=http://127.0.0.1:9/v1"], "accuracy.server.served_model: "),
        (["accuracy.teacher=checkpoint"], "accuracy.checkpoint: teacher=checkpoint needs the teacher's model directory"),
        (["accuracy.teacher=checkpoint", "accuracy.checkpoint=/no/such/dir"], "accuracy.checkpoint=/no/such/dir: no such directory"),
        (["accuracy.teacher=oracle"], "accuracy.teacher='oracle': expected one of gold, server, checkpoint"),
        (["diversity.threshold=1.5"], "diversity.threshold=1.5: expected (0, 1]"),
        (["diversity.threshold=0"], "diversity.threshold=0.0: expected (0, 1]"),
        (["diversity.embedder=/no/such/embedder"], "diversity.embedder=/no/such/embedder: no such directory"),
        (["difficulty.samples=0"], "difficulty.samples=0: expected >= 1"),
        (["difficulty.checkpoint=/no/ckpt"], "difficulty.checkpoint=/no/ckpt: no such directory"),
        (["limit=0"], "limit=0: expected >= 1"),
        (["prompt=pointwise"], "prompt='pointwise': curation judges pairs"),
        (["prompt=rewardbench_pairwise"], "prompt='rewardbench_pairwise': its judgments have no <think> block"),
        (["prompt=nope"], "prompt='nope': unknown prompt 'nope'"),
        (["output=/tmp/x.json"], "output='/tmp/x.json': the curated pairs are JSON lines"),
    ],
)
def test_a_bad_config_fails_before_anything_loads_naming_the_key(tmp_path, overrides, message):
    run = tmp_path / "run"
    cfg = compose_curate([*TINY, f"run_dir={run}", *overrides])
    with pytest.raises(ValueError, match=re.escape(message)):
        to_curate_config(cfg)
    with pytest.raises(ValueError):
        run_curate(cfg)
    assert not run.exists()
