"""Every training method that is not online RL (direct, sft_direct, sft_cot, bt, dpo_critic), run for real on the
tiny random model: each is one `algorithm=` choice, each writes what the harness scores (judgments per item,
results.json with its final stage), and the two that need a judge which already writes the verdict format
(rejection sampling, the critic) fail in one line naming what they saved when it does not."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import yaml
from conftest import CONF_DIR, compose_config, job_reward

from judge_rl.jobs.train import run
from judge_rl.jobs.train import to_job_config
from judge_rl.evaluation.harness import read_records
from judge_rl.recipes import RECIPES
from judge_rl.recipes.bt import bt_rows
from judge_rl.recipes.dpo_critic import critic_examples, critic_messages, train_dpo
from judge_rl.recipes.stages import evaluate, report, setup
from judge_rl.rundir import read_status
from judge_rl.updates.sft import sft_examples, trace_for_prompt

METHODS = sorted(p.stem for p in (CONF_DIR / "algorithm").glob("*.yaml")
                 if yaml.safe_load(p.read_text()).get("recipe") != "online_rl")
# the tiny random model never writes a verdict: nothing sampled or written by a critic can be kept
NEED_A_FORMAT_WRITING_JUDGE = {"sft_cot": "nothing to keep", "dpo_critic": "no pair kept"}
TINY = ["debug=tiny", "stages=[sft,eval_sft,rl,eval_rl]", "eval.limit=4", "data.train.kwargs.n=16"]


def test_the_methods_of_think_j_table_3_and_4_are_algorithm_options():
    assert set(METHODS) == {"bt", "direct", "dpo_critic", "sft_cot", "sft_direct"}


@pytest.mark.parametrize("name", METHODS)
def test_every_method_runs_on_the_tiny_model_and_writes_what_the_harness_scores(name, tmp_path):
    extra = ["algorithm.batch_size=4"] if name == "bt" else []  # 8 pairs: 2 steps
    cfg = compose_config([*TINY, f"algorithm={name}", f"run_dir={tmp_path}", *extra])
    if name in NEED_A_FORMAT_WRITING_JUDGE:
        with pytest.raises(ValueError, match=NEED_A_FORMAT_WRITING_JUDGE[name]):
            run(cfg)
        assert read_status(tmp_path)["status"] == "failed"
        saved = tmp_path / ("rejection/counts.json" if name == "sft_cot" else "dpo/iter_1/counts.json")
        counts = json.loads(saved.read_text())
        assert counts["kept"] == 0 and sum(counts.get("parse_failure_reasons", counts.get("critic_parse_failure_reasons")).values()) > 0
        return
    results = run(cfg)
    final = results["final_stage"]
    held_out = results["evaluations"][final]["held_out"]
    records = list(read_records(tmp_path / "eval" / final / "judgments.jsonl").values())
    if name == "bt":  # each response scored alone; its score saved per item
        assert len(records) == 8 and all(isinstance(r["pred_score"], float) for r in records)
        by_pair: dict[str, dict] = {}
        for r in records:
            by_pair.setdefault(r["pair_id"], {})[r["which"]] = r["pred_score"]
        expected = sum(p["chosen"] > p["rejected"] for p in by_pair.values()) / len(by_pair)
        assert held_out["metrics"]["pairwise_accuracy"] == pytest.approx(expected)
        assert results["training"]["bt"]["bt/steps"] == 2
    else:  # both orders of each held-out pair
        assert len(records) == 8 and {r["chosen_position"] for r in records} == {"a", "b"}
        assert held_out["metrics"]["parse_failure_rate"] == 1.0  # a random model writes no verdict
    assert read_status(tmp_path)["status"] == "finished"


def test_sft_direct_trains_on_verdict_lines_alone():
    job = to_job_config(compose_config([*TINY, "algorithm=sft_direct", "run_dir=/tmp/x"]))
    run_ = setup(job, Path("/tmp/x"), job_reward(job))
    assert run_.prompt.name == "strength_direct"
    examples = sft_examples(run_.train_items, run_.prompt, 4)
    for ex in examples:
        out = ex["completion"][0]["content"]
        assert "<think>" not in out and out.startswith("Therefore, Response (")
        assert run_.prompt.parse(out).ok


def test_sft_cot_from_gold_traces_trains_and_is_compared_with_nothing(tmp_path):
    """traces=gold with thinking: SFT on the gold traces (the Think-J init as a baseline row)."""
    results = run(compose_config([*TINY, "algorithm=sft_cot", "algorithm.traces=gold", f"run_dir={tmp_path}"]))
    assert results["final_stage"] == "sft_cot" and results["training"]["sft_cot"]["sft/steps"] >= 1


def test_bt_rows_carry_the_strength_as_margin_only_when_asked():
    job = to_job_config(compose_config([*TINY, "algorithm=bt", "run_dir=/tmp/x", "algorithm.num_pairs=3"]))
    rows, too_long = bt_rows(setup(job, Path("/tmp/x"), job_reward(job)))
    assert len(rows) == 3 and too_long == 0 and "margin" not in rows[0]
    assert all(r["chosen_ids"] != r["rejected_ids"] for r in rows)
    job = to_job_config(compose_config([*TINY, "algorithm=bt", "run_dir=/tmp/x", "algorithm.margin=true",
                                        "algorithm.max_length=20"]))
    with pytest.raises(ValueError, match="max_length=20"):
        bt_rows(setup(job, Path("/tmp/x"), job_reward(job)))


def test_the_critic_is_trained_to_reach_the_verdict_it_is_given():
    job = to_job_config(compose_config([*TINY, "algorithm=dpo_critic", "run_dir=/tmp/x"]))
    run_ = setup(job, Path("/tmp/x"), job_reward(job))
    examples = critic_examples(run_, 4)
    for ex in examples:
        given = ex["prompt"][-1]["content"].split("The verdict is given: ")[1].splitlines()[0]
        assert ex["completion"][0]["content"].strip().endswith(given)
    item = run_.train_items[0]
    wrong = "b" if item.chosen_position == "a" else "a"
    assert f"Response ({wrong}) is better" in critic_messages(run_.prompt, item, wrong, 2)[-1]["content"]


def test_dpo_with_the_sft_term_trains_two_steps_and_its_judge_is_scored(tmp_path):
    """The DPO stage on pairs a critic would write (gold trace vs the same thinking with the other verdict)."""
    job = to_job_config(compose_config([*TINY, "algorithm=dpo_critic", f"run_dir={tmp_path}"]))
    run_ = setup(job, tmp_path, job_reward(job))
    rows = []
    for it in run_.train_items[:8]:
        wrong = "b" if it.chosen_position == "a" else "a"
        rows.append({"prompt": run_.prompt.messages(it),
                     "chosen": [{"role": "assistant", "content": trace_for_prompt(it, run_.prompt)}],
                     "rejected": [{"role": "assistant", "content": run_.prompt.output("Guess.", wrong, 1)}]})
    model_dir, metrics = train_dpo(run_, None, rows, tmp_path / "dpo" / "iter_1")
    assert metrics["steps"] == 2 and all(math.isfinite(metrics[k]) for k in ("loss_first", "loss_last"))
    from judge_rl.models.loading import load_model

    init = load_model(job.model, job.cache_dir, torch.device("cpu"), seed=job.seed)
    trained = load_model(job.model, job.cache_dir, torch.device("cpu"), checkpoint=model_dir)
    assert not torch.equal(init.model.layers[0].mlp.up_proj.weight, trained.model.layers[0].mlp.up_proj.weight)
    evaluate(run_, "dpo", "dpo", model_dir)
    results = report(run_, final="dpo")
    assert results["evaluations"]["dpo"]["held_out"]["counts"]["requests_sent"] == 8


def test_method_configs_are_typed_by_their_recipe():
    with pytest.raises(Exception, match="algorithm.rollout_n"):
        to_job_config(compose_config(["algorithm=bt", "run_dir=/tmp/x", "+algorithm.rollout_n=4"]))
    with pytest.raises(ValueError, match="algorithm.beta=0"):
        to_job_config(compose_config(["algorithm=dpo_critic", "run_dir=/tmp/x", "algorithm.beta=0"]))
    with pytest.raises(ValueError, match="cluster.backend=verl runs online RL"):
        to_job_config(compose_config(["algorithm=bt", "run_dir=/tmp/x", "cluster=node_8gpu"]))
    with pytest.raises(ValueError, match="'margin_direct'"):
        to_job_config(compose_config(["algorithm=direct", "algorithm.thinking=false", "reward=margin", "run_dir=/tmp/x"]))
    with pytest.raises(ValueError, match="algorithm.rejection.sampler='teacher'"):
        to_job_config(compose_config(["algorithm=sft_cot", "algorithm.rejection.sampler=teacher", "run_dir=/tmp/x"]))
    assert {RECIPES.get(to_job_config(compose_config([f"algorithm={m}", "run_dir=/tmp/x"])).algorithm.recipe).name
            for m in METHODS} == {"direct", "sft", "bt", "dpo_critic"}
