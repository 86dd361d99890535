"""Shared memory in /dev/shm that killed processes left: found and removed once no live process maps it.

vLLM's engines pass requests through message queues in shared memory (Python's `psm_*` files, 160 and 240 MB for
each engine) and verl syncs weights into them through a bucket there on a CPU (`verl_weights_*`). Each process
unlinks its own on a clean exit; a process killed first (kill -9, or SIGKILL after a grace period) leaves them, in
memory until the machine restarts. The watchdogs that stop a job's processes (judge_rl/backends/verl/
session_watchdog.py, judge_rl/servers/watchdog.py) remove them afterwards. Standard library only: the watchdogs run
by path and import this module without the package.
"""

from __future__ import annotations

import os

SHM_DIR = "/dev/shm"
PREFIXES = ("psm_", "verl_weights_")  # vLLM's message queues (Python's SharedMemory names), verl's weight bucket


def mapped_shm(shm_dir: str = SHM_DIR) -> set[str]:
    """The files in `shm_dir` that some live process has mapped."""
    marker = f" {shm_dir.rstrip('/')}/".encode()
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/maps", "rb") as f:
                found.update(line[line.index(marker) + 1:].decode(errors="replace")
                             for line in f.read().splitlines() if marker in line and not line.endswith(b" (deleted)"))
        except OSError:
            continue
    return found


def left_shm(since: float, shm_dir: str = SHM_DIR) -> list[str]:
    """The paths in `shm_dir` named as PREFIXES, made by this user, changed at or after `since` (a time.time())."""
    found = []
    for name in os.listdir(shm_dir):
        if name.startswith(PREFIXES):
            path = os.path.join(shm_dir, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if st.st_uid == os.getuid() and st.st_ctime >= since:
                found.append(path)
    return found


def remove_left_shm(since: float, shm_dir: str = SHM_DIR) -> list[str]:
    """Unlink the files of left_shm(`since`) that no live process maps (one that does belongs to a process that
    lives on: another job's, or a server still answering). Called once the processes that made them are gone
    (exited, not merely signalled: a SIGKILLed process unmaps its memory as it exits). The paths unlinked."""
    candidates = left_shm(since, shm_dir)
    if not candidates:
        return []
    mapped = mapped_shm(shm_dir)
    removed = []
    for path in candidates:
        if path not in mapped:
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
    return removed
