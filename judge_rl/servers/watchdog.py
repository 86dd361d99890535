"""Stops a judge server's whole process group when the job that started it dies (judge_rl/servers/endpoint.py).

    python judge_rl/servers/watchdog.py <job pid> <server pgid> <grace_s> <server start time>

Why: a job killed by SIGKILL runs no `finally`, so it cannot stop the `vllm serve` it started. The server itself
gets SIGKILL from the kernel when the job dies (PR_SET_PDEATHSIG, set by the endpoint), but vLLM's engine process
does not watch the API server (only vLLM's workers watch the engine), so it would live on with the model's memory,
and the port with it. This process, started by the job in its own session right after the server, polls its
parent: once the job is gone (it is re-parented), it sends SIGTERM to the server's process group, SIGKILL after
`grace_s`, removes the shared memory vLLM's engine left if it had to be killed (judge_rl/shm.py), and exits; it exits
by itself as soon as that group is gone (the job stopped its server). Run by path, standard library only: no package
import, so it starts in milliseconds and costs a few MB.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

if __package__:
    from judge_rl.shm import remove_left_shm
else:  # run by path, as the endpoint starts it: judge_rl/shm.py alone, not the package (whose import takes ~0.3 s)
    import importlib.util

    _spec = importlib.util.spec_from_file_location("judge_rl_shm", Path(__file__).resolve().parents[1] / "shm.py")
    _shm = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_shm)
    remove_left_shm = _shm.remove_left_shm

POLL_S = 0.1


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def stop_group(pgid: int, grace_s: float, leader=None, shm_since: float | None = None) -> None:
    """SIGTERM to process group `pgid`, SIGKILL after `grace_s`; done when no process of the group is left and, given
    the group's `leader` (a subprocess.Popen the caller started), once it is reaped (a zombie leader keeps its group).
    With `shm_since` (the server's start, a time.time()), then the shared memory its killed processes left
    (remove_left_shm: a vLLM engine SIGKILLed before its own shutdown unlinked its 160 and 240 MB message queues)."""

    def gone() -> bool:
        return (leader is None or leader.poll() is not None) and not group_alive(pgid)

    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        if gone():
            break
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + wait_s
        while not gone() and time.monotonic() < deadline:
            time.sleep(0.05)
    if shm_since is not None:
        remove_left_shm(shm_since)


def main(argv: list[str]) -> int:
    job, pgid, grace_s = int(argv[1]), int(argv[2]), float(argv[3])
    shm_since = float(argv[4]) if len(argv) > 4 else None
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the job's death (or the group's end) stops this
    while group_alive(pgid):
        if os.getppid() != job:  # re-parented: the job is gone, with no chance to stop its server
            print(f"judge_rl watchdog: the job (pid {job}) is gone; stopping the judge server's process group {pgid}",
                  flush=True)
            stop_group(pgid, grace_s, shm_since=shm_since)
            return 0
        time.sleep(POLL_S)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
