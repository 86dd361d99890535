"""A run directory belongs to one process and one config.

Results in ablation tables are only as honest as the directories under them, so a run directory is
claimed before any work starts:
- **One process at a time.** An exclusive lock (`.lock`, `fcntl.flock`, released by the kernel even
  on kill -9) makes a second process that names the same directory refuse with one line, instead of
  interleaving its metrics and judgments with the first one's. Hydra's default directories also get a
  per-process suffix (`${unique:}`), so two runs started in the same second never pick the same one.
- **One config.** The resolved config is saved as `resolved_config.yaml`. A re-run in the same
  directory resumes only when its config matches the saved one in every key that shapes a result; any
  difference refuses with a one-line diff of those keys. With `resume=false` the old files are moved to
  `superseded/<time>/` and the run starts afresh: saved work is never mixed with a different run's,
  and never deleted.
- **A status.** `status.json` says running, finished, failed (with the one-line error) or
  interrupted; a run killed outright stays "running" with its lock free. It also counts the launches
  and sums their wall time (`wall_s`: the launches that ended, however they ended; a process killed
  outright adds nothing), so a resumed run's `results.json` reports the time of the whole run
  (`run_wall_s`), not of its last launch.
- **Helpers hold it too.** A process the run starts that writes into the directory (verl's processes) can
  inherit the lock's descriptor (`held_lock_fd`): the lock is free only once every holder is gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from omegaconf import OmegaConf

from judge_rl.config import dotted_leaves

CONFIG_FILE = "resolved_config.yaml"
STATUS_FILE = "status.json"
LOCK_FILE = ".lock"
SUPERSEDED = "superseded"
JOB_LOG = "judge_rl.log"  # Hydra's job log (hydra.job.name: judge_rl), open while the job runs: it keeps every launch
# one value per process: Hydra's default run and sweep directories end with it (conf/*.yaml: ${unique:})
PROCESS_SUFFIX = secrets.token_hex(3)
_HELD: dict[Path, Any] = {}  # run_dir (resolved) -> the open lock file, while claim_run_dir holds it


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("unique"):
        OmegaConf.register_new_resolver("unique", lambda: PROCESS_SUFFIX)


class RunDirError(ValueError):
    """The run directory cannot be used as asked (in use, or holding another config's run)."""


def one_line(exc: BaseException) -> str:
    """`Type: message` on one line (a KeyError's message without the quotes repr adds)."""
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        message = exc.args[0]
    else:
        message = str(exc)
    message = " | ".join(part.strip() for part in message.splitlines() if part.strip())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def config_diff(saved: dict[str, Any], current: dict[str, Any], neutral: Sequence[str]) -> list[str]:
    """`key: old -> new` for every key that differs, except keys under one of `neutral` (dotted
    prefixes of keys that do not change any result, e.g. "logger" or "trainer.save_every")."""

    def shaping(key: str) -> bool:
        return not any(key == n or key.startswith(n + ".") for n in neutral)

    old, new = dotted_leaves(saved), dotted_leaves(current)
    missing = object()
    changes = []
    for key in sorted(set(old) | set(new)):
        if not shaping(key):
            continue
        a, b = old.get(key, missing), new.get(key, missing)
        if a != b:
            show = lambda v: "(absent)" if v is missing else json.dumps(v)  # noqa: E731
            changes.append(f"{key}: {show(a)} -> {show(b)}")
    return changes


def write_status(run_dir: Path, status: str, error: str | None = None, **extra: Any) -> None:
    path = Path(run_dir) / STATUS_FILE
    previous: dict[str, Any] = {}
    if path.exists():
        try:
            previous = json.loads(path.read_text())
        except (OSError, ValueError):
            previous = {}
    record = {
        "status": status,
        "error": error,
        "pid": os.getpid(),
        "started": previous.get("started") if status != "running" else time.strftime("%Y-%m-%dT%H:%M:%S"),
        "updated": time.strftime("%Y-%m-%dT%H:%M:%S"),
        **extra,
    }
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2))
    tmp.replace(path)


