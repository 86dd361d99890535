"""Shared memory left in /dev/shm (judge_rl/shm.py): removed once no live process maps it, never while one does,
and never when it was made before the stopped processes started."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from judge_rl.shm import left_shm, remove_left_shm

# a vLLM-like process: an untracked psm_* segment (nothing unlinks it if the process dies first), its name printed
HOLDER = """
import sys, time
from multiprocessing import resource_tracker, shared_memory
queue = shared_memory.SharedMemory(create=True, size=1 << 16)
resource_tracker.unregister(queue._name, "shared_memory")
queue.buf[:4] = b"busy"
print(queue.name, flush=True)
time.sleep(300)
"""


def _holder() -> tuple[subprocess.Popen, Path]:
    process = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True)
    return process, Path("/dev/shm") / process.stdout.readline().strip()


def test_what_a_killed_process_left_is_removed_and_what_a_live_one_maps_is_kept():
    since = time.time() - 1
    killed, left = _holder()
    live, kept = _holder()
    try:
        killed.kill()
        killed.wait()
        assert left.is_file() and {str(left), str(kept)} <= set(left_shm(since))
        assert str(left) not in remove_left_shm(time.time() + 60)  # made before `since`: not the stopped processes'
        removed = remove_left_shm(since)  # (another test's process may have left one too)
        assert str(left) in removed and str(kept) not in removed
        assert not left.exists() and kept.is_file()  # still mapped by a live process
    finally:
        live.kill()
        live.wait()
        kept.unlink(missing_ok=True)
        left.unlink(missing_ok=True)


def test_a_test_that_kills_an_engine_leaves_neither_its_shared_memory_nor_its_temporary_folder(tmp_path):
    """tests/conftest.py's litter_of_kills_removed (the `cleans_up_after_kills` fixture): what a killed process
    left is gone at the end, and the folder it was given as TMPDIR with it."""
    from conftest import litter_of_kills_removed

    scratch = tmp_path / "killed_tmp"
    with litter_of_kills_removed(scratch):
        killed, left = _holder()  # started inside: TMPDIR is the test's own folder
        (scratch / "vllm-workdir").mkdir()
        killed.kill()
        killed.wait()
        assert left.is_file()
    try:
        assert not left.exists() and not scratch.exists()
    finally:
        left.unlink(missing_ok=True)
