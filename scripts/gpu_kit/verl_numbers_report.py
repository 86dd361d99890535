"""The summary of scripts/gpu_kit/verl_numbers.sh: what each of its steps measured, from its folder.

    python3 scripts/gpu_kit/verl_numbers_report.py WORK      # writes WORK/keep/summary.txt and summary.json

Reads WORK/keep: steps.tsv (every step's exit status, wall, timeout), env.txt, nvsmi/<step>.csv, runs/<step>/ (each
run directory collected by first_numbers_report.py's `collect`: results.json, status.json, metrics.jsonl,
judgments), resume.json (kill_resume.py's record), logs/bench_*.log (bench_grpo_step.py's JSON line) and
main_dtype/summary.{txt,json} (first_numbers.sh's, for the fp32 and bf16 main jobs). Reports per step:
  verl_main     the verl job's wall and status, verl's per-step timings (timing_s/gen, reward, old_log_prob, ref, adv,
                update_actor, update_weights, save_checkpoint, step), the reward, and the merged judge's held-out row
  verl_resume   the signal, the step checkpointed when it was sent, the first run's exit status and status.json,
                the resume line, the second run's exit status, the steps in metrics.jsonl after both runs
  policy_vllm   the policy job's per-step timing_s/gen, judge, judge_wait and update, its judge calls and failures
  bench_*       bench_grpo_step.py's seconds per step of each side (first_numbers_report.bench)
  main_dtype    first_numbers.sh's summary lines for main_fp32 and main_bf16
Standard library only; a missing or half-written input is reported, never fatal.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from first_numbers_report import (bench, f, main_job, nvsmi_peak, read_json, read_steps,  # noqa: E402
                                  write_summary)

VERL_TIMING = ("gen", "reward", "old_log_prob", "ref", "adv", "update_actor", "update_weights", "save_checkpoint",
               "step")
POLICY_TIMING = ("gen", "judge", "judge_wait", "update", "update_weights", "step")
BENCH_STEPS = ("bench_2x4x64", "bench_8x8x128")


def metrics(run: Path) -> list[dict[str, Any]]:
    """metrics.jsonl of a collected run, one dict per step (the last line of a step wins), by step."""
    by_step: dict[int, dict[str, Any]] = {}
    path = run / "metrics.jsonl"
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and "step" in row:
                by_step[int(row["step"])] = row
    return [by_step[k] for k in sorted(by_step)]


def column(key: str) -> str:
    """The summary's name for timing_s/<key> (`step`, the whole step, is `total`: `step` is the step's number)."""
    return "total" if key == "step" else key


def timings(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """Per step: the step, its score mean and each timing_s/<key> it logged (under `column(key)`)."""
    return [{"step": r["step"], "score": r.get("critic/score/mean"),
             **{column(k): r[f"timing_s/{k}"] for k in keys if f"timing_s/{k}" in r}} for r in rows]


def timing_lines(label: str, steps: list[dict[str, Any]], keys: tuple[str, ...]) -> list[str]:
    shown = [column(k) for k in keys if any(column(k) in s for s in steps)]
    width = {k: max(len(k) + 2, 8) for k in shown}
    lines = [f"  {label} {'step':>4s}{'score':>8s}" + "".join(f"{k:>{width[k]}s}" for k in shown)]
    for s in steps:
        cells = "".join(f"{f(s.get(k), 2):>{width[k]}s}" for k in shown)
        lines.append(f"  {label} {s['step']:>4d}{f(s.get('score')):>8s}{cells}")
    return lines


def verl_main(run: Path) -> tuple[dict[str, Any] | None, list[str]]:
    m = main_job(run)
    if m is None:
        return None, ["verl_main: no run collected"]
    steps = timings(metrics(run), VERL_TIMING)
    doc = {**m, "timing": steps}
    if not m.get("complete"):
        return doc, [f"verl_main: no results.json (status {m.get('status')}: {m.get('error')})"] + \
            timing_lines("verl", steps, VERL_TIMING)
    lines = [f"verl_main: job wall {f(m['wall_s'], 1)} s ({m['status']}); verl's seconds per step:"]
    lines += timing_lines("verl", steps, VERL_TIMING)
    for stage, r in m["held_out"].items():
        lines.append(f"  held-out {stage}: acc {f(r['accuracy'])} (a {f(r['accuracy_a'])}, b {f(r['accuracy_b'])}), "
                     f"consistent {f(r['consistent_accuracy'])}, A-pref {f(r['a_preference_rate'])}, parse failures "
                     f"{f(r['parse_failure_rate'])}, {f(r['n_pairs'], 0)} pairs")
    for k, v in m["stages"].items():
        if k.startswith("eval_"):
            b = "".join(f" + {n} {f(x, 1)} s" for n, x in v["benchmarks_seconds"].items())
            lines.append(f"  {k}: {f(v['seconds'], 1)} s{b}")
    return doc, lines


def verl_resume(keep: Path) -> tuple[dict[str, Any] | None, list[str]]:
    record = read_json(keep / "resume.json")
    if record is None:
        return None, []
    steps = [r["step"] for r in metrics(keep / "runs" / "verl_resume")]
    record = {**record, "steps_logged": steps}
    resumed = record.get("resume_lines") or []
    line = (f"verl_resume: SIG{record.get('signal')} after global_step_{record.get('signalled_after_step')} was "
            f"checkpointed; first run exit {record.get('first_rc')} in {f(record.get('first_s'), 1)} s, status "
            f"{record.get('status_after_first')}, latest checkpoint global_step_{record.get('checkpoint_after_first')}")
    second = (f"  resumed: {resumed[-1] if resumed else 'no resume line'}; second run exit {record.get('second_rc')} "
              f"in "
              f"{f(record.get('second_s'), 1)} s, status {record.get('status_after_second')}; steps in metrics.jsonl "
              f"{steps}") if "second_rc" in record else "  not run again (the first run ended before the checkpoint)"
    return record, [line, second]


def policy_vllm(run: Path) -> tuple[dict[str, Any] | None, list[str]]:
    results = read_json(run / "results.json")
    status = read_json(run / "status.json") or {}
    rows = metrics(run)
    if results is None and not rows and not status:
        return None, []
    steps = timings(rows, POLICY_TIMING)
    rl = ((results or {}).get("training") or {}).get("rl") or {}
    doc = {"status": status.get("status"), "error": status.get("error"), "timing": steps, "mean": rl.get("timing"),
           "judge": rl.get("judge"), "judge_failure": rl.get("judge_failure"), "wall_s": (results or {}).get("wall_s")}
    lines = [f"policy_vllm: job wall {f(doc['wall_s'], 1)} s ({doc['status']}"
             + (f": {doc['error']}" if doc["error"] else "") + "); seconds per step:"]
    lines += timing_lines("policy", steps, POLICY_TIMING)
    judge = doc["judge"] or {}
    if judge:
        lines.append(f"  judge: {f(judge.get('calls'), 0)} calls, latency p50 {f(judge.get('latency_p50_s'), 2)} s, "
                     f"p95 {f(judge.get('latency_p95_s'), 2)} s, failed samples "
                     f"{f((doc['judge_failure'] or {}).get('samples'), 0)}")
    return doc, lines


def report(work: str | Path) -> dict[str, Any]:
    keep = Path(work) / "keep"
    steps = read_steps(keep / "steps.tsv")
    env = (keep / "env.txt").read_text(errors="replace") if (keep / "env.txt").is_file() else ""
    doc: dict[str, Any] = {"steps": steps}
    lines = ["== verl numbers (scripts/gpu_kit/verl_numbers.sh)"]
    lines += [ln for ln in env.splitlines() if ln.startswith(("mode", "date", "gpu:", "versions", "python", "glibc",
                                                              "compiler", "attention"))]
    lines.append(f"{'step':16s}{'rc':>8s}{'wall s':>9s}{'timeout':>9s}{'smi max MiB':>13s}  note")
    for s in steps:
        s["nvsmi"] = nvsmi_peak(keep / "nvsmi" / f"{s['name']}.csv")
        lines.append(f"{s['name']:16s}{s['rc']:>8s}{s['seconds']:9.1f}{s['timeout_s']:9d}"
                     f"{f((s['nvsmi'] or {}).get('memory_used_max_mib'), 0):>13s}  {s['note']}")
    for name, (value, text) in {"verl_main": verl_main(keep / "runs" / "verl_main"),
                                "verl_resume": verl_resume(keep),
                                "policy_vllm": policy_vllm(keep / "runs" / "policy_vllm")}.items():
        if value is not None or text != [f"{name}: no run collected"]:
            doc[name] = value
            lines += text
    for step in BENCH_STEPS:
        b = bench(keep / "logs" / f"{step}.log")
        if b is None:
            continue
        doc[step] = b
        s = b["settings"]
        lines.append(f"{step} [{s['prompts']}x{s['n']}x{s['max_new_tokens']}, {s['device']}]:")
        for k in [k for k in b if k == "trl" or k.startswith("judge_rl/")]:
            lines.append(f"  {k:32s} {f(b[k]['s_per_step'], 3)} s/step (gen {f(b[k]['gen'], 3)}, ref "
                         f"{f(b[k]['ref'], 3)}, update {f(b[k]['update'], 3)}; peak {f(b[k]['cuda_peak_mb'], 0)} MiB)")
        ratios = ", ".join(f"{k[len('ratio_'):]} {f(v, 2)}" for k, v in b.items()
                           if k.startswith("ratio_") and "per_generated" not in k)
        if ratios:
            lines.append(f"  ratios: {ratios}")
    dtype = keep / "main_dtype" / "summary.txt"
    if dtype.is_file():
        doc["main_dtype"] = read_json(keep / "main_dtype" / "summary.json")
        lines.append("main_dtype (first_numbers.sh):")
        lines += [f"  {ln}" for ln in dtype.read_text().splitlines()[1:] if ln.strip()]
    return write_summary(keep, lines, doc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("work", help="verl_numbers.sh's folder (VERL_NUMBERS_WORK)")
    args = ap.parse_args(argv)
    print(report(args.work)["text"], end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
