"""Compiled kernels a killed process left half-written, removed before a job starts.

torch's inductor (torch.compile; vLLM's engines, verl's workers) builds each C++ kernel with the compiler writing
straight to its place in a cache shared by every process of the user (`/tmp/torchinductor_<user>`, or
TORCHINDUCTOR_CACHE_DIR), and later takes any file at that place as built. A process killed while the linker wrote
(kill -9, the OOM killer, a preempted node: the failures judge_rl's jobs are built to survive) leaves a truncated
shared object there for good: every later process compiling the same kernel loads it and fails ("file too short",
"invalid ELF header"), and a vLLM engine dies with it (EngineDeadError in every rollout). CI failed that way: a
0-byte `<key>.main.so` from an earlier run. A re-run cannot heal it, so every app removes such files as it starts
(`drop_truncated_kernels`, called by judge_rl/jobs/shell.py) and inductor builds them again.

A file is truncated when it lacks an ELF header or its section table (which the linker writes last, at the end)
runs past the end of the file. A kernel's build lock (`<root>/locks/<key>.lock`, the one inductor holds while it
builds) is taken first and a locked one is left alone: another process is building it now.

Nothing here imports torch or judge_rl: it sits on the bottom floor with stopping.py.
"""

from __future__ import annotations

import fcntl
import getpass
import os
import struct
import sys
import tempfile
from pathlib import Path
from typing import Iterable, Mapping

BUILT_SUFFIXES = (".so", ".o")  # the linked kernel and the objects linked into it


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid_{os.getuid()}"


def kernel_cache_roots(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where this user's processes keep inductor's kernels, existing ones only: TORCHINDUCTOR_CACHE_DIR, torch's
    default under this process's temp dir and under /tmp (a Ray worker may not share the driver's TMPDIR), and the
    per-model `inductor_cache` folders of vLLM's compile cache (VLLM_CACHE_ROOT, else ~/.cache/vllm). `environ`:
    os.environ as it is at the call (not a default bound at import: a library may rebind os.environ)."""
    environ = os.environ if environ is None else environ
    name = "torchinductor_" + _user()
    roots = [Path(environ[key]) for key in ("TORCHINDUCTOR_CACHE_DIR",) if environ.get(key)]
    roots += [Path(tempfile.gettempdir()) / name, Path("/tmp") / name]
    vllm_root = Path(environ.get("VLLM_CACHE_ROOT") or Path.home() / ".cache" / "vllm") / "torch_compile_cache"
    if vllm_root.is_dir():
        roots += sorted(vllm_root.glob("**/inductor_cache"))
    seen: dict[Path, None] = {}
    for root in roots:
        if root.is_dir():
            seen.setdefault(root.resolve())
    return list(seen)


def is_truncated(path: Path) -> bool:
    """Whether a built kernel (an ELF shared object or object file) is cut short: no ELF header, or a section table
    that ends past the end of the file."""
    with open(path, "rb") as f:
        header = f.read(64)
    if len(header) < 52 or header[:4] != b"\x7fELF":
        return True
    order = "<" if header[5] == 1 else ">"
    if header[4] == 2:  # 64-bit: e_shoff at 0x28, e_shentsize and e_shnum at 0x3A
        if len(header) < 64:
            return True
        (table,) = struct.unpack_from(order + "Q", header, 0x28)
        entry, count = struct.unpack_from(order + "HH", header, 0x3A)
    else:  # 32-bit: e_shoff at 0x20, e_shentsize and e_shnum at 0x2E
        (table,) = struct.unpack_from(order + "I", header, 0x20)
        entry, count = struct.unpack_from(order + "HH", header, 0x2E)
    return table + entry * count > path.stat().st_size


def _truncated_kernels(root: Path) -> Iterable[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "locks"]
        for name in files:
            path = Path(folder) / name
            try:
                if name.endswith(BUILT_SUFFIXES) and is_truncated(path):
                    yield path
            except OSError:  # unreadable, or removed meanwhile
                continue


def drop_truncated_kernels(roots: Iterable[Path] | None = None) -> list[Path]:
    """Remove every truncated built kernel under `roots` (default `kernel_cache_roots()`) whose build lock is free,
    one line on stderr each; returns the removed paths. Unreadable files and folders are left as they are."""
    removed = []
    for root in kernel_cache_roots() if roots is None else roots:
        try:
            candidates = list(_truncated_kernels(root))
        except OSError:
            continue
        for path in candidates:
            lock = root / "locks" / (path.name.split(".")[0] + ".lock")
            try:
                lock.parent.mkdir(exist_ok=True)
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # inductor's FileLock is this flock
            except OSError:  # held: another process is building this kernel now
                os.close(fd)
                continue
            try:
                if path.exists() and is_truncated(path):
                    path.unlink()
                    removed.append(path)
                    print(f"judge_rl: removed a truncated compiled kernel {path} (a process killed while building it "
                          "left it; torch would load it and fail); it is built again when needed", file=sys.stderr)
            except OSError:
                pass
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
    return removed
