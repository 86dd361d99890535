"""Launching verl: dry runs print a validated config, sweeps give distinct jobs, secrets stay out of files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from judge_rl.jobs.train import run
from judge_rl.backends.verl.entry import with_forwarded_env

from conftest import CACHE_DIR, REPO_ROOT, compose_config, run_dir_lock_free

DRY = ["cluster=node_8gpu", "dry_run=true", "logger=none", "data.train.kwargs.n=32", "data.eval.kwargs.n=8"]


def test_dry_run_writes_a_valid_verl_config_and_launches_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "secret-key-for-test-0123456789")
    out = run(compose_config([*DRY, f"run_dir={tmp_path}"]))
    assert out["command"][1:3] == ["-m", "judge_rl.backends.verl.entry"]
    cfg = OmegaConf.load(out["verl_config"])
    assert cfg.trainer.n_gpus_per_node == 8 and cfg.trainer.nnodes == 1
    assert cfg.algorithm.adv_estimator == "grpo" and cfg.actor_rollout_ref.rollout.n == 4
    assert cfg.reward.custom_reward_function.name == "compute_score"
    assert not (tmp_path / "rl_model").exists() and not (tmp_path / "metrics.jsonl").exists()
    assert "secret-key-for-test" not in (tmp_path / "verl" / "ppo_trainer.yaml").read_text()
    # the entry process adds the W&B settings to Ray's runtime env, never the key (verl and Ray log that env)
    forwarded = with_forwarded_env(cfg, {"WANDB_API_KEY": "k", "WANDB_MODE": "offline", "UNRELATED": "x"})
    assert dict(forwarded.ray_kwargs.ray_init.runtime_env.env_vars) == {"WANDB_MODE": "offline"}


# peak memory: 7.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_dry_run_flag_and_a_three_point_sweep_give_three_distinct_valid_jobs(tmp_path):
    env = {**os.environ, "JUDGE_RL_CACHE": CACHE_DIR}
    proc = subprocess.run(
        [sys.executable, "-m", "judge_rl", "-m", "algorithm=grpo,ppo,reinforce_pp", "--dry-run",
         *[o for o in DRY if o != "dry_run=true"], f"hydra.sweep.dir={tmp_path}"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    configs = sorted(tmp_path.glob("*/verl/ppo_trainer.yaml"))
    assert len(configs) == 3
    loaded = [OmegaConf.load(p) for p in configs]
    assert [c.algorithm.adv_estimator for c in loaded] == ["grpo", "gae", "reinforce_plus_plus"]
    assert [c.critic.enable for c in loaded] == [False, True, False]
    names = {c.trainer.experiment_name for c in loaded}
    dirs = {c.trainer.default_local_dir for c in loaded}
    assert len(names) == 3 and len(dirs) == 3
    assert "validate_config] All configuration checks passed" in proc.stdout + proc.stderr


def test_a_group_reward_is_refused_on_verl(tmp_path):
    with pytest.raises(ValueError, match="consistency"):
        run(compose_config([*DRY, "reward=consistency", f"run_dir={tmp_path}"]))


def test_every_variable_launch_env_sets_reaches_the_ray_workers(tmp_path, make_job):
    """On today's main launch_env set WANDB_JOB_TYPE but FORWARDED_ENV lacked it: verl's wandb.init in a Ray
    actor on another node logged every run as job type None."""
    from judge_rl.backends.verl.launch import FORWARDED_ENV, launch_env

    job = make_job(["cluster=ray_address", "cluster.ray_address=auto", "logger=wandb", "logger.group=g", "logger.entity=e"])
    env = launch_env(job, tmp_path, {})  # nothing inherited: only what launch_env sets
    assert {"WANDB_MODE", "WANDB_PROJECT", "WANDB_ENTITY", "WANDB_RUN_GROUP", "WANDB_JOB_TYPE"} <= set(env)
    # RAY_ADDRESS is for the entry process's ray.init, not for the workers
    assert set(env) - {"RAY_ADDRESS"} <= set(FORWARDED_ENV), sorted(set(env) - {"RAY_ADDRESS"} - set(FORWARDED_ENV))
    forwarded = with_forwarded_env(OmegaConf.create({"ray_kwargs": {"ray_init": {"runtime_env": None}}}), env)
    assert forwarded.ray_kwargs.ray_init.runtime_env.env_vars.WANDB_JOB_TYPE == "run"
    # verl's W&B run writes in the run dir, not in wandb/ of the directory the job was started from
    assert env["WANDB_DIR"] == str((tmp_path / "verl").resolve())


def test_no_secret_value_goes_into_rays_runtime_env_and_an_existing_cluster_is_told_which():
    """On the main of issue 36 the entry process put WANDB_API_KEY, HF_TOKEN and the judge's OPENAI_API_KEY into
    Ray's runtime env, which verl prints (`ray init kwargs`, its config in every worker's log), Ray's runtime-env
    agent logs and verl's W&B run saves."""
    from judge_rl.backends.verl import entry
    from judge_rl.backends.verl.launch import is_secret

    assert all(map(is_secret, ["WANDB_API_KEY", "HF_TOKEN", "OPENAI_API_KEY", "MY_SECRET", "DB_PASSWORD"]))
    assert not any(map(is_secret, ["WANDB_MODE", "WANDB_DIR", "VLLM_CPU_KVCACHE_SPACE", "JUDGE_RL_REWARD_OUTCOMES"]))
    environ = {"WANDB_API_KEY": "s1", "HF_TOKEN": "s2", "OPENAI_API_KEY": "s3", "WANDB_PROJECT": "p",
               "JUDGE_RL_REWARD_OUTCOMES": "/o.jsonl", "JUDGE_RL_FORWARD_ENV": "OPENAI_API_KEY,JUDGE_RL_REWARD_OUTCOMES"}
    cfg = entry.with_forwarded_env(OmegaConf.create({"ray_kwargs": {"ray_init": {"runtime_env": None}}}), environ)
    assert dict(cfg.ray_kwargs.ray_init.runtime_env.env_vars) == {"WANDB_PROJECT": "p", "JUDGE_RL_REWARD_OUTCOMES": "/o.jsonl"}
    assert entry.withheld_secrets(environ) == ["WANDB_API_KEY", "HF_TOKEN", "OPENAI_API_KEY"]
    # on an existing cluster the entry names (never shows) what the nodes' environment must hold
    note = entry.cluster_note({**environ, "RAY_ADDRESS": "auto"})
    assert note.startswith("judge_rl: WANDB_API_KEY, HF_TOKEN, OPENAI_API_KEY not forwarded to the Ray cluster at auto")
    assert not {"s1", "s2", "s3"} & set(note.split()) and entry.cluster_note(environ) is None


