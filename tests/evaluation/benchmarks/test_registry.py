"""The benchmark registry finds its benchmarks itself: every conf/benchmark/*.yaml names a kind that resolves,
every module of judge_rl.evaluation.benchmarks that registers a benchmark is imported on the registry's first
lookup (there is no list of modules to edit), whatever was imported first, and a module added to a copy of
the package registers with nothing else touched. Nothing is written into the package."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from judge_rl.evaluation.benchmarks import BENCHMARKS, Benchmark, get_benchmark

from conftest import CONF_DIR, REPO_ROOT

PACKAGE = "judge_rl.evaluation.benchmarks"
PACKAGE_DIR = REPO_ROOT / "judge_rl" / "evaluation" / "benchmarks"
CONF_FILES = sorted((CONF_DIR / "benchmark").glob("*.yaml"))


def registered_in_source(package_dir: Path = PACKAGE_DIR) -> dict[str, str]:
    """kind -> module, read from the package's source: every `@register_benchmark("<kind>")` decorator."""
    found: dict[str, str] = {}
    for path in sorted(package_dir.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            for dec in getattr(node, "decorator_list", []):
                if isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == "register_benchmark":
                    found[dec.args[0].value] = f"{PACKAGE}.{path.stem}"
    return found


def fresh_python(code: str, pythonpath: Path = REPO_ROOT) -> dict:
    """Run `code` in a new interpreter (nothing imported yet) and return the JSON it prints last."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    done = subprocess.run([sys.executable, "-c", code], cwd=pythonpath, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_conf_group_and_the_source_are_not_empty():
    assert len(CONF_FILES) >= 12 and len(registered_in_source()) >= 9


@pytest.mark.parametrize("conf", CONF_FILES, ids=[p.stem for p in CONF_FILES])
def test_every_conf_benchmark_kind_resolves(conf):
    kind = yaml.safe_load(conf.read_text())["kind"]
    assert kind in BENCHMARKS
    benchmark = get_benchmark(kind)
    assert isinstance(benchmark, Benchmark) and benchmark.kind == kind


def test_every_registering_module_is_discovered():
    found = registered_in_source()
    assert BENCHMARKS.names() == sorted(found)
    for kind, module in found.items():
        assert BENCHMARKS.get(kind).__module__ == module
        assert module == f"{PACKAGE}.{kind}", f"one file per benchmark, named after its kind: {module} registers {kind!r}"


LOOKUP = """
import json, sys
PACKAGE = {package!r}
from judge_rl.evaluation.benchmarks import BENCHMARKS, get_benchmark
{first}
before = sorted(m for m in sys.modules if m.startswith(PACKAGE + "."))
{lookup}
print(json.dumps({{"before": before, "names": BENCHMARKS.names(), "file": sys.modules["judge_rl"].__file__}}))
"""


@pytest.mark.parametrize(
    "first, lookup",
    [
        ("", "get_benchmark('llmbar')"),
        ("", "assert 'rmbench' in BENCHMARKS"),
        ("", "BENCHMARKS.names()"),
        # a benchmark module imported before any lookup (judgelm imports pandalm and pairwise): no cycle, all found
        ("import judge_rl.evaluation.benchmarks.judgelm", "get_benchmark('preference')"),
        ("from judge_rl.evaluation.benchmarks.pairwise import PairBenchmark", "get_benchmark('judgelm')"),
        ("import judge_rl.evaluation.harness", "get_benchmark('rewardbench2')"),
    ],
)
def test_any_first_lookup_discovers_every_module_in_a_fresh_interpreter(first, lookup):
    out = fresh_python(LOOKUP.format(package=PACKAGE, first=first, lookup=lookup))
    if not first:
        assert out["before"] == []  # importing the package imports no benchmark: the first lookup does
    assert out["names"] == sorted(registered_in_source())


DEMO = '''"""A demo benchmark: the one new file adding a benchmark takes (with conf/benchmark/<name>.yaml)."""

from judge_rl.data.loaders import require_text
from judge_rl.data.pairs import PreferencePair
from judge_rl.evaluation.benchmarks import register_benchmark
from judge_rl.evaluation.benchmarks.pairwise import PairBenchmark


@register_benchmark("demo_votes")
class DemoVotesBenchmark(PairBenchmark):
    def build(self, src, number, record):
        return [PreferencePair(f"demo-{number}", src, require_text(record, "q"), require_text(record, "good"),
                               require_text(record, "bad"))]
'''


def test_a_new_module_in_a_copy_of_the_package_registers_with_nothing_else_touched(tmp_path):
    shutil.copytree(REPO_ROOT / "judge_rl", tmp_path / "judge_rl", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "judge_rl" / "evaluation" / "benchmarks" / "demo_votes.py").write_text(DEMO)
    rows = tmp_path / "votes.jsonl"
    rows.write_text(json.dumps({"q": "2+2?", "good": "4", "bad": "5"}) + "\n")
    code = f"""
import json, sys
from judge_rl.evaluation.benchmarks import BENCHMARKS, get_benchmark
from judge_rl.config import BenchmarkConfig
from judge_rl.prompts import get_prompt
spec = BenchmarkConfig(name="demo_votes", kind="demo_votes", path={str(rows)!r})
bench = get_benchmark("demo_votes")
units = bench.load(spec).units
tasks = bench.tasks(units, get_prompt("rewardbench_pairwise"), spec)
print(json.dumps({{"file": sys.modules["judge_rl"].__file__, "known": "demo_votes" in BENCHMARKS,
                  "names": BENCHMARKS.names(), "units": len(units), "tasks": len(tasks)}}))
"""
    out = fresh_python(code, pythonpath=tmp_path)
    assert out["file"].startswith(str(tmp_path))  # the copy, not the repository, was imported
    assert out["known"] and out["units"] == 1 and out["tasks"] == 2
    assert out["names"] == sorted([*registered_in_source(), "demo_votes"])
    assert not (PACKAGE_DIR / "demo_votes.py").exists()
