"""Held-out evaluation during RL (trainer.eval_every): val/* series in metrics.jsonl, learning-curve PNGs,
no effect on training, judgments reused on resume."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from judge_rl.jobs.train import run
from judge_rl.jobs.train import to_job_config
from judge_rl.backends.local.loop import eval_due, evaluate_live

from conftest import TINY_RUN, compose_config

VAL_KEYS = ("val/accuracy", "val/consistent_accuracy", "val/accuracy_a", "val/accuracy_b", "val/a_preference_rate",
            "val/parse_failure_rate")
TRAINING_KEYS = ("critic/score/mean", "response_length/mean", "actor/entropy", "actor/pg_loss", "actor/kl_loss")


def metrics_of(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def rl_run(run_dir: Path, *overrides: str) -> dict:
    return run(compose_config([*TINY_RUN, "stages=[rl]", f"run_dir={run_dir}", *overrides]))


def test_evaluation_is_due_every_k_steps_and_at_the_last():
    assert [s for s in range(1, 8) if eval_due(s, 7, 3)] == [3, 6, 7]
    assert [s for s in range(1, 5) if eval_due(s, 4, 1)] == [1, 2, 3, 4]
    assert not any(eval_due(s, 4, 0) for s in range(1, 5))  # 0: off, not even at the last step


def test_evaluating_the_live_policy_leaves_its_mode_and_every_rng_as_they_were():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)).train()
    seen = {}

    def eval_fn(m, step):
        seen["training"], seen["grad"] = m.training, torch.is_grad_enabled()
        torch.rand(1000), np.random.rand(10), random.random()  # an evaluation that samples
        m.train()  # and flips the mode itself
        return {"val/accuracy": 0.5, "step": step}

    torch.manual_seed(0), np.random.seed(0), random.seed(0)
    expected = (torch.rand(3), np.random.rand(3), random.random())
    torch.manual_seed(0), np.random.seed(0), random.seed(0)
    assert evaluate_live(eval_fn, model, 7) == {"val/accuracy": 0.5, "step": 7}
    assert seen == {"training": False, "grad": False}  # judged in eval mode, without autograd
    got = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(got[0], expected[0]) and np.array_equal(got[1], expected[1]) and got[2] == expected[2]
    assert model.training
    model.eval()
    evaluate_live(eval_fn, model, 8)
    assert not model.training  # the mode it was in, whichever


def test_eval_fields_are_range_checked():
    with pytest.raises(ValueError, match="trainer.eval_every=-1"):
        to_job_config(compose_config(["run_dir=/tmp/x", "trainer.eval_every=-1"]))
    with pytest.raises(ValueError, match="trainer.eval_subset=0"):
        to_job_config(compose_config(["run_dir=/tmp/x", "trainer.eval_subset=0"]))


def test_eval_every_logs_val_series_and_plots_without_changing_training(tmp_path):
    with_eval = rl_run(tmp_path / "eval", "trainer.eval_every=1")
    without = rl_run(tmp_path / "plain", "trainer.eval_every=0")
    a, b = metrics_of(tmp_path / "eval"), metrics_of(tmp_path / "plain")
    assert [m["step"] for m in a] == [m["step"] for m in b] == [1, 2]
    for ma, mb in zip(a, b):
        for key in TRAINING_KEYS:  # the same samples and updates, to the bit
            assert ma[key] == mb[key], (ma["step"], key)
        assert all(key in ma for key in VAL_KEYS), ma.keys()  # one line per step, val/* in it
        assert ma["val/n_pairs"] == 4.0 and ma["val/parse_failure_rate"] == 1.0  # eval.limit=4, untrained judge
        assert ma["timing_s/testing"] > 0
        assert not any(k.startswith("val/") for k in mb)
    for step in (1, 2):  # both orders of each held-out pair, saved per step
        records = [json.loads(x) for x in (tmp_path / "eval" / "eval" / f"step_{step}" / "judgments.jsonl").read_text().splitlines()]
        assert len(records) == 8 and {r["chosen_position"] for r in records} == {"a", "b"}
    keys = {json.loads(x)["request_key"] for s in (1, 2)
            for x in (tmp_path / "eval" / "eval" / f"step_{s}" / "judgments.jsonl").read_text().splitlines()}
    assert len(keys) == 16  # the policy's weights changed between the steps: no judgment shared

    plots = tmp_path / "eval" / "plots"
    assert with_eval["plots"] == [str(plots / "reward_curve.png"), str(plots / "heldout.png"), str(plots / "parse_failures.png")]
    assert all(Path(p).read_bytes().startswith(b"\x89PNG") for p in with_eval["plots"])
    assert "heldout.png" not in " ".join(without["plots"])  # no val series, no held-out plot
    assert not (tmp_path / "plain" / "eval").exists()


def test_a_subset_every_k_steps_and_the_last_and_a_resumed_run_reuses_its_judgments(tmp_path):
    overrides = ("trainer.total_steps=3", "trainer.eval_every=2", "trainer.eval_subset=2", "trainer.keep_checkpoints=3")
    rl_run(tmp_path, *overrides)
    first = metrics_of(tmp_path)
    assert [("val/accuracy" in m) for m in first] == [False, True, True]  # step 2, and 3 the last
    assert first[1]["val/n_pairs"] == 2.0  # eval_subset of the 4 held-out pairs
    assert len((tmp_path / "eval" / "step_2" / "judgments.jsonl").read_text().splitlines()) == 4
    assert not (tmp_path / "eval" / "step_1").exists()

    # a crash after step 3 was evaluated, before it was checkpointed: the resumed run redoes step 3,
    # and the redone policy (the same weights) finds the saved judgments instead of judging again
    import shutil

    shutil.rmtree(tmp_path / "rl_model")
    shutil.rmtree(tmp_path / "checkpoints" / "global_step_3")
    (tmp_path / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("2")
    resumed = rl_run(tmp_path, *overrides)
    assert resumed["training"]["rl"]["resumed_from"] == 2
    summary = json.loads((tmp_path / "eval" / "step_3" / "summary.json").read_text())
    assert summary["judged_now"] == 0 and summary["reused"] == 4
    again = metrics_of(tmp_path)
    assert [m["step"] for m in again] == [1, 2, 3]
    assert {k: v for k, v in again[2].items() if k.startswith("val/")} == {k: v for k, v in first[2].items() if k.startswith("val/")}
    assert again[2]["critic/score/mean"] == first[2]["critic/score/mean"]


def test_a_lost_or_damaged_newest_checkpoint_resumes_from_the_newest_intact_one(tmp_path, capsys):
    """Issue 55: with the newest checkpoint's folder gone but the marker still naming it, the re-run restarted from
    step 0 without a word although global_step_1 was intact; a missing weights file was a one-line error with no
    fallback. Now both say so and resume from the newest intact checkpoint."""
    import shutil

    from judge_rl.backends.local.loop import checkpoint_problem, latest_checkpoint

    overrides = ("trainer.total_steps=2", "trainer.save_every=1", "trainer.keep_checkpoints=3")
    rl_run(tmp_path, *overrides)
    ckpt = tmp_path / "checkpoints"
    assert latest_checkpoint(ckpt)[0] == 2 and checkpoint_problem(ckpt / "global_step_1") is None

    # the newest folder gone, the marker still naming it
    shutil.rmtree(tmp_path / "rl_model")
    shutil.rmtree(ckpt / "global_step_2")
    notes: list[str] = []
    assert latest_checkpoint(ckpt, notes) == (1, ckpt / "global_step_1")
    assert notes == [f"{ckpt / 'global_step_2'} is missing"]
    resumed = rl_run(tmp_path, *overrides)
    assert resumed["training"]["rl"]["resumed_from"] == 1 and [m["step"] for m in metrics_of(tmp_path)] == [1, 2]
    assert "global_step_2 is missing; resuming from the newest intact one, global_step_1" in capsys.readouterr().out

    # the newest one torn: its weights file lost (a full disk)
    shutil.rmtree(tmp_path / "rl_model")
    (ckpt / "global_step_2" / "model" / "model.safetensors").unlink()
    notes = []
    assert latest_checkpoint(ckpt, notes)[0] == 1 and notes == [f"{ckpt / 'global_step_2'} is damaged (no model weights)"]
    assert rl_run(tmp_path, *overrides)["training"]["rl"]["resumed_from"] == 1
