"""Truncated compiled kernels (judge_rl/kernel_cache.py): a real torch.compile kernel cut short poisons every later
process that compiles it, and is removed as an app starts; whole kernels and ones being built are left alone."""

from __future__ import annotations

import _json
import fcntl
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from omegaconf import OmegaConf

from judge_rl.jobs.shell import hydra_task
from judge_rl.kernel_cache import drop_truncated_kernels, is_truncated, kernel_cache_roots

ELF = Path(_json.__file__)  # a real shared object every Python install has (this one's C extension for json)

COMPILE = textwrap.dedent("""
    import torch
    @torch.compile
    def f(x):
        return torch.softmax(x * 2, -1).argmax(-1) + x.sum(-1)
    print(f(torch.ones(4, 16)).tolist())
""")


def _compile(cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", COMPILE], env=env, capture_output=True, text=True, timeout=300)


def _cut(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


# peak memory: 6.8 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_kernel_cut_short_breaks_every_later_compile_until_it_is_removed(tmp_path):
    cache = tmp_path / "inductor"
    first = _compile(cache)
    assert first.returncode == 0, first.stderr[-2000:]
    kernels = sorted(cache.glob("*/*.main.so"))
    assert kernels, sorted(p.name for p in cache.rglob("*.so"))
    whole = {p: p.read_bytes() for p in cache.rglob("*.so")}
    assert not any(is_truncated(p) for p in whole)
    _cut(kernels[0], 0)  # the linker killed as it opened the file: CI's 0-byte main.so (cut inside the code: SIGBUS)
    assert is_truncated(kernels[0])

    poisoned = _compile(cache)  # torch takes the file as built and loads it: the failure CI saw
    assert poisoned.returncode != 0 and "ImportError" in poisoned.stderr, poisoned.stderr[-2000:]

    assert drop_truncated_kernels([cache]) == [kernels[0]]
    assert {p: p.read_bytes() for p in cache.rglob("*.so") if p != kernels[0]} == {
        p: b for p, b in whole.items() if p != kernels[0]}  # fmt: skip

    healed = _compile(cache)
    assert healed.returncode == 0 and healed.stdout == first.stdout, healed.stderr[-2000:]
    assert kernels[0].exists() and not is_truncated(kernels[0])


# peak memory: 6.7 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_empty_cut_and_headerless_files_are_truncated_and_a_whole_object_is_not(tmp_path):
    whole = tmp_path / "whole.so"
    shutil.copy(ELF, whole)
    assert not is_truncated(whole)
    for size in (0, 10, 63, whole.stat().st_size - 1):
        cut = tmp_path / f"cut{size}.so"
        shutil.copy(ELF, cut)
        _cut(cut, size)
        assert is_truncated(cut), size
    (tmp_path / "text.so").write_text("not an ELF file at all, but long enough to hold a header" * 4)
    assert is_truncated(tmp_path / "text.so")


# peak memory: 5.9 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_kernel_another_process_is_building_is_left_alone(tmp_path):
    (tmp_path / "ab").mkdir()
    building = tmp_path / "ab" / "cabc.main.so"
    building.write_bytes(b"")
    (tmp_path / "locks").mkdir()
    fd = os.open(tmp_path / "locks" / "cabc.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # what inductor's FileLock holds while the compiler writes
    try:
        assert drop_truncated_kernels([tmp_path]) == []
        assert building.exists()
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert drop_truncated_kernels([tmp_path]) == [building]
    assert not building.exists()


# peak memory: 5.9 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_every_app_removes_a_truncated_kernel_as_it_starts(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "inductor"
    (cache / "xy").mkdir(parents=True)
    kept, cut = cache / "xy" / "ckept.so", cache / "xy" / "ccut.main.so"
    shutil.copy(ELF, kept)
    shutil.copy(ELF, cut)
    _cut(cut, 100)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    assert cache.resolve() in kernel_cache_roots()

    assert hydra_task(lambda cfg: cfg.value)(OmegaConf.create({"value": 7})) == 7
    assert kept.exists() and not cut.exists()
    assert f"removed a truncated compiled kernel {cut.resolve()}" in capsys.readouterr().err
