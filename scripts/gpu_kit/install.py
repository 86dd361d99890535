"""GPU side of the GPU kit: stage the kit's parts, verify them, reassemble the archive and install its wheels.

Runs on the lent GPU machine, which has no package registry and receives files only inside a command's payload
(at most 64 MiB each), so `build.py` splits the kit into parts sent one per command. Standard library only: the
machine's Python is all there is before the kit is installed. `build.py` imports the split/hash helpers from here,
so both sides share one definition of a part.

    # per command, the parts it carries (with gpu_kit_out/manifest.json); manifest.json lists the commands:
    python3 scripts/gpu_kit/install.py stage gpu_kit_out/part-00 [gpu_kit_out/part-01 ...] [--staging /tmp/gpu_kit]
    # once every part is staged:
    python3 scripts/gpu_kit/install.py install [--staging /tmp/gpu_kit] [--target /tmp/gpu_kit/site-packages]
    source /tmp/gpu_kit/env.sh    # in the repo root: PYTHONPATH=<target>:$PWD; then python3 -m judge_rl ... logger=none

A kit built on top of another (build.py --profile verl) names the other's env.sh in its manifest (`base_env`): its
install refuses to run before that file exists or on another build of the base kit than the one it was resolved
against, and its env.sh sources the base kit's first, then adds the manifest's `env_vars`.

Wheels are installed with `pip install --no-index --no-deps --target <target>` (an unzip fallback where the
machine's Python has no pip). `--target` rather than a venv: the kit's packages sit in a plain folder that goes
first on PYTHONPATH, so they win over the machine's (its transformers 5.17 is outside the project's pin) while the
machine's CUDA torch, which the kit leaves out, still comes from its own site-packages, wherever that lives (a venv
with --system-site-packages would only see the base interpreter's packages). judge_rl itself is not installed: the
repo travels with every command, so its root goes on PYTHONPATH too. The target's path must contain
`site-packages`: dill (datasets hashes with it) pickles a module by reference only when it lives under sys.prefix
or a `site-packages` path, and by value otherwise, which fails inside `Dataset.from_list` (pyarrow's MonthDayNano).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

MANIFEST = "manifest.json"
ARCHIVE = "gpu_kit.tar"
WHEELS_DIR = "wheels"  # the folder inside the archive that holds the wheels
TARGET_MARKER = ".gpu_kit_target"  # marks a folder this script installed into, so it may be replaced
DEFAULT_STAGING = "/tmp/gpu_kit"
CHUNK = 1 << 20


class KitError(Exception):
    """A kit problem, reported as one line naming the part or file at fault."""


def sha256_file(path: str | os.PathLike) -> str:
    """The hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def part_name(index: int) -> str:
    return f"part-{index:02d}"


