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

Under submitit (hydra-submitit-launcher, `cluster=slurm`) preemption and the time limit arrive as USR2
(SUBMITIT_PREEMPT_SIGNAL), and submitit's own handler would raise SystemExit wherever the job is, mid-step or
mid-checkpoint, and requeue it. `install()` takes that signal over: it stops the job as SIGTERM does (the step under
way finished and checkpointed, status "interrupted"), and `requeue()` then hands over to submitit's handler, which
requeues the job (`scontrol requeue`, or the local executor's restart); the requeued job resumes from the checkpoint.

Nothing here imports judge_rl: it sits on the bottom floor with config/ and registry.py.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Callable, Iterator

EXIT_CODE = 128 + signal.SIGTERM  # 143

_state = {"requested": False, "raised": False, "depth": 0, "on_request": [], "signal": None, "requeue": None}


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by SIGTERM (or by the launcher's requeue signal: its name is the message)."""

    def __init__(self, message: str = "SIGTERM") -> None:
        super().__init__(message)


def _handler(signum, frame) -> None:
    first = not _state["requested"]
    _state["requested"] = True
    if first:
        _state["signal"] = signal.Signals(signum).name
    if _state["depth"] > 0 and first:  # inside deferred(): finish the unit of work, then stop
        for callback in list(_state["on_request"]):
            callback()
        return
    if _state["raised"]:  # already stopping: a further SIGTERM must not cut the cleanup (status, servers) short
        return
    _state["raised"] = True
    raise Terminated(signal_name())


def _requeue_signal() -> signal.Signals | None:
    """The signal submitit stops a job with before requeuing it (its SUBMITIT_PREEMPT_SIGNAL, USR2 by default)."""
    name = os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2")
    return getattr(signal, f"SIG{name}", None)


def install() -> bool:
    """SIGTERM raises `Terminated` (or, inside `deferred()`, asks to stop), and so does the requeue signal where a
    launcher (submitit) installed a handler for it, which `requeue()` calls later; False where signals cannot be
    handled (not the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    _state.update(requested=False, raised=False, signal=None)
    signal.signal(signal.SIGTERM, _handler)
    sig = _requeue_signal()
    previous = signal.getsignal(sig) if sig is not None else None
    if sig is not None and previous is not _handler:  # not installed by an earlier call in this process
        _state["requeue"] = (sig, previous) if callable(previous) else None
        if callable(previous):
            signal.signal(sig, _handler)
    return True


def requested() -> bool:
    """Whether a SIGTERM (or the requeue signal) asked this process to stop."""
    return bool(_state["requested"])


def signal_name() -> str:
    """The name of the signal that asked this process to stop: SIGTERM, or the requeue signal (SIGUSR2)."""
    return _state["signal"] or "SIGTERM"


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
        raise Terminated(signal_name())


def stopped_for_requeue() -> str | None:
    """The requeue signal's name (SIGUSR2) when it, not a SIGTERM, stopped this process and a launcher handles it;
    else None."""
    launcher = _state["requeue"]
    return _state["signal"] if launcher is not None and _state["signal"] == launcher[0].name else None


def requeue() -> None:
    """Call the launcher's handler for the requeue signal (after `stopped_for_requeue()`): submitit's requeues the
    job and exits (SystemExit), or raises an error saying why it does not requeue (timed out too often)."""
    sig, handler = _state["requeue"]
    handler(sig, None)


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
