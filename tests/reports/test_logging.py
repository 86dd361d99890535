"""W&B mode: an explicit WANDB_MODE in the environment wins over logger.mode and over a present key."""

from __future__ import annotations

import pytest

from judge_rl.config import LoggerConfig
from judge_rl.reports.logging import MetricsLogger, wandb_mode


def test_the_environments_explicit_mode_wins():
    assert wandb_mode("auto", {"WANDB_API_KEY": "x" * 40, "WANDB_MODE": "offline"}) == "offline"
    assert wandb_mode("online", {"WANDB_MODE": "disabled"}) == "disabled"
    assert wandb_mode("auto", {"WANDB_API_KEY": "x" * 40}) == "online"
    assert wandb_mode("auto", {}) == "offline"
    assert wandb_mode("offline", {"WANDB_API_KEY": "x" * 40}) == "offline"
    with pytest.raises(ValueError, match="WANDB_MODE='ofline'"):
        wandb_mode("auto", {"WANDB_MODE": "ofline"})
    with pytest.raises(ValueError, match="logger.mode='nope'"):
        wandb_mode("nope", {})


def test_a_key_in_the_environment_does_not_override_wandb_mode_offline(tmp_path, monkeypatch):
    """On today's main, logger.mode=auto chose online whenever a key was set and tried to log in."""
    monkeypatch.setenv("WANDB_API_KEY", "0" * 40)  # a fake key: an online run would fail to log in
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = MetricsLogger(tmp_path, LoggerConfig(name="wandb", mode="auto"), {"seed": 1})
    try:
        assert logger.wandb_run is not None and logger.wandb_run.settings.mode == "offline"
        logger.log({"critic/score/mean": 0.25}, 1)
    finally:
        logger.finish()
    assert (tmp_path / "wandb").is_dir()
    written = "".join(p.read_text(errors="ignore") for p in (tmp_path / "wandb").rglob("*") if p.is_file() and p.suffix in (".json", ".yaml", ".log", ".txt"))
    assert "0" * 40 not in written  # the key never reaches a file
