"""Statistics of IFEval records (what judge_rl/policy/ifeval_run.py saves per answer): the four published
accuracies (`OFFICIAL`), a bootstrap interval of each (`ifeval_ci`), the paired change between two sets of records
(`ifeval_gain`), and one policy run's scores against another's (`after_versus`, `python -m judge_rl.report
report.versus=...`). Every interval resamples prompts and recomputes the published statistic (instruction level:
followed instructions over instructions, pooled), so the interval is around the number the table shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from judge_rl.reports.jsonl import read_jsonl

OFFICIAL = ("prompt_level_strict_accuracy", "instruction_level_strict_accuracy", "prompt_level_loose_accuracy",
            "instruction_level_loose_accuracy")  # fmt: skip


def per_prompt(records: Sequence[dict[str, Any]], metric: str) -> dict[str, tuple[int, int]]:
    """{prompt key: (followed, total)} for `metric` (one of OFFICIAL): prompt level counts a prompt as 1 of 1 when
    all its instructions are followed; instruction level counts its instructions. The metric is
    sum(followed) / sum(total) over prompts, so resampling prompts resamples the published statistic."""
    level, _, kind = metric.partition("_level_")
    strict = kind.startswith("strict")
    out = {}
    for r in records:
        if level == "prompt":
            out[str(r["key"])] = (int(bool(r["follow_all_instructions_strict" if strict else "follow_all_instructions_loose"])), 1)
        else:
            follows = r["follow_instruction_list_strict" if strict else "follow_instruction_list_loose"]
            out[str(r["key"])] = (sum(map(bool, follows)), len(follows))
    return out


def _resampled_ratios(units: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """sum(followed) / sum(total) of `n_boot` resamples (with replacement) of the rows of `units` (n, 2)."""
    idx = np.random.default_rng(seed).integers(0, len(units), size=(n_boot, len(units)))
    return units[idx, 0].sum(axis=1) / units[idx, 1].sum(axis=1)


def ifeval_ci(records: Sequence[dict[str, Any]], metric: str, *, n_boot: int = 2000, seed: int = 0,
              level: float = 0.95) -> dict[str, float]:  # fmt: skip
    """A percentile bootstrap interval of an IFEval accuracy, resampling prompts."""
    units = np.array(list(per_prompt(records, metric).values()), dtype=float)
    if not len(units):
        return {"mean": float("nan"), "low": float("nan"), "high": float("nan"), "n": 0.0, "level": level}
    ratios = _resampled_ratios(units, n_boot, seed)
    tail = (1 - level) / 2
    return {"mean": float(units[:, 0].sum() / units[:, 1].sum()), "low": float(np.quantile(ratios, tail)),
            "high": float(np.quantile(ratios, 1 - tail)), "n": float(len(units)), "level": level}  # fmt: skip


def ifeval_gain(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]], metric: str, *, n_boot: int = 4000,
                seed: int = 0, level: float = 0.95) -> dict[str, float]:  # fmt: skip
    """after - before of an IFEval accuracy over the prompts both evaluated, with a paired bootstrap interval
    (each resample draws prompts and keeps a prompt's before and after together)."""
    b, a = per_prompt(before, metric), per_prompt(after, metric)
    keys = sorted(set(b) & set(a))
    if not keys:
        return {"diff": float("nan"), "low": float("nan"), "high": float("nan"), "n": 0.0, "level": level}
    ub = np.array([b[k] for k in keys], dtype=float)
    ua = np.array([a[k] for k in keys], dtype=float)
    idx = np.random.default_rng(seed).integers(0, len(keys), size=(n_boot, len(keys)))
    diffs = ua[idx, 0].sum(1) / ua[idx, 1].sum(1) - ub[idx, 0].sum(1) / ub[idx, 1].sum(1)
    tail = (1 - level) / 2
    diff = ua[:, 0].sum() / ua[:, 1].sum() - ub[:, 0].sum() / ub[:, 1].sum()
    return {"diff": float(diff), "low": float(np.quantile(diffs, tail)), "high": float(np.quantile(diffs, 1 - tail)),
            "n": float(len(keys)), "level": level}  # fmt: skip


SUITE_DIRS = {"ifeval": "ifeval", "task": "task_eval"}  # a policy run's suites and where their answers are saved


def after_versus(run_dir: Path, base_dir: Path, *, stage: str = "after") -> dict[str, Any]:
    """One policy run's `stage` scores against another's (a sweep's baseline point: the oracle of a judge study),
    prompt by prompt on the prompts both answered, with a paired bootstrap interval: flat report cells
    `versus/<suite>/<metric>` (run - base) and `..._ci`, for each suite both runs saved. Two points of a sweep
    share their held-out prompts, so this separates two policies more sharply than their two gains' intervals."""
    cells: dict[str, Any] = {}
    for suite, directory in SUITE_DIRS.items():
        mine, base = Path(run_dir) / directory / stage / "records.jsonl", Path(base_dir) / directory / stage / "records.jsonl"
        if not (mine.exists() and base.exists()):
            continue
        ours, theirs = read_jsonl(mine), read_jsonl(base)
        for metric in OFFICIAL:
            gain = ifeval_gain(theirs, ours, metric)
            if gain["n"]:
                cells[f"versus/{suite}/{metric}"] = gain["diff"]
                cells[f"versus/{suite}/{metric}_ci"] = [gain["low"], gain["high"]]
    return cells
