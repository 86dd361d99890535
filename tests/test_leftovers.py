"""`python -m judge_rl.leftovers` (judge_rl/leftovers.py): the processes an earlier verl launch of a run dir left on
this machine, found by the metrics path every process of a launch carries, are stopped; nothing else is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge_rl import leftovers
from judge_rl.backends.verl.session_watchdog import LOGGER_ENV, launch_metrics_dir, leftover_pids

# a parent that starts a child and waits; the child ignores SIGTERM (SIGKILL after the grace period stops it)
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
print(child.pid, flush=True)
time.sleep(600)
"""
CHILD = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)"


def _orphan(run_dir: Path) -> int:
    """A process carrying `run_dir`'s launch metrics path whose parent was killed (-9): an orphan, as vLLM's engine
    is once `ray stop --force` killed its Ray actor. Its pid."""
    env = {**os.environ, LOGGER_ENV: str(launch_metrics_dir(run_dir) / "20261129-050000.jsonl")}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD], env=env, stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    return child


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


@pytest.mark.usefixtures("cleans_up_after_kills")
def test_an_earlier_launchs_orphans_are_stopped_and_another_run_dirs_are_not(tmp_path, capsys, monkeypatch):
    run_dir, other = tmp_path / "run", tmp_path / "run-2"  # "run-2" begins with "run": a prefix is not a match
    mine, theirs = _orphan(run_dir), _orphan(other)
    try:
        assert leftover_pids(launch_metrics_dir(run_dir)) == [mine]
        assert leftovers.main([str(run_dir), "--list"]) == 0  # lists, stops nothing
        assert f"{mine} " in capsys.readouterr().out and _alive(mine)
        # relative or absolute, the same run dir: launch.py resolves it
        monkeypatch.chdir(tmp_path)
        assert leftovers.main(["run"]) == 0  # SIGTERM is ignored: SIGKILL after the grace period
        out = capsys.readouterr().out
        assert "stopped 1 process(es)" in out and "python" in out, out
        deadline = time.monotonic() + 30  # reaped by init once killed: a zombie for a moment at most
        while _alive(mine) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(mine)
        assert _alive(theirs)  # another run dir's process is not touched
        assert leftover_pids(launch_metrics_dir(run_dir)) == []
        assert leftovers.main([str(run_dir)]) == 0 and "stopped 0 process(es)" in capsys.readouterr().out
    finally:
        for pid in (mine, theirs):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
