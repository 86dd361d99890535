"""Stops every process of verl's session when the job that launched it dies (judge_rl/backends/verl/launch.py).

    python judge_rl/backends/verl/session_watchdog.py <job pid> <session id> <grace_s> <marker> <launch time>

Why a session and not a process group (judge_rl/servers/watchdog.py stops a judge server's group): Ray's raylet puts
each worker in a process group of its own, so verl's trainer, its FSDP workers and vLLM's engines are in as many
groups; they all stay in the session of the entry process, which launch.py starts in a new one (a session is found
by its id alone, after its processes were re-parented too: /proc/<pid>/stat). A process that starts a session of its
own (W&B's wandb-core, in verl's trainer) is still found by the marker every process of the job inherits in its
environment (`<MARKER_ENV>=<marker>`, set by launch.py: /proc/<pid>/environ), and so is a process of the job that a
Ray cluster the job did not start runs on this machine (Ray's runtime env carries the marker to the job's workers, and
their vLLM engines inherit it).

`leftover_pids`/`stop_leftovers` find and stop what no watchdog saw: processes of any earlier launch of a run
directory that outlived their owner on this machine (vLLM's engines after `ray stop --force` killed their Ray actors),
by the verl metrics path every process of a launch carries (launch.py's VERL_FILE_LOGGER_PATH).

The job starts this process in its own session right after verl's, and it inherits the run directory's lock: it polls
its parent, and once the job is gone (re-parented: kill -9 runs no `finally`) it sends SIGTERM to every process of the
session, SIGKILL after `grace_s`, removes the shared memory they left (judge_rl/shm.py), and exits once none is
left, which is when the lock is free. It exits by itself as soon as the session is empty (the job stopped verl). Run
by path, standard library only: it starts in milliseconds.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Callable

if __package__:
    from judge_rl.shm import remove_left_shm
else:  # run by path, as launch.py starts it: judge_rl/shm.py alone, not the package (whose import takes ~0.3 s)
    import importlib.util

    _spec = importlib.util.spec_from_file_location("judge_rl_shm", Path(__file__).resolve().parents[2] / "shm.py")
    _shm = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_shm)
    remove_left_shm = _shm.remove_left_shm

POLL_S = 0.2
MARKER_ENV = "JUDGE_RL_VERL_JOB"
LOGGER_ENV = "VERL_FILE_LOGGER_PATH"  # <run_dir>/verl/metrics/<launch time>.jsonl in every process of a launch
METRICS_DIR = "metrics"  # <run_dir>/verl/metrics/<launch time>.jsonl: verl's FileLogger output, one file a launch


def launch_metrics_dir(run_dir: str | os.PathLike) -> Path:
    """<run_dir>/verl/metrics, resolved: where each launch's LOGGER_ENV points (launch.py's launch_env)."""
    return Path(run_dir).resolve() / "verl" / METRICS_DIR
SCAN_EVERY = 5  # the session is scanned every SCAN_EVERY polls (a /proc walk), the parent checked every poll


def _live_processes():
    """(pid, the fields of /proc/<pid>/stat after the command: state ppid pgrp session ...) of every live process
    (zombies left out), this one excepted."""
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) >= 4 and fields[0] not in (b"Z", b"X"):
            yield int(name), fields


def _environ(pid: int) -> list[bytes]:
    """The `NAME=value` entries of process `pid`'s environment ([] once it is gone, or not ours to read)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def command_line(pid: int) -> str:
    """Process `pid`'s command line, its arguments joined by spaces ("" once it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def session_pids(sid: int, marker: str | None = None) -> list[int]:
    """The live processes (zombies left out) of the session `sid`, and those whose environment has
    MARKER_ENV=`marker`; this process excepted."""
    tag = f"{MARKER_ENV}={marker}".encode() if marker else None
    return [pid for pid, fields in _live_processes()
            if int(fields[3]) == sid or (tag is not None and tag in _environ(pid))]


def stop_session(sid: int, grace_s: float, reap: Callable[[], object] | None = None, marker: str | None = None,
                 shm_since: float | None = None) -> None:
    """SIGTERM to every process of the session `sid` (and with `marker`, see session_pids), SIGKILL to those left
    after `grace_s` (and to any started since); returns once none is left (or 10 s after SIGKILL), after removing the
    shared memory they left (judge_rl/shm.py's remove_left_shm, with `shm_since`). `reap`: called while waiting, to
    reap a child of the caller's in it (a zombie that is not reaped stays out of the count, but only a reaped one frees
    its pid)."""
    try:
        _signal_until_gone(lambda: session_pids(sid, marker), grace_s, reap)
    finally:
        if shm_since is not None:  # what a process that outlived SIGKILL still maps stays (remove_left_shm)
            remove_left_shm(shm_since)


def leftover_pids(metrics_dir: str | os.PathLike) -> list[int]:
    """The live processes on this machine (zombies left out) whose LOGGER_ENV names a file in `metrics_dir` (a run
    directory's verl/metrics, as launch.py sets it: resolved), this process excepted."""
    prefix = f"{LOGGER_ENV}={str(metrics_dir).rstrip('/')}/".encode()
    return [pid for pid, _ in _live_processes() if any(entry.startswith(prefix) for entry in _environ(pid))]


def stop_leftovers(metrics_dir: str | os.PathLike, grace_s: float) -> list[str]:
    """Stop (SIGTERM, SIGKILL after `grace_s`) every process of leftover_pids(`metrics_dir`) and remove the shared
    memory they left; their command lines (what was stopped), [] when none was found. Only for a run directory whose
    lock the caller holds, or whose job is gone: a live launch's processes are found too."""
    pids = leftover_pids(metrics_dir)
    if not pids:
        return []
    names = [name for name in (command_line(pid)[:60] for pid in pids) if name]  # "": gone meanwhile
    started = min(_start_times(pids), default=time.time())  # the shared memory they left is what was made since
    try:
        _signal_until_gone(lambda: leftover_pids(metrics_dir), grace_s, None)
    finally:
        remove_left_shm(started)
    return names


def _start_times(pids: list[int]) -> list[float]:
    """When each process of `pids` still alive started, as a time.time(): /proc/<pid>/stat's starttime (clock ticks
    after boot) + the boot time (/proc/stat's btime)."""
    with open("/proc/stat", "rb") as f:
        boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
    times = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                times.append(boot + int(f.read().rpartition(b")")[2].split()[19]) / os.sysconf("SC_CLK_TCK"))
        except (OSError, IndexError, ValueError):
            continue
    return times


def _signal_until_gone(find: Callable[[], list[int]], grace_s: float, reap: Callable[[], object] | None) -> None:
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        deadline = time.monotonic() + wait_s
        signalled: set[int] = set()
        while True:
            if reap is not None:
                reap()
            pids = find()
            if not pids:
                return
            for pid in set(pids) - signalled:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
                signalled.add(pid)
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)


def main(argv: list[str]) -> int:
    job, sid, grace_s = int(argv[1]), int(argv[2]), float(argv[3])
    marker = argv[4] if len(argv) > 4 else None
    shm_since = float(argv[5]) if len(argv) > 5 else None
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the job's death (or the session's end) stops this
    polls = 0
    while True:
        if os.getppid() != job:  # re-parented: the job is gone, with no chance to stop verl
            print(f"judge_rl watchdog: the job (pid {job}) is gone; stopping verl's session {sid}", flush=True)
            stop_session(sid, grace_s, marker=marker, shm_since=shm_since)
            return 0
        if polls % SCAN_EVERY == 0 and not session_pids(sid, marker):
            return 0
        polls += 1
        time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