def read_status(run_dir: Path) -> dict[str, Any] | None:
    path = Path(run_dir) / STATUS_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_wall_s(run_dir: Path, t_launch: float) -> float:
    """The run's wall time so far: its earlier launches' (status.json, while this one runs) plus this launch's
    since `t_launch` (a `time.perf_counter()` value)."""
    earlier = (read_status(run_dir) or {}).get("wall_s") or 0.0
    return float(earlier) + time.perf_counter() - t_launch


def _lock(run_dir: Path):
    f = (run_dir / LOCK_FILE).open("a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "another process"
        f.close()
        raise RunDirError(
            f"run_dir {run_dir} is in use by {holder}: two runs must not write into one directory; "
            "wait for it, or choose another run_dir"
        ) from None
    f.seek(0)
    f.truncate()
    f.write(f"pid {os.getpid()}")
    f.flush()
    return f


def held_lock_fd(run_dir: Path) -> int | None:
    """The descriptor of `run_dir`'s lock while this process holds it (claim_run_dir), else None. A child process
    that inherits it (`subprocess.Popen(..., pass_fds=(fd,))`) keeps the lock held until it exits, this process's
    death included (flock belongs to the open file, which lives while any process has it open)."""
    lock = _HELD.get(Path(run_dir).resolve())
    return lock.fileno() if lock is not None else None


def _supersede(run_dir: Path) -> Path:
    """Move a previous run's files out of the way (never delete them)."""
    target = run_dir / SUPERSEDED / time.strftime("%Y-%m-%d_%H-%M-%S")
    while target.exists():
        target = target.with_name(target.name + "_")
    target.mkdir(parents=True)
    for entry in run_dir.iterdir():
        if entry.name not in (LOCK_FILE, SUPERSEDED, ".hydra", JOB_LOG):  # Hydra's files and the log this process writes
            shutil.move(str(entry), str(target / entry.name))
    return target


@contextlib.contextmanager
def claim_run_dir(
    run_dir: Path, config: dict[str, Any], *, resume: bool, neutral: Sequence[str], console=None
) -> Iterator[Path]:
    """Lock `run_dir`, check (or supersede) a saved run's config, save this one, and keep `status.json`
    up to date while the body runs."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = _lock(run_dir)
    _HELD[run_dir.resolve()] = lock
    try:
        saved_path = run_dir / CONFIG_FILE
        if saved_path.exists():
            if not resume:
                moved = _supersede(run_dir)
                if console is not None:
                    console.print(f"[yellow]resume=false: the previous run's files moved to {moved}[/yellow]")
            else:
                saved = OmegaConf.to_container(OmegaConf.load(saved_path), resolve=False)
                changes = config_diff(saved, config, neutral)
                if changes:
                    raise RunDirError(
                        f"run_dir {run_dir} holds a run with another config ({'; '.join(changes)}): resuming would "
                        "mix two runs; pass resume=false to start it afresh (old files move to superseded/) "
                        "or choose another run_dir"
                    )
        saved_path.write_text(OmegaConf.to_yaml(OmegaConf.create(config)))
        before = read_status(run_dir) or {}  # a superseded run's status moved away with its files
        earlier = {"wall_s": float(before.get("wall_s") or 0.0), "launches": int(before.get("launches") or 0) + 1}
        t_launch = time.perf_counter()

        def ended(status: str, error: str | None = None) -> None:
            write_status(run_dir, status, error, **{**earlier, "wall_s": earlier["wall_s"] + time.perf_counter() - t_launch})

        write_status(run_dir, "running", **earlier)
        try:
            yield run_dir
        except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (judge_rl/stopping.py's Terminated)
            ended("interrupted", str(e) or "KeyboardInterrupt")
            raise
        except Exception as e:
            ended("failed", one_line(e))
            raise
        ended("finished")
    finally:
        _HELD.pop(run_dir.resolve(), None)
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
