"""Benchmarks: how to read each published file, what to ask the judge, and how its authors score it.

A benchmark (`BENCHMARKS`, registered by decorator under the `kind` a conf/benchmark/*.yaml names)
turns rows into *units* (a preference pair, or a prompt with several answers), units into *tasks* (one
judge request each: a pair in one order, one answer to rate, a k-way choice), and the judged tasks'
records into scores: the authors' official numbers plus the harness's own pairwise diagnostics
(accuracy per order, consistent accuracy, position consistency, A-preference, parse failures), overall
and per subset.

One module per benchmark holds its loader and its official scoring, reproduced from the authors' code
(each docstring names the repository and file; every remaining assumption is marked). Scores are
fractions in [0, 1] (the official scripts often print 100x, rounded to 2 decimals; we do not round).
What several benchmarks share (pairs judged in both orders, outcomes, the harness's diagnostics, macro
P/R/F1) is in `pairwise.py`.

Adding a benchmark is one new module here, `<kind>.py` with a `@register_benchmark("<kind>")` class, and
its conf/benchmark/<name>.yaml: every module of this package is listed when the package is imported and
imported on the registry's first lookup (`get_benchmark`, `BENCHMARKS.get` / `names` / `in`), so there is
no list of benchmarks to edit. The modules import this one, never the reverse, so no order of imports
can make a cycle.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

from judge_rl.registry import Registry, package_modules


@dataclass(frozen=True)
class Task:
    """One judge request: `item` rendered and parsed by `prompt`; `fields` are kept in its record."""

    item: Any
    prompt: Any
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def item_id(self) -> str:
        return self.item.item_id


@dataclass(frozen=True)
class Loaded:
    units: list[Any]
    skipped: list[str]


class Benchmark(ABC):
    """One benchmark format and its official scoring. Instances are stateless; `spec` is the
    `BenchmarkConfig` of conf/benchmark/<name>.yaml."""

    kind: ClassVar[str]

    @abstractmethod
    def load(self, spec) -> Loaded:
        """Read the rows of `spec.path` (a local file or a hub dataset) into units."""

    @abstractmethod
    def tasks(self, units: Sequence[Any], prompt, spec) -> list[Task]:
        """The judge requests for `units` with the judge's `prompt`."""

    @abstractmethod
    def score(self, units: Sequence[Any], records: Sequence[dict[str, Any]], spec) -> dict[str, Any]:
        """{"official": the authors' numbers, "harness": {"overall": ..., "by_subset": ...}}."""


BENCHMARKS: Registry[type[Benchmark]] = Registry("benchmark", modules=package_modules(__name__, __path__))


def register_benchmark(kind: str):
    def decorator(cls):
        cls.kind = kind
        BENCHMARKS.register(kind)(cls)
        return cls

    return decorator


def get_benchmark(kind: str) -> Benchmark:
    return BENCHMARKS.get(kind)()


__all__ = ["BENCHMARKS", "Benchmark", "Loaded", "Task", "get_benchmark", "register_benchmark"]
