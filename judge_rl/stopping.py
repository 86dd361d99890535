"""Stopping on SIGTERM: how clusters stop jobs (SLURM preemption and time limits, `kill`, Ray, Kubernetes).

Every app installs `install()` (judge_rl/jobs/shell.py). A SIGTERM then raises `Terminated`, a KeyboardInterrupt,
in the main thread, so what Ctrl-C already did happens: `with` blocks close their files (a judgment written is a
judgment kept), a judge server the job started is stopped, `status.json` says "interrupted"
(judge_rl/rundir.py), and the app exits with 128 + 15 = 143, the code a shell gives a process SIGTERM stopped.

Work that would lose more than it saves by stopping mid-way runs under `deferred()`: there a SIGTERM only asks
to stop, the code finishes its unit of work (an RL step, logged and checkpointed; a TRL optimizer step, saved),
and leaving the block raises `Terminated`. A second SIGTERM raises at once; once `Terminated` is raised, further
SIGTERMs are ignored so the cleanup (status.json, stopping a judge server) runs to its end. A re-run in the same run_dir
resumes from what was saved. A scheduler's grace period (SLURM's KillWait, 30 s by default; `--signal` asks
for the signal earlier) should exceed one step.

Nothing here imports judge_rl: it sits on the bottom floor with config/ and registry.py.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Callable, Iterator

EXIT_CODE = 128 + signal.SIGTERM  # 143

_state = {"requested": False, "raised": False, "depth": 0, "on_request": []}


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by SIGTERM."""

    def __init__(self, message: str = "SIGTERM") -> None:
        super().__init__(message)


def _handler(signum, frame) -> None:
    first = not _state["requested"]
    _state["requested"] = True
    if _state["depth"] > 0 and first:  # inside deferred(): finish the unit of work, then stop
        for callback in list(_state["on_request"]):
            callback()
        return
    if _state["raised"]:  # already stopping: a further SIGTERM must not cut the cleanup (status, servers) short
        return
    _state["raised"] = True
    raise Terminated()


def install() -> bool:
    """SIGTERM raises `Terminated` (or, inside `deferred()`, asks to stop); False where signals cannot be handled
    (not the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    _state["requested"] = _state["raised"] = False
    signal.signal(signal.SIGTERM, _handler)
    return True


def requested() -> bool:
    """Whether a SIGTERM asked this process to stop."""
    return bool(_state["requested"])


@contextlib.contextmanager
def deferred(on_request: Callable[[], None] | None = None) -> Iterator[None]:
    """Within the block a (first) SIGTERM only asks to stop, and calls `on_request` (e.g. to pass the signal to a
    child process); leaving the block then raises `Terminated`. Check `requested()` inside to stop early."""
    _state["depth"] += 1
    if on_request is not None:
        _state["on_request"].append(on_request)
    try:
        yield
    finally:
        _state["depth"] -= 1
        if on_request is not None:
            _state["on_request"].remove(on_request)
    if _state["requested"] and not _state["raised"]:
        _state["raised"] = True
        raise Terminated()


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent():
    """A `preexec_fn` that has the kernel SIGKILL the child when this process dies, kill -9 included (Linux prctl
    PR_SET_PDEATHSIG); None elsewhere. For the processes a job starts and must not outlive it (a served judge, verl's
    entry process). libc is loaded here, before the fork: the child only calls it. The signal follows the thread
    that started the child, so that thread must outlive the child (a `with` block around it does)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def set_death_signal() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    return set_death_signal
