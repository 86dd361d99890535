"""Registry: a wrong key names the known ones; listed modules register their entries on the first lookup,
and a module that fails to import fails every lookup until it imports."""

from __future__ import annotations

import sys

import pytest

from judge_rl.registry import Registry

DEMO = "judge_rl_registry_demo"


def test_unknown_key_lists_the_known_ones():
    reg: Registry = Registry("thing")
    reg.register("a")(1)
    with pytest.raises(KeyError, match=r"unknown thing 'b'; known: a"):
        reg.get("b")
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("a")(2)


def test_listed_modules_register_on_the_first_lookup(tmp_path, monkeypatch):
    reg: Registry = Registry("thing", modules=(DEMO,))
    monkeypatch.setattr(sys.modules[__name__], "REG", reg, raising=False)
    (tmp_path / f"{DEMO}.py").write_text(f"import {__name__} as t\nt.REG.register('lazy')('value')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, DEMO, raising=False)
    assert DEMO not in sys.modules  # nothing imported when the registry is built
    assert reg.get("lazy") == "value" and DEMO in sys.modules
    assert reg.names() == ["lazy"] and "lazy" in reg


def test_a_module_that_fails_to_import_fails_every_lookup(tmp_path, monkeypatch):
    broken = DEMO + "_broken"
    (tmp_path / f"{broken}.py").write_text("raise ImportError('needs a GPU extra')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry = Registry("thing", modules=(broken,))
    for _ in range(2):  # not swallowed after the first try, which would leave "unknown thing" errors
        with pytest.raises(ImportError, match="needs a GPU extra"):
            reg.get("x")


FRESH_LOOKUP = """
import sys
from {base} import {registry} as reg
before = {{m for m in sys.modules if m.startswith("{package}.")}}
names = reg.names()
after = {{m for m in sys.modules if m.startswith("{package}.")}}
print(sorted(before), sorted(after), names, sep="\\n")
"""


@pytest.mark.parametrize("package, base, registry", [
    ("judge_rl.rewards", "judge_rl.rewards.base", "REWARDS"),
    ("judge_rl.prompts", "judge_rl.prompts.base", "PROMPTS"),
    ("judge_rl.evaluation.benchmarks", "judge_rl.evaluation.benchmarks", "BENCHMARKS"),
    ("judge_rl.policy.rewards", "judge_rl.policy.rewards", "POLICY_REWARDS"),
])  # fmt: skip
def test_a_registry_finds_every_module_of_its_package_without_a_list(package, base, registry):
    """Adding a reward, a prompt, a benchmark or a policy reward is adding its module (and its conf file): the
    registry's first lookup imports every module of the package (none named in a list), in a fresh process that
    imported only the registry's module."""
    import importlib
    import pkgutil
    import subprocess

    path = importlib.import_module(package).__path__
    modules = {f"{package}.{m.name}" for m in pkgutil.iter_modules(path) if not m.name.startswith("_")}
    done = subprocess.run([sys.executable, "-c", FRESH_LOOKUP.format(base=base, registry=registry, package=package)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    before, after, names = done.stdout.strip().splitlines()[-3:]
    assert set(eval(before)) <= {base, f"{package}.base"}  # the package lists none of its entry modules
    assert modules <= set(eval(after)), modules - set(eval(after))  # every module imported by the lookup
    assert len(eval(names)) >= len(modules) - 2  # each module registers at least one entry (base/pairwise share)
    if registry in ("BENCHMARKS", "POLICY_REWARDS"):  # one entry per module, named as its file
        stems = {m.rsplit(".", 1)[1] for m in modules} - {"base", "pairwise"}
        assert stems <= set(eval(names)), (stems, eval(names))