# verl's process tree in miniature: the leader starts processes the way Ray does (each in a process group of its own,
# one ignoring SIGTERM, one re-parented by a double fork) and one in a session of its own (as W&B's service does),
# writes their pids, then exits (`exit`) or waits (`wait`)
_TREE = r'''
import os, signal, subprocess, sys, time
loop = "import os, signal, time\nif os.environ.get('DEAF'): signal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(0.1)"
kids = [subprocess.Popen([sys.executable, "-c", loop], process_group=0, env={**os.environ, "DEAF": deaf})
        for deaf in ("", "1" if sys.argv[1] == "wait" else "")]
kids.append(subprocess.Popen([sys.executable, "-c", loop], start_new_session=True))
orphan = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
                           + repr(loop) + "], process_group=0); print(p.pid, flush=True)"], stdout=subprocess.PIPE, text=True)
pids = [os.getpid(), *(k.pid for k in kids), int(orphan.stdout.readline())]
# shared memory as vLLM's message queues hold it: mapped, never unlinked
import mmap
shm = f"/dev/shm/psm_jrtree{os.getpid()}"
fd = os.open(shm, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
os.ftruncate(fd, 1 << 20)
held = mmap.mmap(fd, 1 << 20)
held[:5] = b"hello"
open(sys.argv[2] + ".tmp", "w").write(" ".join(map(str, pids)))
os.replace(sys.argv[2] + ".tmp", sys.argv[2])
if sys.argv[1] == "wait":
    time.sleep(600)
'''
_JOB = r'''
import os, sys
from pathlib import Path
from judge_rl.rundir import claim_run_dir, held_lock_fd
from judge_rl.backends.verl.launch import run_session
run_dir = Path(sys.argv[1])
with claim_run_dir(run_dir, {}, resume=True, neutral=[]):
    print("exit code", run_session([sys.executable, "-c", sys.argv[2], sys.argv[3], str(run_dir / "pids")], os.environ,
                                   held_lock_fd(run_dir)), flush=True)
'''


