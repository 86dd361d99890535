"""Published numbers beside ours: the tables of judge_rl/reports/paper_results.yaml (see its header).

A report row is matched to a paper row through the swept key the table names (`match`, e.g. `reward`):
the row whose choice is `reward=strength` gets the paper's "Strength reward" numbers, for each of the
paper's base models, in columns titled with the paper, table, model and scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PAPER_FILE = Path(__file__).with_name("paper_results.yaml")


@dataclass
class PaperTable:
    key: str
    paper: str
    table: str
    source: str
    match: str
    rows: dict[str, str]
    column_names: dict[str, str]
    models: list[dict[str, Any]]
    missing: str | None = None

    @property
    def columns(self) -> list[str]:
        """One column per (model, paper column): `<model>/<column>`."""
        return [f"{m['model']}/{c}" for m in self.models for c in self.column_names]

    def column_title(self, column: str) -> str:
        model, name = column.split("/", 1)
        scale = next(m["scale"] for m in self.models if m["model"] == model)
        short = self.paper.split(" (")[0]
        return f"paper {short} {self.table.replace('Table ', 'T')}, {model} ({scale}): {self.column_names[name]}"

    def value(self, choices: dict[str, str], column: str) -> float | None:
        """The paper's number for a report row (by its swept choices), or None (no matching paper row,
        or the number was not transcribed)."""
        row = self.rows.get(str(choices.get(self.match)))
        if row is None:
            return None
        model, name = column.split("/", 1)
        values = next(m for m in self.models if m["model"] == model).get("values") or {}
        return (values.get(row) or {}).get(name)

    def note(self) -> str:
        text = (f"Columns titled 'paper' are published numbers ({self.paper}, {self.table}; {self.source}), matched to "
                f"our rows by `{self.match}` ({', '.join(f'{k} -> {v}' for k, v in self.rows.items())}); they come from "
                f"other models at other scales and are not comparable cell by cell with ours.")
        if self.missing:
            text += f" Paper numbers {self.missing}"
        return text


def load_paper_table(key: str, path: Path = PAPER_FILE) -> PaperTable:
    tables = yaml.safe_load(path.read_text())
    if key not in tables:
        raise ValueError(f"report.paper={key!r}: no such table in {path}; known: {', '.join(tables)}")
    t = tables[key]
    try:
        return PaperTable(key, t["paper"], t["table"], t["source"], t["match"], dict(t["rows"]), dict(t["columns"]),
                          list(t["models"]), t.get("missing"))
    except KeyError as e:
        raise ValueError(f"{path}: table {key!r} lacks the key {e.args[0]!r}") from None
