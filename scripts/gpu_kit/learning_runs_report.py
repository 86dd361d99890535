"""The summary of learning_runs.sh (issue 56's GPU calls): each step's exit status and seconds, and for each kept run
(a main job, or each point of a table4 sweep) the numbers the issue asks for: per stage and per judged set (held-out
pairs, LLMBar-Natural, FairEval) accuracy and consistent accuracy with their 95% bootstrap intervals, accuracy in each
order, A-preference, parse failures; RL - SFT consistent accuracy (paired bootstrap: the held-out one from
results.json, each benchmark's from the kept judgments); the live held-out curve (`val/*` of metrics.jsonl);
the reward curve in 10 blocks; RL steps done and seconds a step. The table4 sweeps' joint report (with Think-J's
column) is keep/table4/report.md, written by learning_runs.sh.

    python scripts/gpu_kit/learning_runs_report.py WORK    # writes WORK/keep/summary.json and summary.txt
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_numbers_report import steps  # noqa: E402  (the step runner's steps.tsv, read the same way)

METRICS = ("accuracy", "consistent_accuracy", "accuracy_a", "accuracy_b", "a_preference_rate", "parse_failure_rate",
           "n_pairs")
CURVE = ("accuracy", "consistent_accuracy", "a_preference_rate", "parse_failure_rate")


def _num(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def benchmark_gains(run: Path, res: dict) -> dict:
    """final stage - SFT consistent accuracy on each benchmark both judged (results.json pairs only the held-out set):
    a paired bootstrap over pairs from the kept judgments, as judge_rl computes the held-out one."""
    final = res.get("final_stage")
    if not final or final == "sft":
        return {}
    try:
        from judge_rl.evaluation.harness import read_records
        from judge_rl.evaluation.metrics import consistent_by_pair, paired_bootstrap
    except ImportError:
        return {}
    gains = {}
    root = run / "eval"
    for bench in sorted(p.name for p in (root / "sft" / "benchmarks").glob("*") if p.is_dir()) if root.exists() else []:
        before, after = (root / "sft" / "benchmarks" / bench / "judgments.jsonl",
                         root / final / "benchmarks" / bench / "judgments.jsonl")
        if before.exists() and after.exists():
            try:
                g = paired_bootstrap(consistent_by_pair(read_records(before).values()),
                                     consistent_by_pair(read_records(after).values()))
            except (KeyError, TypeError, ValueError):
                continue
            gains[f"{final}_minus_sft/{bench}/consistent_accuracy"] = {"diff": g["diff"], "ci": [g["low"], g["high"]],
                                                                      "n": g["n"]}
    return gains


def run_summary(run: Path) -> dict:
    """The numbers of one kept run directory."""
    out: dict = {"status": (_read(run / "status.json") or {}).get("status", "missing")}
    overrides = run / ".hydra" / "overrides.yaml"
    if overrides.exists():
        out["overrides"] = [line[2:].strip() for line in overrides.read_text().splitlines() if line.startswith("- ")]
    res = _read(run / "results.json") or {}
    out["final_stage"] = res.get("final_stage")
    out["wall_s"] = res.get("wall_s")
    evals = {}
    for stage, ev in (res.get("evaluations") or {}).items():
        blocks = ([("held_out", ev["held_out"])] if ev.get("held_out") else []) + list((ev.get("benchmarks") or {}).items())
        for name, block in blocks:
            m = block.get("metrics") or {}
            entry = {k: _num(m.get(k)) for k in METRICS if k in m}
            for k, ci in (block.get("ci") or {}).items():
                entry[f"{k}_ci"] = [ci.get("low"), ci.get("high")]
            evals[f"{stage}/{name}"] = entry
    out["evaluations"] = evals
    out["comparisons"] = {f"{name}/{metric}": {"diff": g.get("diff"), "ci": [g.get("low"), g.get("high")], "n": g.get("n")}
                          for name, section in (res.get("comparisons") or {}).items() for metric, g in section.items()}
    out["benchmark_gains"] = benchmark_gains(run, res)
    rl = (res.get("training") or {}).get("rl") or {}
    if rl:
        rewards = [r for r in rl.get("rewards") or [] if isinstance(r, (int, float))]
        blocks = []
        if rewards:
            k = max(1, math.ceil(len(rewards) / 10))
            blocks = [round(sum(rewards[i:i + k]) / len(rewards[i:i + k]), 3) for i in range(0, len(rewards), k)]
        out["rl"] = {"steps": rl.get("steps"), "resumed_from": rl.get("resumed_from"),
                     "seconds_per_step": rl.get("seconds_per_step"), "reward_blocks": blocks}
    curve = []
    metrics = run / "metrics.jsonl"
    for line in metrics.read_text().splitlines() if metrics.exists() else []:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and any(f"val/{k}" in row for k in CURVE):
            curve.append({"step": row.get("step"), **{k: _num(row.get(f"val/{k}")) for k in CURVE}})
    if not rl:  # a run that was cut in RL wrote no results yet: its steps from metrics.jsonl
        timed = []
        for line in metrics.read_text().splitlines() if metrics.exists() else []:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and "timing_s/step" in row:
                timed.append(row["timing_s/step"])
        if timed:
            out["rl"] = {"steps_logged": len(timed), "seconds_per_step": round(sum(timed) / len(timed), 2)}
    out["live_curve"] = curve
    return out


def runs(keep: Path) -> dict:
    found = {}
    root = keep / "runs"
    for step in sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []:
        if (step / "results.json").exists() or (step / "status.json").exists() or (step / "metrics.jsonl").exists():
            found[step.name] = run_summary(step)
        for point in sorted(p for p in step.iterdir() if p.is_dir() and (p / ".hydra").exists()):
            found[f"{step.name}/{point.name}"] = run_summary(point)
    return found


def fmt(x, nd=3) -> str:
    return "-" if x is None else f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def fmt_ci(entry: dict, k: str) -> str:
    ci = entry.get(f"{k}_ci")
    return fmt(entry.get(k)) + (f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci and None not in ci else "")


def report(work: Path) -> dict:
    keep = work / "keep"
    doc = {"steps": steps(keep), "runs": runs(keep)}
    (keep / "summary.json").write_text(json.dumps(doc, indent=1))
    lines = [f"{r['step']:<16} rc {r['rc']:<8} {r['seconds']:>7}s {r['note']}" for r in doc["steps"]]
    for name, r in doc["runs"].items():
        label = " ".join(o for o in r.get("overrides", []) if o.startswith(("algorithm=", "seed=")))
        lines.append(f"\n{name}: {r['status']}{' (' + label + ')' if label else ''}, wall {fmt(r.get('wall_s'), 0)} s"
                     + (f", RL {json.dumps(r['rl'])}" if r.get("rl") else ""))
        for key, e in r["evaluations"].items():
            lines.append(f"  {key:<28} acc {fmt_ci(e, 'accuracy')}  consistent {fmt_ci(e, 'consistent_accuracy')}  "
                         f"acc@a {fmt(e.get('accuracy_a'))} acc@b {fmt(e.get('accuracy_b'))}  A-pref "
                         f"{fmt(e.get('a_preference_rate'))}  parse fail {fmt(e.get('parse_failure_rate'))}  "
                         f"pairs {fmt(e.get('n_pairs'), 0)}")
        for key, c in {**r["comparisons"], **r.get("benchmark_gains", {})}.items():
            lines.append(f"  {key}: {c['diff']:+.3f} [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}] over {fmt(c['n'], 0)} pairs")
        if r["live_curve"]:
            lines.append("  live curve (step: acc / consistent / A-pref / parse fail): " + "; ".join(
                f"{p['step']}: {fmt(p['accuracy'])} / {fmt(p['consistent_accuracy'])} / {fmt(p['a_preference_rate'])}"
                f" / {fmt(p['parse_failure_rate'])}" for p in r["live_curve"]))
    table4 = keep / "table4" / "report.md"
    if table4.exists():
        lines += ["", "table4 (both sweeps, Think-J's column; keep/table4/report.md):", table4.read_text().rstrip()]
    (keep / "summary.txt").write_text("\n".join(lines) + "\n")
    return doc


if __name__ == "__main__":
    report(Path(sys.argv[1]))
