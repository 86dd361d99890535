"""`data.strength_from`: strengths 1..3 from a Bradley-Terry model's margin, binned by terciles of the training
split (Think-J 3.2.2), for preference data without them; a real BT model trained on the tiny random model."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import compose_config, job_reward

from judge_rl.jobs.train import run
from judge_rl.jobs.train import to_job_config
from judge_rl.recipes.stages import setup
from judge_rl.recipes.strength_from import bin_strength, tercile_edges


def test_terciles_bin_margins_into_three_strengths():
    edges = tercile_edges([-3.0, -1.0, 0.0, 1.0, 2.0, 4.0])
    assert edges[0] < edges[1]
    assert [bin_strength(m, edges) for m in (-3.0, -1.0, 0.5, 1.5, 100.0)] == [1, 1, 2, 3, 3]
    with pytest.raises(ValueError, match="at least 3"):
        tercile_edges([1.0, 2.0])


def write_llmbar(path: Path, n: int, offset: int = 0) -> Path:
    rows = [{"input": f"What is {i} plus {i + offset}?", "output_1": f"It is {2 * i + offset}.",
             "output_2": f"It is {2 * i + offset + 1 + i % 3}, I think.", "label": 1} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def bt_model(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("bt")
    run(compose_config(["debug=tiny", "algorithm=bt", f"run_dir={run_dir}"]))
    return run_dir / "bt_model"


def test_unlabelled_pairs_get_strengths_from_the_margin_fitted_on_train(bt_model, tmp_path):
    train = write_llmbar(tmp_path / "train.jsonl", 30)
    held = write_llmbar(tmp_path / "held.jsonl", 9, offset=100)
    overrides = ["debug=tiny", "eval.limit=null", "algorithm=direct", f"run_dir={tmp_path / 'run'}", "reward=strength",
                 "data.train.loader=llmbar", f"+data.train.kwargs.path={train}", "~data.train.kwargs.n",
                 "~data.train.kwargs.seed", "~data.train.kwargs.split", "~data.train.kwargs.reference",
                 "~data.train.kwargs.families", "data.eval.loader=llmbar", f"+data.eval.kwargs.path={held}",
                 "~data.eval.kwargs.n", "~data.eval.kwargs.seed", "~data.eval.kwargs.split",
                 "~data.eval.kwargs.reference", "~data.eval.kwargs.families", f"data.strength_from={bt_model}"]
    job = to_job_config(compose_config(overrides))
    r = setup(job, tmp_path / "run", job_reward(job))
    info = r.results["data"]["strength_from"]
    strengths = Counter(it.pair.strength for it in r.train_items)
    assert set(strengths) == {1, 2, 3} and all(8 <= c <= 12 for c in strengths.values())  # terciles of 30 pairs
    assert info["labelled"] == {"train": 30, "eval": 9} and sum(info["strengths"]["eval"].values()) == 9
    assert all(p.strength in (1, 2, 3) for p in r.eval_pairs)
    # the edges come from the training split alone: other held-out pairs do not move them
    write_llmbar(held, 9, offset=500)
    again_job = to_job_config(compose_config(overrides))
    again = setup(again_job, tmp_path / "run2", job_reward(again_job))
    assert again.results["data"]["strength_from"]["edges"] == info["edges"]
    # margins are cached per model and pair texts: 30 + 9 pairs, then only the 9 new held-out ones
    cache = list((Path(job.cache_dir).expanduser() / "strength_from").glob("*.jsonl"))
    assert any(len(c.read_text().splitlines()) >= 48 for c in cache)


def test_strength_from_must_be_a_bt_model(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="data.strength_from=.*not a Bradley-Terry model"):
        to_job_config(compose_config(["algorithm=grpo", "run_dir=/tmp/x", f"data.strength_from={tmp_path / 'm'}"]))
    with pytest.raises(ValueError, match="data.strength_from=.*no such directory"):
        to_job_config(compose_config(["algorithm=grpo", "run_dir=/tmp/x", f"data.strength_from={tmp_path / 'nope'}"]))
