"""scripts/gpu_kit: the kit's parts round-trip (split, stage, verify, join, extract, install), a damaged or missing
part fails with one line naming it, the wheel selection leaves the machine's torch stack out, and the manifest's
commands carry every part once within the payload limit; compare_verdicts.py's agreement and missing items. CPU
only, no network: wheels are made here."""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import REPO_ROOT

KIT = REPO_ROOT / "scripts" / "gpu_kit"


def load(name: str):
    """Import scripts/gpu_kit/<name>.py (scripts/ is not a package)."""
    sys.path.insert(0, str(KIT))  # build.py imports install.py by name
    try:
        spec = importlib.util.spec_from_file_location(f"gpu_kit_{name}", KIT / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(KIT))


install = load("install")
build = load("build")


def make_wheel(dest: Path, name: str, version: str = "1.0", body: str = "VALUE = 42\n") -> Path:
    """A minimal pure-Python wheel holding module `name` (enough for pip and for the unzip fallback)."""
    path = dest / f"{name}-{version}-py3-none-any.whl"
    dist = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": body,
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{f},,\n" for f in files) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for f, text in {**files, f"{dist}/RECORD": record}.items():
            z.writestr(f, text)
    return path


def make_kit(tmp_path: Path, part_bytes: int, wheels: list[Path], target=None, name: str = "out") -> tuple[Path, dict]:
    """Pack `wheels` as build.py does, split them into `part_bytes` parts in <name>/ and write the manifest (for
    `target`, a build.Target; default: the base kit's, staged in tmp_path/staging)."""
    out = tmp_path / name
    out.mkdir()
    archive = tmp_path / install.ARCHIVE
    build.pack(wheels, archive)
    parts = install.split_file(archive, out, part_bytes)
    info = {"name": install.ARCHIVE, "size": archive.stat().st_size, "sha256": install.sha256_file(archive)}
    wheel_list = [{"file": w.name, "size": w.stat().st_size, "sha256": install.sha256_file(w)} for w in wheels]
    manifest = build.write_manifest(out, parts, info, wheel_list, ["torch-2.11.0-cp312-cp312-x.whl"], {},
                                    budget=10 * part_bytes, target=target or build.Target(str(tmp_path / "staging")))
    return out, manifest


def copy_parts(out: Path, manifest: dict, staging: Path) -> Path:
    """Every part of the kit in out/ copied into a new `staging` folder, as the run calls leave them there."""
    staging.mkdir()
    for p in manifest["parts"]:
        (staging / p["name"]).write_bytes((out / p["name"]).read_bytes())
    return staging


def run_install(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(KIT / "install.py"), *args], capture_output=True, text=True)


def test_split_and_join_round_trip(tmp_path):
    data = os.urandom(10_000)
    src = tmp_path / "blob"
    src.write_bytes(data)
    parts = install.split_file(src, tmp_path / "parts", 3_000)
    assert [p["name"] for p in parts] == ["part-00", "part-01", "part-02", "part-03"]
    assert [p["size"] for p in parts] == [3_000, 3_000, 3_000, 1_000]
    assert all(p["sha256"] == install.sha256_file(tmp_path / "parts" / p["name"]) for p in parts)
    digest = install.join_parts(tmp_path / "parts", parts, tmp_path / "joined")
    assert (tmp_path / "joined").read_bytes() == data
    assert digest == hashlib.sha256(data).hexdigest()


def test_split_exact_multiple_leaves_no_empty_part(tmp_path):
    (tmp_path / "blob").write_bytes(b"x" * 6_000)
    parts = install.split_file(tmp_path / "blob", tmp_path / "parts", 3_000)
    assert [p["size"] for p in parts] == [3_000, 3_000]
    assert sorted(f.name for f in (tmp_path / "parts").iterdir()) == ["part-00", "part-01"]


def test_stage_and_install_round_trip(tmp_path):
    """Files through the whole path: pack, split small, stage part by part, join, extract, install with pip."""
    wheels_src = tmp_path / "src"
    wheels_src.mkdir()
    wheels = [make_wheel(wheels_src, "kitmod_a", body="VALUE = 'a'\n" + "#" * 5_000 + "\n"),
              make_wheel(wheels_src, "kitmod_b", body="VALUE = 'b'\n")]
    out, manifest = make_kit(tmp_path, 1_500, wheels)
    assert len(manifest["parts"]) > 2 and all(p["size"] <= 1_500 for p in manifest["parts"])
    staging = tmp_path / "staging"
    for p in manifest["parts"]:
        result = run_install("stage", str(out / p["name"]), "--staging", str(staging))
        assert result.returncode == 0, result.stderr
    target = tmp_path / "site-packages"
    result = run_install("install", "--staging", str(staging), "--target", str(target), "--method", "pip")
    assert result.returncode == 0, result.stderr
    assert f"export PYTHONPATH={target}:$PWD" in result.stdout
    assert (staging / "env.sh").read_text().startswith(f"export PYTHONPATH={target}:")
    check = subprocess.run([sys.executable, "-c", "import kitmod_a, kitmod_b, importlib.metadata as m; "
                            "print(kitmod_a.VALUE, kitmod_b.VALUE, m.version('kitmod_a'))"],
                           env={**os.environ, "PYTHONPATH": str(target)}, capture_output=True, text=True)
    assert check.stdout.split() == ["a", "b", "1.0"], check.stderr
    # bytecode written at install, so no process of a job compiles what it imports
    assert list((target / "kitmod_a" / "__pycache__").glob("__init__.*.pyc"))


def test_unzip_fallback_installs_module_and_metadata(tmp_path):
    wheel = make_wheel(tmp_path, "kitmod_c")
    target = tmp_path / "site-packages"
    method = install.install_wheels(tmp_path, [wheel.name], target, method="unzip")
    assert method == "unzip"
    assert (target / "kitmod_c" / "__init__.py").read_text() == "VALUE = 42\n"
    assert (target / "kitmod_c-1.0.dist-info" / "METADATA").exists()


