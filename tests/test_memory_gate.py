"""conftest.memory_gate: under pytest-xdist a test marked `alone` runs with no other test beside it, the others share.
Each thread below opens the lock files itself, as a worker process does (fcntl locks belong to the open file)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from conftest import memory_gate


def _hold(alone: bool, lock_dir: Path, events: list[str], name: str, started: threading.Event, release: threading.Event):
    with memory_gate(alone, lock_dir):
        events.append(f"{name} in")
        started.set()
        release.wait(5)
        events.append(f"{name} out")


def _start(alone: bool, lock_dir: Path, events: list[str], name: str) -> tuple[threading.Thread, threading.Event, threading.Event]:
    started, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=_hold, args=(alone, lock_dir, events, name, started, release), daemon=True)
    thread.start()
    return thread, started, release


def test_tests_share_the_gate_and_an_alone_test_waits_for_them_and_goes_before_later_ones(tmp_path):
    events: list[str] = []
    a, a_in, a_release = _start(False, tmp_path, events, "a")
    b, b_in, b_release = _start(False, tmp_path, events, "b")
    assert a_in.wait(5) and b_in.wait(5)  # two ordinary tests side by side
    heavy, heavy_in, heavy_release = _start(True, tmp_path, events, "heavy")
    time.sleep(0.3)
    assert not heavy_in.is_set()  # waits while another test runs
    later, later_in, later_release = _start(False, tmp_path, events, "later")
    time.sleep(0.3)
    assert not later_in.is_set()  # a test that comes after the waiting alone test does not overtake it
    a_release.set(), b_release.set()
    assert heavy_in.wait(5)
    time.sleep(0.3)
    assert not later_in.is_set()  # and does not run beside it
    heavy_release.set()
    assert later_in.wait(5)
    later_release.set()
    for thread in (a, b, heavy, later):
        thread.join(5)
    assert events.index("heavy in") > max(events.index("a out"), events.index("b out"))
    assert events.index("later in") > events.index("heavy out")


def test_in_one_process_the_gate_takes_no_lock():
    with memory_gate(True, None), memory_gate(True, None):  # nested: would deadlock if it locked
        pass


def test_a_waiting_worker_hands_back_the_heap_it_keeps():
    """release_memory (run by a worker before it waits at the gate) returns freed C-heap pages to the system: ~200 MB
    freed in 1 KB blocks with every 64th kept, which glibc keeps mapped on its own, leaves the process's RSS."""
    import subprocess
    import sys
    from pathlib import Path

    code = """
import sys
sys.path.insert(0, sys.argv[1])
from conftest import release_memory

def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20

blocks = [bytes(1024) + bytes([i % 256]) for i in range(200_000)]
kept = blocks[::64]
del blocks
before = rss_mb()
release_memory()
print(round(before - rss_mb()))
"""
    out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent)], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip()) > 100, out.stdout
