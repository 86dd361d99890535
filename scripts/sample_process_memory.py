"""The memory of one experiment's processes, grouped by kind, sampled until stopped (issue 54's two-node measurement).

Every process whose environment has MEASURE_TAG=<tag> is counted (Ray's raylets and workers inherit it from the
`ray start` that a test runs, vLLM's engines from their actors), by its PSS (/proc/<pid>/smaps_rollup: shared pages
split between their users, so the sum is what they hold together), beside the machine's own MemTotal - MemAvailable.

    MEASURE_TAG=2n pytest -s tests/backends/test_verl_two_nodes.py -k lost_and_resumes &
    python scripts/sample_process_memory.py /tmp/two_nodes.jsonl 2n      # Ctrl-C when the test ends
    python scripts/sample_process_memory.py /tmp/two_nodes.jsonl --show   # the peak and its split by kind

Other work on the machine shows in `used` but not in `total`.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

KINDS = ("ray::WorkerDict", "ray::TaskRunner", "ray::IDLE", "ray::vLLM", "ray::AgentLoop", "ray::", "raylet",
         "gcs_server", "ray.util.client", "judge_rl", "VLLM", "pytest")


def kind(command: str) -> str:
    return next((k for k in KINDS if k in command[:80]), command[:30])


def sample(tag: bytes) -> dict:
    groups: dict[str, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if tag not in (d / "environ").read_bytes().split(b"\0"):
                continue
            command = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            pss = next(int(line.split()[1]) * 1024 for line in (d / "smaps_rollup").read_text().splitlines()
                       if line.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
        groups[kind(command)] = groups.get(kind(command), 0) + pss
    mem = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in open("/proc/meminfo")}
    return {"t": time.time(), "total": sum(groups.values()), "groups": groups,
            "used": mem["MemTotal"] - mem["MemAvailable"]}


def show(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    peak = max(rows, key=lambda r: r["total"])
    split = ", ".join(f"{k} {v / 1e9:.2f}" for k, v in sorted(peak["groups"].items(), key=lambda kv: -kv[1]))
    print(f"peak {peak['total'] / 1e9:.2f} GB of the tagged processes at +{peak['t'] - rows[0]['t']:.0f} s "
          f"(machine in use {peak['used'] / 1e9:.2f} GB): {split}")


def main(argv: list[str]) -> int:
    path = Path(argv[1])
    if argv[2] == "--show":
        show(path)
        return 0
    tag = f"MEASURE_TAG={argv[2]}".encode()
    with open(path, "a") as out:
        while True:
            out.write(json.dumps(sample(tag)) + "\n")
            out.flush()
            time.sleep(2)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
