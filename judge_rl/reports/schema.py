"""One results schema for every judge_rl job, and the one place that names the metrics tables show.

A run directory of any job (the main job `python -m judge_rl`, the eval app `python -m judge_rl.eval`)
records:

- `.hydra/overrides.yaml`: what was swept (Hydra writes it; `overrides` below repeats it);
- `resolved_config.yaml`: the resolved config (judge_rl/rundir.py);
- `status.json`: running, finished, failed (with its one-line error) or interrupted (judge_rl/rundir.py);
- `results.json`, this module's schema (``"schema": SCHEMA``)::

    {"schema": "judge_rl.results/1", "job": "main" | "eval", "run_dir": ..., "overrides": [...],
     "evaluations": {<stage>: {"held_out": <evaluation>, "benchmarks": {<name>: <evaluation>}}},
     "training": {"sft": {...}, "rl": {"steps", "seconds_per_step", "reward_curve", "rewards", ...}},
     "comparisons": {"rl_minus_sft": {"consistent_accuracy": {"diff", "low", "high", "n", "level"}}},
     "plots": [...], "wall_s": float, "final_stage": <stage>}

  where an <evaluation> is ``{"official", "metrics", "by_subset", "ci", "counts",
  "parse_failure_reasons", "scoring", "too_long"}``: the benchmark authors' score(s) (None for held-out pairs), the
  both-order diagnostics (accuracy per order, consistent accuracy, position consistency, A-preference,
  parse failures), the same per subset, a 95% bootstrap interval of each headline metric over pairs, the
  counts, and the units left out as longer than the judge's context (id -> why, with the lengths). Stages are
  `base`, `sft`, `rl` (main job) and `eval` (eval app).

`read_run(run_dir)` reads all of it back as one `RunRecord`, whose `cells` are the flat metric names a
report table selects (`rl/held_out/consistent_accuracy`, `rl/llmbar_natural/official/accuracy`,
`training/rl/seconds_per_step`, `rl_minus_sft/consistent_accuracy`, `wall_s`, ...); an interval of a cell
is the cell named ``<name>_ci`` (a ``[low, high]`` pair). `final_stage` names the stage that evaluated the judge
the run's recipe produced (`rl`, `dpo`, `bt`, `sft_cot`, ...); its cells are repeated as `judge/...` (and its
comparisons as `judge_minus_<baseline>/...`), so one table compares methods whose stages are named differently.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

SCHEMA = "judge_rl.results/1"
RESULTS_FILE = "results.json"

# ------------------------------------------------------------------ metric names (key, short title)

PAIRWISE_COLUMNS = [
    ("accuracy", "acc"),
    ("accuracy_a", "acc@a"),
    ("accuracy_b", "acc@b"),
    ("consistent_accuracy", "consistent"),
    ("position_consistency", "pos.cons"),
    ("a_preference_rate", "A-pref"),
    ("parse_failure_rate", "parse fail"),
]
POINTWISE_COLUMNS = [
    ("score_accuracy", "score acc"),
    ("within_1_accuracy", "within 1"),
    ("pairwise_accuracy", "pairwise acc"),
    ("pairwise_tie_rate", "ties"),
    ("parse_failure_rate", "parse fail"),
]
CHOICE_COLUMNS = [
    ("parse_failure_rate", "parse fail"),
    ("pick_rate_a", "pick A"),
    ("pick_rate_b", "pick B"),
    ("pick_rate_c", "pick C"),
    ("pick_rate_d", "pick D"),
]
# the metrics printed after each evaluation, and given a bootstrap interval in results.json
HEADLINE = {
    "pairwise": ("accuracy", "consistent_accuracy", "parse_failure_rate"),
    "pointwise": ("score_accuracy", "pairwise_accuracy", "parse_failure_rate"),
}
CI_METRICS = {"pairwise": ("accuracy", "consistent_accuracy"), "pointwise": ("pairwise_accuracy",)}

# Titles of the flat cells a report shows; anything else is shown under its own name.
TITLES = {
    **{k: t for k, t in PAIRWISE_COLUMNS + POINTWISE_COLUMNS + CHOICE_COLUMNS},
    "n_pairs": "pairs",
    "n_items": "items",
    "wall_s": "wall s",
    "training/rl/seconds_per_step": "s/step",
    "training/rl/steps": "RL steps",
    "training/rl/reward_first_mean": "reward first",
    "training/rl/reward_last_mean": "reward last",
    "rl_minus_sft/consistent_accuracy": "RL-SFT consistent",
    "rl_minus_base/consistent_accuracy": "RL-base consistent",
    "judge_minus_sft/consistent_accuracy": "judge-SFT consistent",
    # the policy job (python -m judge_rl.policy): IFEval of the policy, the judge's bias against the rule checkers
    **{f"{stage}/ifeval/official/{level}_level_{kind}_accuracy": f"IFEval {level} {kind} {stage}"
       for stage in ("before", "after") for level in ("prompt", "instruction") for kind in ("strict", "loose")},
    **{f"after_minus_before/{level}_level_{kind}_accuracy": f"IFEval {level} {kind} after-before"
       for level in ("prompt", "instruction") for kind in ("strict", "loose")},
    "training/rl/bias/reward_minus_rule": "reward-rule",
    "training/rl/bias/judge_fp_rate": "judge FP",
    "training/rl/bias/judge_fn_rate": "judge FN",
    "training/rl/bias/length_corr": "reward~length",
    "training/rl/judge_failure/rate": "failed samples",
}
# a report's default columns when none are configured (those a run lacks show as "-")
DEFAULT_REPORT_COLUMNS = (
    "rl/held_out/accuracy",
    "rl/held_out/consistent_accuracy",
    "rl/held_out/accuracy_a",
    "rl/held_out/accuracy_b",
    "rl/held_out/a_preference_rate",
    "rl/held_out/parse_failure_rate",
    "rl_minus_sft/consistent_accuracy",
    "training/rl/reward_last_mean",
    "training/rl/seconds_per_step",
    "wall_s",
)


def metrics_kind(metrics: dict[str, Any]) -> str:
    """Which judging an evaluation's diagnostics come from: "pairwise", "pointwise" or "choice"."""
    if "accuracy_a" in metrics:
        return "pairwise"
    if "pairwise_accuracy" in metrics:
        return "pointwise"
    return "choice"


