"""The summary of scale_numbers.sh (issue 53's GPU call): each step's exit status and seconds, the memory plan its
launch printed beside the peaks measured (nvidia-smi's, every process on the GPU; the allocator's, the job's own
process), the bench's ratios, and verl's perf/* and timing_s/* of the last logged step.

    python scripts/gpu_kit/scale_numbers_report.py WORK    # writes WORK/keep/summary.json and summary.txt
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

PLAN = re.compile(r"memory plan \((\w+), one (\w+) device\): peak ([\d.]+) GiB(?: of ([\d.]+) GiB)?[^;]*in the (\w+) phase")
VERL_KEYS = ("perf/mfu/actor", "perf/throughput", "actor/perf/max_memory_allocated_gb", "actor/perf/max_memory_reserved_gb",
             "timing_s/step", "timing_s/gen", "timing_s/update_actor", "timing_s/old_log_prob", "timing_s/ref",
             "timing_s/update_weights")


def steps(keep: Path) -> list[dict]:
    rows = []
    for line in (keep / "steps.tsv").read_text().splitlines() if (keep / "steps.tsv").exists() else []:
        name, rc, start, end, timeout, *note = line.split("\t")
        rows.append({"step": name, "rc": rc, "seconds": round(float(end) - float(start), 1) if rc != "skipped" else 0,
                     "timeout": timeout, "note": note[0] if note else ""})
    return rows


def plan_line(log: Path) -> dict | None:
    found = PLAN.findall(log.read_text(errors="replace")) if log.exists() else []
    if not found:
        return None
    backend, device, peak, capacity, phase = found[-1]
    return {"backend": backend, "device": device, "peak_gib": float(peak),
            "capacity_gib": float(capacity) if capacity else None, "phase": phase}


def nvsmi_peak_gib(csv_path: Path) -> float | None:
    if not csv_path.exists():
        return None
    used = [float(row[1]) for row in csv.reader(csv_path.open()) if len(row) > 2 and row[1].strip().replace(".", "").isdigit()]
    return round(max(used) / 1024, 2) if used else None


def verl_last(run: Path) -> dict:
    """verl's perf/* and timing_s/* of the last step the run logged (its metrics.jsonl, verl's rows read back)."""
    rows = []
    path = run / "metrics.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    rows = [r for r in rows if any(k in r for k in VERL_KEYS)]
    return {k: rows[-1][k] for k in VERL_KEYS if k in rows[-1]} if rows else {}


def report(work: Path) -> dict:
    keep = work / "keep"
    doc = {"steps": steps(keep), "runs": {}}
    for row in doc["steps"]:
        name = row["step"]
        entry = {"plan": plan_line(keep / "logs" / f"{name}.log"), "nvidia_smi_peak_gib": nvsmi_peak_gib(keep / "nvsmi" / f"{name}.csv")}
        run = keep / "runs" / name
        peak = run / "cuda_peak.json"
        if peak.exists():
            p = json.loads(peak.read_text())
            if p.get("cuda_initialized"):
                entry["allocator_peak_gib"] = round(p["max_memory_reserved_mb"] / 1024, 2)
        entry["verl"] = verl_last(run)
        if entry["plan"] and entry.get("nvidia_smi_peak_gib"):
            entry["plan_over_measured"] = round(entry["plan"]["peak_gib"] / entry["nvidia_smi_peak_gib"], 2)
        doc["runs"][name] = entry
    bench = keep / "bench_1.5b.json"
    if bench.exists():
        b = json.loads(bench.read_text())
        doc["bench_1.5b"] = {k: v for k, v in b.items() if k.startswith("ratio")}
        doc["bench_1.5b"]["seconds"] = {k: v["median"]["seconds"] for k, v in b.items()
                                        if isinstance(v, dict) and isinstance(v.get("median"), dict)}
    (keep / "summary.json").write_text(json.dumps(doc, indent=1))
    lines = [f"{r['step']:<12} rc {r['rc']:<8} {r['seconds']:>7}s {r['note']}" for r in doc["steps"]]
    for name, e in doc["runs"].items():
        if e["plan"] or e.get("nvidia_smi_peak_gib") or e.get("verl"):
            lines.append(f"{name}: plan {e['plan']['peak_gib'] if e['plan'] else '-'} GiB, nvidia-smi "
                         f"{e.get('nvidia_smi_peak_gib') or '-'} GiB, allocator {e.get('allocator_peak_gib') or '-'} GiB; "
                         + ", ".join(f"{k} {v:.3g}" for k, v in e.get("verl", {}).items()))
    if "bench_1.5b" in doc:
        lines.append(f"bench_1.5b: {json.dumps(doc['bench_1.5b'])}")
    (keep / "summary.txt").write_text("\n".join(lines) + "\n")
    return doc


if __name__ == "__main__":
    report(Path(sys.argv[1]))
