"""The package's layering: no import cycle between modules and no import from the bottom floor (config, registry,
models) into a higher package, function-level imports included (read with ast; nothing is run)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "judge_rl"
BOTTOM = ("judge_rl.config", "judge_rl.registry", "judge_rl.models")
HIGHER = tuple(f"judge_rl.{p}" for p in ("data", "evaluation", "prompts", "recipes", "rewards", "servers", "policy",
                                           "backends", "jobs", "curate", "reports", "rollouts", "updates"))  # fmt: skip


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.with_suffix("").relative_to(root.parent).parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the judge_rl modules it imports anywhere in its body (a name imported from a package that is a
    module of it counts as that module)."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        pkg = m if path.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([base] if base else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            for n in names:
                r = resolve(n) if n.startswith("judge_rl") else None
                if r and r != m and not m.startswith(r + "."):
                    graph[m].add(r)
    return graph


def cycles(graph: dict[str, set[str]], mods: dict[str, Path]) -> list[list[str]]:
    """Cycles between modules (a package __init__ that hands on its children's names is not a link)."""
    leaf = {m for m, p in mods.items() if p.name != "__init__.py"}
    color: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(u: str) -> None:
        color[u] = 1
        stack.append(u)
        for v in sorted(graph[u] & leaf):
            if color.get(v) == 1:
                found.append(stack[stack.index(v):] + [v])
            elif not color.get(v):
                visit(v)
        stack.pop()
        color[u] = 2

    for m in sorted(leaf):
        if not color.get(m):
            visit(m)
    return found


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    low = [m for m in graph if m in BOTTOM[:2] or m.startswith(tuple(f"{b}." for b in BOTTOM)) or m == BOTTOM[2]]
    return sorted({(m, v) for m in low for v in graph[m] if v.startswith(HIGHER)})


def test_judge_rl_has_no_import_cycle_and_no_upward_import_from_its_bottom_floor():
    mods = modules()
    graph = import_graph(mods)
    assert "judge_rl.config.schema" in mods and graph["judge_rl.jobs.train"] >= {"judge_rl.recipes"}  # the walk sees
    assert cycles(graph, mods) == []
    assert upward(graph) == []


def test_the_walk_finds_a_cycle_and_an_upward_import_when_there_are_some(tmp_path):
    pkg = tmp_path / "judge_rl"
    (pkg / "config").mkdir(parents=True)
    (pkg / "policy").mkdir()
    for d in (pkg, pkg / "config", pkg / "policy"):
        (d / "__init__.py").write_text("")
    (pkg / "config" / "schema.py").write_text("def f():\n    from judge_rl.policy.job import run\n")
    (pkg / "policy" / "job.py").write_text("from judge_rl.policy import verl\n")
    (pkg / "policy" / "verl.py").write_text("def g():\n    from .job import run\n")
    mods = modules(pkg)
    graph = import_graph(mods)
    assert cycles(graph, mods) == [["judge_rl.policy.job", "judge_rl.policy.verl", "judge_rl.policy.job"]]
    assert upward(graph) == [("judge_rl.config.schema", "judge_rl.policy.job")]


@pytest.mark.parametrize("registry", ["judge_rl.policy.rewards:POLICY_REWARDS", "judge_rl.evaluation.benchmarks:BENCHMARKS"])
def test_every_module_of_a_one_file_per_entry_package_registers_itself(registry):
    # adding a policy reward or a benchmark is adding one module (and its conf file): the package lists its modules
    import importlib

    module, name = registry.split(":")
    reg = getattr(importlib.import_module(module), name)
    names = reg.names()
    files = sorted(p.stem for p in Path(importlib.import_module(module).__file__).parent.glob("*.py")
                   if not p.stem.startswith("_") and p.stem not in ("base", "pairwise"))  # fmt: skip
    assert set(files) <= set(names), (files, names)