def title(cell: str) -> str:
    """A readable column title for a flat cell name (`rl/held_out/accuracy` -> `rl acc`)."""
    if cell in TITLES:
        return TITLES[cell]
    parts = cell.split("/")
    if len(parts) >= 3 and parts[1] == "held_out":
        return f"{parts[0]} {TITLES.get(parts[-1], parts[-1])}"
    if len(parts) >= 3:
        return f"{parts[0]} {' '.join(parts[1:-1])} {TITLES.get(parts[-1], parts[-1])}"
    return cell


# ------------------------------------------------------------------ intervals


def bootstrap_ci(values: Sequence[float], *, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, float]:
    """A percentile bootstrap interval of the mean of per-unit values (e.g. each pair's both-order
    correctness); NaN bounds for no values."""
    import numpy as np

    v = np.asarray([x for x in values if not (isinstance(x, float) and math.isnan(x))], dtype=float)
    if len(v) == 0:
        return {"mean": float("nan"), "low": float("nan"), "high": float("nan"), "n": 0.0, "level": level}
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(axis=1)
    tail = (1 - level) / 2
    return {"mean": float(v.mean()), "low": float(np.quantile(means, tail)), "high": float(np.quantile(means, 1 - tail)),
            "n": float(len(v)), "level": level}


def per_pair_values(records: Iterable[dict[str, Any]], metric: str) -> list[float]:
    """Per-pair values whose mean is `metric` (the unit a bootstrap resamples): a pair's share of right
    verdicts (accuracy), right in both orders (consistent_accuracy), or the chosen response scored strictly
    higher (pairwise_accuracy, pointwise records). Records without a server answer are left out."""
    by_pair: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        if r.get("server_error") or "pair_id" not in r:
            continue
        by_pair[r["pair_id"]].append(r)
    out = []
    for rs in by_pair.values():
        if metric == "accuracy":
            out.append(sum(float(r["correct"]) for r in rs) / len(rs))
        elif metric == "consistent_accuracy":
            if len({r.get("chosen_position") for r in rs}) == 2:
                out.append(float(all(r["correct"] for r in rs)))
        elif metric == "pairwise_accuracy":
            by = {r.get("which"): r for r in rs}
            if set(by) == {"chosen", "rejected"}:
                c, j = by["chosen"], by["rejected"]
                ok = not c["parse_error"] and not j["parse_error"] and c["pred_score"] > j["pred_score"]
                out.append(float(ok))
        else:
            raise ValueError(f"no per-pair definition of {metric!r}")
    return out


