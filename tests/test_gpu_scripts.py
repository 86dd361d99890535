"""scripts/gpu_thinkj_tables.sh, the paper-scale Think-J Tables 3 and 4: every command it would run composes and
validates here, and the verl configs of its online rows pass verl's own checks on CPU (the GPU run is not possible
on this machine; the data is swapped for a small local set because HelpSteer2 is read from the hub)."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest
from conftest import REPO_ROOT, compose_config

from judge_rl.jobs.train import to_job_config

SCRIPT = REPO_ROOT / "scripts" / "gpu_thinkj_tables.sh"


def commands(table: str, init) -> list[list[str]]:
    """The `python -m judge_rl ...` argument lists the script runs (PRINT_ONLY=1 prints them)."""
    out = subprocess.run(["bash", str(SCRIPT), table], env={**os.environ, "PRINT_ONLY": "1", "INIT": str(init)},
                         capture_output=True, text=True, check=True, cwd=REPO_ROOT).stdout
    return [shlex.split(line)[3:] for line in out.splitlines() if line.strip()]


def points(args: list[str]) -> list[tuple[str, list[str]]]:
    """(algorithm, overrides) for each point of a multirun command; Hydra's flags and hydra.* keys dropped."""
    kept = [a for a in args if a not in ("-m", "--dry-run") and not a.startswith("hydra.")]
    (swept,) = [a for a in kept if a.startswith("algorithm=")]
    rest = [a for a in kept if a != swept]
    return [(name, [f"algorithm={name}", *rest]) for name in swept.split("=", 1)[1].split(",")]


@pytest.fixture
def init(tmp_path):
    path = tmp_path / "limj707.jsonl"
    path.write_text("")
    return path


@pytest.mark.parametrize("table,expected", [("table3", {"direct", "sft_direct", "sft_cot", "bt", "grpo"}),
                                            ("table4", {"dpo_critic", "ppo", "reinforce_pp", "grpo"})])
def test_every_row_of_the_paper_scale_tables_composes_and_validates(table, expected, init, tmp_path):
    rows = {}
    for args in commands(table, init):
        for name, overrides in points(args):
            job = to_job_config(compose_config([*overrides, f"run_dir={tmp_path / name}"]))
            rows[name] = job
    assert set(rows) == expected
    for name, job in rows.items():
        assert job.model.name == "qwen2.5-7b-instruct" and job.data.name == "helpsteer2"
        assert job.sft.data.loader == "pairs" and job.sft.data.kwargs["path"] == str(init)
        assert job.cluster.backend == ("verl" if name in ("ppo", "reinforce_pp", "grpo") else "local")
    if table == "table4":
        assert rows["dpo_critic"].algorithm.beta == 0.1 and rows["dpo_critic"].algorithm.sft_weight == 1.0
        assert rows["grpo"].algorithm.lr == 1e-6 and rows["grpo"].algorithm.rollout_n == 8


def test_the_online_rows_pass_verls_own_config_checks_on_cpu(init, tmp_path):
    from judge_rl.backends.verl.launch import prepare
    from judge_rl.recipes.online_rl import judge_rl_task

    (preflight, *_rest) = commands("table4", init)
    assert "--dry-run" in preflight  # the script checks before it launches
    for name, overrides in points(preflight):
        small = [o for o in overrides if not o.startswith(("data=", "sft.data="))]
        small += ["data=synthetic", "data.train.kwargs.n=32", "data.eval.kwargs.n=8", "logger=none"]
        if name == "ppo":  # verl builds PPO's critic from the model's files, which this offline machine lacks
            small = [o for o in small if not o.startswith("model=")] + ["model=smollm2-135m"]
        job = to_job_config(compose_config([*small, f"run_dir={tmp_path / name}"]))
        cfg, path, command, _ = prepare(job, tmp_path / name, judge_rl_task(job))
        assert path.exists() and cfg.trainer.n_gpus_per_node == 8
        assert cfg.actor_rollout_ref.rollout.n == 8 and cfg.actor_rollout_ref.actor.optim.lr == 1e-6
        assert cfg.algorithm.adv_estimator == {"ppo": "gae", "reinforce_pp": "reinforce_plus_plus", "grpo": "grpo"}[name]
