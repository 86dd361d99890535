"""The console report of a benchmark run: the authors' official numbers, then the harness's pairwise
diagnostics per subset (accuracy per order, consistent accuracy, position consistency, A-preference,
parse failures), then what could not be judged or read."""

from __future__ import annotations

import math
from typing import Any

from rich.table import Table

from judge_rl.reports import schema
from judge_rl.reports.schema import flatten_scalars
from judge_rl.reports.console import console

# the schema's diagnostic columns (judge_rl/reports/schema.py), with the count that each rests on
PAIRWISE_COLUMNS = [*schema.PAIRWISE_COLUMNS, ("n_pairs", "pairs")]
POINTWISE_COLUMNS = [*[c for c in schema.POINTWISE_COLUMNS if c[0] != "within_1_accuracy"], ("n_pairs", "pairs")]
CHOICE_COLUMNS = [*schema.CHOICE_COLUMNS, ("n_items", "items")]


def _fmt(x: Any, key: str = "") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if key.rsplit("/", 1)[-1].startswith("n_"):  # counts
        return str(int(x))
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def _columns(overall: dict[str, Any]) -> list[tuple[str, str]]:
    kind = schema.metrics_kind(overall)
    return {"pairwise": PAIRWISE_COLUMNS, "pointwise": POINTWISE_COLUMNS, "choice": CHOICE_COLUMNS}[kind]


def print_benchmark_summary(summary: dict[str, Any]) -> None:
    scoring = summary.get("scoring", {})
    if scoring.get("status") == "withheld":
        console.print(f"[red]{summary['benchmark']}: no score: {scoring['reason']}[/red]")
    elif scoring.get("status") == "answered_only":
        console.print(f"[yellow]{summary['benchmark']}: scores cover the {scoring['units_scored']} of {scoring['units']} "
                      f"units the server answered ({scoring['units_without_answer']} got no answer)[/yellow]")
    if summary["official"] is not None:
        _print_official(summary)
    _print_harness(summary)


def _print_official(summary: dict[str, Any]) -> None:
    official = Table(title=f"{summary['benchmark']}: official scores ({summary['kind']}, scored as its authors do)")
    official.add_column("metric")
    official.add_column("value", justify="right")
    for key, value in flatten_scalars({k: v for k, v in summary["official"].items() if k != "per_class"}).items():
        official.add_row(key, _fmt(value, key))
    console.print(official)


def _print_harness(summary: dict[str, Any]) -> None:
    harness = summary["harness"]
    if harness.get("overall"):
        columns = _columns(harness["overall"])
        table = Table(
            title=f"{summary['benchmark']}: judge {summary['judge']}, prompt {summary['prompt']}",
            caption="both orders (acc@a: better response shown first); consistent: right in both; "
            "pos.cons: same response picked in both; A-pref: verdicts naming (a)",
        )
        table.add_column("subset")
        for _, title in columns:
            table.add_column(title, justify="right")
        for name, m in [*harness["by_subset"].items(), ("all", harness["overall"])]:
            table.add_row(name, *[_fmt(m.get(k), k) for k, _ in columns])
        console.print(table)
    c = summary["counts"]
    console.print(
        f"{c['items']} judgments: {c['judged_now']} judged now ({c['requests_sent']} requests), {c['reused']} reused, "
        f"{c['deduplicated']} answered by an identical request; {c['server_failures']} server failures, "
        f"{c['parse_failures']} unparsed; {c['skipped_rows']} malformed rows skipped, {c.get('too_long_units', 0)} units "
        f"too long for the judge's context; {summary['seconds']:.0f} s"
    )
    if summary["parse_failure_reasons"]:
        reasons = ", ".join(f"{reason} x{n}" for reason, n in summary["parse_failure_reasons"].items())
        console.print(f"parse failures: {reasons}")
