"""The judge-quality study in smoke mode on the tiny models: every rung of sweeps/judge_ladder.yaml trained and
measured by the main job on the policy task's pairs, then every point of sweeps/judge_quality.yaml (the oracle and a
policy graded by each rung's judge), then the report with its table and the gain-against-accuracy picture."""

from __future__ import annotations

import json

import pytest
import yaml
from hydra import compose, initialize_config_dir

from conftest import CACHE_DIR, CONF_DIR, REPO_ROOT, compose_config
from judge_rl.jobs.train import run as run_main
from judge_rl.jobs.policy import run as run_policy

SMALL_MAIN = ["model=tiny-random", "logger=none", "trainer.total_steps=1", "trainer.max_new_tokens=12",
              "trainer.prompts_per_step=2", "trainer.eval_every=0", "sft.batch_size=4", "eval.max_new_tokens=12",
              "data.train.kwargs.n=8", "data.eval.kwargs.n=4"]  # fmt: skip
SMALL_POLICY = ["policy_debug=tiny", "judge.engine=local", "trainer.total_steps=1", "task_eval.n=4",
                "task_eval.max_new_tokens=12"]  # fmt: skip


def sweep_choices(name: str, key: str) -> list[str]:
    sweep = yaml.safe_load((REPO_ROOT / "sweeps" / f"{name}.yaml").read_text())
    return sweep["hydra"]["sweeper"]["params"][key].split(",")


def policy_cfg(overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="policy", overrides=[f"cache_dir={CACHE_DIR}", *overrides])


# peak memory: 9.9 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_the_ladder_and_the_policies_it_grades_in_smoke_mode(tmp_path, monkeypatch):
    from judge_rl.report import write_report

    ladder = tmp_path / "ladder"
    monkeypatch.setenv("JUDGE_RL_LADDER", str(ladder))
    rungs = sweep_choices("judge_ladder", "judge_ladder")
    assert rungs == ["untrained", "sft_few", "sft_more", "sft_rl", "biased_longer"]
    for rung in rungs:
        cfg = compose_config(["+sweeps=judge_ladder", f"judge_ladder={rung}", *SMALL_MAIN, f"run_dir={ladder / rung}",
                              "sft.num_examples=4" if rung == "sft_few" else "sft.num_examples=8"])  # fmt: skip
        assert cfg.data.name == "policy_task" and cfg.eval.benchmarks == []
        results = run_main(cfg)
        stage = {"untrained": "base", "sft_rl": "rl"}.get(rung, "sft")
        held_out = results["evaluations"][stage]["held_out"]["metrics"]
        assert held_out["n_pairs"] > 0 and "longer_preference_rate" in held_out  # (a pair too long for the tiny model is left out)
    assert (ladder / "sft_few" / "sft_model" / "config.json").exists() and (ladder / "sft_rl" / "rl_model").is_dir()
    resolved = yaml.safe_load((ladder / "biased_longer" / "resolved_config.yaml").read_text())
    assert resolved["data"]["train"]["kwargs"]["bias"] == "longer" and resolved["data"]["eval"]["kwargs"].get("bias") is None

    points = sweep_choices("judge_quality", "+reward_judge")
    assert len(points) == 6 and {"oracle", *(f"ladder_{r}" for r in rungs)} == set(points)  # every rung and the oracle
    sweep = tmp_path / "sweep"
    for i, point in enumerate(points):
        overrides = ["+sweeps=judge_quality", f"+reward_judge={point}"]
        (sweep / str(i) / ".hydra").mkdir(parents=True)
        (sweep / str(i) / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
        results = run_policy(policy_cfg([*overrides, *SMALL_POLICY, f"run_dir={sweep / str(i)}"]))
        assert results["final_stage"] == "after" and "task_after_minus_before" in results["comparisons"]
        if point == "oracle":
            assert "grader" not in results["evaluations"] and results["training"]["rl"]["judge"]["calls"] == 0.0
        else:  # the judge's own held-out quality travels with the policy it graded
            rung = point.removeprefix("ladder_")
            measured = json.loads((ladder / rung / "results.json").read_text())["evaluations"]
            stage = {"untrained": "base", "sft_rl": "rl"}.get(rung, "sft")
            assert results["evaluations"]["grader"]["held_out"] == measured[stage]["held_out"]
            assert results["training"]["rl"]["judge"]["calls"] > 0
    cfg = policy_cfg(["+sweeps=judge_quality", *SMALL_POLICY])
    files = write_report([sweep], sweep, columns=list(cfg.report.columns), chart=list(cfg.report.chart),
                         scatter=list(cfg.report.scatter), versus=cfg.report.versus)  # fmt: skip
    table = files["table"]
    assert [r.label for r in table.rows] == [f"reward_judge={p}" for p in points]
    assert all(r.status == "finished" for r in table.rows)
    assert files["scatter"].exists() and files["png"].exists()
    # one dot per judge: the oracle has no judge accuracy, every rung has one and a gain with its interval
    after, versus = "after/task/official/prompt_level_strict_accuracy", "versus/task/prompt_level_strict_accuracy"
    oracle = table.rows[points.index("oracle")].cells
    assert oracle[versus] == 0.0 and oracle[f"{versus}_ci"] == [0.0, 0.0]
    for point, row in zip(points, table.rows):
        # each policy against the oracle's on the same prompts: the difference of the two after scores, with an interval
        assert row.cells[versus] == pytest.approx(row.cells[after] - oracle[after])
        lo, hi = row.cells[f"{versus}_ci"]
        assert lo <= row.cells[versus] <= hi
        if point == "oracle":
            continue
        assert isinstance(row.cells["grader/held_out/accuracy"], float)
        assert len(row.cells["task_after_minus_before/prompt_level_strict_accuracy_ci"]) == 2
