"""conftest.memory_gate: under pytest-xdist the tests running at once stay within a memory budget, in the order they
asked; a test marked `alone` runs with no other test beside it. Each thread below stands for a worker (its own
`holder`) and opens the lock file itself, as a worker process does (fcntl locks belong to the open file)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from conftest import ORDINARY_GB, memory_gate, memory_gb

BUDGET = 20.0


def _hold(gb: float, lock_dir: Path, events: list[str], name: str, started: threading.Event, release: threading.Event):
    with memory_gate(gb, lock_dir, holder=name, budget=BUDGET):
        events.append(f"{name} in")
        started.set()
        release.wait(5)
        events.append(f"{name} out")


def _start(gb: float, lock_dir: Path, events: list[str], name: str) -> tuple[threading.Thread, threading.Event, threading.Event]:
    started, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=_hold, args=(gb, lock_dir, events, name, started, release), daemon=True)
    thread.start()
    time.sleep(0.1)  # each asks after the one before
    return thread, started, release


def test_tests_share_the_gate_and_an_alone_test_waits_for_them_and_goes_before_later_ones(tmp_path):
    events: list[str] = []
    alone = memory_gb("tests/backends/test_x.py::test_y", alone=True)
    a, a_in, a_release = _start(ORDINARY_GB, tmp_path, events, "a")
    b, b_in, b_release = _start(ORDINARY_GB, tmp_path, events, "b")
    assert a_in.wait(5) and b_in.wait(5)  # two ordinary tests side by side
    heavy, heavy_in, heavy_release = _start(alone, tmp_path, events, "heavy")
    time.sleep(0.5)
    assert not heavy_in.is_set()  # waits while another test runs
    later, later_in, later_release = _start(ORDINARY_GB, tmp_path, events, "later")
    time.sleep(0.5)
    assert not later_in.is_set()  # a test that comes after the waiting alone test does not overtake it
    a_release.set(), b_release.set()
    assert heavy_in.wait(5)
    time.sleep(0.5)
    assert not later_in.is_set()  # and does not run beside it
    heavy_release.set()
    assert later_in.wait(5)
    later_release.set()
    for thread in (a, b, heavy, later):
        thread.join(5)
    assert events.index("heavy in") > max(events.index("a out"), events.index("b out"))
    assert events.index("later in") > events.index("heavy out")


def test_large_tests_run_beside_what_fits_in_the_budget_and_wait_for_what_does_not(tmp_path):
    events: list[str] = []
    verl, verl_in, verl_release = _start(12, tmp_path, events, "verl")  # a verl job
    engine, engine_in, engine_release = _start(5, tmp_path, events, "engine")  # a vLLM engine: 17 of 20
    assert verl_in.wait(5) and engine_in.wait(5)
    engine_release.set()
    policy, policy_in, policy_release = _start(15, tmp_path, events, "policy")  # 27 of 20 beside the verl job
    time.sleep(0.5)
    assert not policy_in.is_set()
    small, small_in, small_release = _start(ORDINARY_GB, tmp_path, events, "small")  # would fit, but asked later
    time.sleep(0.5)
    assert not small_in.is_set()
    verl_release.set()
    assert policy_in.wait(5) and small_in.wait(5)  # 17 of 20: side by side
    policy_release.set(), small_release.set()
    for thread in (verl, engine, policy, small):
        thread.join(5)
    assert events.index("policy in") > events.index("verl out")


def test_a_holder_whose_process_is_gone_holds_nothing(tmp_path):
    import json
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / "gate.json").write_text(json.dumps({"next": 1, "waiting": {}, "running": {"gw9": [1e9, int(dead.stdout)]}}))
    with memory_gate(ORDINARY_GB, tmp_path, holder="gw0", budget=BUDGET):
        pass  # no wait: the dead worker's entry is dropped


def test_memory_gb_takes_the_longest_declared_prefix():
    assert memory_gb("tests/backends/test_verl_cpu.py::test_the_policy_job_runs_on_verl_cpu_with_a_locally_served_judge", False) == 15
    assert memory_gb("tests/servers/test_vllm_server.py::test_model_dir_resolution", False) == 5
    assert memory_gb("tests/test_config.py::test_x", False) == ORDINARY_GB
    assert memory_gb("tests/test_config.py::test_x", True) == float("inf")


def test_in_one_process_the_gate_takes_no_lock():
    with memory_gate(float("inf"), None), memory_gate(float("inf"), None):  # nested: would deadlock if it locked
        pass
