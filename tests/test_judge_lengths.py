"""scripts/judge_lengths.py: its table's numbers are the judge prompts' token counts, recounted here directly (each pair
in both orders, the chat template applied by the embedded tokenizer, a pair counted as its longer order), on the first
units of one benchmark and one training split; a set without its file is listed as "no file"."""

from __future__ import annotations

import importlib.util
import json
import statistics

import pytest
from conftest import CACHE_DIR, REPO_ROOT

from judge_rl.config.paths import load_model_config
from judge_rl.data import load_dataset_pairs
from judge_rl.data.pairs import JudgeItem
from judge_rl.models.loading import load_tokenizer
from judge_rl.prompts import get_prompt
from judge_rl.rollouts import encode_chat

SCRIPT = REPO_ROOT / "scripts" / "judge_lengths.py"
N = 6


def script():
    spec = importlib.util.spec_from_file_location("judge_lengths", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def direct(pairs, prompt_name: str) -> list[int]:
    tokenizer = load_tokenizer(load_model_config("smollm2-135m"), CACHE_DIR)
    prompt = get_prompt(prompt_name)
    return [max(len(encode_chat(tokenizer, prompt.messages(JudgeItem(p, side)))) for side in "ab") for p in pairs]


def test_the_table_counts_the_judge_prompts(shared_data, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)  # conf/data's paths are relative to the working directory, as in the app
    out, js = tmp_path / "lengths.md", tmp_path / "lengths.json"
    sets = ["benchmark=faireval", "data=hh_rlhf train", "benchmark=rewardbench"]
    result = script().main(["--limit", str(N), "--cache-dir", CACHE_DIR, "--out", str(out), "--json", str(js),
                            "--sets", *sets])  # fmt: skip
    assert json.loads(js.read_text()) == json.loads(json.dumps(result))
    rows = {r["set"]: r for r in result["rows"]}
    assert set(rows) == {"benchmark=faireval", "data=hh_rlhf train"}
    assert result["no_file"] == {"benchmark=rewardbench": "no file (hub dataset allenai/reward-bench)"}
    faireval = load_dataset_pairs("llmbar", path=str(shared_data / "llmbar/faireval.json"))
    hh = load_dataset_pairs("hh_rlhf", path=str(shared_data / "hh-rlhf/harmless-base-test.jsonl.gz"), on_error="skip")
    expected = {"benchmark=faireval": direct(list(faireval)[:N], "strength"),
                "data=hh_rlhf train": direct(list(hh)[:N], "strength")}
    table = out.read_text()
    for name, lengths in expected.items():
        ranked = sorted(lengths)
        want = {"items": N, "median": statistics.median(lengths), "p90": ranked[-1], "p99": ranked[-1],
                "max": ranked[-1], "over": {str(n): sum(x > n for x in lengths) for n in (512, 1024, 2048, 4096)}}
        got = json.loads(json.dumps(rows[name]))  # the JSON file's keys
        assert {k: got[k] for k in want} == want, name
        cells = [str(want[k]) if k != "median" else f"{want[k]:g}" for k in ("items", "median", "p90", "p99", "max")]
        assert f"| {name} | " + " | ".join(cells + [str(v) for v in want["over"].values()]) + " |" in table
    # faireval's prompts are long: the first six cross the embedded model's 512 tokens
    assert rows["benchmark=faireval"]["over"][512] > 0
    assert "| benchmark=rewardbench | no file (hub dataset allenai/reward-bench) |" in table


def test_nearest_rank_percentile():
    p = script().percentile
    values = list(range(1, 101))
    assert (p(values, 50), p(values, 90), p(values, 99), p(values, 100)) == (50, 90, 99, 100)
    assert p([7], 99) == 7
    with pytest.raises(IndexError):
        p([], 50)
