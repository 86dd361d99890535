"""Run a Python module as `python -m` does, then write the CUDA allocator's peak memory to a JSON file.

    python3 scripts/gpu_kit/cuda_peak.py PEAK.json -m judge_rl cluster.device=cuda logger=none ...

judge_rl records no GPU memory itself; this wrapper adds it without touching the job. At exit (also after a
failure, sys.exit, or the SIGTERM of `timeout`, which judge_rl turns into exit 143) it writes
{"cuda_initialized", "device", "max_memory_allocated_mb", "max_memory_reserved_mb"} for the whole process: what
PyTorch's caching allocator held at its peak, without the CUDA context (~0.5 GiB) that nvidia-smi also counts.
A process that never touched CUDA (a CPU run) writes cuda_initialized false. A SIGKILL writes nothing.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys


def peak_record() -> dict:
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return {"cuda_initialized": False}
    return {
        "cuda_initialized": True,
        "device": torch.cuda.get_device_name(),
        "max_memory_allocated_mb": torch.cuda.max_memory_allocated() / 2**20,
        "max_memory_reserved_mb": torch.cuda.max_memory_reserved() / 2**20,
    }


def main() -> None:
    if len(sys.argv) < 4 or sys.argv[2] != "-m":
        sys.exit("usage: cuda_peak.py PEAK.json -m MODULE [args...]")
    out, module, args = sys.argv[1], sys.argv[3], sys.argv[4:]

    def write() -> None:
        try:
            with open(out, "w") as f:
                json.dump(peak_record(), f)
        except Exception as e:  # noqa: BLE001  the job's own exit status is what matters
            print(f"cuda_peak: could not write {out}: {e}", file=sys.stderr)

    atexit.register(write)
    sys.path[0] = os.getcwd()  # as `python -m`: the working directory first, not this script's folder
    sys.argv = [module, *args]  # runpy sets argv[0] to the module's file
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