def split_file(src: str | os.PathLike, out_dir: str | os.PathLike, part_bytes: int) -> list[dict]:
    """Cut `src` into files part-00, part-01, ... of at most `part_bytes` each in `out_dir`; returns each part's
    name, size and sha256 in order (what the manifest lists)."""
    if part_bytes <= 0:
        raise KitError(f"part size must be positive, got {part_bytes}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    parts: list[dict] = []
    with open(src, "rb") as f:
        while True:
            name = part_name(len(parts))
            h, size = hashlib.sha256(), 0
            with open(out / name, "wb") as p:
                while size < part_bytes:
                    chunk = f.read(min(CHUNK, part_bytes - size))
                    if not chunk:
                        break
                    p.write(chunk)
                    h.update(chunk)
                    size += len(chunk)
            if size == 0 and parts:  # the previous part ended exactly at the end of the file
                (out / name).unlink()
                break
            parts.append({"name": name, "size": size, "sha256": h.hexdigest()})
            if size < part_bytes:
                break
    return parts


def verify_part(staging: str | os.PathLike, part: dict) -> None:
    """Raise KitError naming the part if it is missing from `staging` or its size or sha256 differs."""
    path = Path(staging) / part["name"]
    if not path.is_file():
        raise KitError(f"{part['name']}: missing from {staging} (send it with `install.py stage`)")
    size = path.stat().st_size
    if size != part["size"]:
        raise KitError(f"{part['name']}: size {size} != manifest's {part['size']} (corrupted or truncated; resend it)")
    digest = sha256_file(path)
    if digest != part["sha256"]:
        raise KitError(f"{part['name']}: sha256 {digest[:12]}... != manifest's {part['sha256'][:12]}... (resend it)")


def verify_parts(staging: str | os.PathLike, parts: list[dict]) -> None:
    """Check every part, reporting all missing ones at once (each still named) before any hash work."""
    missing = [p["name"] for p in parts if not (Path(staging) / p["name"]).is_file()]
    if missing:
        raise KitError(f"{', '.join(missing)}: missing from {staging} (send with `install.py stage`)")
    for p in parts:
        verify_part(staging, p)


def join_parts(staging: str | os.PathLike, parts: list[dict], dest: str | os.PathLike) -> str:
    """Concatenate the parts in order into `dest`; returns the sha256 of what was written."""
    h = hashlib.sha256()
    with open(dest, "wb") as out:
        for p in parts:
            with open(Path(staging) / p["name"], "rb") as f:
                for chunk in iter(lambda: f.read(CHUNK), b""):
                    out.write(chunk)
                    h.update(chunk)
    return h.hexdigest()


# what every part and the archive entry of a manifest must carry, and their types
PART_KEYS = {"name": str, "size": int, "sha256": str}
ARCHIVE_KEYS = {"name": str, "sha256": str}


def load_manifest(path: str | os.PathLike) -> dict:
    path = Path(path)
    if not path.is_file():
        raise KitError(f"{path}: no manifest (carry gpu_kit_out/{MANIFEST} with the command)")
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise KitError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(manifest, dict):
        raise KitError(f"{path}: a manifest is a JSON object, this is a {type(manifest).__name__}")
    for key in ("parts", "archive", "wheels"):
        if key not in manifest:
            raise KitError(f"{path}: manifest has no {key!r}")
    for where, entry, keys in [*((f"parts[{i}]", p, PART_KEYS) for i, p in enumerate(manifest["parts"])),
                               ("archive", manifest["archive"], ARCHIVE_KEYS)]:
        if not isinstance(entry, dict):
            raise KitError(f"{path}: manifest's {where} is not an object")
        for key, kind in keys.items():
            if not isinstance(entry.get(key), kind):
                got = "missing" if key not in entry else f"a {type(entry[key]).__name__}"
                raise KitError(f"{path}: manifest's {where}.{key} is {got}, expected a {kind.__name__}")
    return manifest


def reassemble(staging: str | os.PathLike, manifest: dict) -> Path:
    """Verify the parts, join them into the archive in `staging` and verify the archive's sha256."""
    verify_parts(staging, manifest["parts"])
    archive = Path(staging) / manifest["archive"]["name"]
    digest = join_parts(staging, manifest["parts"], archive)
    if digest != manifest["archive"]["sha256"]:
        archive.unlink()
        raise KitError(f"{archive.name}: sha256 of the joined parts {digest[:12]}... != manifest's "
                       f"{manifest['archive']['sha256'][:12]}... (manifest and parts come from different builds?)")
    return archive


def check_members(tar: tarfile.TarFile, dest: Path) -> None:
    """Refuse, naming it, any member that is not a plain file or folder or would land outside `dest` (an absolute
    name, `..`): checked here on every Python, not left to tarfile's `data` filter, which Pythons before 3.11.4 and
    3.12 lack (they would write such a member wherever it points)."""
    root = dest.resolve()
    for member in tar.getmembers():
        if not (member.isfile() or member.isdir()):
            raise KitError(f"{tar.name}: member {member.name!r} is not a plain file or folder (a link or device)")
        where = (root / member.name).resolve()
        if os.path.isabs(member.name) or (where != root and root not in where.parents):
            raise KitError(f"{tar.name}: member {member.name!r} would be written outside {dest}")


def extract(archive: str | os.PathLike, dest: str | os.PathLike) -> None:
    """Unpack the tar into `dest` after `check_members`, with tarfile's `data` filter too where it exists."""
    dest = Path(dest)
    try:
        with tarfile.open(archive) as tar:
            check_members(tar, dest)
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, filter="data")
            else:  # Pythons before 3.11.4 / 3.12: check_members has vetted every member
                tar.extractall(dest)
    except tarfile.TarError as e:
        raise KitError(f"{Path(archive).name}: not a readable tar archive ({e})") from None


def has_pip(python: str = sys.executable) -> bool:
    return subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0


