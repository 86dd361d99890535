"""Stops a judge server's whole process group when the job that started it dies (judge_rl/servers/endpoint.py).

    python judge_rl/servers/watchdog.py <job pid> <server pgid> <grace_s>

Why: a job killed by SIGKILL runs no `finally`, so it cannot stop the `vllm serve` it started. The server itself
gets SIGKILL from the kernel when the job dies (PR_SET_PDEATHSIG, set by the endpoint), but vLLM's engine process
does not watch the API server (only vLLM's workers watch the engine), so it would live on with the model's memory,
and the port with it. This process, started by the job in its own session right after the server, polls its
parent: once the job is gone (it is re-parented), it sends SIGTERM to the server's process group, SIGKILL after
`grace_s`, and exits; it exits by itself as soon as that group is gone (the job stopped its server). Run by path,
standard library only: no package import, so it starts in milliseconds and costs a few MB.
"""

from __future__ import annotations

import os
import signal
import sys
import time

POLL_S = 0.1


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def stop_group(pgid: int, grace_s: float, leader=None) -> None:
    """SIGTERM to process group `pgid`, SIGKILL after `grace_s`; done when no process of the group is left and, given
    the group's `leader` (a subprocess.Popen the caller started), once it is reaped (a zombie leader keeps its group)."""

    def gone() -> bool:
        return (leader is None or leader.poll() is not None) and not group_alive(pgid)

    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        if gone():
            return
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + wait_s
        while not gone() and time.monotonic() < deadline:
            time.sleep(0.05)


def main(argv: list[str]) -> int:
    job, pgid, grace_s = int(argv[1]), int(argv[2]), float(argv[3])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the job's death (or the group's end) stops this
    while group_alive(pgid):
        if os.getppid() != job:  # re-parented: the job is gone, with no chance to stop its server
            print(f"judge_rl watchdog: the job (pid {job}) is gone; stopping the judge server's process group {pgid}",
                  flush=True)
            stop_group(pgid, grace_s)
            return 0
        time.sleep(POLL_S)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
