"""Run a judge_rl job on verl: export data, translate the config, launch verl's trainer in its own process.

Each verl job is a fresh `python -m judge_rl.backends.verl.entry <config>` process, so a Hydra multirun
never reuses the previous job's Ray session or GPU memory. The translated config is written, fully
resolved, to `<run_dir>/verl/ppo_trainer.yaml` (no secrets in it); the entry process adds the non-secret W&B
settings from its environment to Ray's runtime environment in memory, so Ray workers on an existing cluster log to
the same place. A secret's value (an API key, a token: `is_secret`) never goes there, nor into any file or log: the
Ray the entry process starts inherits it (entry.py says how an existing cluster gets it). verl's W&B run writes
under `<run_dir>/verl/wandb` (WANDB_DIR), not in the directory the job was launched from.

verl's processes die with the job: the entry process leads a session of its own, which Ray's daemons and workers
and vLLM's engines stay in (each Ray worker in a process group of its own), the kernel kills the entry process when
the job dies (PR_SET_PDEATHSIG), a watchdog (session_watchdog.py) stops the whole session (and any process that
left it, by a marker in its environment) once the job is gone,
`kill -9` included, and the job stops it whenever the launch ends. Both hold the run directory's lock
(rundir.held_lock_fd): it is free again only once no process of the session is left, so nothing writes into a run
directory whose lock is not held.

`dry_run=true` (or `--dry-run`) prints the command and the config and launches nothing: the way to
check a cluster job from a laptop.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shlex
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from omegaconf import DictConfig, OmegaConf

from judge_rl import stopping
from judge_rl.rundir import held_lock_fd
from judge_rl.backends.verl.session_watchdog import MARKER_ENV, launch_metrics_dir, stop_leftovers, stop_session
from judge_rl.config import dotted_leaves
from judge_rl.backends.verl.preflight import check_machine, machine_packages, preflight, probe_machine, raise_problems
from judge_rl.backends.verl.translate import ATTENTION_KEY, TRAINING_MODELS, validate, verl_config
from judge_rl.models.arch import model_arch
from judge_rl.models.attention import flash_attn_importable
from judge_rl.reports.console import console
from judge_rl.reports.jsonl import read_jsonl
from judge_rl.reports.logging import hydra_context, wandb_mode, wandb_run_labels
from judge_rl.backends import BACKENDS, LaunchJob, Log, RLResult, RLTask, VerlTask
from judge_rl.backends.memory import check_plan, plan_arch, plan_record, verl_plan

# Forwarded by name to Ray workers (values only ever come from the environment): every W&B / verl variable
# launch_env sets must be here, or verl's logger in a Ray actor on another node never sees it. A secret's value is
# never forwarded (entry.py): WANDB_API_KEY, HF_TOKEN and a judge's API key reach the workers by inheritance from the
# Ray the entry process starts, or from their node's environment on an existing cluster (the entry names them).
FORWARDED_ENV = ("WANDB_API_KEY", "WANDB_MODE", "WANDB_PROJECT", "WANDB_ENTITY", "WANDB_RUN_GROUP", "WANDB_JOB_TYPE",
                 "WANDB_DIR", "WANDB_BASE_URL", "HF_TOKEN", "HF_HOME", "VERL_FILE_LOGGER_PATH",
                 "VERL_USE_EXTERNAL_MODULES", "VERL_PLATFORM", "VLLM_CPU_KVCACHE_SPACE", MARKER_ENV)
# MARKER_ENV forwarded too: on a Ray cluster the job did not start, the job's workers on this machine (and the vLLM
# engines they spawn, by inheritance) carry it, so run_session stops them with the job (session_watchdog.py).
# a variable whose name says it holds a credential: its value never reaches Ray's runtime env, a file or a log
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
WANDB_SUBDIR = "verl"  # WANDB_DIR=<run_dir>/verl: verl's W&B run writes <run_dir>/verl/wandb/
STOP_GRACE_S = 10.0  # SIGTERM to verl's session, then SIGKILL
WATCHDOG_GRACE_S = 3.0  # the same once the job was killed: nothing is left to save, the session goes within seconds
WATCHDOG = Path(__file__).with_name("session_watchdog.py")
# cluster.device=cpu: verl imports the modules named in VERL_USE_EXTERNAL_MODULES in every process (driver and Ray
# workers) and takes the platform VERL_PLATFORM names, so these put verl on judge_rl's CPU platform
CPU_PLATFORM_MODULE = "judge_rl.backends.verl.cpu_platform"
# Further variable names to forward, comma-separated, set by a launcher in the entry process's environment
# (the policy job forwards its judge's `judge.api_key_env` this way: the name travels, never the value).
EXTRA_FORWARDED_ENV = "JUDGE_RL_FORWARD_ENV"
FAILURE_FILE = "failure.txt"  # beside the config: why the entry process failed, one line (entry.py)
NODE_LOST_EXIT = 75  # the entry's exit code when a Ray node was lost mid-job


class VerlJobFailed(RuntimeError):
    """verl's job exited non-zero: the one line why (the entry's failure.txt) and what a re-run resumes from."""


def is_secret(name: str) -> bool:
    """Whether the variable `name` holds a credential (WANDB_API_KEY, HF_TOKEN, OPENAI_API_KEY, ...)."""
    return bool(SECRET_NAME.search(name))


def experiment_name(job: LaunchJob, run_dir: Path, reward_name: str) -> str:
    """Unique per job: verl auto-resumes a run whose experiment name and checkpoint dir match, so two
    sweep points must never share one, while re-running the same run_dir must keep it."""
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:8]
    return f"{job.model.name}-{job.algorithm.name}-{reward_name}-{digest}"


def translated(job: LaunchJob, run_dir: Path, task: RLTask) -> tuple[DictConfig, VerlTask]:
    """The task's data exported (`task.verl_task`) and the job translated into verl's config (translate.py, no key
    verl would ignore), not yet validated by verl's own checks; with the task's VerlTask."""
    run_dir = Path(run_dir)
    verl = task.verl_task(run_dir)
    cfg = verl_config(
        job,
        data_files=verl.data_files,
        reward_module=verl.reward_module,
        reward_kwargs=verl.reward_kwargs,
        stages=verl.stages,
        experiment_name=experiment_name(job, run_dir, task.reward_name),
        ckpt_dir=str((run_dir / "verl" / "checkpoints").resolve()),
        n_gpus_per_node=job.cluster.n_gpus_per_node,
        nnodes=job.cluster.nnodes,
        # the task's keys, then the cluster's: dotted keys as written in YAML, or nested as Hydra builds them from a
        # command line (+cluster.verl_overrides.actor_rollout_ref.rollout.tensor_model_parallel_size=4)
        extra={**verl.keys, **dotted_leaves(job.cluster.verl_overrides)} or None,
        init_model=str(task.init_model) if task.init_model else None,
    )
    return cfg, verl


def attention_line(job: LaunchJob, cfg: DictConfig) -> str | None:
    """The one log line of a GPU job whose training models run SDPA because flash_attn does not import here
    (translate.attention_values); None where nothing fell back (flash_attn imports, or a CPU job: SDPA only)."""
    if job.cluster.device != "cuda" or flash_attn_importable():
        return None
    models = [m for m in TRAINING_MODELS if (m != "critic.model" or cfg.critic.enable)]
    used = ", ".join(f"{m} {OmegaConf.select(cfg, f'{m}.{ATTENTION_KEY}')} (use_remove_padding="
                     f"{str(OmegaConf.select(cfg, f'{m}.use_remove_padding')).lower()})" for m in models)
    return (f"verl attention (flash_attn does not import here): {used}; bash scripts/install_flash_attn.sh installs "
            f"flash-attn, +cluster.verl_overrides.<model>.{ATTENTION_KEY}=... chooses")


def prepare(job: LaunchJob, run_dir: Path, task: RLTask, *, launch: bool = False
            ) -> tuple[DictConfig, Path, list[str], dict[str, str]]:  # fmt: skip
    """`translated`, then verl's own checks, the config written to <run_dir>/verl/ppo_trainer.yaml and the preflight
    checks (preflight.py) passed; returns the config, its path, the launch command and the launch environment.
    `launch`: this machine launches it, so its environment is checked too (preflight.check_machine)."""
    run_dir = Path(run_dir)
    if launch and job.model.weights == "random" and task.init_model is None:
        from judge_rl.models.loading import shape_model_dir

        shape_model_dir(job.model, job.cache_dir)  # verl's actor and vLLM load it from its directory
    cfg, verl = translated(job, run_dir, task)
    env = task_env(job, run_dir, verl)
    line = attention_line(job, cfg)
    if line:
        console.print(line, markup=False, highlight=False, soft_wrap=True)  # one line, however long
    if launch:
        resume_point(cfg)  # a missing or damaged newest checkpoint: the newest intact one, said
    validate(cfg)
    plan = verl_memory_plan(job, cfg)
    if plan is not None:  # the whole table on a dry run, one line at a launch; a plan that cannot fit stops both here
        console.print(plan.line() if launch else plan.table(), markup=False, highlight=False, soft_wrap=True)
        check_plan(plan)
    path = run_dir / "verl" / "ppo_trainer.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(OmegaConf.to_yaml(cfg))
    command = [sys.executable, "-m", "judge_rl.backends.verl.entry", str(path.resolve())]
    model_path = cfg.actor_rollout_ref.model.path
    preflight(
        cfg, path, model_arch(job.model, model_path), f"model={job.model.name}, {model_path}", env,
        {"trainer.default_local_dir": Path(cfg.trainer.default_local_dir), "run_dir (rl_model/)": run_dir,
         "VERL_FILE_LOGGER_PATH": launch_metrics_dir(run_dir)},
        cluster=job.cluster, judge=verl.judge, launch=launch,
    )  # fmt: skip
    return cfg, path, command, env


def verl_memory_plan(job: LaunchJob, cfg: DictConfig):
    """The memory plan of one GPU of the translated job (judge_rl/backends/memory.py): the architecture its files
    state where they are local, else the declared one; None where neither is complete."""
    declared = plan_arch(job.model)
    found = model_arch(job.model, cfg.actor_rollout_ref.model.path)
    arch = found if plan_arch(replace(job.model, arch=found, source="hub", weights="pretrained")) else declared
    return None if arch is None else verl_plan(cfg, arch, job.model.dtype, job.cluster.gpu_memory_gib)


def check_launch_machine(job: LaunchJob, run_dir: Path, task: RLTask) -> None:
    """preflight.check_machine on the job's translated config, for a job that reaches its verl launch only after
    other stages (the main job's SFT init and evaluations): a machine without vLLM or the job's GPUs fails before any
    model loads instead of minutes later (the launch checks again, with the rest of the preflight)."""
    cfg, verl = translated(job, Path(run_dir), task)
    env = task_env(job, Path(run_dir), verl)
    raise_problems(check_machine(cfg, job.cluster, env, probe_machine(env, machine_packages(cfg))))


def task_env(job: LaunchJob, run_dir: Path, verl: VerlTask, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """launch_env, plus the task's variables (`verl.env`), whose names, with `verl.forward`, go into
    EXTRA_FORWARDED_ENV so the entry process forwards their values to Ray's workers in memory."""
    env = launch_env(job, run_dir, environ)
    env.update(verl.env)
    names = [*verl.forward, *verl.env]
    if names:
        before = [n for n in env.get(EXTRA_FORWARDED_ENV, "").split(",") if n]
        env[EXTRA_FORWARDED_ENV] = ",".join(dict.fromkeys([*before, *names]))
    return env


def launch_env(job: LaunchJob, run_dir: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the verl process (and, through entry.py, of its Ray workers): this one, plus
    the W&B settings resolved as a local run resolves them (an explicit WANDB_MODE wins; else
    logger.mode, `auto` offline without a key), and where verl's file logger writes this launch's metrics.
    Only names and modes are added; a key is passed on only if it already is in the environment."""
    env = dict(os.environ if environ is None else environ)
    if job.cluster.ray_address:
        env["RAY_ADDRESS"] = job.cluster.ray_address
    if job.logger.name == "wandb":
        env["WANDB_MODE"] = wandb_mode(job.logger.mode, env)
        env["WANDB_PROJECT"] = job.logger.project
        if job.logger.entity:
            env["WANDB_ENTITY"] = job.logger.entity
        labels = wandb_run_labels(job.logger, hydra_context())  # a sweep's points share a group and job type
        if labels["group"]:
            env["WANDB_RUN_GROUP"] = labels["group"]
        env["WANDB_JOB_TYPE"] = labels["job_type"]
    if job.cluster.device == "cpu":
        env.update(cpu_platform_env(env))
    env["VERL_FILE_LOGGER_PATH"] = str(launch_metrics_dir(run_dir) / f"{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
    env["WANDB_DIR"] = str((run_dir / WANDB_SUBDIR).resolve())  # not wandb/ in the directory the job started from
    return env


def cpu_platform_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that put a verl process and its Ray workers on the CPU platform (cpu_platform.py): the
    plugin module added to any VERL_USE_EXTERNAL_MODULES already set, and VERL_PLATFORM=cpu. vLLM-CPU's KV cache is
    the translated config's (translate.cpu_kv_cache_bytes), unless the environment sets VLLM_CPU_KVCACHE_SPACE (GiB),
    which vLLM reads first and FORWARDED_ENV takes to the workers."""
    modules = [m for m in environ.get("VERL_USE_EXTERNAL_MODULES", "").split(",") if m.strip()]
    return {"VERL_USE_EXTERNAL_MODULES": ",".join(dict.fromkeys([*modules, CPU_PLATFORM_MODULE])), "VERL_PLATFORM": "cpu"}


def read_verl_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """Every step verl's FileLogger wrote (`{"step": k, "data": {metric: value}}` a line) over all launches
    of this run (a resumed job writes a new file), the later launch winning a step both logged; numeric
    values only, under verl's metric names (the ones a local run logs)."""
    by_step: dict[int, dict[str, float]] = {}
    for path in sorted(launch_metrics_dir(run_dir).glob("*.jsonl")):
        for record in read_jsonl(path):
            if not isinstance(record, dict) or "step" not in record or not isinstance(record.get("data"), dict):
                raise ValueError(f"{path}: not verl's file-logger format ({{'step': k, 'data': {{...}}}}): {str(record)[:120]}")
            values = {k: float(v) for k, v in record["data"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            by_step.setdefault(int(record["step"]), {}).update(values)
    return [{"step": step, **by_step[step]} for step in sorted(by_step)]


def shown_command(job: LaunchJob, command: list[str]) -> str:
    shown = " ".join(shlex.quote(c) for c in command)
    if job.cluster.ray_address:
        shown = f"RAY_ADDRESS={shlex.quote(job.cluster.ray_address)} {shown}"
    return shown


def dry_run(job: LaunchJob, run_dir: Path, task: RLTask) -> dict[str, Any]:
    """Everything a launch does (data exported, config translated, validated and written, preflight) but the
    launch; prints the command and the config."""
    cfg, path, command, _ = prepare(job, run_dir, task)
    console.print(f"[bold]verl dry run[/bold]: would launch\n  {shown_command(job, command)}\nwith {path} (the launch "
                  "also checks the machine it starts on: the rollout engine's package, the GPUs, flash_attn):")
    console.print(OmegaConf.to_yaml(cfg), markup=False, highlight=False)
    return {"run_dir": str(run_dir), "verl_config": str(path), "command": command,
            "experiment_name": cfg.trainer.experiment_name,
            "memory_plan": plan_record(verl_memory_plan(job, cfg))}  # fmt: skip


@BACKENDS.register("verl")
def train_verl(job: LaunchJob, run_dir: Path, task: RLTask, log: Log) -> RLResult:
    """RL on verl, in its own process (`python -m judge_rl.backends.verl.entry <config>`): every step verl logged
    is passed to `log(metrics, step)`, even when verl crashed later; returns the last checkpoint merged into a
    Hugging Face directory (<run_dir>/rl_model). The local backend's live evaluation (task.eval_fn) is not run."""
    cfg, path, command, env = prepare(job, run_dir, task, launch=True)
    console.print(f"verl: launching {shown_command(job, command)}")
    failure = Path(path).with_name(FAILURE_FILE)
    failure.unlink(missing_ok=True)
    ckpt_root = Path(cfg.trainer.default_local_dir)
    resumed_from = checkpointed_step(ckpt_root)
    # processes of an earlier launch of this run dir still alive on this machine (vLLM's engines outlive Ray actors
    # killed by `ray stop --force`, 2.9 GB a pair): nothing of a live launch, as this job holds the run dir's lock
    left = stop_leftovers(launch_metrics_dir(run_dir), STOP_GRACE_S)
    if left:
        console.print(f"verl: stopped {len(left)} process(es) an earlier launch of this run dir left on this machine: "
                      + ", ".join(sorted({name.split(" ")[0] for name in left})))
    try:
        # a SIGTERM to this job goes on to verl's process, which stops (its last checkpoint is what a re-run resumes
        # from); this job then stops as interrupted (judge_rl/stopping.py)
        code = run_session(command, env, held_lock_fd(run_dir))
        if code and not stopping.requested():
            raise VerlJobFailed(failed_line(code, failure, Path(cfg.trainer.default_local_dir)))
        if code:
            raise subprocess.CalledProcessError(code, command)
    finally:  # the steps verl finished count even when it crashed later
        history, logged = [], []
        for record in read_verl_metrics(run_dir):
            step = record.pop("step")
            log(record, step)
            history.append(record)
            logged.append(step)
        unlogged = unlogged_steps(logged, checkpointed_step(ckpt_root))
        if unlogged:
            console.print(f"[yellow]verl: step(s) {unlogged} trained and checkpointed, but verl never logged their "
                          "metrics (it writes a step's metrics after its checkpoint, and the job stopped in between): "
                          "metrics.jsonl has no row for them[/yellow]")
    return RLResult(model_dir=merged_model_dir(cfg, run_dir), history=history, resumed_from=resumed_from,
                    unlogged_steps=unlogged)


SHARD_KINDS = {"model": "model", "optimizer": "optim", "extra": "extra_state"}  # save_contents -> shard file prefix


def verl_checkpoint_problem(path: Path, roles: tuple[str, ...] = ("actor",),
                            kinds: tuple[str, ...] = ("model", "optim", "extra_state")) -> str | None:  # fmt: skip
    """What keeps verl's `global_step_<k>/` from being resumed (None: intact): for each role's folder (actor, and critic
    where the job has one), every rank's model, optimizer and extra-state shard of one world size
    (verl/utils/checkpoint/fsdp_checkpoint_manager.py) and the model config under huggingface/."""
    if not path.is_dir():
        return "missing"
    missing = []
    for role in roles:
        folder = path / role
        shards = sorted(folder.glob("model_world_size_*_rank_*.pt"))
        sizes = {int(m.group(1)) for p in shards if (m := re.fullmatch(r"model_world_size_(\d+)_rank_\d+\.pt", p.name))}
        if len(sizes) != 1:
            missing.append(f"{role}'s model shards")
            continue
        size = sizes.pop()
        missing += [f"{role}/{kind}_world_size_{size}_rank_{rank}.pt" for kind in kinds
                    for rank in range(size) if not (folder / f"{kind}_world_size_{size}_rank_{rank}.pt").is_file()]
        if not (folder / "huggingface" / "config.json").is_file():
            missing.append(f"{role}/huggingface/config.json")
    return f"no {', '.join(missing)}" if missing else None


def resume_point(cfg: DictConfig) -> None:
    """Where verl resumes: its own rule (the step latest_checkpointed_iteration.txt names) unless that checkpoint is
    missing or damaged, where verl would start again from step 0 without a word (verl's find_latest_ckpt_path); then
    the newest intact one is named on the console and set as `trainer.resume_mode=resume_path` with its path."""
    from judge_rl.backends.local.loop import latest_checkpoint, say_resume_notes

    strategy = OmegaConf.select(cfg, "actor_rollout_ref.actor.strategy", default="fsdp")
    if cfg.trainer.resume_mode != "auto" or strategy not in ("fsdp", "fsdp2"):  # Megatron's layout is not read here
        return
    ckpt_root = Path(cfg.trainer.default_local_dir)
    roles = ("actor", "critic") if cfg.critic.enable else ("actor",)
    saved = OmegaConf.select(cfg, "actor_rollout_ref.actor.checkpoint.save_contents",
                             default=["model", "optimizer", "extra"])  # fmt: skip
    kinds = tuple(SHARD_KINDS[c] for c in saved if c in SHARD_KINDS) or ("model",)
    notes: list[str] = []
    found = latest_checkpoint(ckpt_root, notes, problem=lambda p: verl_checkpoint_problem(p, roles, kinds))
    say_resume_notes("verl", notes, found)
    if notes and found:
        cfg.trainer.resume_mode = "resume_path"
        cfg.trainer.resume_from_path = str(found[1])
    elif notes:  # verl would load the damaged one and fail
        cfg.trainer.resume_mode = "disable"


def checkpointed_step(ckpt_root: Path) -> int:
    """The step of verl's last checkpoint under `ckpt_root` (its latest_checkpointed_iteration.txt; 0: none)."""
    latest = ckpt_root / "latest_checkpointed_iteration.txt"
    text = latest.read_text().strip() if latest.is_file() else ""
    return int(text) if text.isdigit() else 0


def unlogged_steps(logged: Iterable[int], checkpointed: int) -> list[int]:
    """The steps up to the last checkpoint that verl trained but never logged. verl writes a step's metrics after its
    checkpoint, so a job stopped between the two (a Ray node lost right after the checkpoint, measured in
    tests/backends/test_verl_two_nodes.py) resumes after that step and its row is never written: the run counts it
    as trained, and names it, instead of reporting one step fewer."""
    return sorted(set(range(1, checkpointed + 1)) - set(logged))


def failed_line(code: int, failure: Path, ckpt_root: Path) -> str:
    """One line for a verl job that exited with `code`: why (the entry's `failure` file, when it wrote one) and what a
    re-run resumes from (the last checkpoint under `ckpt_root`)."""
    why = failure.read_text().strip() if failure.is_file() else ""
    step = checkpointed_step(ckpt_root)
    resume = f"a re-run resumes from global_step_{step}" if step else "no checkpoint yet: a re-run starts from step 1"
    return f"verl's job exited with code {code}: {why or 'see its log above'}; {resume}"


def run_session(command: list[str], env: Mapping[str, str], lock_fd: int | None = None) -> int:
    """Run `command` (verl's entry process) as the leader of a session of its own and return its exit code; no
    process of the session outlives this call, nor this process (module docstring): the kernel kills the leader when
    this process dies, a watchdog stops the session, and this call stops it when the leader exits, fails or this
    process is interrupted (Ctrl-C: the session gets no SIGINT of the terminal's). A SIGTERM to this process goes on
    to the leader (judge_rl/stopping.py), which stops; this call then stops the rest. `lock_fd` (the run directory's
    lock) is inherited by the leader and the watchdog: the lock stays held while either lives, and the watchdog exits
    only once the session is empty."""
    fds = (lock_fd,) if lock_fd is not None else ()
    marker = f"{os.getpid()}-{secrets.token_hex(6)}"  # inherited by every process of the job (session_watchdog.py)
    started = time.time()  # the shared memory the job's processes leave is what was made since (remove_left_shm)
    proc = subprocess.Popen(command, env={**env, MARKER_ENV: marker}, start_new_session=True,
                            preexec_fn=stopping.die_with_parent(), pass_fds=fds)
    stop = lambda: stop_session(proc.pid, STOP_GRACE_S, reap=proc.poll, marker=marker, shm_since=started)  # noqa: E731
    try:
        watchdog = subprocess.Popen([sys.executable, str(WATCHDOG), str(os.getpid()), str(proc.pid), str(WATCHDOG_GRACE_S),
                                     marker, repr(started)], stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=fds)
    except BaseException:
        stop()
        raise
    try:
        with stopping.deferred(on_request=proc.terminate):
            return proc.wait()
    finally:
        stop()  # what is left (Ray's daemons and workers, vLLM, W&B's service) goes
        proc.wait()
        try:  # it exits by itself once the session is empty
            watchdog.wait(timeout=5)
        except subprocess.TimeoutExpired:
            watchdog.kill()
            watchdog.wait()


def merged_model_dir(cfg, run_dir: Path) -> Path:
    """verl saves sharded FSDP checkpoints; merge the last one into a Hugging Face directory with
    verl's own `python -m verl.model_merger` so evaluation can load it."""
    ckpt_root = Path(cfg.trainer.default_local_dir)
    step = (ckpt_root / "latest_checkpointed_iteration.txt").read_text().strip()
    actor_dir = ckpt_root / f"global_step_{step}" / "actor"
    target = run_dir / "rl_model"
    subprocess.run(
        [sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp",
         "--local_dir", str(actor_dir), "--target_dir", str(target)],
        check=True,
    )
    return target
