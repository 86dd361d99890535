"""The command line, in real subprocesses: unique run directories, one process per directory, one-line
errors, and sweeps whose failing points are each recorded and listed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge_rl.rundir import RunDirError, claim_run_dir, read_status

from conftest import CACHE_DIR, QUICK


def judge_rl(*args: str, cwd: Path, env: dict | None = None, module: str = "judge_rl", **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HYDRA_FULL_ERROR": "", **(env or {})}
    for name in ("JUDGE_RL_OUTPUTS", "JUDGE_RL_MULTIRUN"):  # these tests read outputs/ and multirun/ under cwd
        env.pop(name, None)
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


# peak memory: 6.9 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_two_runs_started_together_get_their_own_directories(tmp_path):
    """On today's main both used outputs/<date>/<time>: one metrics file, one judgments file, two judges."""
    procs = [judge_rl(*QUICK, f"seed={seed}", cwd=tmp_path) for seed in (1, 2)]
    results = [finish(p) for p in procs]
    assert [rc for rc, _, _ in results] == [0, 0], [err[-2000:] for _, _, err in results]
    run_dirs = sorted(p.parent for p in tmp_path.glob("outputs/*/*/resolved_config.yaml"))
    assert len(run_dirs) == 2
    seeds = set()
    for run_dir in run_dirs:
        lines = (run_dir / "eval" / "base" / "judgments.jsonl").read_text().splitlines()
        assert len(lines) == 4  # 2 pairs x both orders: one judge's records only
        assert read_status(run_dir)["status"] == "finished"
        seeds.add(next(line for line in (run_dir / "resolved_config.yaml").read_text().splitlines() if line.startswith("seed:")))
    assert seeds == {"seed: 1", "seed: 2"}


# peak memory: 6.4 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_run_directory_in_use_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    proc = judge_rl(*QUICK, "eval.limit=6", "eval.max_new_tokens=32", f"run_dir={run_dir}", cwd=tmp_path)
    deadline = time.time() + 120
    while (read_status(run_dir) or {}).get("status") != "running" and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before its directory could be claimed twice"
    with pytest.raises(RunDirError, match=f"run_dir {run_dir} is in use by pid {proc.pid}"):
        with claim_run_dir(run_dir, {}, resume=True, neutral=()):
            pass
    rc, _, err = finish(proc)
    assert rc == 0, err[-2000:]
    assert read_status(run_dir)["status"] == "finished"


# peak memory: 6.9 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_user_mistake_prints_one_line_and_the_traceback_only_on_request(tmp_path):
    rc, out, err = finish(judge_rl(*QUICK, "trainer.save_every=0", cwd=tmp_path))
    assert rc == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == ["judge_rl: error: ValueError: trainer.save_every=0: expected >= 1 (HYDRA_FULL_ERROR=1 shows the traceback)"]
    assert "Traceback" not in out + err
    status = json.loads(next(tmp_path.glob("outputs/*/*/status.json")).read_text())
    assert status["status"] == "failed" and "trainer.save_every=0" in status["error"]

    rc, _, err = finish(judge_rl("judge.checkpoint=/nonexistent/ckpt", "model=tiny-random", f"cache_dir={CACHE_DIR}",
                                 cwd=tmp_path, module="judge_rl.eval"))
    assert rc == 1
    assert [line for line in err.splitlines() if line.strip()] == [
        "judge_rl: error: ValueError: judge.checkpoint=/nonexistent/ckpt: no such directory (HYDRA_FULL_ERROR=1 shows the traceback)"
    ]

    rc, _, err = finish(judge_rl(*QUICK, "trainer.save_every=0", cwd=tmp_path, env={"HYDRA_FULL_ERROR": "1"}))
    assert rc == 1 and "Traceback" in err and "trainer.save_every=0: expected >= 1" in err


