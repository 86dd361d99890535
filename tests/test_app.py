"""The main job end to end on the tiny random model: every stage, files on disk, resume after a kill."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException

from judge_rl.jobs.train import run
from judge_rl.jobs.train import to_job_config
from judge_rl.rundir import RunDirError

from conftest import CACHE_DIR, REPO_ROOT, SHARED_DATA, TINY_RUN, compose_config


def test_default_config_composes_with_the_documented_defaults():
    cfg = compose_config(["run_dir=/tmp/x"])
    assert cfg.model.name == "smollm2-135m" and cfg.algorithm.name == "grpo" and cfg.reward.name == "strength"
    assert cfg.data.name == "synthetic" and cfg.cluster.name == "local" and cfg.logger.name == "wandb"
    job = to_job_config(cfg)
    assert job.algorithm.adv_estimator == "grpo" and job.algorithm.kl_loss_type == "low_var_kl"


def test_unknown_option_lists_the_choices():
    with pytest.raises(ConfigCompositionException) as err:
        compose_config(["algorithm=nope"])
    assert "grpo" in str(err.value.__cause__ or err.value)


def test_misspelt_key_fails_before_training():
    with pytest.raises(Exception, match="prompts_per_stepp"):
        to_job_config(compose_config(["run_dir=/tmp/x", "+trainer.prompts_per_stepp=3"]))


def test_impossible_combination_fails_before_training():
    with pytest.raises(ValueError, match="rollout_n"):
        to_job_config(compose_config(["run_dir=/tmp/x", "algorithm.rollout_n=1"]))
    with pytest.raises(TypeError, match="strenght_weight"):
        to_job_config(compose_config(["run_dir=/tmp/x", "+reward.weights.strenght_weight=1"]))


def test_tiny_run_writes_metrics_evals_and_checkpoints(tmp_path, capsys):
    results = run(compose_config([*TINY_RUN, f"run_dir={tmp_path}"]))
    # after RL's first step, how long the rest of the job will take: the other step, then the RL judge's evaluation
    assert re.search(r"^rl: step 1 of 2 took .*; the rest ~.* \(1 step ~.*, evaluating the RL judge ~", capsys.readouterr().out,
                     re.M)
    for stage in ("base", "sft", "rl"):
        summary = json.loads((tmp_path / "eval" / stage / "summary.json").read_text())
        assert summary["overall"]["n_pairs"] == 4
        lines = (tmp_path / "eval" / stage / "judgments.jsonl").read_text().splitlines()
        assert len(lines) == 8  # 4 pairs x both orders
        # the published benchmark of eval.benchmarks, judged by the same judge at every stage (where the
        # real file is there; without it the main job still runs and says what it skipped)
        bench_dir = tmp_path / "eval" / stage / "benchmarks" / "llmbar_natural"
        if SHARED_DATA.exists():
            bench = json.loads((bench_dir / "summary.json").read_text())
            assert bench["counts"]["units"] == 2 and bench["counts"]["items"] == 4
            entry = results["evaluations"][stage]["benchmarks"]["llmbar_natural"]
            assert entry["official"] == bench["official"] and set(entry["ci"]) == {"accuracy", "consistent_accuracy"}
        else:
            assert not bench_dir.exists() and results["evaluations"][stage]["benchmarks"] == {}
    metrics = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2]
    for key in ("critic/score/mean", "actor/pg_loss", "actor/kl_loss", "actor/entropy", "response_length/mean",
                "timing_s/gen", "timing_s/update_actor", "perf/throughput", "reward/parse_failure_rate"):
        assert key in metrics[0], key
    assert (tmp_path / "checkpoints" / "latest_checkpointed_iteration.txt").read_text() == "2"
    assert (tmp_path / "rl_model" / "model.safetensors").exists()
    assert results["training"]["rl"]["steps"] == 2 and "sft/steps" in results["training"]["sft"]
    # the SFT judge by path (judge.checkpoint=<run>/sft_model), the cached init it links to
    assert (tmp_path / "sft_model").is_symlink() and (tmp_path / "sft_model" / "sft_metrics.json").exists()
    assert len(results["training"]["rl"]["rewards"]) == 2
    # the RL-minus-SFT claim comes with its paired bootstrap interval over the held-out pairs
    gain = results["comparisons"]["rl_minus_sft"]["consistent_accuracy"]
    assert gain["n"] == 4 and gain["low"] <= gain["diff"] <= gain["high"]
    # results.json is the schema's document (judge_rl/reports/schema.py), held-out intervals included
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["schema"] == "judge_rl.results/1" and saved["job"] == "main"
    held_out = saved["evaluations"]["rl"]["held_out"]
    assert held_out["metrics"]["n_pairs"] == 4 and held_out["ci"]["consistent_accuracy"]["n"] == 4

    # a second run in the same directory redoes nothing: evaluations reuse their judgments
    again = run(compose_config([*TINY_RUN, f"run_dir={tmp_path}"]))
    scores = lambda r: {stage: (ev["held_out"]["metrics"], {b: (e["official"], e["metrics"]) for b, e in ev["benchmarks"].items()})  # noqa: E731
                        for stage, ev in r["evaluations"].items()}
    assert json.dumps(scores(again), sort_keys=True) == json.dumps(scores(results), sort_keys=True)
    assert json.loads((tmp_path / "eval" / "rl" / "summary.json").read_text())["judged_now"] == 0


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.usefixtures("cleans_up_after_kills")
def test_killed_run_resumes_from_its_checkpoint_and_matches_an_uninterrupted_run(tmp_path):
    """Kill `python -m judge_rl` after its first checkpoint; the restart continues and ends where a straight run ends."""
    overrides = [*TINY_RUN, "stages=[rl]", "trainer.total_steps=3", "trainer.max_new_tokens=48", f"cache_dir={CACHE_DIR}"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    killed = tmp_path / "killed"
    cmd = [sys.executable, "-m", "judge_rl", *overrides]
    proc = subprocess.Popen([*cmd, f"run_dir={killed}"], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    marker = killed / "checkpoints" / "latest_checkpointed_iteration.txt"
    deadline = time.time() + 240
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert marker.exists(), "no checkpoint was written before the kill"
    step_at_kill = int(marker.read_text())
    assert step_at_kill < 3, "the run finished before it could be killed"

    resumed = run(compose_config([*overrides, f"run_dir={killed}"]))
    assert resumed["training"]["rl"]["resumed_from"] == step_at_kill
    straight = run(compose_config([*overrides, f"run_dir={tmp_path / 'straight'}"]))
    a = [json.loads(x) for x in (killed / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (tmp_path / "straight" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in a] == [1, 2, 3]
    for ma, mb in zip(a, b):
        for key in ("critic/score/mean", "response_length/mean", "actor/pg_loss", "actor/kl_loss"):
            assert ma[key] == pytest.approx(mb[key], rel=1e-4, abs=1e-6), (ma["step"], key)
    assert straight["training"]["rl"]["steps"] == 3


def test_a_torn_metrics_row_the_checkpoint_covers_is_written_back_on_resume(tmp_path):
    """On the main before this, resuming from global_step_2 after a torn step-2 line gave steps 1, 3 and a reward
    curve with a hole: the row is now rewritten from the checkpoint, which saves every step's row."""
    overrides = [*TINY_RUN, "stages=[rl]", "trainer.total_steps=3", "trainer.keep_checkpoints=3", f"cache_dir={CACHE_DIR}",
                 f"run_dir={tmp_path}"]  # fmt: skip
    run(compose_config(overrides))
    metrics = tmp_path / "metrics.jsonl"
    rows = [json.loads(x) for x in metrics.read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    # a crash in step 3: its checkpoint and the final model never written, step 2's line cut mid-write
    shutil.rmtree(tmp_path / "rl_model")
    shutil.rmtree(tmp_path / "checkpoints" / "global_step_3")
    (tmp_path / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("2")
    metrics.write_text(json.dumps(rows[0]) + "\n" + json.dumps(rows[1])[:40])
    resumed = run(compose_config(overrides))
    assert resumed["training"]["rl"]["resumed_from"] == 2
    again = [json.loads(x) for x in metrics.read_text().splitlines()]
    assert [r["step"] for r in again] == [1, 2, 3]
    assert again[1] == rows[1]  # step 2's row as it was logged
    assert resumed["training"]["rl"]["steps"] == 3 and None not in resumed["training"]["rl"]["rewards"]
    assert len(resumed["training"]["rl"]["rewards"]) == 3


REWARD_OPTIONS = sorted(p.stem for p in (REPO_ROOT / "conf" / "reward").glob("*.yaml"))


@pytest.mark.parametrize("reward", REWARD_OPTIONS)
def test_every_reward_option_trains_and_evaluates(reward, tmp_path):
    """SFT on gold outputs written for the reward's prompt, 2 RL steps, and the evaluation of its mode."""
    results = run(compose_config([*TINY_RUN, f"reward={reward}", "stages=[sft,rl,eval_rl]", f"run_dir={tmp_path}"]))
    metrics = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2]
    assert all(isinstance(m["actor/pg_loss"], float) for m in metrics)
    assert "reward/format_ok" in metrics[0] and "reward/parse_failure_rate" in metrics[0]
    overall = results["evaluations"]["rl"]["held_out"]["metrics"]
    key = "score_accuracy" if reward == "pointwise" else "accuracy"
    assert 0.0 <= overall[key] <= 1.0 and overall["parse_failure_rate"] == 1.0  # an untrained tiny model
    records = (tmp_path / "eval" / "rl" / "judgments.jsonl").read_text().splitlines()
    assert len(records) == 8  # 4 pairs x (both orders | both responses)
    assert results["training"]["sft"]["sft/examples"] == 8


def test_missing_benchmark_file_is_skipped_not_fatal(tmp_path, monkeypatch, capsys):
    """A fresh machine without ../shared/data still runs the main job; it says which benchmark it skipped."""
    monkeypatch.setenv("JUDGE_RL_ROOT", str(tmp_path / "elsewhere"))
    results = run(compose_config([*TINY_RUN, "stages=[eval_base]", f"run_dir={tmp_path / 'run'}"]))
    assert results["evaluations"]["base"]["held_out"] and results["evaluations"]["base"]["benchmarks"] == {}
    assert "eval.benchmarks: llmbar_natural skipped, no file at" in capsys.readouterr().out


def test_a_changed_config_in_the_same_run_dir_is_refused_not_mixed(tmp_path):
    """On today's main, total_steps=0 then =2 in one run_dir skipped training as "finished" while
    resolved_config.yaml claimed 2 steps."""
    quick = [*TINY_RUN, "stages=[eval_base]", "eval.limit=1", "eval.benchmarks=[]", f"run_dir={tmp_path}"]
    run(compose_config([*quick, "trainer.total_steps=1"]))
    with pytest.raises(RunDirError, match="trainer.total_steps: 1 -> 2") as err:
        run(compose_config([*quick, "trainer.total_steps=2"]))
    assert "\n" not in str(err.value)
    assert "total_steps: 1" in (tmp_path / "resolved_config.yaml").read_text()
    # keys that change no result may differ: checkpoint frequency, eval batch size, the logger
    run(compose_config([*quick, "trainer.total_steps=1", "trainer.save_every=3", "eval.batch_size=2", "logger=none"]))
