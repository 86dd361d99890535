"""judge items -> verl's RL parquet: the schema verl reads, balanced positions, pointwise items, and
verl's own RLHFDataset loading the file with SmolLM2's tokenizer (CPU only)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import job_reward

from judge_rl.data.pairs import balanced_positions, pointwise_items
from judge_rl.backends.verl import export_job_data, export_parquet, reward_module_path
from judge_rl.prompts import get_prompt
from judge_rl.rewards import compute_score

COLUMNS = ["data_source", "prompt", "ability", "reward_model", "extra_info"]


@pytest.fixture(scope="module")
def pairs():
    from judge_rl.data import load_dataset_pairs

    return list(load_dataset_pairs("synthetic", n=10, seed=5, split="train"))


def read(path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def test_pairwise_rows_follow_verls_schema(pairs, tmp_path):
    prompt = get_prompt("strength")
    n = export_parquet(pairs, prompt, tmp_path / "t.parquet", seed=7, reward_name="strength", mode="pairwise")
    rows = read(tmp_path / "t.parquet")
    assert n == len(rows) == len(pairs)
    assert pq.read_schema(tmp_path / "t.parquet").names == COLUMNS
    items = balanced_positions(pairs, 7)
    for i, (row, item) in enumerate(zip(rows, items)):
        assert row["data_source"] == item.pair.source
        assert row["prompt"] == prompt.messages(item)
        assert all(set(m) == {"role", "content"} for m in row["prompt"])
        assert row["ability"] == "judge"
        assert row["reward_model"]["style"] == "rule"
        assert json.loads(row["reward_model"]["ground_truth"]) == item.ground_truth
        assert row["extra_info"] == {
            "index": i,
            "pair_id": item.pair.pair_id,
            "item_id": item.item_id,
            "reward_name": "strength",
        }
    winners = Counter(json.loads(r["reward_model"]["ground_truth"])["winner"] for r in rows)
    assert winners == {"a": 5, "b": 5}  # balanced_positions: exactly half each


def test_export_is_deterministic_in_the_seed(pairs, tmp_path):
    prompt = get_prompt("binary")
    export_parquet(pairs, prompt, tmp_path / "a.parquet", seed=1, reward_name="binary")
    export_parquet(pairs, prompt, tmp_path / "b.parquet", seed=1, reward_name="binary")
    export_parquet(pairs, prompt, tmp_path / "c.parquet", seed=2, reward_name="binary")
    assert read(tmp_path / "a.parquet") == read(tmp_path / "b.parquet")
    assert read(tmp_path / "a.parquet") != read(tmp_path / "c.parquet")


def test_both_orders_for_held_out_data(pairs, tmp_path):
    prompt = get_prompt("pairwise_tag")
    export_parquet(pairs, prompt, tmp_path / "v.parquet", seed=0, reward_name="pairwise_tag", orders="both")
    rows = read(tmp_path / "v.parquet")
    assert len(rows) == 2 * len(pairs)
    assert [r["extra_info"]["item_id"] for r in rows[:2]] == [f"{pairs[0].pair_id}:a", f"{pairs[0].pair_id}:b"]


def test_pointwise_prompt_exports_each_response(pairs, tmp_path):
    prompt = get_prompt("pointwise")
    assert prompt.kind == "pointwise"
    export_parquet(pairs, prompt, tmp_path / "p.parquet", seed=0, reward_name="pointwise", mode="pointwise")
    rows = read(tmp_path / "p.parquet")
    items = pointwise_items(pairs)
    assert len(rows) == len(items) == 2 * len(pairs)
    for row, item in zip(rows, items):
        assert row["prompt"] == prompt.messages(item)
        truth = json.loads(row["reward_model"]["ground_truth"])
        assert truth == item.ground_truth == {"label": item.label, "scale": item.scale}
        assert row["extra_info"]["item_id"] == item.item_id


def test_mode_must_match_the_prompt(pairs, tmp_path):
    with pytest.raises(ValueError, match="pointwise prompt"):
        export_parquet(pairs, get_prompt("pointwise"), tmp_path / "x.parquet", seed=0, reward_name="x", mode="pairwise")
    with pytest.raises(ValueError, match="mode="):
        export_parquet(pairs, get_prompt("strength"), tmp_path / "x.parquet", seed=0, reward_name="x", mode="train")


def test_unlabelled_strength_survives_as_json_null(tmp_path):
    from judge_rl.data.pairs import PreferencePair

    pairs = [PreferencePair(f"p{i}", "hh", "q?", "good", "bad", strength=None if i % 2 else 2) for i in range(4)]
    export_parquet(pairs, get_prompt("binary"), tmp_path / "u.parquet", seed=0, reward_name="binary")
    truths = [json.loads(r["reward_model"]["ground_truth"]) for r in read(tmp_path / "u.parquet")]
    assert [t["strength"] for t in truths] == [2, None, 2, None]


def test_reward_module_path_is_the_file_verl_imports():
    from verl.utils.import_utils import load_extern_object

    path = Path(reward_module_path())
    assert path.is_absolute() and path.is_file()
    assert path.parts[-3:] == ("judge_rl", "rewards", "__init__.py")
    fn = load_extern_object(module_path=str(path), object_name="compute_score")  # how verl loads it
    out = "<think>\nx\n</think>\nTherefore, Response (b) is better."
    gt = json.dumps({"winner": "b", "strength": 1})
    assert fn("s", out, gt, reward_name="binary") == compute_score("s", out, gt, reward_name="binary")
    assert fn("s", out, gt, reward_name="binary")["score"] == 1.0


def test_rlhf_dataset_reads_the_export(translate, smollm2_tokenizer, pairs, tmp_path):
    """verl's RLHFDataset loads the file with the translated data config. In 0.9.1 it returns the chat
    as `raw_prompt` (no input_ids: "apply_chat_template has been moved to AgentLoop"); the prompt ids
    come from the agent loop's Continuous Token builder, which here gives judge_rl's own encoding."""
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
    from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder

    from judge_rl.rollouts import encode_chat

    prompt = get_prompt("strength")
    train = tmp_path / "train.parquet"
    export_parquet(pairs, prompt, train, seed=0, reward_name="strength")
    _, cfg = translate(["model=smollm2-135m-hub"], data_files={"train": train, "val": train})
    dataset = RLHFDataset(data_files=cfg.data.train_files, tokenizer=smollm2_tokenizer, config=cfg.data)
    assert len(dataset) == len(pairs)
    items = balanced_positions(pairs, 0)
    builder = create_continuous_token_builder(smollm2_tokenizer, hf_model_type="llama")
    for i in (0, 1):
        sample = dataset[i]
        assert list(sample["raw_prompt"]) == prompt.messages(items[i])
        assert sample["reward_model"]["ground_truth"] == json.dumps(items[i].ground_truth, sort_keys=True)
        assert sample["extra_info"]["reward_name"] == "strength"
        assert sample["index"] == i
        input_ids = builder.build_initial_tokens(list(sample["raw_prompt"]))
        assert input_ids == encode_chat(smollm2_tokenizer, prompt.messages(items[i]))
        assert 0 < len(input_ids) <= cfg.data.max_prompt_length
    batch = collate_fn([dataset[0], dataset[1]])
    assert list(batch["data_source"]) == [p.source for p in pairs[:2]]


def test_rlhf_dataset_drops_overlong_prompts(translate, smollm2_tokenizer, pairs, tmp_path):
    """data.filter_overlong_prompts (set by the translator) drops what judge_rl's fit_to_context drops."""
    from verl.utils.dataset.rl_dataset import RLHFDataset

    train = tmp_path / "train.parquet"
    export_parquet(pairs, get_prompt("strength"), train, seed=0, reward_name="strength")
    files = {"train": train, "val": train}
    _, cfg = translate(["model=smollm2-135m-hub", "model.max_prompt_length=32"], data_files=files)
    assert cfg.data.filter_overlong_prompts is True
    assert len(RLHFDataset(data_files=cfg.data.train_files, tokenizer=smollm2_tokenizer, config=cfg.data)) == 0


