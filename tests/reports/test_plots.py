"""Learning-curve PNGs from a hand-made history; empty series write no plot; W&B gets the images."""

from __future__ import annotations

import math

import pytest

from judge_rl.config import LoggerConfig
from judge_rl.reports.logging import MetricsLogger
from judge_rl.reports.plots import series, write_plots
from judge_rl.reports.summary import print_summary

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def history_rows(n: int = 6, eval_every: int = 2) -> list[dict]:
    rows = []
    for step in range(1, n + 1):
        row = {
            "step": step,
            "critic/score/mean": 0.1 * step,
            "critic/score/min": 0.0,
            "critic/score/max": 0.2 * step,
            "reward/parse_failure_rate": 1.0 / step,
            "judge/a_preference": 0.9 - 0.05 * step,
            "judge/parse_failure/missing_think_block": 0.5 / step,
        }
        if step % eval_every == 0 or step == n:
            row.update({"val/accuracy": 0.4 + 0.05 * step, "val/consistent_accuracy": 0.3, "val/accuracy_a": 0.6,
                        "val/accuracy_b": 0.2, "val/a_preference_rate": 0.7, "val/parse_failure_rate": None,
                        "val/n_pairs": 4.0})
        rows.append(row)
    return rows


def test_every_plot_is_written_as_a_png(tmp_path):
    paths = write_plots(history_rows(), tmp_path)
    assert [p.name for p in paths] == ["reward_curve.png", "heldout.png", "a_preference.png", "parse_failures.png"]
    for p in paths:
        assert p.parent == tmp_path / "plots"
        data = p.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5_000, p  # a drawn figure, not an empty file


def test_a_plot_without_data_is_skipped(tmp_path):
    # a run without eval_every and before the judge metrics: only the reward curve and parse failures
    rows = [{"step": s, "critic/score/mean": 0.5, "reward/parse_failure_rate": 0.25} for s in (1, 2)]
    paths = write_plots(rows, tmp_path)
    assert [p.name for p in paths] == ["reward_curve.png", "parse_failures.png"]
    assert not (tmp_path / "plots" / "heldout.png").exists()
    # only held-out A-preference (no rollout judge metrics): the A-preference plot is still drawn
    rows[1]["val/a_preference_rate"] = 0.75
    assert "a_preference.png" in [p.name for p in write_plots(rows, tmp_path)]
    assert write_plots([], tmp_path / "empty") == []
    assert not (tmp_path / "empty").exists()


def test_series_keeps_step_order_and_skips_missing_and_nan_values():
    rows = [{"step": 3, "x": 0.3}, {"step": 1, "x": 0.1}, {"step": 2, "x": None}, {"step": 4, "x": math.nan},
            {"step": 5}, {"step": 6, "x": 0.6}]
    assert series(rows, "x") == ([1.0, 3.0, 6.0], [0.1, 0.3, 0.6])


def test_the_summary_names_the_plots(tmp_path, capsys):
    paths = write_plots(history_rows(), tmp_path)
    print_summary({}, None, 1.0, plots=paths)
    out = capsys.readouterr().out
    for p in paths:
        assert p.name in out


def test_plots_go_to_wandb_as_images_at_the_last_logged_step(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    logged = []

    class FakeRun:
        def log(self, data, step=None):
            logged.append((data, step))

    logger = MetricsLogger(tmp_path, LoggerConfig(name="none"), {})
    logger.log_images(write_plots(history_rows(), tmp_path))  # no W&B run: nothing, no error
    logger.wandb_run = FakeRun()
    logger.log({"critic/score/mean": 0.5}, 6)
    logged.clear()
    logger.log_images(write_plots(history_rows(), tmp_path))
    (images, step), = logged
    assert step == 6
    assert sorted(images) == ["plots/a_preference", "plots/heldout", "plots/parse_failures", "plots/reward_curve"]
    assert all(isinstance(v, wandb.Image) for v in images.values())


def test_the_reward_has_its_running_mean_and_the_held_out_plot_its_sft_and_rl_anchors(tmp_path):
    """The default run's pictures (issue 23): a noisy 10-step reward gets a running mean; heldout.png puts the SFT
    init (step 0) and the RL judge (last step) beside the live curve, and is drawn from the stages alone when the
    run had no live evaluation."""
    from judge_rl.reports.plots import Anchor, running_mean

    assert running_mean([1.0, 0.0, 0.5, 1.0, 0.0]) == [1.0, 0.5, 0.5, 0.5, 0.5]
    assert running_mean([0.2]) == [0.2]
    rows = history_rows(n=10)
    for row in rows:
        row["critic/score/std"] = 0.05
    anchors = [Anchor("SFT init", 0, {"accuracy": 0.70, "consistent_accuracy": 0.55}, subset=True),
               Anchor("SFT init, full held-out set", 0, {"accuracy": 0.917, "consistent_accuracy": 0.833}, subset=False),
               Anchor("RL judge, full held-out set", 10, {"accuracy": 0.938, "consistent_accuracy": 0.875}, subset=False)]
    with_anchors = {p.name: p.read_bytes() for p in write_plots(rows, tmp_path / "a", anchors)}
    without = {p.name: p.read_bytes() for p in write_plots(rows, tmp_path / "b")}
    assert with_anchors["heldout.png"] != without["heldout.png"]  # the anchors are drawn
    # no live evaluation (trainer.eval_every=0): the stages alone still make the figure
    plain = [{k: v for k, v in r.items() if not k.startswith("val/")} for r in rows]
    names = [p.name for p in write_plots(plain, tmp_path / "c", anchors[1:])]
    assert "heldout.png" in names
    assert "heldout.png" not in [p.name for p in write_plots(plain, tmp_path / "d")]


def test_an_evaluation_stage_without_an_answered_pair_is_left_off_heldout_png(tmp_path):
    """A stage whose every request failed has NaN rates: drawn as nothing, not a crash of the closing report."""
    from judge_rl.reports.plots import Anchor

    nan = float("nan")
    anchors = [Anchor("SFT init, full held-out set", 0, {"accuracy": nan, "consistent_accuracy": nan}, subset=False),
               Anchor("RL judge, full held-out set", 4, {"accuracy": 0.5, "consistent_accuracy": 0.25}, subset=False)]
    assert [p.name for p in write_plots([], tmp_path, anchors)] == ["heldout.png"]
    assert write_plots([], tmp_path / "none", anchors[:1]) == []
