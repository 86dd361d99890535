"""`make test-fast` leaves out what tests/conftest.py marks heavy: every name it lists (ENGINE_TESTS, HEAVY_TESTS)
still names a test file and, where it names one, a test function of it, so a renamed test cannot slip back into the
fast lane (or out of the engine worker) without this failing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ENGINE_TESTS, HEAVY_TESTS, REPO_ROOT

TESTS = REPO_ROOT / "tests"


def functions_named_test(path: Path) -> set[str]:
    return {node.name for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")}


@pytest.mark.parametrize("entry", [*ENGINE_TESTS, *HEAVY_TESTS])
def test_each_listed_name_is_a_test_file_or_a_test_in_it(entry):
    file, _, prefix = entry.partition("::")
    path = TESTS / file
    assert path.is_file(), f"{entry}: no file tests/{file}"
    if prefix:
        assert any(name.startswith(prefix) for name in functions_named_test(path)), f"{entry}: no test of that name in {file}"


def test_the_makefile_runs_the_fast_lane_without_the_heavy_mark():
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert '-m "not heavy"' in makefile.split("test-fast:", 1)[1].split("\n\n", 1)[0]