def test_archive_matches_the_wheels(tmp_path):
    wheels = [make_wheel(tmp_path, "kitmod_d")]
    archive = tmp_path / "kit.tar"
    build.pack(wheels, archive)
    install.extract(archive, tmp_path / "x")
    assert (tmp_path / "x" / install.WHEELS_DIR / wheels[0].name).read_bytes() == wheels[0].read_bytes()


def test_corrupted_part_fails_naming_it(tmp_path):
    out, manifest = make_kit(tmp_path, 800, [make_wheel(tmp_path, "kitmod_e", body="#" * 3_000 + "\n")])
    staging = copy_parts(out, manifest, tmp_path / "staging")
    (staging / install.MANIFEST).write_text((out / install.MANIFEST).read_text())
    damaged = staging / "part-01"
    data = bytearray(damaged.read_bytes())
    data[10] ^= 0xFF
    damaged.write_bytes(bytes(data))
    result = run_install("install", "--staging", str(staging), "--target", str(tmp_path / "site-packages"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("gpu_kit: part-01: sha256")
    assert not (tmp_path / "site-packages").exists()


def test_truncated_and_missing_parts_fail_naming_them(tmp_path):
    out, manifest = make_kit(tmp_path, 800, [make_wheel(tmp_path, "kitmod_f", body="#" * 3_000 + "\n")])
    staging = copy_parts(out, manifest, tmp_path / "staging")
    (staging / "part-00").write_bytes((out / "part-00").read_bytes()[:-1])
    with pytest.raises(install.KitError, match=r"^part-00: size"):
        install.verify_parts(staging, manifest["parts"])
    (staging / "part-02").unlink()
    result = run_install("install", "--staging", str(staging), "--manifest", str(out / install.MANIFEST),
                         "--target", str(tmp_path / "site-packages"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("gpu_kit: part-02: missing")


def test_stage_rejects_a_damaged_part_at_once(tmp_path):
    out, _ = make_kit(tmp_path, 800, [make_wheel(tmp_path, "kitmod_g", body="#" * 3_000 + "\n")])
    (out / "part-01").write_bytes(b"garbage")
    result = run_install("stage", str(out / "part-01"), "--staging", str(tmp_path / "staging"))
    assert result.returncode == 1 and result.stderr.startswith("gpu_kit: part-01: size")


def test_joined_parts_from_another_build_fail_the_archive_check(tmp_path):
    out, manifest = make_kit(tmp_path, 800, [make_wheel(tmp_path, "kitmod_h", body="#" * 3_000 + "\n")])
    manifest["archive"]["sha256"] = "0" * 64
    with pytest.raises(install.KitError, match=r"^gpu_kit\.tar: sha256"):
        install.reassemble(out, manifest)


def test_target_outside_a_site_packages_path_is_refused(tmp_path):
    """dill pickles modules by value outside site-packages paths, which breaks datasets (install.py docstring)."""
    with pytest.raises(install.KitError, match="site-packages"):
        install.install_wheels(tmp_path, [], tmp_path / "site")


def test_select_wheels_leaves_out_the_torch_stack():
    files = ["torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl",
             "triton-3.6.0-cp312-cp312-manylinux_2_27_x86_64.whl",
             "nvidia_cublas-13.1.0.3-py3-none-manylinux_2_27_x86_64.whl",
             "nvidia_nccl_cu13-2.28.9-py3-none-manylinux_2_18_x86_64.whl",
             "cuda_bindings-13.5.0-cp312-cp312-manylinux_2_28_x86_64.whl",
             "nvtx-0.2.17-cp312-cp312-manylinux2014_x86_64.whl",
             "torchdata-0.11.0-py3-none-any.whl",
             "transformers-5.10.4-py3-none-any.whl",
             "hydra_core-1.3.8-py3-none-any.whl"]
    kept, dropped = build.select_wheels(files)
    assert [build.wheel_name(f) for f in kept] == ["hydra-core", "nvtx", "torchdata", "transformers"]
    assert {build.wheel_name(f) for f in dropped} == {"torch", "triton", "nvidia-cublas", "nvidia-nccl-cu13",
                                                       "cuda-bindings"}
    kept, _ = build.select_wheels(files, exclude=())
    assert len(kept) == len(files)


def test_select_wheels_rejects_sdists_and_duplicates():
    with pytest.raises(ValueError, match=r"^langdetect-1\.0\.9\.tar\.gz: not a wheel"):
        build.select_wheels(["langdetect-1.0.9.tar.gz"])
    with pytest.raises(ValueError, match="two wheels of rich"):
        build.select_wheels(["rich-15.0.0-py3-none-any.whl", "rich-14.0.0-py3-none-any.whl"])


def test_kit_requirements_follow_the_project_pins():
    import tomllib

    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    resolved, no_deps = build.kit_requirements(deps)
    names = {build.requirement_name(s) for s in resolved}
    assert "torch" not in names and "wandb" not in names and "verl" not in names
    assert {"transformers", "trl", "hydra-core", "datasets", "gguf", "langdetect", "ray", "tensordict"} <= names
    transformers = next(s for s in resolved if build.requirement_name(s) == "transformers")
    assert "<5.11" in transformers  # the machine's 5.17 is outside the pin: the kit brings its own
    verl = next(s for s in no_deps if build.requirement_name(s) == "verl")
    assert "[" not in verl and ">=0.9" in verl
    assert build.MODEL_PACKAGE in no_deps
    resolved_w, _ = build.kit_requirements(deps, with_wandb=True)
    assert "wandb" in {build.requirement_name(s) for s in resolved_w}


def test_manifest_commands_carry_every_part_once_within_the_payload(tmp_path):
    wheels = [make_wheel(tmp_path, "kitmod_i", body="#" * 9_000 + "\n")]
    out, manifest = make_kit(tmp_path, 1_000, wheels)
    on_disk = sorted(p.name for p in out.glob("part-*"))
    assert [p["name"] for p in manifest["parts"]] == on_disk
    assert json.loads((out / install.MANIFEST).read_text())["parts"] == manifest["parts"]
    carried = [c for cmd in manifest["commands"] for c in cmd["carry"] if "/part-" in c]
    assert sorted(Path(c).name for c in carried) == on_disk  # each part exactly once
    sizes = {p["name"]: p["size"] for p in manifest["parts"]}
    for cmd in manifest["commands"]:
        parts = [Path(c).name for c in cmd["carry"] if "/part-" in c]
        assert sum(sizes[p] for p in parts) <= 10 * 1_000 and len(cmd["carry"]) <= build.MAX_CARRY
        assert any(c.endswith(install.MANIFEST) for c in cmd["carry"])
    assert "install.py install" in manifest["commands"][-1]["command"]
    assert all("install.py install" not in c["command"] for c in manifest["commands"][:-1])


def test_group_parts_packs_a_small_last_part_with_the_previous_one():
    parts = [{"name": f"part-0{i}", "size": s} for i, s in enumerate([48, 48, 2])]
    assert [[p["name"] for p in g] for g in build.group_parts(parts, budget=55)] == [
        ["part-00"], ["part-01", "part-02"]]
    with pytest.raises(ValueError, match="part-00"):
        build.group_parts(parts, budget=40)


# -- the verl profile (build.py --profile verl): selection, slimming, commands, env.sh --------------------------------
def resolved(*specs: str) -> list[dict]:
    """Resolution items as build.resolve returns them, from `name==version` specs."""
    return [{"name": n, "version": v, "file": f"{n.replace('-', '_')}-{v}-py3-none-any.whl"}
            for n, v in (spec.split("==") for spec in specs)]


def test_select_profile_sorts_base_machine_omitted_and_carried():
    items = resolved("vllm==0.24.0", "transformers==5.10.4", "torch==2.11.0", "nvidia-cublas==13.1.0.3",
                     "flashinfer-cubin==0.6.12", "nvidia-cutlass-dsl==4.5.2", "openai==3.57.0", "Hydra_Core==1.3.8")
    chosen = build.select_profile(items, {"transformers": "5.10.4", "hydra-core": "1.3.8"}, ["torch", "nvidia-cublas"],
                                  {"flashinfer-cubin": "not needed", "nvidia-cutlass-dsl": "FA4 only", "xgrammar": "x"})
    assert [i["name"] for i in chosen["carried"]] == ["vllm", "openai"]
    assert chosen["from_base"] == ["hydra-core", "transformers"]  # normalized names
    reasons = {o["name"]: o["reason"] for o in chosen["omitted"]}
    assert reasons["flashinfer-cubin"] == "not needed" and reasons["nvidia-cutlass-dsl"] == "FA4 only"
    assert reasons["torch"].startswith("left to the GPU machine") and reasons["nvidia-cublas"] == reasons["torch"]
    assert all(o["version"] and o["file"] for o in chosen["omitted"])
    assert chosen["stale"] == ["xgrammar"]  # an omission the resolution no longer has


def test_select_profile_refuses_another_version_of_a_base_kit_package():
    with pytest.raises(ValueError, match=r"^transformers: resolved 5\.9\.0, the base kit carries 5\.10\.4"):
        build.select_profile(resolved("transformers==5.9.0"), {"transformers": "5.10.4"}, [], {})


def test_base_kit_reads_pins_and_machine_names_from_the_manifest():
    manifest = {"wheels": [{"file": "hydra_core-1.3.8-py3-none-any.whl"},
                           {"file": "tzdata-2026.6-py2.py3-none-any.whl"}],
                "excluded_machine_provided": ["torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                                              "nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.whl"]}
    assert build.base_kit(manifest) == ({"hydra-core": "1.3.8", "tzdata": "2026.6"}, ["nvidia-cuda-runtime", "torch"])


def test_slim_wheel_cuts_members_and_their_record_lines(tmp_path):
    wheel = make_wheel(tmp_path, "kitmod_s")
    with zipfile.ZipFile(wheel, "a") as z:  # extra members, listed in RECORD as a real wheel lists them
        for name in ("kitmod_s/_big_C.abi3.so", "kitmod_s/lib/libx.a", "kitmod_s/lib/cmake/x.cmake"):
            z.writestr(name, "#" * 1_000)
        record = z.read("kitmod_s-1.0.dist-info/RECORD").decode()
    rewritten = record + "kitmod_s/_big_C.abi3.so,sha256=x,1000\nkitmod_s/lib/libx.a,sha256=y,1000\n" \
                         "kitmod_s/lib/cmake/x.cmake,sha256=z,1000\n"
    src = tmp_path / "src" / wheel.name
    src.parent.mkdir()
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(src, "w") as zout:
        for info in zin.infolist():
            if not info.filename.endswith("RECORD"):
                zout.writestr(info, zin.read(info))
        zout.writestr("kitmod_s-1.0.dist-info/RECORD", rewritten)
    slim, cut = build.slim_wheel(src, tmp_path / "slim", (("kitmod_s/_big_C.abi3.so", "kernels"),
                                                         ("kitmod_s/lib/*", "static library")))
    assert slim.name == src.name and slim.parent == tmp_path / "slim"
    assert [(c["member"], c["files"], c["bytes"], c["reason"]) for c in cut] == [
        ("kitmod_s/_big_C.abi3.so", 1, 1_000, "kernels"), ("kitmod_s/lib/*", 2, 2_000, "static library")]
    with zipfile.ZipFile(slim) as z:
        names = z.namelist()
        record = z.read("kitmod_s-1.0.dist-info/RECORD").decode()
    assert "kitmod_s/__init__.py" in names and not any("_big_C" in n or "/lib/" in n for n in names)
    assert "kitmod_s/__init__.py" in record and "_big_C" not in record and "/lib/" not in record
    target = tmp_path / "site-packages"
    install.install_wheels(slim.parent, [slim.name], target, method="pip")  # pip takes the slimmed wheel
    assert (target / "kitmod_s" / "__init__.py").read_text() == "VALUE = 42\n"
    with pytest.raises(RuntimeError, match=r"kitmod_s/gone\.so match no member"):
        build.slim_wheel(src, tmp_path / "slim2", (("kitmod_s/gone.so", "absent"),))
    assert not (tmp_path / "slim2" / src.name).exists()


def test_verl_tables_keep_what_a_dense_model_on_hopper_imports():
    import tomllib

    keep = ["vllm/_C_stable_libtorch.abi3.so", "vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so",
            "vllm/vllm_flash_attn/flash_attn_interface.py", "vllm/cumem_allocator.abi3.so",
            "xgrammar/libxgrammar_bindings.so", "vllm/third_party/__init__.py"]
    rules = [glob for members in build.VERL_SLIM.values() for glob, _ in members]
    assert not [m for m in keep if any(fnmatch.fnmatchcase(m, g) for g in rules)]
    assert fnmatch.fnmatchcase("vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so", rules[0])
    assert all(reason for members in build.VERL_SLIM.values() for _, reason in members)
    assert all(build.VERL_OMIT.values())
    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    base_names = {build.requirement_name(s) for s in build.kit_requirements(deps)[0]}
    assert not base_names & set(build.VERL_OMIT)  # the base kit's packages are never omitted here
    # vLLM imports these at start-up (class annotations in vllm/v1/structured_output/): never omitted
    assert not {"xgrammar", "llguidance", "vllm", "openai-harmony"} & set(build.VERL_OMIT)
    assert set(build.NEWER_GLIBC) == {"llguidance"}
    # FlashInfer is omitted, so its sampler must be off (vLLM would import it on the first sampler it builds)
    assert "flashinfer-python" in build.VERL_OMIT and build.VERL_ENV["VLLM_USE_FLASHINFER_SAMPLER"] == "0"
    assert build.normalize(build.requirement_name(build.VERL_REQUIREMENTS[1])) == "vllm"
    assert not any("transformers" in r for r in build.VERL_REQUIREMENTS)  # the base kit's transformers is kept


def test_verl_profile_commands_install_on_the_base_kit(tmp_path):
    base_env = tmp_path / "base" / "env.sh"
    staging = tmp_path / "verl_staging"
    target = build.Target(str(staging), build.VERL_SMOKE, build.VERL_ENV, str(base_env))
    out, manifest = make_kit(tmp_path, 800, [make_wheel(tmp_path, "kitmod_v", body="#" * 2_000 + "\n")], target,
                             name="verl")
    *stages, last = manifest["commands"]
    assert all(c["command"].endswith(f"--staging {staging}") and "install.py install" not in c["command"]
               for c in stages)
    assert f"install.py install --staging {staging} && source {staging}/env.sh && python3 -c" in last["command"]
    for module in ("vllm.entrypoints.openai.api_server", "verl.workers.rollout.vllm_rollout.vllm_async_server",
                   "verl.trainer.main_ppo"):
        assert module in last["command"]
    assert manifest["base_env"] == str(base_env) and manifest["env_vars"] == build.VERL_ENV
    for c in manifest["commands"]:
        assert c["carry"][-1].endswith("verl/manifest.json")
        subprocess.run(["bash", "-c", c["command"].split(" && ")[0].replace("python3", sys.executable)],
                       cwd=REPO_ROOT, check=True, capture_output=True)  # stage each part, as the calls do
    args = ("install", "--staging", str(staging), "--method", "unzip")
    result = run_install(*args)
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"gpu_kit: {base_env}: missing; this kit sits on the base kit")
    base_env.parent.mkdir()
    base_env.write_text("export PYTHONPATH=/base/site-packages:$PWD HF_HUB_OFFLINE=1\n")
    base_manifest = {"parts": [], "wheels": [], "archive": {"name": install.ARCHIVE, "sha256": "b" * 64}}
    (base_env.parent / install.MANIFEST).write_text(json.dumps(base_manifest))
    manifest["base"] = {"archive_sha256": "a" * 64}  # built on another base kit than the one installed
    (staging / install.MANIFEST).write_text(json.dumps(manifest))
    result = run_install(*args)
    assert result.returncode == 1 and "is not the one this kit was built on" in result.stderr
    manifest["base"] = {"archive_sha256": "b" * 64}
    (staging / install.MANIFEST).write_text(json.dumps(manifest))
    result = run_install(*args)
    assert result.returncode == 0, result.stderr
    env_sh = (staging / "env.sh").read_text().splitlines()
    assert env_sh[0] == f"source {base_env}"
    assert env_sh[1].startswith(f"export PYTHONPATH={staging / 'site-packages'}:$PWD")
    assert env_sh[1].endswith("VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_NO_USAGE_STATS=1 RAY_USAGE_STATS_ENABLED=0")
    path = subprocess.run(["bash", "-c", f"source {staging / 'env.sh'} && echo $PYTHONPATH"], cwd=tmp_path,
                          capture_output=True, text=True, check=True).stdout.strip().split(":")
    assert path[:3] == [str(staging / "site-packages"), str(tmp_path), "/base/site-packages"]


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_the_installer_checks_every_member_itself_on_any_python(tmp_path, kind):
    """A member that would land outside the target (`../../x`, an absolute name) or is a link is refused by the
    installer's own check, before tarfile's `data` filter (absent before Python 3.11.4/3.12) is reached: one
    `gpu_kit:` line naming the member, and nothing written anywhere."""
    archive = tmp_path / "evil.tar"
    (tmp_path / "f").write_text("x")
    with tarfile.open(archive, "w") as tar:
        if kind == "symlink":
            link = tarfile.TarInfo("wheels/link")
            link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(link)
        else:  # TarInfo by hand: tar.add would strip an absolute name's leading /
            info = tarfile.TarInfo({"dotdot": "../../escaped", "absolute": str(tmp_path / "abs")}[kind])
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    with tarfile.open(archive) as tar:
        with pytest.raises(install.KitError, match=r"member '.*(escaped|abs|link)'"):
            install.check_members(tar, tmp_path / "a" / "dest")
    # through the installer's command line, as the GPU call runs it
    wheels_src = tmp_path / "src"
    wheels_src.mkdir()
    out, manifest = make_kit(tmp_path, 10_000, [make_wheel(wheels_src, "kitmod_e")])
    data = archive.read_bytes()
    (out / "part-00").write_bytes(data)
    manifest["parts"] = [{"name": "part-00", "size": len(data), "sha256": install.sha256_file(out / "part-00")}]
    manifest["archive"].update(size=len(data), sha256=install.sha256_file(out / "part-00"))
    (out / install.MANIFEST).write_text(json.dumps(manifest))
    (tmp_path / "stage").mkdir()
    staging = copy_parts(out, manifest, tmp_path / "stage" / "deep")
    (staging / install.MANIFEST).write_text(json.dumps(manifest))
    result = run_install("install", "--staging", str(staging), "--target", str(tmp_path / "site-packages"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("gpu_kit: ") and "member" in result.stderr
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "stage" / "escaped").exists()
    assert not (tmp_path / "abs").exists() and not (tmp_path / "site-packages").exists()


@pytest.mark.parametrize("damage, message", [
    (lambda m: m["parts"][0].pop("size"), r"parts\[0\]\.size is missing, expected a int"),
    (lambda m: m["parts"][0].update(sha256=7), r"parts\[0\]\.sha256 is a int, expected a str"),
    (lambda m: m["archive"].pop("name"), r"archive\.name is missing"),
])
def test_a_manifest_missing_a_part_field_is_one_line(tmp_path, damage, message):
    wheels_src = tmp_path / "src"
    wheels_src.mkdir()
    out, manifest = make_kit(tmp_path, 10_000, [make_wheel(wheels_src, "kitmod_m")])
    staging = copy_parts(out, manifest, tmp_path / "staging")
    damage(manifest)
    (staging / install.MANIFEST).write_text(json.dumps(manifest))
    result = run_install("install", "--staging", str(staging), "--target", str(tmp_path / "site-packages"))
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert re.search(message, result.stderr), result.stderr


# -- compare_verdicts.py: the CPU-vs-GPU verdict agreement of first_numbers.sh --------------------------------------
compare_verdicts = load("compare_verdicts")


def write_judgments(path: Path, rows: list[tuple[str, str | None, str]]) -> Path:
    """Judgments JSONL as the harness writes them: item_id, winner (None: unparsed), chosen_position, correct."""
    with open(path, "w") as f:
        for item_id, winner, chosen in rows:
            f.write(json.dumps({"item_id": item_id, "winner": winner, "chosen_position": chosen,
                                "correct": winner == chosen}) + "\n")
    return path


def test_compare_verdicts_agreement_accuracy_and_missing_items(tmp_path):
    a = write_judgments(tmp_path / "cpu.jsonl", [("p0:a", "a", "a"), ("p0:b", "b", "b"), ("p1:a", "a", "b"),
                                                 ("p1:b", None, "a"), ("p2:a", "a", "a")])
    b = write_judgments(tmp_path / "gpu.jsonl", [("p0:a", "a", "a"), ("p0:b", "a", "b"), ("p1:a", "a", "b"),
                                                 ("p1:b", None, "a"), ("p3:a", "b", "a")])
    r = compare_verdicts.compare_files(a, b)
    assert (r["n_a"], r["n_b"], r["n_common"]) == (5, 5, 4)
    assert r["agreement"] == 3 / 4  # p0:b differs; both unparsed on p1:b counts as the same verdict
    assert (r["n_parsed_both"], r["agreement_parsed"]) == (3, 2 / 3)
    assert (r["accuracy_a"], r["accuracy_b"]) == (2 / 4, 1 / 4)
    assert (r["only_a"], r["only_b"], r["disagreements"]) == (["p2:a"], ["p3:a"], ["p0:b"])
    text = compare_verdicts.format_report(r, "cpu", "gpu")
    assert "missing: 1 item_id(s) only in cpu: p2:a" in text and "only in gpu: p3:a" in text


def test_compare_verdicts_last_record_wins_and_accuracy_without_correct(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text("\n".join(json.dumps(r) for r in [
        {"item_id": "x:a", "winner": "b", "chosen_position": "a"},  # superseded by the resumed run's record below
        {"item_id": "x:a", "winner": "a", "chosen_position": "a"},
        {"item_id": "x:b", "winner": "a", "chosen_position": "b"},
    ]) + "\n{\"item_id\": \"cut")  # a line cut short by a killed run is skipped
    b = write_judgments(tmp_path / "b.jsonl", [("x:a", "a", "a"), ("x:b", "b", "b")])
    r = compare_verdicts.compare_files(a, b)
    assert (r["n_a"], r["agreement"], r["accuracy_a"], r["accuracy_b"]) == (2, 0.5, 0.5, 1.0)


def test_compare_verdicts_cli(tmp_path):
    a = write_judgments(tmp_path / "a.jsonl", [("p0:a", "a", "a"), ("p0:b", "b", "b")])
    b = write_judgments(tmp_path / "b.jsonl", [("p0:a", "a", "a")])
    script = str(KIT / "compare_verdicts.py")
    done = subprocess.run([sys.executable, script, str(a), str(b), "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    assert (r["agreement"], r["only_a"]) == (1.0, ["p0:b"])
    done = subprocess.run([sys.executable, script, str(a), str(tmp_path / "none.jsonl")], capture_output=True, text=True)
    assert done.returncode == 2 and "no file" in done.stderr
    other = write_judgments(tmp_path / "other.jsonl", [("q0:a", "a", "a")])
    done = subprocess.run([sys.executable, script, str(a), str(other)], capture_output=True, text=True)
    assert done.returncode == 2 and "share no item_id" in done.stderr and "only in A: p0:a, p0:b" in done.stdout


# -- verl_numbers.sh (issue 35's GPU call), its step runner steps.sh, kill_resume.py and verl_numbers_report.py --------
def plan(**env: str) -> subprocess.CompletedProcess:
    """verl_numbers.sh with VERL_NUMBERS_PLAN=1: each step and the timeout it would get, nothing run."""
    return subprocess.run(["bash", str(KIT / "verl_numbers.sh")], capture_output=True, text=True, cwd=REPO_ROOT,
                          env={**os.environ, "VERL_NUMBERS_PLAN": "1", **env})


def planned(out: str) -> list[tuple[str, int | None, str]]:
    """(step, timeout or None when skipped, command) per `== step:` line of a plan."""
    rows = []
    for line in out.splitlines():
        if line.startswith("== "):
            name, rest = line[3:].split(": ", 1)
            if rest.startswith("skipped"):
                rows.append((name, None, ""))
            else:
                timeout, command = rest.split("timeout ", 1)[1].split("s: ", 1)
                rows.append((name, int(timeout), command))
    return rows


def test_gpu_scripts_parse():
    for script in ("verl_numbers.sh", "first_numbers.sh", "steps.sh"):
        done = subprocess.run(["bash", "-n", str(KIT / script)], capture_output=True, text=True)
        assert done.returncode == 0, f"{script}: {done.stderr}"


def test_verl_numbers_plan_runs_every_step_in_order_within_the_deadline():
    done = plan(VERL_NUMBERS_BUDGET_S="700")
    assert done.returncode == 0, done.stderr
    rows = planned(done.stdout)
    assert [r[0] for r in rows] == ["prep", "verl_main", "verl_resume", "policy_vllm", "bench_2x4x64", "bench_8x8x128",
                                    "main_dtype"]
    ran = [(name, t) for name, t, _ in rows if t is not None]
    assert ran[:2] == [("prep", 120), ("verl_main", 500)]  # each step's own cap while time is left
    assert sum(t for _, t in ran) + 15 <= 700 and all(t >= 30 for _, t in ran)  # the reserve; no step under 30 s
    assert rows[-1][1] is None  # worst case: the last steps fall past the deadline, a second call runs them
    commands = {name: command for name, _, command in rows}
    main = commands["verl_main"]
    for arg in ("-m judge_rl", "cluster=single_gpu", "trainer.total_steps=3", "trainer.prompts_per_step=8",
                "trainer.max_new_tokens=256", "logger=none", "stages=[rl,eval_rl]"):
        assert arg in main, arg
    resume = commands["verl_resume"]
    assert "kill_resume.py" in resume and "--after-step 2 --signal TERM" in resume and "trainer.save_every=1" in resume

    rows = planned(plan(VERL_NUMBERS_BUDGET_S="3000", VERL_NUMBERS_ONLY="policy_vllm,bench_2x4x64,main_dtype").stdout)
    assert [(r[0], r[1]) for r in rows] == [("prep", 120), ("policy_vllm", 240), ("bench_2x4x64", 180),
                                            ("main_dtype", 330)]
    commands = {name: command for name, _, command in rows}
    assert "-m judge_rl.policy cluster=local_gpu judge.engine=vllm" in commands["policy_vllm"]
    assert "--device cuda --rollout-engines hf vllm" in commands["bench_2x4x64"]
    if "--logprob-pass" in (REPO_ROOT / "scripts" / "bench_grpo_step.py").read_text():
        assert "--logprob-pass padded shared_prefix" in commands["bench_2x4x64"]
    # first_numbers.sh gets what is left of the step as its own deadline
    assert "FIRST_NUMBERS_ONLY=main_fp32,main_bf16 FIRST_NUMBERS_BUDGET_S=320" in commands["main_dtype"]

    # VERL_NUMBERS_ONLY's order is the run order; the benches' engines and main_dtype's runs are chosen
    rows = planned(plan(VERL_NUMBERS_BUDGET_S="3000", VERL_NUMBERS_ONLY="bench_2x4x64,policy_vllm,main_dtype",
                        VERL_NUMBERS_BENCH_ENGINES="hf", VERL_NUMBERS_MAIN_DTYPES="main_bf16").stdout)
    assert [r[0] for r in rows] == ["prep", "bench_2x4x64", "policy_vllm", "main_dtype"]
    commands = {name: command for name, _, command in rows}
    assert "--rollout-engines hf --" in commands["bench_2x4x64"]
    assert "FIRST_NUMBERS_ONLY=main_bf16 " in commands["main_dtype"]
    for env, say in ({"VERL_NUMBERS_BENCH_ENGINES": "hf sglang"}, "no engine sglang"), \
                    ({"VERL_NUMBERS_MAIN_DTYPES": "main_fp16"}, "no step main_fp16"):
        done = plan(**env)
        assert done.returncode == 2 and say in done.stderr, done.stderr


def test_verl_numbers_plan_on_cpu_and_a_step_that_does_not_exist():
    rows = planned(plan(VERL_NUMBERS_DEVICE="cpu", VERL_NUMBERS_TINY="1", VERL_NUMBERS_ONLY="verl_main",
                        VERL_NUMBERS_BUDGET_S="6000").stdout)
    assert [(r[0], r[1]) for r in rows] == [("prep", 960), ("verl_main", 4000)]  # x8 on a CPU
    rows = planned(plan(VERL_NUMBERS_DEVICE="cpu", VERL_NUMBERS_TINY="1", VERL_NUMBERS_ONLY="verl_main").stdout)
    assert [(r[0], r[1]) for r in rows] == [("prep", 960), ("verl_main", 3600 - 960 - 15)]  # the deadline cuts it
    assert "cluster=cpu_verl" in rows[1][2] and "cluster=single_gpu" not in rows[1][2]
    done = plan(VERL_NUMBERS_ONLY="verl_main,nope")
    assert done.returncode == 2 and "no step nope" in done.stderr


FAKE_JOB = """
import json, os, signal, sys, time
ckpt, run = sys.argv[1], sys.argv[2]
os.makedirs(ckpt, exist_ok=True)
latest = os.path.join(ckpt, "latest_checkpointed_iteration.txt")
start = int(open(latest).read()) if os.path.exists(latest) else 0
if start:
    # as verl logs it from a Ray worker, in Ray's colours
    print(f"\x1b[36m(TaskRunnerV1 pid=1)\x1b[0m Resuming from {ckpt}/global_step_{start}", flush=True)
def stop(*_):
    json.dump({"status": "interrupted"}, open(os.path.join(run, "status.json"), "w"))
    sys.exit(143)
signal.signal(signal.SIGTERM, stop)
end = int(os.environ.get("FAKE_STEPS", "3"))
for step in range(start + 1, end + 1):
    time.sleep(0.2)
    open(latest, "w").write(str(step))
    print(f"step {step}", flush=True)
    if step == 2 and not start:
        time.sleep(30)  # step 3 under way when the signal comes
json.dump({"status": "finished"}, open(os.path.join(run, "status.json"), "w"))
"""


def kill_resume(tmp_path: Path, *extra: str, **env: str) -> tuple[subprocess.CompletedProcess, dict]:
    job = tmp_path / "job.py"
    job.write_text(FAKE_JOB)
    ckpt = tmp_path / "run" / "checkpoints"
    (tmp_path / "run").mkdir()
    record = tmp_path / "resume.json"
    done = subprocess.run([sys.executable, str(KIT / "kill_resume.py"), "--checkpoints", str(ckpt), "--after-step", "2",
                           "--run-dir", str(tmp_path / "run"), "--record", str(record), *extra, "--",
                           sys.executable, str(job), str(ckpt), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "KILL_RESUME_CLEANUP_S": "0", **env})
    return done, json.loads(record.read_text())


def test_kill_resume_stops_after_the_checkpoint_and_records_the_resume(tmp_path):
    done, record = kill_resume(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (record["signal"], record["signalled_after_step"], record["first_rc"]) == ("TERM", 2, 143)
    assert (record["status_after_first"], record["checkpoint_after_first"]) == ("interrupted", 2)
    resumed = f"(TaskRunnerV1 pid=1) Resuming from {tmp_path / 'run' / 'checkpoints'}/global_step_2"
    assert record["resume_lines"] == [resumed]  # without the colour codes
    assert (record["second_rc"], record["status_after_second"]) == (0, "finished")
    assert "step 3" in done.stdout and f"resumed: {resumed}" in done.stdout


def test_kill_resume_fails_when_the_job_ends_before_the_checkpoint(tmp_path):
    done, record = kill_resume(tmp_path, "--signal", "KILL", FAKE_STEPS="1")
    assert done.returncode == 3 and "before global_step_2 was checkpointed" in done.stdout
    assert record["signalled_after_step"] is None and record["first_rc"] == 0 and "second_rc" not in record


verl_numbers_report = load("verl_numbers_report")


def test_verl_numbers_report_reads_each_steps_results(tmp_path):
    keep = tmp_path / "keep"
    for d in ("runs/verl_main", "runs/verl_resume", "runs/policy_vllm", "logs", "main_dtype"):
        (keep / d).mkdir(parents=True)
    (keep / "steps.tsv").write_text("verl_main\t0\t100.0\t190.5\t240\t\nverl_resume\t0\t191\t300\t240\t\n"
                                    "bench_2x4x64\tskipped\t300\t300\t0\tdeadline: 10s left\n")
    main = keep / "runs" / "verl_main"
    main.joinpath("metrics.jsonl").write_text("".join(json.dumps(
        {"step": k, "critic/score/mean": 0.1 * k, "timing_s/gen": 2.0 + k, "timing_s/old_log_prob": 0.5,
         "timing_s/ref": 0.4, "timing_s/update_actor": 1.5, "timing_s/update_weights": 0.3, "timing_s/step": 6.0})
        + "\n" for k in (1, 2, 3)))
    main.joinpath("results.json").write_text(json.dumps({"wall_s": 150.0, "evaluations": {"rl": {"held_out": {
        "metrics": {"accuracy": 0.9, "n_pairs": 24}}}}, "training": {}}))
    main.joinpath("status.json").write_text(json.dumps({"status": "finished"}))
    (keep / "resume.json").write_text(json.dumps({
        "signal": "TERM", "signalled_after_step": 2, "first_rc": 143, "first_s": 80.0,
        "status_after_first": "interrupted",
        "checkpoint_after_first": 2, "second_rc": 0, "second_s": 60.0, "status_after_second": "finished",
        "resume_lines": ["Resuming from /x/global_step_2"]}))
    keep.joinpath("runs/verl_resume/metrics.jsonl").write_text("".join(json.dumps({"step": k}) + "\n"
                                                                       for k in (1, 2, 3)))
    keep.joinpath("runs/policy_vllm/metrics.jsonl").write_text(json.dumps(
        {"step": 1, "timing_s/gen": 1.0, "timing_s/judge": 2.0, "timing_s/judge_wait": 0.75,
         "timing_s/update": 0.5}) + "\n")
    keep.joinpath("runs/policy_vllm/status.json").write_text(json.dumps({"status": "finished"}))
    keep.joinpath("main_dtype/summary.txt").write_text("== first numbers\nmain_bf16: job wall 99.0 s (finished)\n")
    doc = verl_numbers_report.report(tmp_path)
    text = doc["text"]
    assert [s["name"] for s in doc["steps"]] == ["verl_main", "verl_resume", "bench_2x4x64"]
    assert doc["verl_main"]["timing"][2] == {"step": 3, "score": 0.30000000000000004, "gen": 5.0, "old_log_prob": 0.5,
                                             "ref": 0.4, "update_actor": 1.5, "update_weights": 0.3, "total": 6.0}
    assert "update_weights" in text and "held-out rl: acc 0.900" in text
    assert "SIGTERM after global_step_2" in text and "resumed: Resuming from /x/global_step_2" in text
    assert "steps in metrics.jsonl [1, 2, 3]" in text
    assert "judge_wait" in text and "0.75" in text
    assert "main_bf16: job wall 99.0 s" in text and "deadline: 10s left" in text
    assert (keep / "summary.txt").read_text() == text and json.loads((keep / "summary.json").read_text())["verl_resume"]


# -- scale_numbers.sh (issue 53's GPU call) and scale_numbers_report.py ------------------------------------------------
def test_scale_numbers_plan_runs_its_steps_in_order_and_refuses_an_unknown_one():
    env = {**os.environ, "SCALE_NUMBERS_PLAN": "1"}
    done = subprocess.run(["bash", str(KIT / "scale_numbers.sh")], capture_output=True, text=True, cwd=REPO_ROOT, env=env)
    assert done.returncode == 0, done.stderr
    rows = planned(done.stdout)
    assert [r[0] for r in rows] == ["shapes", "bench_1.5b", "verl_1.5b", "local_1.5b", "verl_7b", "verl_resume"]
    assert rows[0][1] == 240 and "qwen2.5-7b-instruct" in rows[0][2]
    bench = rows[1][2]
    assert "--model qwen2.5-1.5b-instruct --weights random --dtype bfloat16" in bench and "--prompt-tokens 1024" in bench
    assert "--trl-engines hf vllm" in bench
    only = subprocess.run(["bash", str(KIT / "scale_numbers.sh")], capture_output=True, text=True, cwd=REPO_ROOT,
                          env={**env, "SCALE_NUMBERS_ONLY": "verl_7b,verl_resume"})
    assert [r[0] for r in planned(only.stdout)] == ["shapes", "verl_7b", "verl_resume"]
    assert "experiments=scale_7b_h200_verl" in planned(only.stdout)[1][2]
    bad = subprocess.run(["bash", str(KIT / "scale_numbers.sh")], capture_output=True, text=True, cwd=REPO_ROOT,
                         env={**env, "SCALE_NUMBERS_ONLY": "verl_70b"})
    assert bad.returncode == 2 and "no step verl_70b" in bad.stderr
    assert subprocess.run(["bash", "-n", str(KIT / "scale_numbers.sh")]).returncode == 0


scale_numbers_report = load("scale_numbers_report")


def test_scale_numbers_report_puts_each_plan_beside_its_measured_peaks(tmp_path):
    keep = tmp_path / "keep"
    for d in ("logs", "nvsmi", "runs/verl_1.5b"):
        (keep / d).mkdir(parents=True)
    (keep / "steps.tsv").write_text("verl_1.5b\t0\t10.0\t130.5\t540\t\nverl_7b\tskipped\t131\t131\t0\tdeadline: 5s left\n")
    (keep / "logs" / "verl_1.5b.log").write_text(
        "x\nmemory plan (verl, one cuda device): peak 91.6 GiB of 140.0 GiB (cluster.gpu_memory_gib) in the rollout "
        "phase; biggest: vLLM (gpu_memory_utilization 0.5) 70.00, optimizer state (AdamW m, v fp32) 11.50\n")
    (keep / "nvsmi" / "verl_1.5b.csv").write_text("2026/11/28 10:00:00.000, 1024, 143771, 0\n"
                                                  "2026/11/28 10:00:01.000, 83968, 143771, 97\n")
    (keep / "runs" / "verl_1.5b" / "cuda_peak.json").write_text(json.dumps({"cuda_initialized": False}))
    (keep / "runs" / "verl_1.5b" / "metrics.jsonl").write_text(
        json.dumps({"step": 1, "perf/mfu/actor": 0.21}) + "\n" + json.dumps({"step": 2, "perf/mfu/actor": 0.31,
                                                                             "timing_s/step": 12.5}) + "\n")
    doc = scale_numbers_report.report(tmp_path)
    run = doc["runs"]["verl_1.5b"]
    assert run["plan"] == {"backend": "verl", "device": "cuda", "peak_gib": 91.6, "capacity_gib": 140.0, "phase": "rollout"}
    assert run["nvidia_smi_peak_gib"] == 82.0 and run["plan_over_measured"] == round(91.6 / 82.0, 2)
    assert run["verl"] == {"perf/mfu/actor": 0.31, "timing_s/step": 12.5} and "allocator_peak_gib" not in run
    assert [s["step"] for s in doc["steps"]] == ["verl_1.5b", "verl_7b"] and doc["steps"][0]["seconds"] == 120.5
    assert "verl_1.5b: plan 91.6 GiB, nvidia-smi 82.0 GiB" in (keep / "summary.txt").read_text()


# -- learning_runs.sh (issue 56's GPU calls) ---------------------------------------------------------------------------
def test_learning_runs_plan_gives_each_part_its_call_and_refuses_an_unknown_step():
    env = {**os.environ, "LEARNING_RUNS_PLAN": "1"}
    run = lambda only: subprocess.run(["bash", str(KIT / "learning_runs.sh")], capture_output=True, text=True,  # noqa: E731
                                      cwd=REPO_ROOT, env={**env, "LEARNING_RUNS_ONLY": only})
    default = planned(run("default_long").stdout)
    assert [r[0] for r in default] == ["prep", "default_long"] and default[1][1] is not None
    assert "experiments=learn_default_h200" in default[1][2] and "cluster=local_gpu" in default[1][2]
    seeds = planned(run("real_pairs_s42").stdout)[1][2]
    assert "trainer.prompts_per_step=16" in seeds and "trainer.total_steps=100" in seeds and "seed=42" in seeds
    table = planned(run("table4_a").stdout)[1][2]
    assert "+sweeps=thinkj_table4" in table and "algorithm=dpo_critic,grpo" in table
    bad = run("table9")
    assert bad.returncode == 2 and "table9" in bad.stderr
    assert subprocess.run(["bash", "-n", str(KIT / "learning_runs.sh")]).returncode == 0