# peak memory: 6.5 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_sweep_records_every_failing_point_and_lists_them_at_its_end(tmp_path):
    """On today's main the sweep raised the first failure only; the others left empty directories."""
    rc, out, err = finish(judge_rl("-m", *QUICK, "trainer.save_every=0,1,-1", cwd=tmp_path), timeout=600)
    assert rc == 1, err[-3000:]
    sweep = next(tmp_path.glob("multirun/*/*"))
    statuses = {p.name: read_status(p) for p in sorted(sweep.iterdir()) if p.is_dir()}
    assert sorted(statuses) == ["0", "1", "2"]
    assert statuses["1"]["status"] == "finished"
    assert statuses["0"]["status"] == "failed" and "trainer.save_every=0: expected >= 1" in statuses["0"]["error"]
    assert statuses["2"]["status"] == "failed" and "trainer.save_every=-1: expected >= 1" in statuses["2"]["error"]
    assert "2 of 3 sweep points did not finish" in err
    listed = err.split("did not finish:")[1]
    assert "/0 (trainer.save_every=0): failed: ValueError: trainer.save_every=0: expected >= 1" in listed
    assert "/2 (trainer.save_every=-1): failed: ValueError: trainer.save_every=-1: expected >= 1" in listed
    assert "save_every=1)" not in listed
    # the sweep's table (judge_rl/report.py) is written first, its failed points rows that say so
    md = (sweep / "report.md").read_text()
    assert "| trainer.save_every=0 | failed: ValueError: trainer.save_every=0: expected >= 1" in md
    assert "| trainer.save_every=1 | finished |" in md


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_sweep_naming_an_unknown_option_fails_in_one_line_before_any_point_runs(tmp_path):
    """On the main before this, `-m algorithm=direct,nonexistent` ran nothing and printed Hydra's multi-line error."""
    rc, out, err = finish(judge_rl("-m", *QUICK, "algorithm=direct,nonexistent", cwd=tmp_path), timeout=120)
    assert rc == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("judge_rl: error: algorithm=nonexistent: no such algorithm option; "
                                                   "available: bt, direct, dpo_critic")  # fmt: skip
    assert "grpo" in lines[0] and not list(tmp_path.glob("multirun/*/*/*"))
    rc, _, err = finish(judge_rl(*QUICK, "reward=strenght", cwd=tmp_path), timeout=120)  # a single run alike
    assert rc == 1 and err.strip().startswith("judge_rl: error: reward=strenght: no such reward option; available:")


# peak memory: 6.4 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_sweep_needing_an_unset_environment_variable_fails_in_one_line_before_any_point_runs(tmp_path, monkeypatch):
    """On the main before this, sweeps/judge_quality.yaml without JUDGE_RL_LADDER ran its oracle point, then failed
    every judge point with an InterpolationResolutionError."""
    from hydra import compose, initialize_config_dir

    from judge_rl.config.paths import CONF_DIR
    from judge_rl.jobs.shell import missing_sweep_env

    env = {k: v for k, v in os.environ.items() if k != "JUDGE_RL_LADDER"}
    proc = subprocess.Popen([sys.executable, "-m", "judge_rl.policy", "-m", "+sweeps=judge_quality", "dry_run=true",
                             f"hydra.sweep.dir={tmp_path / 'sweep'}"], cwd=tmp_path, env={**env, "HYDRA_FULL_ERROR": ""},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    rc, out, err = finish(proc, timeout=120)
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 1 and len(lines) == 1, err[-2000:]
    assert lines[0] == ("judge_rl: error: JUDGE_RL_LADDER is not set, and the sweep's points reward_judge=ladder_sft_more "
                        "and 4 more read it: export JUDGE_RL_LADDER=<dir>, the directory `python -m judge_rl -m "
                        "+sweeps=judge_ladder (sweeps/judge_ladder.yaml)` writes its points into (run that sweep first)")
    assert not (tmp_path / "sweep").exists()  # not even the oracle point ran
    monkeypatch.setenv("JUDGE_RL_LADDER", str(tmp_path / "ladder"))  # set: the check lets the sweep run
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="policy", overrides=["+sweeps=judge_quality"], return_hydra_config=True)
    assert missing_sweep_env(cfg) is None


