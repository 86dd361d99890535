"""Stops every process of verl's session when the job that launched it dies (judge_rl/backends/verl/launch.py).

    python judge_rl/backends/verl/session_watchdog.py <job pid> <session id> <grace_s> <marker> <launch time>

Why a session and not a process group (judge_rl/servers/watchdog.py stops a judge server's group): Ray's raylet puts
each worker in a process group of its own, so verl's trainer, its FSDP workers and vLLM's engines are in as many
groups; they all stay in the session of the entry process, which launch.py starts in a new one (a session is found
by its id alone, after its processes were re-parented too: /proc/<pid>/stat). A process that starts a session of its
own (W&B's wandb-core, in verl's trainer) is still found by the marker every process of the job inherits in its
environment (`<MARKER_ENV>=<marker>`, set by launch.py: /proc/<pid>/environ).

The job starts this process in its own session right after verl's, and it inherits the run directory's lock: it polls
its parent, and once the job is gone (re-parented: kill -9 runs no `finally`) it sends SIGTERM to every process of the
session, SIGKILL after `grace_s`, removes the shared memory they left (remove_left_shm), and exits once none is
left, which is when the lock is free. It exits by itself as
soon as the session is empty (the job stopped verl). Run by path, standard library only: it starts in milliseconds.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Callable

POLL_S = 0.2
MARKER_ENV = "JUDGE_RL_VERL_JOB"
SCAN_EVERY = 5  # the session is scanned every SCAN_EVERY polls (a /proc walk), the parent checked every poll
SHM_PREFIXES = ("psm_", "verl_weights_")  # remove_left_shm


def session_pids(sid: int, marker: str | None = None) -> list[int]:
    """The live processes (zombies left out) of the session `sid`, and those whose environment has
    MARKER_ENV=`marker`; this process excepted."""
    tag = f"{MARKER_ENV}={marker}".encode() if marker else None
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
            if len(fields) < 4 or fields[0] in (b"Z", b"X"):  # after the command: state ppid pgrp session ...
                continue
            if int(fields[3]) == sid:
                pids.append(int(name))
            elif tag is not None:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if tag in f.read().split(b"\0"):
                        pids.append(int(name))
        except OSError:
            continue
    return pids


def mapped_shm() -> set[str]:
    """The files in /dev/shm that some live process has mapped."""
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/maps", "rb") as f:
                found.update(line[line.index(b" /dev/shm/") + 1:].decode(errors="replace")
                             for line in f.read().splitlines() if b" /dev/shm/" in line and not line.endswith(b" (deleted)"))
        except OSError:
            continue
    return found


def remove_left_shm(since: float, shm_dir: str = "/dev/shm") -> list[str]:
    """Unlink the shared memory the job's processes left: files in `shm_dir` named as vLLM's message queues (Python's
    `psm_*`) and verl's weight-sync bucket (`verl_weights_*`) are, made by this user at or after `since` (the launch's
    time.time()), that no live process maps. A process killed before it unlinked them (and Ray's teardown kills vLLM's)
    leaves them in memory until the machine restarts: 622 MB for a bucket cut off mid-sync on a CPU job. The paths
    unlinked."""
    candidates = []
    for name in os.listdir(shm_dir):
        if name.startswith(SHM_PREFIXES):
            path = os.path.join(shm_dir, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if st.st_uid == os.getuid() and st.st_ctime >= since:
                candidates.append(path)
    if not candidates:
        return []
    mapped = mapped_shm()
    removed = []
    for path in candidates:
        if path not in mapped:
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
    return removed


def stop_session(sid: int, grace_s: float, reap: Callable[[], object] | None = None, marker: str | None = None,
                 shm_since: float | None = None) -> None:
    """SIGTERM to every process of the session `sid` (and with `marker`, see session_pids), SIGKILL to those left
    after `grace_s` (and to any started since); returns once none is left, after removing the shared memory they left
    (remove_left_shm, with `shm_since`). `reap`: called while waiting, to reap a child of the caller's in it (a zombie
    that is not reaped stays out of the count, but only a reaped one frees its pid)."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        deadline = time.monotonic() + wait_s
        signalled: set[int] = set()
        while True:
            if reap is not None:
                reap()
            pids = session_pids(sid, marker)
            if not pids:
                if shm_since is not None:
                    remove_left_shm(shm_since)
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
