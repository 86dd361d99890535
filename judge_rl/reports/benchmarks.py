"""The console report of a benchmark run: the authors' official numbers, then the harness's pairwise
diagnostics per subset (accuracy per order, consistent accuracy, position consistency, A-preference,
parse failures), then what could not be judged or read."""

from __future__ import annotations

import math
from typing import Any

from rich.table import Table

from judge_rl.reports.console import console

PAIRWISE_COLUMNS = [
    ("accuracy", "acc"),
    ("accuracy_a", "acc@a"),
    ("accuracy_b", "acc@b"),
    ("consistent_accuracy", "consistent"),
    ("position_consistency", "pos.cons"),
    ("a_preference_rate", "A-pref"),
    ("parse_failure_rate", "parse fail"),
    ("n_pairs", "pairs"),
]
POINTWISE_COLUMNS = [
    ("pairwise_accuracy", "pairwise acc"),
    ("pairwise_tie_rate", "ties"),
    ("score_accuracy", "score acc"),
    ("parse_failure_rate", "parse fail"),
    ("n_pairs", "pairs"),
]
CHOICE_COLUMNS = [
    ("parse_failure_rate", "parse fail"),
    ("pick_rate_a", "pick A"),
    ("pick_rate_b", "pick B"),
    ("pick_rate_c", "pick C"),
    ("pick_rate_d", "pick D"),
    ("n_items", "items"),
]


def _fmt(x: Any, key: str = "") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if key.rsplit("/", 1)[-1].startswith("n_"):  # counts
        return str(int(x))
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def flatten_scalars(d: dict[str, Any], prefix: str = "", depth: int = 3) -> dict[str, float]:
    """Numeric leaves of a nested dict as "a/b/c" keys (lists such as the RM-Bench matrix left out)."""
    out: dict[str, float] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            out[key] = float(v)
        elif isinstance(v, dict) and depth > 1:
            out.update(flatten_scalars(v, key + "/", depth - 1))
    return out


def _columns(overall: dict[str, Any]) -> list[tuple[str, str]]:
    if "accuracy_a" in overall:
        return PAIRWISE_COLUMNS
    if "pairwise_accuracy" in overall:
        return POINTWISE_COLUMNS
    return CHOICE_COLUMNS


def print_benchmark_summary(summary: dict[str, Any]) -> None:
    scoring = summary.get("scoring", {})
    if scoring.get("status") == "withheld":
        console.print(f"[red]{summary['benchmark']}: no score: {scoring['reason']}[/red]")
    elif scoring.get("status") == "answered_only":
        console.print(f"[yellow]{summary['benchmark']}: scores cover the {scoring['units_scored']} of {scoring['units']} "
                      f"units the engine answered ({scoring['units_without_answer']} got no answer)[/yellow]")
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
        f"{c['deduplicated']} answered by an identical request; {c['engine_failures']} engine failures, "
        f"{c['parse_failures']} unparsed; {c['skipped_rows']} malformed rows skipped, {c.get('too_long_units', 0)} units "
        f"too long for the judge's context; {summary['seconds']:.0f} s"
    )
    if summary["parse_failure_reasons"]:
        reasons = ", ".join(f"{reason} x{n}" for reason, n in summary["parse_failure_reasons"].items())
        console.print(f"parse failures: {reasons}")
