"""`python -m judge_rl.report <multirun dir | run dirs...>`: one table from the points of a sweep.

    python -m judge_rl.report multirun/2026-11-23/10-00-00-ab12cd
    python -m judge_rl.report outputs/a outputs/b --columns rl/held_out/accuracy,wall_s --paper thinkj_table9

Rows are the swept choices (the Hydra overrides that differ between points), columns the chosen metrics
(flat cell names of judge_rl/reports/schema.py; `report.columns` in a sweep file, or `--columns`). A
point that failed, was interrupted or never finished is a row that says so, never dropped; so is a point
one of whose files cannot be read (`unreadable: <file>: ...`). A cell with a
bootstrap interval shows it (`0.500 [0.41, 0.59]`). The published numbers of the table a sweep
regenerates (`--paper`, `report.paper`; judge_rl/reports/paper_results.yaml) are columns of their own,
titled with the paper, its model and scale. `--versus <value>` (`report.versus`) compares each policy point's after
scores with the point that value names, paired by prompt (`versus/<suite>/<metric>` cells).

It writes `report.md`, `report.csv` and `report.png` (one bar per point and chosen chart metric) into
the sweep directory (`--out` elsewhere), and with `--wandb` logs the table as a `wandb.Table` to the
sweep's W&B group. `--wandb-report` also builds a W&B Report (the `wandb-workspaces` package; needs a
WANDB_API_KEY and the network). A Hydra callback (judge_rl/jobs/shell.py `SweepReport`) runs it when a
multirun ends.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from judge_rl.reports.logging import sweep_group
from judge_rl.reports.paper import PaperTable, load_paper_table
from judge_rl.reports.schema import DEFAULT_REPORT_COLUMNS, RunRecord, override_choices, read_run_or_unreadable, title

REPORT_STEM = "report"


@dataclass
class Row:
    """One point of a sweep: its label (the swept choices), status and cells."""

    label: str
    run_dir: Path
    status: str
    error: str | None
    cells: dict[str, Any]
    choices: dict[str, str] = field(default_factory=dict)


@dataclass
class ReportTable:
    columns: list[str]
    rows: list[Row]
    paper: PaperTable | None = None

    def header(self) -> list[str]:
        head = ["point", "status", *[title(c) for c in self.columns]]
        if self.paper is not None:
            head += [self.paper.column_title(c) for c in self.paper.columns]
        return head

    def cell_text(self, row: Row, column: str) -> str:
        return format_cell(row.cells.get(column), row.cells.get(f"{column}_ci"), column)

    def records(self) -> list[list[str]]:
        """The table as text cells, one list per row, in header order."""
        out = []
        for row in self.rows:
            status = row.status if row.status == "finished" else f"{row.status}: {row.error or 'no results'}"
            line = [row.label, status, *[self.cell_text(row, c) for c in self.columns]]
            if self.paper is not None:
                line += [format_cell(self.paper.value(row.choices, c), None, c) for c in self.paper.columns]
            out.append(line)
        return out


def format_cell(value: Any, ci: Sequence[float] | None, column: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, str):
        return value
    if column.rsplit("/", 1)[-1].startswith(("n_", "steps")) or column.endswith("wall_s"):
        text = f"{value:.0f}"
    else:
        text = f"{value:.3f}"
    if ci is not None and all(isinstance(x, (int, float)) and not math.isnan(x) for x in ci):
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return text


# ------------------------------------------------------------------ reading points


def point_dirs(paths: Sequence[Path]) -> list[Path]:
    """The run directories named, or the points of each multirun directory named (its numbered
    subdirectories, in job order)."""
    out: list[Path] = []
    for path in map(Path, paths):
        if not path.is_dir():
            raise ValueError(f"{path}: no such directory")
        if (path / "status.json").exists() or (path / "results.json").exists() or (path / ".hydra").is_dir():
            out.append(path)
            continue
        points = [p for p in path.iterdir() if p.is_dir() and ((p / ".hydra").is_dir() or (p / "status.json").exists())]
        if not points:
            raise ValueError(f"{path}: neither a run directory nor a multirun directory (no points with .hydra/ or status.json)")
        out.extend(sorted(points, key=lambda p: (len(p.name), p.name)))
    return out


def swept_labels(records: Sequence[RunRecord]) -> list[tuple[str, dict[str, str]]]:
    """Each point's label: its overrides that are not the same in every point (all of them for one point)."""
    choices = [override_choices(r.overrides) for r in records]
    keys = sorted({k for c in choices for k in c})
    varying = [k for k in keys if len({c.get(k) for c in choices}) > 1] if len(records) > 1 else keys
    labels = []
    for r, c in zip(records, choices):
        shown = [f"{k}={c[k]}" for k in varying if k in c]
        labels.append((" ".join(shown) or r.run_dir.name, {k: c[k] for k in varying if k in c}))
    return labels


