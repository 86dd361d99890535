"""The results schema: evaluation entries with intervals, flat cells, and a run directory read back."""

from __future__ import annotations

import json

import pytest
import yaml

from judge_rl.reports.logging import sweep_group, wandb_run_labels
from judge_rl.config import LoggerConfig
from judge_rl.reports.schema import (
    SCHEMA,
    bootstrap_ci,
    evaluation_entry,
    flat_cells,
    new_results,
    per_pair_values,
    read_run,
    write_results,
)
from judge_rl.rundir import write_status


def rec(pair, pos, correct, winner=None, server_error=""):
    return {"pair_id": pair, "chosen_position": pos, "correct": correct, "parse_error": "",
            "winner": winner or (pos if correct else ("b" if pos == "a" else "a")), "server_error": server_error}


RECORDS = [rec("p1", "a", True), rec("p1", "b", True), rec("p2", "a", True), rec("p2", "b", False),
           rec("p3", "a", False), rec("p3", "b", False), rec("p4", "a", True, server_error="timeout")]


def test_per_pair_values_are_the_units_of_the_headline_metrics():
    assert sorted(per_pair_values(RECORDS, "accuracy")) == [0.0, 0.5, 1.0]  # p4: its only record got no answer
    # consistent accuracy needs both orders answered
    assert sorted(per_pair_values(RECORDS, "consistent_accuracy")) == [0.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="no per-pair definition"):
        per_pair_values(RECORDS, "a_preference_rate")


def test_bootstrap_interval_brackets_the_mean_and_shrinks_with_more_units():
    small = bootstrap_ci([1.0, 0.0] * 5)
    large = bootstrap_ci([1.0, 0.0] * 200)
    assert small["low"] < 0.5 < small["high"] and small["mean"] == 0.5 and small["n"] == 10
    assert large["high"] - large["low"] < small["high"] - small["low"]
    assert bootstrap_ci([1.0] * 7) == {"mean": 1.0, "low": 1.0, "high": 1.0, "n": 7.0, "level": 0.95}
    assert bootstrap_ci([])["n"] == 0.0


def test_an_evaluation_entry_and_its_flat_cells(tmp_path):
    summary = {"overall": {"accuracy": 0.5, "consistent_accuracy": 1 / 3, "accuracy_a": 0.75, "n_pairs": 3.0},
               "by_source": {"s": {"accuracy": 0.5}}, "scoring": {"status": "complete"}, "counts": {"items": 7},
               "parse_failure_reasons": {}}
    entry = evaluation_entry(summary, RECORDS)
    assert entry["metrics"]["accuracy"] == 0.5 and entry["official"] is None
    assert set(entry["ci"]) == {"accuracy", "consistent_accuracy"}
    doc = new_results("main", tmp_path, overrides=["reward=strength"])
    doc["evaluations"]["rl"] = {"held_out": entry, "benchmarks": {
        "pandalm": evaluation_entry({"official": {"f1": 0.4, "per_class": {"0": {"f1": 0.1}}}, "harness": {
            "overall": {"accuracy": 0.6, "accuracy_a": 0.6}, "by_subset": {}}}, [])}}
    doc["training"]["rl"] = {"steps": 2, "seconds_per_step": 3.5,
                             "reward_curve": {"first_mean": 0.1, "last_mean": 0.4}}
    doc["comparisons"]["rl_minus_sft"] = {"consistent_accuracy": {"diff": 0.25, "low": -0.1, "high": 0.5}}
    doc["wall_s"] = 12.0
    cells = flat_cells(doc)
    assert cells["rl/held_out/consistent_accuracy"] == pytest.approx(1 / 3)
    assert cells["rl/held_out/consistent_accuracy_ci"] == [entry["ci"]["consistent_accuracy"]["low"],
                                                          entry["ci"]["consistent_accuracy"]["high"]]
    assert cells["rl/pandalm/official/f1"] == 0.4 and cells["rl/pandalm/accuracy"] == 0.6
    assert cells["rl/pandalm/official/per_class/0/f1"] == 0.1
    assert cells["training/rl/seconds_per_step"] == 3.5 and cells["training/rl/reward_last_mean"] == 0.4
    assert cells["rl_minus_sft/consistent_accuracy"] == 0.25 and cells["rl_minus_sft/consistent_accuracy_ci"] == [-0.1, 0.5]
    assert cells["wall_s"] == 12.0


def test_a_run_directory_read_back(tmp_path):
    (tmp_path / "resolved_config.yaml").write_text(yaml.safe_dump({"reward": {"name": "strength"}}))
    write_status(tmp_path, "failed", "ValueError: boom")
    doc = new_results("eval", tmp_path, overrides=["benchmark=pandalm"])
    write_results(tmp_path, doc)
    record = read_run(tmp_path)
    assert (record.status, record.error) == ("failed", "ValueError: boom")
    assert record.overrides == ["benchmark=pandalm"] and record.config["reward"]["name"] == "strength"
    assert record.results["schema"] == SCHEMA
    (tmp_path / "results.json").write_text(json.dumps({"summary": "old"}))
    with pytest.raises(ValueError, match="results.json: schema None, expected 'judge_rl.results/1'"):
        read_run(tmp_path)


def test_the_points_of_a_sweep_share_a_wandb_group_and_job_type():
    sweep = {"multirun": True, "sweep_dir": "multirun/2026-11-23/10-00-00-ab12", "overrides": ["+sweeps=x", "reward=margin"]}
    labels = wandb_run_labels(LoggerConfig(job_type="thinkj_table9"), sweep)
    assert labels == {"group": "2026-11-23_10-00-00-ab12", "job_type": "thinkj_table9",
                      "swept": {"sweeps": "x", "reward": "margin"}}
    assert sweep_group("multirun/2026-11-23/10-00-00-ab12") == labels["group"]
    assert wandb_run_labels(LoggerConfig(group="mine"), sweep)["group"] == "mine"
    single = wandb_run_labels(LoggerConfig(), {"multirun": False, "sweep_dir": None, "overrides": []})
    assert single == {"group": None, "job_type": "run", "swept": {}}


def test_a_failed_results_write_leaves_the_last_whole_file_and_no_tmp(tmp_path, monkeypatch):
    """A full disk while writing results.json (issue 55): results.json.tmp is removed, the last whole results.json
    stays."""
    import pathlib

    write_results(tmp_path, {"schema": 1, "wall_s": 1.0})
    real = pathlib.Path.write_text

    def disk_full(self, text, *args, **kwargs):
        real(self, text[:10], *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_text", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_results(tmp_path, {"schema": 1, "wall_s": 2.0})
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]
    assert json.loads((tmp_path / "results.json").read_text())["wall_s"] == 1.0
