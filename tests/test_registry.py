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