def evaluation_entry(summary: dict[str, Any], records: Iterable[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An <evaluation> of the schema from a harness summary (`evaluate_pairs` or `evaluate_benchmark`) and
    its judgment records (for the intervals)."""
    harness = summary.get("harness")
    metrics = (harness or {}).get("overall", summary.get("overall", {}))
    by_subset = (harness or {}).get("by_subset", summary.get("by_source", {}))
    ci: dict[str, dict[str, float]] = {}
    if records is not None and metrics:
        records = list(records)
        for metric in CI_METRICS.get(metrics_kind(metrics), ()):
            ci[metric] = bootstrap_ci(per_pair_values(records, metric))
    return {
        "official": summary.get("official"),
        "metrics": metrics,
        "by_subset": by_subset,
        "ci": ci,
        "counts": summary.get("counts", {}),
        "parse_failure_reasons": summary.get("parse_failure_reasons", {}),
        "scoring": summary.get("scoring", {}),
        # the units left out as longer than the judge's context (first 20: id -> prompt tokens, budget, context)
        "too_long": summary.get("too_long", {}),
    }


# ------------------------------------------------------------------ writing and reading


def new_results(job: str, run_dir: Path, overrides: Sequence[str] | None = None) -> dict[str, Any]:
    """An empty results document for `job` ("main" or "eval"); stages fill it as they finish."""
    return {
        "schema": SCHEMA,
        "job": job,
        "run_dir": str(run_dir),
        "overrides": list(overrides if overrides is not None else hydra_overrides(run_dir)),
        "evaluations": {},
        "training": {},
        "comparisons": {},
        "plots": [],
        "wall_s": None,
    }


def write_results(run_dir: Path, doc: dict[str, Any]) -> Path:
    """Write `results.json` atomically (a crash never leaves half a file for a report to misread, a failed write no
    temporary file)."""
    path = Path(run_dir) / RESULTS_FILE
    tmp = path.with_suffix(".json.tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=2, default=_jsonable))
        tmp.replace(path)
    except BaseException:  # a failed write (a full disk) leaves the last whole results.json and no .tmp
        tmp.unlink(missing_ok=True)
        raise
    return path


def _jsonable(x: Any) -> Any:
    if hasattr(x, "item"):
        return x.item()
    return str(x)


def hydra_overrides(run_dir: Path) -> list[str]:
    """The command-line overrides Hydra saved for this run (`.hydra/overrides.yaml`), [] without one."""
    path = Path(run_dir) / ".hydra" / "overrides.yaml"
    if not path.exists():
        return []
    from omegaconf import OmegaConf

    try:
        return [str(o) for o in OmegaConf.to_container(OmegaConf.load(path))]
    except Exception:  # noqa: BLE001  an unreadable file is no overrides, the status says what happened
        return []


def override_choices(overrides: Sequence[str]) -> dict[str, str]:
    """Command-line overrides as {key: value} (`+sweeps=x` -> {"sweeps": "x"}); the swept choices of a point."""
    out = {}
    for o in overrides:
        if "=" in o:
            key, value = o.split("=", 1)
            out[key.lstrip("+~")] = value
    return out


@dataclass
class RunRecord:
    """Everything a report needs from one run directory."""

    run_dir: Path
    status: str  # finished | failed | interrupted | running | missing (no status.json)
    error: str | None
    overrides: list[str]
    config: dict[str, Any]
    results: dict[str, Any] | None
    cells: dict[str, Any] = field(default_factory=dict)


def read_run(run_dir: Path) -> RunRecord:
    """A run directory read back: its status (a run that wrote results but no final status is not
    finished), its overrides, its resolved config and its results as flat cells. A file that is there but
    cannot be read as what it should be (torn JSON or YAML, a list where an object belongs, an older schema)
    raises ValueError naming the file; `read_run_or_unreadable` turns that into a row of its own."""
    from judge_rl.rundir import STATUS_FILE

    run_dir = Path(run_dir)
    status = _read_object(run_dir / STATUS_FILE, "JSON") or {}
    config = _read_object(run_dir / "resolved_config.yaml", "YAML") or {}
    path = run_dir / RESULTS_FILE
    results = _read_object(path, "JSON")
    if results is not None and results.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema {results.get('schema')!r}, expected {SCHEMA!r} (written by an older judge_rl)")
    overrides = results["overrides"] if results and results.get("overrides") else hydra_overrides(run_dir)
    if not isinstance(overrides, list):
        raise ValueError(f"{path}: overrides is {type(overrides).__name__}, expected a list")
    record = RunRecord(run_dir, str(status.get("status", "missing")), status.get("error"), overrides, config, results)
    if results is not None:
        try:
            record.cells = flat_cells(results)
        except (AttributeError, TypeError, KeyError, ValueError) as e:
            raise ValueError(f"{path}: not a results document ({type(e).__name__}: {e})") from None
    return record


def read_run_or_unreadable(run_dir: Path) -> RunRecord:
    """`read_run`, or where one of the point's files cannot be read, a record with status `unreadable` whose error
    names the file (its label still from .hydra/overrides.yaml): one broken point is one row, not a lost table."""
    try:
        return read_run(run_dir)
    except (ValueError, OSError) as e:
        return RunRecord(Path(run_dir), "unreadable", str(e), hydra_overrides(run_dir), {}, None)


def _read_object(path: Path, kind: str) -> dict[str, Any] | None:
    """A JSON or YAML file holding one object (a mapping), None where there is no file."""
    if not path.exists():
        return None
    try:
        text = path.read_text()
        if kind == "JSON":
            doc = json.loads(text)
        else:
            import yaml

            doc = yaml.safe_load(text)
            if doc is None:
                return None
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot be read ({e})") from None
    except Exception as e:  # noqa: BLE001  json.JSONDecodeError, yaml.YAMLError: a torn file
        raise ValueError(f"{path}: not valid {kind} ({' '.join(str(e).split())[:200]})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: a {type(doc).__name__}, expected an object")
    return doc


def flat_cells(doc: dict[str, Any]) -> dict[str, Any]:
    """The flat cell names of a results document (see the module docstring)."""
    cells: dict[str, Any] = {}
    for stage, ev in doc.get("evaluations", {}).items():
        blocks = [("held_out", ev["held_out"])] if ev.get("held_out") else []
        blocks += list(ev.get("benchmarks", {}).items())
        for name, block in blocks:
            prefix = f"{stage}/{name}"
            for k, v in entry_scalars(block).items():
                cells[f"{prefix}/{k}"] = v
            for k, ci in (block.get("ci") or {}).items():
                cells[f"{prefix}/{k}_ci"] = [ci["low"], ci["high"]]
    for name, section in doc.get("training", {}).items():
        for k, v in flatten_scalars(section).items():
            cells[f"training/{name}/{k}"] = v
        curve = section.get("reward_curve") if isinstance(section, dict) else None
        if curve:
            cells[f"training/{name}/reward_first_mean"] = curve.get("first_mean")
            cells[f"training/{name}/reward_last_mean"] = curve.get("last_mean")
    for name, section in doc.get("comparisons", {}).items():
        for metric, gain in section.items():
            cells[f"{name}/{metric}"] = gain["diff"]
            cells[f"{name}/{metric}_ci"] = [gain["low"], gain["high"]]
    if doc.get("wall_s") is not None:
        cells["wall_s"] = doc["wall_s"]
    if (doc.get("model") or {}).get("weights") == "random":  # a shape model: speed and memory only (to_markdown says so)
        cells["shape_model"] = doc["model"].get("name", True)
    final = doc.get("final_stage")
    if final:  # the judge the recipe produced, whatever its stage is called: judge/..., judge_minus_<baseline>/...
        for name, value in list(cells.items()):
            if name.startswith(f"{final}/"):
                cells[f"judge/{name[len(final) + 1:]}"] = value
            elif name.startswith(f"{final}_minus_"):
                cells[f"judge_minus_{name[len(final) + 7:]}"] = value
    return cells


def entry_scalars(block: dict[str, Any]) -> dict[str, Any]:
    """The numbers of an <evaluation>: its diagnostics by name, the official scores as `official/<key>`."""
    out = {k: v for k, v in (block.get("metrics") or {}).items() if isinstance(v, (int, float))}
    out.update({f"official/{k}": v for k, v in flatten_scalars(block.get("official") or {}).items()})
    return out


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
