"""A run directory belongs to one process and one config (judge_rl/rundir.py)."""

from __future__ import annotations

import json

import pytest

from judge_rl.rundir import RunDirError, claim_run_dir, config_diff, one_line, read_status

NEUTRAL = ("run_dir", "logger")


def test_a_second_claim_of_a_directory_in_use_refuses(tmp_path):
    with claim_run_dir(tmp_path, {"seed": 1}, resume=True, neutral=NEUTRAL):
        with pytest.raises(RunDirError, match="is in use by pid"):
            with claim_run_dir(tmp_path, {"seed": 1}, resume=True, neutral=NEUTRAL):
                pass
    # released at the end: the same config resumes
    with claim_run_dir(tmp_path, {"seed": 1}, resume=True, neutral=NEUTRAL):
        assert read_status(tmp_path)["status"] == "running"
    assert read_status(tmp_path)["status"] == "finished"


def test_a_different_config_refuses_with_the_keys_and_resume_false_supersedes(tmp_path):
    config = {"seed": 1, "model": {"tiny": {"hidden_size": 64}}, "logger": {"name": "none"}}
    with claim_run_dir(tmp_path, config, resume=True, neutral=NEUTRAL):
        (tmp_path / "judgments.jsonl").write_text('{"item_id": "a"}\n')
    # a neutral key may change
    with claim_run_dir(tmp_path, {**config, "logger": {"name": "wandb"}}, resume=True, neutral=NEUTRAL):
        pass
    other = {**config, "seed": 2, "model": {"tiny": {"hidden_size": 32}}}
    with pytest.raises(RunDirError) as err:
        with claim_run_dir(tmp_path, other, resume=True, neutral=NEUTRAL):
            pass
    message = str(err.value)
    assert "\n" not in message and "model.tiny.hidden_size: 64 -> 32" in message and "seed: 1 -> 2" in message
    assert "resume=false" in message
    assert (tmp_path / "judgments.jsonl").exists() and read_status(tmp_path)["status"] == "finished"
    with claim_run_dir(tmp_path, other, resume=False, neutral=NEUTRAL):
        assert not (tmp_path / "judgments.jsonl").exists()
    moved = list((tmp_path / "superseded").glob("*/judgments.jsonl"))
    assert len(moved) == 1 and moved[0].read_text() == '{"item_id": "a"}\n'


def test_a_failure_is_recorded_with_its_one_line_error(tmp_path):
    with pytest.raises(ValueError):
        with claim_run_dir(tmp_path, {}, resume=True, neutral=()):
            raise ValueError("trainer.save_every=0: expected >= 1\n(second line)")
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["status"] == "failed"
    assert status["error"] == "ValueError: trainer.save_every=0: expected >= 1 | (second line)"
    assert one_line(KeyError("unknown prompt 'nope'")) == "KeyError: unknown prompt 'nope'"


def test_a_run_saved_before_model_arch_gained_fields_resumes():
    from judge_rl.config import EVAL_NEUTRAL_KEYS, NEUTRAL_KEYS
    from judge_rl.policy.config import POLICY_NEUTRAL_KEYS

    saved = {"model": {"name": "smollm2-135m", "arch": {"num_attention_heads": 9}}, "trainer": {"total_steps": 2}}
    now = {"model": {"name": "smollm2-135m", "arch": {"num_attention_heads": 9, "num_hidden_layers": 30}},
           "trainer": {"total_steps": 2}}
    for neutral in (NEUTRAL_KEYS, EVAL_NEUTRAL_KEYS, POLICY_NEUTRAL_KEYS):
        assert config_diff(saved, now, neutral) == []
        assert config_diff(saved, {**now, "model": {**now["model"], "name": "other"}}, neutral) != []


def test_config_diff_ignores_neutral_prefixes_only():
    old = {"trainer": {"total_steps": 0, "save_every": 5}, "stages": ["rl"]}
    new = {"trainer": {"total_steps": 2, "save_every": 1}, "stages": ["rl", "eval_rl"]}
    assert config_diff(old, new, ("trainer.save_every", "stages")) == ["trainer.total_steps: 0 -> 2"]
    assert config_diff({"a": 1}, {"b": 1}, ()) == ["a: 1 -> (absent)", "b: (absent) -> 1"]


def test_a_resumed_run_reports_the_wall_time_of_all_its_launches_not_only_its_last(tmp_path):
    import time

    from judge_rl.rundir import run_wall_s

    with pytest.raises(KeyboardInterrupt):  # the first launch is stopped (SIGTERM arrives as KeyboardInterrupt)
        with claim_run_dir(tmp_path, {"seed": 1}, resume=True, neutral=NEUTRAL):
            time.sleep(0.3)
            raise KeyboardInterrupt
    first = read_status(tmp_path)
    assert first["status"] == "interrupted" and first["launches"] == 1 and first["wall_s"] >= 0.3
    with claim_run_dir(tmp_path, {"seed": 1}, resume=True, neutral=NEUTRAL) as run_dir:
        t = time.perf_counter()
        time.sleep(0.1)
        total = run_wall_s(run_dir, t)  # what a job writes into results.json
        elapsed = time.perf_counter() - t  # this launch's time so far, measured around the call
    assert first["wall_s"] + 0.1 <= total <= first["wall_s"] + elapsed  # the earlier launch's time plus this one's
    second = read_status(tmp_path)
    assert second["launches"] == 2 and second["wall_s"] >= total
    with claim_run_dir(tmp_path, {"seed": 1}, resume=False, neutral=NEUTRAL):  # a new run starts its clock afresh
        assert read_status(tmp_path)["wall_s"] == 0.0 and read_status(tmp_path)["launches"] == 1