def pip_install(wheels: list[Path], target: Path, python: str = sys.executable) -> None:
    """`pip install --no-index --no-deps --target`: the kit already holds the resolved set, so pip only unpacks."""
    cmd = [python, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile", "--disable-pip-version-check",
           "--no-warn-script-location", "--find-links", str(wheels[0].parent), "--target", str(target),
           *map(str, wheels)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or ["(no output)"]
        raise KitError(f"pip install --target {target}: exit {result.returncode}: {last[0]}")


def unzip_wheel(wheel: Path, target: Path) -> None:
    """Install one wheel by unpacking it (for a Python without pip): its files and dist-info into `target`, its
    `.data/purelib` and `.data/platlib` merged in, other `.data` schemes dropped; keeps executable bits."""
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            parts = Path(info.filename).parts
            if info.is_dir() or not parts:
                continue
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue
                parts = parts[2:]
            dest = target.joinpath(*parts)
            if target.resolve() not in dest.resolve().parents:
                raise KitError(f"{wheel.name}: member {info.filename} escapes the target folder")
            dest.parent.mkdir(parents=True, exist_ok=True)
            with z.open(info) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
            mode = (info.external_attr >> 16) & 0o777
            if mode & 0o111:
                dest.chmod(mode | 0o644)


def check_target_path(target: Path) -> None:
    """The target must have `site-packages` in its path, or dill pickles its modules by value (module docstring)."""
    if "site-packages" not in str(target):
        raise KitError(f"{target}: the target path must contain 'site-packages' (dill pickles modules elsewhere "
                       f"by value and datasets fails); e.g. {target / 'site-packages'}")


def prepare_target(target: Path) -> None:
    """Empty `target` for a fresh install: only a folder this script installed into before may be replaced."""
    check_target_path(target)
    if target.exists():
        if not (target / TARGET_MARKER).exists() and any(target.iterdir()):
            raise KitError(f"{target}: exists and was not made by install.py; pick another --target")
        shutil.rmtree(target)
    target.mkdir(parents=True)


def install_wheels(wheels_dir: Path, names: list[str], target: Path, method: str = "auto") -> str:
    """Install the manifest's wheels from `wheels_dir` into a fresh `target`; returns the method used."""
    missing = [n for n in names if not (wheels_dir / n).is_file()]
    if missing:
        raise KitError(f"{missing[0]}: listed in the manifest but absent from the archive")
    prepare_target(target)
    wheels = [wheels_dir / n for n in names]
    if method == "auto":
        method = "pip" if has_pip() else "unzip"
    if method == "pip":
        pip_install(wheels, target)
    else:
        for w in wheels:
            unzip_wheel(w, target)
    compile_target(target)
    (target / TARGET_MARKER).write_text("installed by scripts/gpu_kit/install.py\n")
    return method


def compile_target(target: Path) -> None:
    """Write every module's bytecode once, on all cores: the wheels go in with `--no-compile`, and without this each
    of a verl job's ~10 processes (entry, Ray's task runner and workers, vLLM's server and engine) compiles what it
    imports itself. Measured on the lent H200 (16 cores, 2026-11-26): 3.2 s for the base kit; the import line of the
    local backend (ray, verl's core_algos, transformers, trl, datasets, hydra) took 14.2 s after it against 19.0 s
    without it. A module that does not compile (a py2 leftover in a wheel) is skipped, as pip skips it."""
    import compileall
    compileall.compile_dir(str(target), quiet=2, workers=0)


def env_line(target: Path, repo: str = "$PWD", env_vars: dict[str, str] | None = None) -> str:
    """The environment line for later commands: PYTHONPATH with the kit first (its packages win over the machine's)
    then the repo (judge_rl; `$PWD` by default, as commands run in the repo root), HF_HUB_OFFLINE=1 since the
    machine has no hub (transformers fails fast instead of retrying), and the manifest's `env_vars`."""
    extra = "".join(f" {k}={v}" for k, v in (env_vars or {}).items())
    return f"export PYTHONPATH={target}:{repo}${{PYTHONPATH:+:$PYTHONPATH}} HF_HUB_OFFLINE=1{extra}"


def env_script(line: str, base_env: str | None = None) -> str:
    """env.sh: the kit's line, after `source <base_env>` for a kit that sits on top of another (the verl profile on
    the base kit), so its packages come first on PYTHONPATH and the base kit's next."""
    return (f"source {base_env}\n" if base_env else "") + line + "\n"


def check_base(manifest: dict, base_env: Path) -> None:
    """A kit built on top of another (`base_env` in its manifest) installs only after that one, and only on the
    build it was resolved against: the base kit's staged manifest (next to its env.sh) must have the archive sha256
    this manifest names (`base.archive_sha256`)."""
    if not base_env.is_file():
        raise KitError(f"{base_env}: missing; this kit sits on the base kit: install the base kit first (its calls, "
                       "then this kit's, on the same warm machine)")
    want = (manifest.get("base") or {}).get("archive_sha256")
    staged = base_env.parent / MANIFEST
    if want and staged.is_file():
        have = load_manifest(staged)["archive"]["sha256"]
        if have != want:
            raise KitError(f"{staged}: the installed base kit ({have[:12]}...) is not the one this kit was built on "
                           f"({want[:12]}...); rebuild this kit after the base kit (build.py --profile verl)")


def cmd_stage(args) -> None:
    """Copy the carried parts (and the manifest next to them) into the staging folder and verify each there, so a
    part damaged in transit is caught by the command that carried it."""
    srcs = [Path(p) for p in args.parts]
    manifest_src = Path(args.manifest) if args.manifest else srcs[0].parent / MANIFEST
    manifest = load_manifest(manifest_src)
    by_name = {p["name"]: p for p in manifest["parts"]}
    for src in srcs:
        if src.name not in by_name:
            raise KitError(f"{src.name}: not a part of this manifest ({len(by_name)} parts)")
        if not src.is_file():
            raise KitError(f"{src}: missing (carry it with the command)")
    staging = Path(args.staging)
    staging.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(manifest_src, staging / MANIFEST)
    for src in srcs:
        shutil.copyfile(src, staging / src.name)
        verify_part(staging, by_name[src.name])
    have = sum((staging / p).is_file() for p in by_name)
    print(f"staged {', '.join(s.name for s in srcs)} (sha256 ok); {have}/{len(by_name)} parts in {staging}")


def cmd_install(args) -> None:
    staging = Path(args.staging)
    manifest = load_manifest(Path(args.manifest) if args.manifest else staging / MANIFEST)
    target = Path(args.target or staging / "site-packages").absolute()
    check_target_path(target)  # before the slow steps
    base_env = manifest.get("base_env")
    if base_env:
        check_base(manifest, Path(base_env))
    archive = reassemble(staging, manifest)
    unpacked = staging / "kit"
    shutil.rmtree(unpacked, ignore_errors=True)
    extract(archive, unpacked)
    archive.unlink()  # the parts remain; the archive is only an intermediate
    names = [w["file"] for w in manifest["wheels"]]
    method = install_wheels(unpacked / WHEELS_DIR, names, target, args.method)
    shutil.rmtree(unpacked, ignore_errors=True)
    line = env_line(target, str(Path(args.repo).absolute()) if args.repo else "$PWD", manifest.get("env_vars"))
    (staging / "env.sh").write_text(env_script(line, base_env))
    print(f"installed {len(names)} wheels into {target} ({method})")
    print(line)
    print(f"(also written to {staging / 'env.sh'}{', after source ' + base_env if base_env else ''}: "
          f"`source {staging / 'env.sh'}` in later commands)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    stage = sub.add_parser("stage", help="copy carried parts into the staging folder and verify them")
    stage.add_argument("parts", nargs="+", help="the carried parts, e.g. gpu_kit_out/part-00")
    stage.add_argument("--manifest", help="default: manifest.json next to the first part")
    stage.add_argument("--staging", default=DEFAULT_STAGING)
    inst = sub.add_parser("install", help="verify and join the staged parts, extract, install the wheels")
    inst.add_argument("--staging", default=DEFAULT_STAGING)
    inst.add_argument("--manifest", help="default: <staging>/manifest.json")
    inst.add_argument("--target", help="where the wheels go (default <staging>/site-packages); first on PYTHONPATH")
    inst.add_argument("--repo", help="the judge_rl checkout, second on PYTHONPATH (default: $PWD when sourced)")
    inst.add_argument("--method", choices=("auto", "pip", "unzip"), default="auto",
                      help="auto: pip when this Python has it, else unpack the wheels directly")
    args = parser.parse_args(argv)
    try:
        {"stage": cmd_stage, "install": cmd_install}[args.cmd](args)
    except KitError as e:
        print(f"gpu_kit: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