def _alive(pids: list[int]) -> list[int]:
    import psutil

    def live(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    return [p for p in pids if live(p)]


def _pids(run_dir, job) -> list[int]:
    import time

    deadline = time.monotonic() + 60
    while not (run_dir / "pids").exists() and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return [int(p) for p in (run_dir / "pids").read_text().split()]


# peak memory: 2.6 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.usefixtures("cleans_up_after_kills")
def test_verls_processes_die_with_the_job_kill_9_included_and_hold_the_run_dirs_lock_until_then(tmp_path):
    """On the main of issue 36 a kill -9 of the job left verl's process (re-parented to init) and its Ray and vLLM
    processes training, with the run dir's lock free: they wrote the next checkpoint into it. Ray puts each worker
    in a process group of its own, so stopping the entry process's group is not enough."""
    import mmap
    import signal
    import time

    # the leader exits normally: what it left running is stopped before the launch returns
    run_dir = tmp_path / "done"
    out = subprocess.run([sys.executable, "-c", _JOB, str(run_dir), _TREE, "exit"], capture_output=True, text=True,
                         timeout=120, cwd=REPO_ROOT)
    assert "exit code 0" in out.stdout, out.stderr[-2000:]
    pids = [int(p) for p in (run_dir / "pids").read_text().split()]
    assert len(pids) == 5 and not _alive(pids)
    # and the shared memory the job's processes left is gone (what a killed vLLM or weight sync leaves: up to 622 MB)
    assert not Path(f"/dev/shm/psm_jrtree{pids[0]}").exists()

    # the job is killed with kill -9: every process of verl's session dies within seconds, and the run dir's lock is
    # free only once none is left
    run_dir = tmp_path / "killed"
    job = subprocess.Popen([sys.executable, "-c", _JOB, str(run_dir), _TREE, "wait"], cwd=REPO_ROOT)
    pids = _pids(run_dir, job)
    assert len(_alive(pids)) == 5 and not run_dir_lock_free(run_dir)
    left = Path(f"/dev/shm/psm_jrtree{pids[0]}")
    assert left.exists()
    # shared memory made while the job ran but still mapped by a process outside it (another job's) is not touched
    other = Path(f"/dev/shm/psm_jrother{os.getpid()}")
    fd = os.open(other, os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, 4096)
    other_map = mmap.mmap(fd, 4096)
    os.kill(job.pid, signal.SIGKILL)
    job.wait()
    killed = time.monotonic()
    while _alive(pids) and time.monotonic() - killed < 60:
        assert not run_dir_lock_free(run_dir), f"the lock is free while {_alive(pids)} run"
        time.sleep(0.05)
    # within seconds: the watchdog's SIGTERM, then SIGKILL for the deaf one after its 3 s grace (~3-4 s; 20 s is 5x+
    # that on a loaded 2-core machine), where processes left running would never die
    assert not _alive(pids) and time.monotonic() - killed < 20
    while not run_dir_lock_free(run_dir) and time.monotonic() - killed < 30:  # the watchdog exits once it saw none left
        time.sleep(0.05)
    assert run_dir_lock_free(run_dir)
    try:
        assert not left.exists() and other.exists()
    finally:
        other_map.close()
        os.close(fd)
        other.unlink()


def test_a_failed_verl_job_is_one_line_with_why_and_what_a_rerun_resumes_from(tmp_path):
    from ray.exceptions import RayTaskError

    from judge_rl.backends.verl.entry import raised_line
    from judge_rl.backends.verl.launch import failed_line

    # a Ray task's error is named by what the task raised, not by Ray's `ray::Actor.method() (pid=...)` header
    err = RayTaskError(function_name="TaskRunnerV1.run", traceback_str="Traceback ...", cause=RuntimeError("boom\nmore"))
    assert raised_line(err) == "verl raised RuntimeError: boom"
    assert raised_line(ValueError("\x1b[36mred\x1b[39m text")) == "verl raised ValueError: red text"
    # Ray Client's proxy losing the server it forked for the job (what ray.init raised in a CI run): named, with the fix
    lost = raised_line(ConnectionAbortedError("Initialization failure from server:\nTraceback ... proxier.py ..."))
    assert lost.startswith("verl raised ConnectionAbortedError: Initialization failure from server:")
    assert "ray-project/ray#63202" in lost and "GRPC_ENABLE_FORK_SUPPORT=false" in lost and "4 tries" in lost
    assert "#63202" not in raised_line(ConnectionAbortedError("connection reset"))

    failure, ckpts = tmp_path / "failure.txt", tmp_path / "checkpoints"
    assert failed_line(1, failure, ckpts) == ("verl's job exited with code 1: see its log above; no checkpoint yet: a "
                                              "re-run starts from step 1")
    failure.write_text("lost Ray node abc (10.0.0.2) mid-job\n")
    ckpts.mkdir()
    (ckpts / "latest_checkpointed_iteration.txt").write_text("3")
    line = failed_line(75, failure, ckpts)
    assert line == "verl's job exited with code 75: lost Ray node abc (10.0.0.2) mid-job; a re-run resumes from global_step_3"
    assert "\n" not in line


def test_the_job_connects_again_when_ray_clients_proxy_loses_its_server(capsys):
    """What ray.init raises through Ray Client when the proxy's forked server died (ray-project/ray#63202) is retried
    in the same process (Ray not initialized yet), with a line each time; any other error, and the last, is raised."""
    from judge_rl.backends.verl.entry import RAY_CLIENT_RETRIES, run_connecting_again

    calls = []

    def connects_on(n: int, err: BaseException):
        def run() -> None:
            calls.append(1)
            if len(calls) < n:
                raise err

        return run

    lost = ConnectionAbortedError("Initialization failure from server:\nTraceback ...")
    run_connecting_again(connects_on(3, lost))
    assert len(calls) == 3
    assert capsys.readouterr().err.splitlines() == [
        f"judge_rl: Ray Client's proxy lost the server it started for this job (ray-project/ray#63202); connecting "
        f"again ({k} of {RAY_CLIENT_RETRIES})" for k in (1, 2)]  # fmt: skip
    calls.clear()
    with pytest.raises(ConnectionAbortedError, match="Initialization failure"):  # every try lost: the job fails
        run_connecting_again(connects_on(RAY_CLIENT_RETRIES + 5, lost))
    assert len(calls) == RAY_CLIENT_RETRIES + 1
    calls.clear()
    with pytest.raises(ConnectionAbortedError, match="reset"):  # another connection error: not retried
        run_connecting_again(connects_on(2, ConnectionAbortedError("connection reset")))
    assert len(calls) == 1


def test_a_step_verl_checkpointed_but_never_logged_is_counted_and_named(tmp_path):
    """verl writes a step's metrics after its checkpoint: the two-node test's node, lost right after step 1's
    checkpoint, left step 1 trained with no metrics row, and the resumed run's results said 1 step of 2."""
    from judge_rl.backends.verl.launch import checkpointed_step, unlogged_steps

    ckpts = tmp_path / "checkpoints"
    assert checkpointed_step(ckpts) == 0  # no checkpoint yet
    ckpts.mkdir()
    (ckpts / "latest_checkpointed_iteration.txt").write_text("2\n")
    assert checkpointed_step(ckpts) == 2
    assert unlogged_steps([2], 2) == [1]
    assert unlogged_steps([1, 2], 2) == [] and unlogged_steps([1, 2, 3], 2) == []  # a step after the last checkpoint
    assert unlogged_steps([], 0) == []


def test_the_steps_a_job_reports_count_the_unlogged_ones_and_name_them(tmp_path):
    """Both jobs' results.json (recipes/online_rl.py, jobs/policy.py) say what RLResult.trained says: a resumed verl
    run whose step 1 was checkpointed but never logged trained 2 steps from step 1, not 1 step from 0."""
    from judge_rl.backends import RLResult

    rows = [{"step": 2, "critic/score/mean": 0.5}]
    assert RLResult(tmp_path, resumed_from=1, unlogged_steps=[1]).trained(rows) == {
        "resumed_from": 1, "steps": 2, "unlogged_steps": [1]}
    assert RLResult(tmp_path).trained(rows + [{"step": 1}]) == {"resumed_from": 0, "steps": 2}


def _verl_checkpoint(root: Path, step: int, world: int = 2, leave_out: str | None = None) -> Path:
    """verl's global_step_<step>/ as its FSDP checkpoint manager writes it (actor shards of `world` ranks, the HF config),
    less the file `leave_out`."""
    actor = root / f"global_step_{step}" / "actor"
    (actor / "huggingface").mkdir(parents=True)
    (actor / "huggingface" / "config.json").write_text("{}")
    for kind in ("model", "optim", "extra_state"):
        for rank in range(world):
            name = f"{kind}_world_size_{world}_rank_{rank}.pt"
            if name != leave_out:
                (actor / name).write_bytes(b"x")
    return actor.parent


@pytest.mark.parametrize("newest", ["missing", "damaged", "intact"])
def test_verl_resumes_from_the_newest_intact_checkpoint_and_says_so(tmp_path, capsys, newest):
    """issue 55: with the newest checkpoint's folder gone while latest_checkpointed_iteration.txt names it, verl started
    again from step 0 without a word (verl's find_latest_ckpt_path); a damaged one (a shard missing) failed its load."""
    from omegaconf import OmegaConf

    from judge_rl.backends.verl.launch import resume_point, verl_checkpoint_problem

    root = tmp_path / "checkpoints"
    first = _verl_checkpoint(root, 1)
    if newest != "missing":
        _verl_checkpoint(root, 2, leave_out="optim_world_size_2_rank_1.pt" if newest == "damaged" else None)
    (root / "latest_checkpointed_iteration.txt").write_text("2")
    cfg = OmegaConf.create({"trainer": {"resume_mode": "auto", "resume_from_path": None, "default_local_dir": str(root)},
                            "critic": {"enable": False}})
    resume_point(cfg)
    out = capsys.readouterr().out
    if newest == "intact":
        assert cfg.trainer.resume_mode == "auto" and out == ""  # verl's own rule: the step the marker names
        return
    assert cfg.trainer.resume_mode == "resume_path" and cfg.trainer.resume_from_path == str(first)
    why = "is missing" if newest == "missing" else "is damaged (no actor/optim_world_size_2_rank_1.pt)"
    assert f"global_step_2 {why}; resuming from the newest intact one, global_step_1" in " ".join(out.split())
    assert verl_checkpoint_problem(first) is None


def test_with_no_intact_verl_checkpoint_the_job_starts_afresh_and_says_so(tmp_path, capsys):
    from omegaconf import OmegaConf

    from judge_rl.backends.verl.launch import resume_point

    root = tmp_path / "checkpoints"
    _verl_checkpoint(root, 1, leave_out="model_world_size_2_rank_0.pt")
    (root / "latest_checkpointed_iteration.txt").write_text("1")
    cfg = OmegaConf.create({"trainer": {"resume_mode": "auto", "resume_from_path": None, "default_local_dir": str(root)},
                            "critic": {"enable": True}})
    resume_point(cfg)
    assert cfg.trainer.resume_mode == "disable"  # not the damaged one, which verl would fail to load
    assert "no intact checkpoint is left: starting from step 0" in " ".join(capsys.readouterr().out.split())