# peak memory: 6.1 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_the_choice_check_leaves_other_config_directories_to_hydra(tmp_path, monkeypatch):
    """Options from --config-dir, a hydra.searchpath or $JUDGE_RL_ROOT's experiments are not refused by the check."""
    from judge_rl.jobs.shell import unknown_choice

    assert unknown_choice(["algorithm=nope"]).startswith("algorithm=nope: no such algorithm option")
    assert unknown_choice(["--config-dir=/elsewhere", "model=mine"]) is None
    assert unknown_choice(["hydra.searchpath=[file:///elsewhere]", "model=mine"]) is None
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "mine.yaml").write_text("# @package _global_\n")
    monkeypatch.setenv("JUDGE_RL_ROOT", str(tmp_path))
    assert unknown_choice(["experiments=mine"]) is None
    assert unknown_choice(["experiments=reference_guided_grpo"]).startswith("experiments=reference_guided_grpo")
    assert unknown_choice(["hydra/launcher=basic", "~logger", "debug=null", "algorithm=choice(grpo,bt)"]) is None


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_group_of_the_defaults_list_added_with_a_plus_is_one_line_saying_what_to_type():
    """experiments, judge_ladder and real_pairs moved into conf/config.yaml's defaults (so that debug=tiny shrinks
    them): the spelling before, `+experiments=x`, made Hydra say "Multiple values for experiments"."""
    from judge_rl.jobs.shell import unknown_choice

    line = unknown_choice(["+experiments=reference_guided_grpo", "debug=tiny"])
    assert line.endswith("chosen without the +: experiments=reference_guided_grpo"), line
    assert unknown_choice(["+judge_ladder=sft_few,sft_rl"]).endswith(": judge_ladder=sft_few,sft_rl")
    assert unknown_choice(["+sweeps=judge_ladder", "judge_ladder=sft_rl", "debug=tiny"]) is None  # sweeps: added
    assert unknown_choice(["+reward_judge=oracle"], "policy") is None  # the policy app's, not in its defaults
    out = subprocess.run([sys.executable, "-m", "judge_rl", "+real_pairs=bt"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and out.stderr.strip().splitlines()[-1] == (
        "judge_rl: error: +real_pairs=bt: real_pairs is in conf/config.yaml's defaults list, so it is chosen without "
        "the +: real_pairs=bt"), out.stderr[-2000:]


# peak memory: 6.5 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_the_installed_judge_rl_command_runs_every_app(tmp_path):
    """`judge-rl` is the console script pyproject.toml installs (it failed with an ImportError before issue 37): the
    main job with no app word, each other app by its first word, and a mistaken word in one line."""
    exe = Path(sys.executable).parent / "judge-rl"
    assert exe.is_file(), f"{exe}: not installed (pip install -e . writes it)"

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(exe), *args], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "HYDRA_FULL_ERROR": ""})

    run_dir = tmp_path / "run"
    done = cli(*QUICK, f"run_dir={run_dir}", f"hydra.run.dir={run_dir}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert read_status(run_dir)["status"] == "finished"
    # each Hydra app composes its own config: a key only that app's config has
    for app, key in (("eval", "benchmark:"), ("policy", "judge_failure:"), ("curate", "diversity:")):
        done = cli(app, "--cfg", "job")
        assert done.returncode == 0 and f"\n{key}" in f"\n{done.stdout}", (app, done.stderr[-1000:])
    done = cli("report", str(run_dir), "--out", str(tmp_path / "report"))
    assert done.returncode == 0 and (tmp_path / "report" / "report.md").is_file(), done.stderr[-1000:]
    done = cli("evall", "model=tiny-random")
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "judge-rl: error: no app 'evall'; the first word is one of eval, policy, curate, report, or an override "
        "(key=value) of the main job"]


# peak memory: 6.5 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_with_run_dir_nothing_is_written_outside_it_and_the_run_dir_holds_the_log(tmp_path):
    """issue 55: every run with run_dir= still created ./outputs/<date>/<time>/ (Hydra's .hydra/ and the job's log, and
    status.json when the job failed early), and the run dir got no log."""
    run_dir, failed = tmp_path / "run", tmp_path / "failed"
    rc, _, err = finish(judge_rl(*QUICK, f"run_dir={run_dir}", cwd=tmp_path))
    assert rc == 0, err[-2000:]
    rc, _, err = finish(judge_rl(*QUICK, f"run_dir={failed}", "seed=-1", cwd=tmp_path))  # fails before the claim
    assert rc == 1 and "seed=-1" in err, err[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["failed", "run"]  # no outputs/ beside them
    assert (run_dir / "judge_rl.log").is_file() and (run_dir / ".hydra" / "overrides.yaml").is_file()
    assert read_status(run_dir)["status"] == "finished"
    assert read_status(failed)["status"] == "failed" and "seed=-1" in read_status(failed)["error"]
    # a re-run with resume=false supersedes the saved run's files, not the log this process is writing
    rc, _, err = finish(judge_rl(*QUICK, f"run_dir={run_dir}", "resume=false", cwd=tmp_path))
    assert rc == 0, err[-2000:]
    (superseded,) = (run_dir / "superseded").iterdir()
    assert (superseded / "results.json").is_file() and not (superseded / "judge_rl.log").exists()
    assert (run_dir / "judge_rl.log").is_file()
