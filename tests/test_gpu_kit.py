"""scripts/gpu_kit: the kit's parts round-trip (split, stage, verify, join, extract, install), a damaged or missing
part fails with one line naming it, the wheel selection leaves the machine's torch stack out, and the manifest's
commands carry every part once within the payload limit; compare_verdicts.py's agreement and missing items. CPU
only, no network: wheels are made here."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
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


def make_kit(tmp_path: Path, part_bytes: int, wheels: list[Path]) -> tuple[Path, dict]:
    """Pack `wheels` as build.py does, split them into `part_bytes` parts in out/ and write the manifest."""
    out = tmp_path / "out"
    out.mkdir()
    archive = tmp_path / install.ARCHIVE
    build.pack(wheels, archive)
    parts = install.split_file(archive, out, part_bytes)
    info = {"name": install.ARCHIVE, "size": archive.stat().st_size, "sha256": install.sha256_file(archive)}
    wheel_list = [{"file": w.name, "size": w.stat().st_size, "sha256": install.sha256_file(w)} for w in wheels]
    manifest = build.write_manifest(out, parts, info, wheel_list, ["torch-2.11.0-cp312-cp312-x.whl"], {},
                                    budget=10 * part_bytes, staging=str(tmp_path / "staging"))
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


def test_extract_refuses_paths_outside_the_destination(tmp_path):
    archive = tmp_path / "evil.tar"
    (tmp_path / "f").write_text("x")
    with tarfile.open(archive, "w") as tar:
        tar.add(tmp_path / "f", arcname="../escaped")
    with pytest.raises(Exception):
        install.extract(archive, tmp_path / "dest")
    assert not (tmp_path / "escaped").exists()


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
