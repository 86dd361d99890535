"""The package's layering: no import cycle between modules, no loop between folders, and every import in the
declared order (a package imports only packages at or below its level), function-level imports included (read with
ast; nothing is run)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "judge_rl"

# judge_rl's top-level packages and modules, bottom to top: each imports only what sits at or below its own level.
# Names on one line are one level (peers, which import each other only without a loop). `__init__` is
# judge_rl/__init__.py; `__main__` is judge_rl/__main__.py and every package's entry module (`python -m judge_rl.policy`).
ORDER = [
    "config registry",  # the bottom floor: the typed config (and where a model's weights are), the registries
    "models",  # architecture, loading and identity of the models a config names
    "aio stopping rundir kernel_cache shm",  # low-level utilities: an event loop in a thread, stop signals, run
    # directories, compiled kernels a killed process left half-written, shared memory killed processes left
    "__init__",
    "data",  # preference pairs, their loaders and generators (gold traces end with the strength verdict line)
    "prompts",  # judge prompts: render the data's items, parse a judge's output
    "rewards",  # scores of a parsed judgment
    "reports",  # console, JSON lines, metrics logging, results.json, judge metrics, IFEval statistics
    "report",  # judge_rl/report.py: the report of run directories
    "rollouts",  # generation engines: the model's own generate, vLLM in this process, the rollout samplers
    "servers",  # answer prompts behind one interface (hf, vllm, openai, scalar, the HTTP server and its client)
    "evaluation",  # benchmarks and the harness that asks a server and scores with a reward
    "updates",  # one optimisation step's batches, SFT, TRL runs
    "backends",  # train: the local loop and verl
    "recipes",  # one function per judge-training method, and the shared stages
    "policy",  # the policy job: a policy trained with a judge as its reward
    "curate",  # curation of judge-training data with a teacher
    "jobs",  # the main job, the evaluation job and the command-line shell
    "eval __main__ leftovers",  # entry points (leftovers: stop what an earlier verl launch of a run dir left)
]
LEVEL = {name: i for i, line in enumerate(ORDER) for name in line.split()}


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


def placed(module: str) -> str:
    """The name in ORDER of the level a module sits at: its top-level package or module, `__init__` for the package
    itself, `__main__` for an entry module."""
    parts = module.split(".")
    if parts[-1] == "__main__":
        return "__main__"
    return parts[1] if len(parts) > 1 else "__init__"


def unplaced(mods: dict[str, Path]) -> list[str]:
    return sorted({placed(m) for m in mods} - set(LEVEL))


def against_the_order(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a package from one above it, as "importer -> imported (why)" (a package not in ORDER is
    `unplaced`'s to report)."""
    return [f"{m} -> {v} ({placed(m)} imports {placed(v)}, which sits above it in ORDER)"
            for m in sorted(graph) for v in sorted(graph[m])
            if LEVEL.get(placed(v), -1) > LEVEL.get(placed(m), len(ORDER))]


def folder_loops(graph: dict[str, set[str]]) -> list[str]:
    """Loops between top-level packages (folders, entry modules aside), one import named for each step of a loop."""
    edges: dict[tuple[str, str], str] = {}
    for m in sorted(graph):
        for v in sorted(graph[m]):
            a, b = placed(m), placed(v)
            if a != b and "__main__" not in (a, b):
                edges.setdefault((a, b), f"{m} -> {v}")

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            u = todo.pop()
            for a, b in edges:
                if a == u and b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen

    folders = sorted({f for pair in edges for f in pair})
    reaches = {f: reach(f) for f in folders}
    loops, done = [], set()
    for f in folders:
        group = sorted(g for g in folders if g in reaches[f] and f in reaches[g]) if f in reaches[f] else []
        if group and f not in done:
            done.update(group)
            steps = "; ".join(edges[a, b] for a in group for b in group if (a, b) in edges)
            loops.append(f"{' <-> '.join(group)} ({steps})")
    return loops


def test_judge_rl_has_no_import_cycle_no_folder_loop_and_imports_in_the_declared_order():
    mods = modules()
    graph = import_graph(mods)
    assert "judge_rl.config.schema" in mods and graph["judge_rl.jobs.train"] >= {"judge_rl.recipes"}  # the walk sees
    assert not unplaced(mods), f"judge_rl/ names not placed in ORDER: {', '.join(unplaced(mods))}"
    assert not cycles(graph, mods), "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles(graph, mods))
    assert not against_the_order(graph), "imports against ORDER:\n" + "\n".join(against_the_order(graph))
    assert not folder_loops(graph), "loops between folders:\n" + "\n".join(folder_loops(graph))


def test_the_walk_finds_a_cycle_a_folder_loop_an_import_against_the_order_and_an_unplaced_package(tmp_path):
    pkg = tmp_path / "judge_rl"
    for d in ("config", "policy", "newpkg"):
        (pkg / d).mkdir(parents=True)
    for d in (pkg, pkg / "config", pkg / "policy", pkg / "newpkg"):
        (d / "__init__.py").write_text("")
    (pkg / "config" / "schema.py").write_text("def f():\n    from judge_rl.policy.job import run\n")
    (pkg / "policy" / "job.py").write_text("from judge_rl.policy import verl\n")
    (pkg / "policy" / "verl.py").write_text("def g():\n    from .job import run\n")
    (pkg / "config" / "__main__.py").write_text("from judge_rl.policy.job import run\n")  # an entry module: on top
    (pkg / "newpkg" / "x.py").write_text("from judge_rl.policy.job import run\n")
    (pkg / "aio.py").write_text("from judge_rl import stopping\n")  # peers in ORDER, in a loop
    (pkg / "stopping.py").write_text("def h():\n    import judge_rl.aio\n")
    mods = modules(pkg)
    graph = import_graph(mods)
    assert unplaced(mods) == ["newpkg"]
    assert cycles(graph, mods) == [["judge_rl.aio", "judge_rl.stopping", "judge_rl.aio"],
                                   ["judge_rl.policy.job", "judge_rl.policy.verl", "judge_rl.policy.job"]]
    assert folder_loops(graph) == ["aio <-> stopping (judge_rl.aio -> judge_rl.stopping; judge_rl.stopping -> judge_rl.aio)"]
    assert against_the_order(graph) == [
        "judge_rl.config.schema -> judge_rl.policy.job (config imports policy, which sits above it in ORDER)"]