def build_table(paths: Sequence[Path], columns: Sequence[str] | None = None, paper: str | None = None,
                versus: str | None = None) -> ReportTable:
    """The report of the run directories under `paths` (see the module docstring); with `versus` (a swept value
    naming one point, e.g. `oracle`), each finished policy point gains `versus/<suite>/<metric>` cells: its after
    scores minus that point's, paired by prompt (judge_rl/reports/ifeval_stats.py `after_versus`)."""
    records = [read_run_or_unreadable(p) for p in point_dirs(paths)]
    labels = swept_labels(records)
    rows = [Row(label, r.run_dir, r.status, r.error, r.cells, choices) for (label, choices), r in zip(labels, records)]
    if versus:
        from judge_rl.reports.ifeval_stats import after_versus

        named = [row for row in rows if versus in (row.label, *row.choices.values())]
        if len(named) != 1:
            raise ValueError(f"report.versus={versus!r}: names {len(named)} points (expected one of the swept values: "
                             f"{', '.join(sorted({v for row in rows for v in row.choices.values()})) or 'none'})")
        for row in rows:
            if row.status == "finished":
                row.cells.update(after_versus(row.run_dir, named[0].run_dir))
    return ReportTable(list(columns or DEFAULT_REPORT_COLUMNS), rows, load_paper_table(paper) if paper else None)


# ------------------------------------------------------------------ writing


def to_markdown(table: ReportTable, caption: str = "") -> str:
    head = table.header()
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rec in table.records():
        lines.append("| " + " | ".join(c.replace("|", "/") for c in rec) + " |")
    notes = []
    if caption:
        notes.append(caption)
    notes.append("Cells: mean [95% bootstrap interval over held-out pairs] where the run saved one; '-': the run has no such value.")
    if table.paper is not None:
        notes.append(table.paper.note())
    shapes = [row.label for row in table.rows if row.cells.get("shape_model")]
    if shapes:
        notes.append(f"Random weights (model.weights=random, shape models): {', '.join(shapes)}. Their speed and memory "
                     "are the real models'; their accuracies are noise and claim nothing.")
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"


def write_report(
    paths: Sequence[Path], out_dir: Path | None = None, columns: Sequence[str] | None = None, paper: str | None = None,
    chart: Sequence[str] | None = None, scatter: Sequence[str] | None = None, versus: str | None = None,
) -> dict[str, Path]:
    """Build the table and write report.md, report.csv and report.png into `out_dir` (default: the one
    directory named, the sweep directory), and with `scatter` ([x, y] cell names) report_scatter.png; returns the
    files written (and the table, under "table")."""
    table = build_table(paths, columns, paper, versus)
    if out_dir is None:
        out_dir = Path(paths[0]) if len(paths) == 1 else Path(".")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {"markdown": out_dir / f"{REPORT_STEM}.md", "csv": out_dir / f"{REPORT_STEM}.csv"}
    files["markdown"].write_text(to_markdown(table, caption=f"Points: {len(table.rows)}; run directories under {out_dir}"))
    with files["csv"].open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["point", "status", "error", "run_dir", *table.columns,
                         *[f"{c}_ci_low" for c in table.columns], *[f"{c}_ci_high" for c in table.columns]]
                        + ([f"paper/{c}" for c in table.paper.columns] if table.paper else []))
        for row in table.rows:
            cis = [row.cells.get(f"{c}_ci") or [None, None] for c in table.columns]
            writer.writerow([row.label, row.status, row.error or "", str(row.run_dir),
                             *[_csv_value(row.cells.get(c)) for c in table.columns],
                             *[_csv_value(ci[0]) for ci in cis], *[_csv_value(ci[1]) for ci in cis]]
                            + ([_csv_value(table.paper.value(row.choices, c)) for c in table.paper.columns]
                               if table.paper else []))
    chart_columns = [c for c in (chart or table.columns) if c in table.columns] or table.columns
    png = write_chart(table, chart_columns[: min(4, len(chart_columns))], out_dir / f"{REPORT_STEM}.png")
    if png is not None:
        files["png"] = png
    if scatter:
        if len(scatter) != 2:
            raise ValueError(f"report.scatter={list(scatter)}: expected [x, y], two cell names")
        dots = write_scatter(build_table(paths, list(scatter)), scatter[0], scatter[1], out_dir / f"{REPORT_STEM}_scatter.png")
        if dots is not None:
            files["scatter"] = dots
    return {**files, "table": table}