def test_export_job_data(make_job, tmp_path):
    job = make_job(["data.train.kwargs.n=6", "data.eval.kwargs.n=5", "eval.limit=3", "reward=pairwise_tag"])
    files = export_job_data(job, tmp_path, job_reward(job))
    assert set(files) == {"train", "val"}
    train, val = read(files["train"]), read(files["val"])
    assert len(train) == 6 and len(val) == 2 * 3
    assert {r["extra_info"]["reward_name"] for r in train + val} == {"pairwise_tag"}
    assert "<better>" in train[0]["prompt"][0]["content"] + train[0]["prompt"][-1]["content"]


def test_export_counts_and_names_the_prompts_verl_drops(make_job, translate, smollm2_tokenizer, tmp_path, capsys):
    """Rows over model.max_prompt_length are counted before writing, per split, with their pair ids and reason (the
    shape of fit_to_context's count), and they are exactly the rows verl's filter_overlong_prompts then drops."""
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from judge_rl.rollouts import encode_chat

    overrides = ["model=tiny-random", "data.train.kwargs.n=8", "data.eval.kwargs.n=4", "eval.limit=3"]
    job = make_job([*overrides, "model.max_prompt_length=4096"])
    rows = read(export_job_data(job, tmp_path / "all", job_reward(job))["train"])
    lengths = [len(encode_chat(smollm2_tokenizer, r["prompt"])) for r in rows]
    limit = sorted(lengths)[len(lengths) // 2]  # about half the training rows over it
    job = make_job([*overrides, f"model.max_prompt_length={limit}"])
    capsys.readouterr()
    counts = {"data.train": {"pairs_loaded": 8}}
    files = export_job_data(job, tmp_path / "cut", job_reward(job), counts)
    out = capsys.readouterr().out
    for split in ("train", "val"):
        rows = read(files[split])  # every row is still written: verl drops them
        n = {r["extra_info"]["item_id"]: len(encode_chat(smollm2_tokenizer, r["prompt"])) for r in rows}
        longest = {}
        for r in rows:
            pid = r["extra_info"]["pair_id"]
            longest[pid] = max(longest.get(pid, 0), n[r["extra_info"]["item_id"]])
        over = {pid: k for pid, k in longest.items() if k > limit}
        entry = counts[f"verl.{split}"]
        assert entry == {"pairs_kept": len(longest) - len(over), "too_long_units": len(over), "too_long": over,
                         "too_long_reason": f"judge prompt longer than model.max_prompt_length={limit} tokens: verl's "
                                            "data.filter_overlong_prompts drops the row",
                         "rows": len(rows), "too_long_rows": sum(k > limit for k in n.values())}  # fmt: skip
        if over:
            assert f"verl.{split}: {entry['too_long_rows']} of {len(rows)} rows" in out and next(iter(over)) in out
        _, cfg = translate(["model=smollm2-135m-hub", f"model.max_prompt_length={limit}"],
                           data_files={"train": files[split], "val": files[split]})  # fmt: skip
        assert len(RLHFDataset(data_files=cfg.data.train_files, tokenizer=smollm2_tokenizer, config=cfg.data)) == (
            len(rows) - entry["too_long_rows"])
    assert 0 < counts["verl.train"]["too_long_units"] < 8
    assert counts["data.train"] == {"pairs_loaded": 8}  # the local path's count of the split is left as it was


def test_export_without_the_tokenizer_writes_and_says_it_could_not_count(make_job, tmp_path, capsys):
    """A hub model that is not in the HF cache (an offline machine): no download is tried, the files are written,
    nothing is counted, and one line says so."""
    job = make_job(["model=smollm2-135m-hub", "model.path=judge-rl-tests/no-such-model", "data.train.kwargs.n=4",
                    "data.eval.kwargs.n=2"])  # fmt: skip
    counts = {}
    files = export_job_data(job, tmp_path, job_reward(job), counts)
    assert len(read(files["train"])) == 4 and counts == {}
    out = capsys.readouterr().out
    assert "tokenizer is not here (hub model judge-rl-tests/no-such-model, not in the HF cache)" in out


def test_the_main_jobs_verl_task_puts_the_counts_in_results(make_job, tmp_path):
    """judge_rl_task's VerlTask, with the recipe's run: the counts land in results.json's data.splits, saved."""
    from types import SimpleNamespace

    from judge_rl.recipes.online_rl import judge_rl_task

    job = make_job(["model=tiny-random", "model.max_prompt_length=100", "data.train.kwargs.n=4",
                    "data.eval.kwargs.n=2"])  # fmt: skip
    saved = []
    run = SimpleNamespace(results={"data": {"splits": {"data.train": {"pairs_loaded": 4}}}}, train_items=[],
                          save=lambda: saved.append(json.loads(json.dumps(run.results))))  # fmt: skip
    judge_rl_task(job, job_reward(job), run).verl_task(tmp_path)
    splits = saved[-1]["data"]["splits"]
    assert set(splits) == {"data.train", "verl.train", "verl.val"}
    assert splits["verl.train"]["too_long_units"] == 4 and len(splits["verl.train"]["too_long"]) == 4
