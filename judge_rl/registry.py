"""One registry per concept (datasets, prompts, rewards, backends, servers, ...), filled by decorator.

Config files name an entry by key; a wrong key fails with the list of known keys
instead of a bare KeyError deep inside training.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Callable, Generic, Iterable, Sequence, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """`modules`: the modules whose import registers the entries, imported on the first lookup (so that a
    registry of heavy entries, such as training backends, costs nothing until one is asked for)."""

    def __init__(self, kind: str, modules: Sequence[str] = ()):
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._modules = tuple(modules)

    def _load(self) -> None:
        while self._modules:  # a module that fails to import stays listed: the next lookup raises its error again
            importlib.import_module(self._modules[0])
            self._modules = self._modules[1:]

    def register(self, name: str) -> Callable[[T], T]:
        def decorator(obj: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = obj
            return obj

        return decorator

    def get(self, name: str) -> T:
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(sorted(self._entries))}") from None

    def names(self) -> list[str]:
        self._load()
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._entries


def package_modules(package: str, path: Iterable[str], skip: Sequence[str] = ()) -> list[str]:
    """Every module of a package (names only: nothing is imported), but `skip` and those starting with "_": the
    `modules` of a registry whose entries are one module each, so adding an entry is adding a module."""
    return sorted(f"{package}.{m.name}" for m in pkgutil.iter_modules(list(path))
                  if not m.name.startswith("_") and m.name not in skip)  # fmt: skip