def _csv_value(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return str(x)


def write_chart(table: ReportTable, columns: Sequence[str], path: Path) -> Path | None:
    """Grouped bars: one group per chosen metric, one bar per point (with its interval as an error bar);
    points without the value have no bar. None when no point has any of the values."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = [[_number(row.cells.get(c)) for c in columns] for row in table.rows]
    if all(v is None for vs in values for v in vs):
        return None
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(columns) * max(1, len(table.rows)) ** 0.5), 4.0))
    width = 0.8 / max(1, len(table.rows))
    for i, row in enumerate(table.rows):
        xs, ys, errs = [], [], [[], []]
        for j, c in enumerate(columns):
            v = values[i][j]
            if v is None:
                continue
            xs.append(j + i * width)
            ys.append(v)
            lo, hi = _interval(row, c, v)
            errs[0].append(max(0.0, v - lo))
            errs[1].append(max(0.0, hi - v))
        label = row.label if row.status == "finished" else f"{row.label} ({row.status})"
        ax.bar(xs, ys, width, yerr=errs, capsize=3, label=label[:60])
    ax.set_xticks([j + width * (len(table.rows) - 1) / 2 for j in range(len(columns))])
    ax.set_xticklabels([title(c) for c in columns], rotation=15, ha="right")
    ax.legend(fontsize=7)
    ax.set_title("judge_rl sweep report")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


@dataclass
class ScatterLayout:
    """What report_scatter.png draws: `dots` (label, x, (x_lo, x_hi), y, (y_lo, y_hi)); `references`, the points
    with y but no x (the oracle of a judge study: a reward with no judge accuracy), as (label, y, (y_lo, y_hi));
    `missing`, the points with no y (failed, interrupted, never measured) as "label (status)"."""

    dots: list[tuple[str, float, tuple[float, float], float, tuple[float, float]]]
    references: list[tuple[str, float, tuple[float, float]]]
    missing: list[str]


def scatter_layout(table: ReportTable, x: str, y: str) -> ScatterLayout:
    """Sort each point of `table` into a dot, a reference line or a named absence (never silently left out)."""
    layout = ScatterLayout([], [], [])
    for row in table.rows:
        name = row.label.split("=")[-1][:28]
        vx, vy = _number(row.cells.get(x)), _number(row.cells.get(y))
        if vy is None:
            layout.missing.append(f"{name} ({row.status.split(':')[0] if row.status != 'finished' else 'no value'})")
        elif vx is None:
            layout.references.append((name, vy, _interval(row, y, vy)))
        else:
            layout.dots.append((name, vx, _interval(row, x, vx), vy, _interval(row, y, vy)))
    return layout


def write_scatter(table: ReportTable, x: str, y: str, path: Path) -> Path | None:
    """One point per sweep point at (x, y) with its intervals as error bars in both directions and its label;
    y = 0 drawn (no gain); a point with y but no x a horizontal line with its interval shaded; the points not
    drawn named under the plot with their status (scatter_layout). None when no point has a y value."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layout = scatter_layout(table, x, y)
    if not layout.dots and not layout.references:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    ax.axhline(0.0, color="grey", lw=0.8, ls="--")
    for (name, vy, (lo, hi)), style in zip(layout.references, itertools.cycle(("-.", ":", "--"))):
        ax.axhline(vy, color="0.25", lw=1.2, ls=style, label=f"{name} (no {title(x)}): {vy:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        ax.axhspan(lo, hi, color="0.5", alpha=0.12)
    for name, vx, (xlo, xhi), vy, (ylo, yhi) in layout.dots:
        ax.errorbar([vx], [vy], xerr=[[max(0.0, vx - xlo)], [max(0.0, xhi - vx)]],
                    yerr=[[max(0.0, vy - ylo)], [max(0.0, yhi - vy)]], fmt="o", capsize=3)
        ax.annotate(name, (vx, vy), textcoords="offset points", xytext=(5, 5), fontsize=8)
    if layout.references:
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel(title(x))
    ax.set_ylabel(title(y))
    ax.set_title("judge_rl sweep: one point per run, 95% intervals")
    if layout.missing:
        fig.text(0.01, 0.01, "not drawn: " + "; ".join(layout.missing), fontsize=7, ha="left", va="bottom", wrap=True)
    fig.tight_layout(rect=(0, 0.05 if layout.missing else 0, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _interval(row: Row, column: str, v: float) -> tuple[float, float]:
    """A cell's saved interval, or (v, v) where the run saved none (no error bar)."""
    ci = row.cells.get(f"{column}_ci")
    return (float(ci[0]), float(ci[1])) if ci and None not in ci else (v, v)


def _number(x: Any) -> float | None:
    if isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x):
        return float(x)
    return None


# ------------------------------------------------------------------ W&B


def log_wandb_table(table: ReportTable, project: str, entity: str | None, group: str | None, mode: str = "auto") -> str:
    """Log the table as a `wandb.Table` in a run of job type `report` in the sweep's group; returns the
    W&B mode used (offline without a key, so `wandb sync` can upload it later)."""
    import wandb

    from judge_rl.reports.logging import wandb_mode

    mode = wandb_mode(mode)
    run = wandb.init(project=project, entity=entity, group=group, job_type="report", mode=mode,
                     dir=str(table.rows[0].run_dir.parent) if table.rows else None, name=f"report-{group or 'runs'}")
    run.log({"report": wandb.Table(columns=table.header(), data=table.records())})
    run.finish()
    return mode


def build_wandb_report(table: ReportTable, project: str, entity: str, group: str | None) -> str:
    """A W&B Report (wandb-workspaces) with the sweep's runs, their reward curves and held-out metrics;
    returns its URL. Needs the `wandb-workspaces` package, a WANDB_API_KEY and the network."""
    try:
        import wandb_workspaces.reports.v2 as wr
    except ImportError:
        raise RuntimeError("--wandb-report needs the wandb-workspaces package: pip install wandb-workspaces") from None
    report = wandb_report_spec(wr, table, project, entity, group)
    report.save()
    return report.url


def wandb_report_spec(wr, table: ReportTable, project: str, entity: str, group: str | None):
    """The Report object (built offline; saving it needs the network)."""
    runset = wr.Runset(entity=entity, project=project, name=group or "runs",
                       filters=f"Group = '{group}'" if group else None)
    metrics = [c for c in table.columns if "/" in c]
    panels = [wr.LinePlot(title="RL reward", x="Step", y=["critic/score/mean"]),
              wr.LinePlot(title="held-out consistent accuracy", x="Step", y=["val/consistent_accuracy"]),
              wr.LinePlot(title="A-preference", x="Step", y=["judge/a_preference", "val/a_preference_rate"])]
    blocks = [wr.H1(text=f"judge_rl sweep {group or ''}".strip()),
              wr.P(text="Columns: " + ", ".join(metrics)),
              wr.PanelGrid(runsets=[runset], panels=panels)]
    return wr.Report(project=project, entity=entity, title=f"judge_rl report {group or ''}".strip(), blocks=blocks)


# ------------------------------------------------------------------ command line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m judge_rl.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="a multirun directory, or run directories")
    parser.add_argument("--columns", default=None, help="comma-separated cell names (default: the held-out RL metrics)")
    parser.add_argument("--chart", default=None, help="comma-separated columns to chart (default: the first four)")
    parser.add_argument("--scatter", default=None, help="x,y: two cell names, one dot per point (report_scatter.png)")
    parser.add_argument("--versus", default=None, help="a swept value naming one policy point (e.g. oracle): "
                        "versus/<suite>/<metric> cells, each point's after scores minus its, paired by prompt")
    parser.add_argument("--paper", default=None, help="published numbers to show beside ours (a key of paper_results.yaml)")
    parser.add_argument("--out", type=Path, default=None, help="where to write report.{md,csv,png}")
    parser.add_argument("--wandb", action="store_true", help="log the table as a wandb.Table")
    parser.add_argument("--wandb-report", action="store_true", help="also build a W&B Report (needs network)")
    parser.add_argument("--project", default="judge_rl")
    parser.add_argument("--entity", default=None)
    parser.add_argument("--group", default=None, help="W&B group (default: the multirun directory's name)")
    args = parser.parse_args(argv)
    split = (lambda s: [x.strip() for x in s.split(",") if x.strip()] if s else None)
    try:
        files = write_report(args.paths, args.out, split(args.columns), args.paper, split(args.chart), split(args.scatter),
                             args.versus)
        table = files.pop("table")
        print(files["markdown"].read_text())
        print("written: " + ", ".join(str(p) for p in files.values()))
        if args.wandb or args.wandb_report:
            group = args.group or sweep_group(Path(args.paths[0]).resolve())
            log_wandb_table(table, args.project, args.entity, group)
            if args.wandb_report:
                if not args.entity:
                    raise ValueError("--wandb-report needs --entity (the W&B team or user that owns the project)")
                print(f"W&B report: {build_wandb_report(table, args.project, args.entity, group)}")
    except (ValueError, RuntimeError, OSError) as e:
        print(f"judge_rl.report: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
