"""The bookkeeping of scripts/gpu_kit/first_numbers.sh: collect a run's judgments, and report what the run measured.

    python3 scripts/gpu_kit/first_numbers_report.py collect RUN_DIR DEST     # a run's judgments + summaries, flat
    python3 scripts/gpu_kit/first_numbers_report.py report WORK [--cpu-ref DIR]

`collect` copies what a judge_rl run directory says about its verdicts into DEST, one flat folder:
`<stage>.jsonl` (eval/<stage>/judgments.jsonl of the main job; `eval.jsonl` for `python -m judge_rl.eval`, whose
judgments are at the top), `<stage>.<benchmark>.jsonl` (eval/<stage>/benchmarks/<benchmark>/judgments.jsonl), the
matching `*.summary.json`, and results.json, status.json, metrics.jsonl. The CPU reference run is collected the
same way (docs/performance.md "On one NVIDIA H200"), so the two folders compare file by file.

`report` reads WORK (first_numbers.sh's folder: keep/steps.tsv, keep/runs/<step>/, keep/logs/, keep/peak/,
keep/nvsmi/) and writes keep/summary.txt and keep/summary.json: per step its exit status, wall and timeout, the
GPU memory peaks (PyTorch's allocator, from cuda_peak.py; the device's memory.used, from nvidia-smi), per main
job its stage times and held-out table, verdict agreement with the CPU reference (`--cpu-ref`, a collected
folder) and between the GPU runs, the GRPO step benchmark's seconds per step, and the eval harness's pairs/s.
Standard library only; a missing or half-written input is reported, never fatal.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_verdicts import compare_files  # noqa: E402

MAIN_STEPS = ("main_fp32", "main_bf16")
BENCH_STEPS = ("bench_2x4x64", "bench_8x8x128")
EVAL_STEP = "eval_hf"


# -- collect ------------------------------------------------------------------------------------------------------
def collect(run_dir: str | Path, dest: str | Path) -> list[str]:
    """Copy a run directory's judgments and summaries into `dest` (flat names, see the module docstring)."""
    run, out = Path(run_dir), Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    copied: list[str] = []

    def put(src: Path, name: str) -> None:
        if src.is_file():
            shutil.copyfile(src, out / name)
            copied.append(name)

    for name in ("results.json", "status.json", "metrics.jsonl"):
        put(run / name, name)
    put(run / "judgments.jsonl", "eval.jsonl")  # python -m judge_rl.eval
    put(run / "summary.json", "eval.summary.json")
    for stage_dir in sorted(p for p in (run / "eval").glob("*") if p.is_dir()):
        stage = stage_dir.name
        put(stage_dir / "judgments.jsonl", f"{stage}.jsonl")
        put(stage_dir / "summary.json", f"{stage}.summary.json")
        for bench in sorted(p for p in (stage_dir / "benchmarks").glob("*") if p.is_dir()):
            put(bench / "judgments.jsonl", f"{stage}.{bench.name}.jsonl")
            put(bench / "summary.json", f"{stage}.{bench.name}.summary.json")
    return copied


# -- readers -------------------------------------------------------------------------------------------------------
def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_steps(path: Path) -> list[dict[str, Any]]:
    """keep/steps.tsv: name, rc, start epoch, end epoch, timeout s, note (one line per step, the last one wins)."""
    steps: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return []
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) < 5:
            continue
        name, rc, start, end, timeout = parts[:5]
        steps[name] = {"name": name, "rc": rc, "start": float(start), "end": float(end),
                       "seconds": float(end) - float(start), "timeout_s": int(timeout),
                       "note": parts[5] if len(parts) > 5 else ""}
    return list(steps.values())


def nvsmi_peak(path: Path) -> dict[str, Any] | None:
    """Max memory.used (MiB) and max utilization (%) of nvidia-smi's CSV (timestamp, used, total, util)."""
    if not path.is_file():
        return None
    used, util, total = [], [], None
    with open(path) as f:
        for row in csv.reader(f):
            try:
                used.append(float(row[1]))
                total = float(row[2])
                util.append(float(row[3]))
            except (IndexError, ValueError):
                continue
    if not used:
        return None
    return {"memory_used_max_mib": max(used), "memory_total_mib": total, "util_max_pct": max(util) if util else None,
            "samples": len(used)}


def last_json_line(path: Path) -> dict[str, Any] | None:
    """The last line of a log that parses as a JSON object (bench_grpo_step.py ends with one)."""
    if not path.is_file():
        return None
    for line in reversed(path.read_text(errors="replace").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


# -- per measurement -----------------------------------------------------------------------------------------------
def main_job(run: Path) -> dict[str, Any] | None:
    """Stage times and the held-out table of a collected main-job run (keep/runs/<step>/)."""
    results = read_json(run / "results.json")
    status = read_json(run / "status.json") or {}
    if results is None:
        return {"status": status.get("status"), "error": status.get("error"), "complete": False} if status else None
    training = results.get("training", {})
    stages: dict[str, Any] = {}
    sft = training.get("sft") or {}
    if sft:
        stages["sft"] = {"seconds": sft.get("sft/seconds"), "steps": sft.get("sft/steps"),
                         "s_per_step": sft.get("sft/seconds_per_step"), "reused": bool(sft.get("sft/reused"))}
    history = []
    if (run / "metrics.jsonl").is_file():
        for line in (run / "metrics.jsonl").read_text().splitlines():
            try:
                history.append(json.loads(line))
            except ValueError:
                continue
    step_s = [h["timing_s/step"] for h in history if "timing_s/step" in h]
    testing_s = [h["timing_s/testing"] for h in history if "timing_s/testing" in h]
    if step_s:
        rl = {"steps": len(step_s), "seconds_steps": sum(step_s), "s_per_step": sum(step_s) / len(step_s),
              "seconds_live_eval": sum(testing_s)}
        for key in ("gen", "ref", "update_actor"):
            vals = [h[f"timing_s/{key}"] for h in history if f"timing_s/{key}" in h]
            if vals:
                rl[f"s_{key}_mean"] = sum(vals) / len(vals)
        stages["rl"] = rl
    table = {}
    for stage, entry in (results.get("evaluations") or {}).items():
        summary = read_json(run / f"{stage}.summary.json") or {}
        held = (entry or {}).get("held_out") or {}
        m = held.get("metrics") or {}
        row = {k: m.get(k) for k in ("accuracy", "accuracy_a", "accuracy_b", "consistent_accuracy",
                                      "a_preference_rate", "parse_failure_rate", "n_pairs")}
        table[stage] = row
        bench_s = {}
        for p in sorted(run.glob(f"{stage}.*.summary.json")):
            bench = p.name[len(stage) + 1:-len(".summary.json")]
            bench_s[bench] = (read_json(p) or {}).get("seconds")
        stages[f"eval_{stage}"] = {"seconds": summary.get("seconds"), "benchmarks_seconds": bench_s}
    wall = results.get("wall_s")
    sft_s = None if stages.get("sft", {}).get("reused") else stages.get("sft", {}).get("seconds")  # a cached init: 0 s here
    accounted = sum(v for v in (
        sft_s, stages.get("rl", {}).get("seconds_steps"),
        stages.get("rl", {}).get("seconds_live_eval"),
        *(s.get("seconds") for k, s in stages.items() if k.startswith("eval_")),
        *(b for k, s in stages.items() if k.startswith("eval_") for b in s["benchmarks_seconds"].values()),
    ) if isinstance(v, (int, float)))
    return {"status": status.get("status"), "error": status.get("error"), "complete": True, "wall_s": wall,
            "stages": stages, "other_s": (wall - accounted) if isinstance(wall, (int, float)) else None,
            "held_out": table}


def bench(log: Path) -> dict[str, Any] | None:
    r = last_json_line(log)
    if r is None:
        return None
    out: dict[str, Any] = {"settings": {k: r.get("settings", {}).get(k) for k in
                                        ("device", "prompts", "n", "max_new_tokens", "steps", "warmup")}}
    for side in [k for k in r if k == "trl" or k.startswith("judge_rl/")]:
        m = r[side].get("median", {})
        out[side] = {"s_per_step": m.get("seconds"), "gen": m.get("timing_s/gen", m.get("gen")),
                     "ref": m.get("timing_s/ref", m.get("ref_reward_adv")),
                     "update": m.get("timing_s/update_actor", m.get("update")),
                     "generated_tokens": m.get("generated_tokens"), "cuda_peak_mb": r[side].get("cuda_peak_mb")}
    for k, v in r.items():
        if k.startswith("ratio_"):
            out[k] = v
    if "raw" in r:
        raw = r["raw"]
        out["raw"] = {"prefill_tok_s": raw.get("prefill_tokens_per_s"), "fwd_bwd_tok_s": raw.get("fwd_bwd_tokens_per_s"),
                      "decode_steps_s": (raw.get("decode") or {}).get("steps_per_s")}
    return out


def eval_harness(run: Path) -> dict[str, Any] | None:
    s = read_json(run / "eval.summary.json")
    if s is None:
        status = read_json(run / "status.json") or {}
        return {"status": status.get("status"), "error": status.get("error")} if status else None
    c = s.get("counts", {})
    seconds = s.get("seconds") or 0.0
    units = c.get("units", 0) - c.get("too_long_units", 0)
    overall = (s.get("harness") or {}).get("overall") or {}
    return {"pairs": units, "requests": c.get("requests_sent"), "seconds": seconds,
            "pairs_per_s": units / seconds if seconds else None, "requests_per_s": s.get("requests_per_s"),
            "accuracy": overall.get("accuracy"), "parse_failures": c.get("parse_failures"),
            "official": s.get("official")}


def agreements(keep: Path, cpu_ref: Path | None) -> dict[str, Any]:
    """Verdict agreement per judgments file: each GPU main run against the CPU reference, and bf16 against fp32."""
    out: dict[str, Any] = {}
    runs = keep / "runs"
    pairs = []
    if cpu_ref is not None and cpu_ref.is_dir():
        for step in MAIN_STEPS:
            pairs += [(f"cpu_vs_{step}", cpu_ref, runs / step)]
    pairs.append(("main_fp32_vs_main_bf16", runs / "main_fp32", runs / "main_bf16"))
    for label, a_dir, b_dir in pairs:
        if not b_dir.is_dir() or not a_dir.is_dir():
            continue
        for a_file in sorted(a_dir.glob("*.jsonl")):
            if a_file.name in ("metrics.jsonl", "eval.jsonl"):
                continue
            b_file = b_dir / a_file.name
            if b_file.is_file():
                r = compare_files(a_file, b_file)
                out.setdefault(label, {})[a_file.stem] = {k: r[k] for k in (
                    "n_common", "agreement", "agreement_parsed", "accuracy_a", "accuracy_b", "n_only_a", "n_only_b")}
    return out


# -- report --------------------------------------------------------------------------------------------------------
def f(x: Any, nd: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def write_summary(keep: Path, lines: list[str], doc: dict[str, Any]) -> dict[str, Any]:
    """`lines` as keep/summary.txt and `doc` as keep/summary.json; returns the report ({"text": ..., **doc})."""
    text = "\n".join(lines) + "\n"
    keep.mkdir(parents=True, exist_ok=True)
    (keep / "summary.txt").write_text(text)
    (keep / "summary.json").write_text(json.dumps(doc, indent=1, default=str))
    return {"text": text, **doc}


def report(work: str | Path, cpu_ref: str | Path | None = None) -> dict[str, Any]:
    keep = Path(work) / "keep"
    steps = read_steps(keep / "steps.tsv")
    env = (keep / "env.txt").read_text(errors="replace") if (keep / "env.txt").is_file() else ""
    doc: dict[str, Any] = {"steps": steps, "main": {}, "bench": {}, "eval": None, "agreement": {}}
    lines = ["== first numbers (scripts/gpu_kit/first_numbers.sh)"]
    lines += [ln for ln in env.splitlines() if ln.startswith(("mode", "date", "gpu", "torch", "python"))]
    lines.append(f"{'step':16s}{'rc':>6s}{'wall s':>9s}{'timeout':>9s}{'torch peak MiB':>16s}{'smi max MiB':>13s}  note")
    for s in steps:
        peak = read_json(keep / "peak" / f"{s['name']}.json") or {}
        smi = nvsmi_peak(keep / "nvsmi" / f"{s['name']}.csv")
        s["torch_peak_mib"] = peak.get("max_memory_allocated_mb")
        s["torch_reserved_mib"] = peak.get("max_memory_reserved_mb")
        s["nvsmi"] = smi
        lines.append(f"{s['name']:16s}{s['rc']:>6s}{s['seconds']:9.1f}{s['timeout_s']:9d}"
                     f"{f(s['torch_peak_mib'], 0):>16s}{f((smi or {}).get('memory_used_max_mib'), 0):>13s}  {s['note']}")
    for step in MAIN_STEPS:
        m = main_job(keep / "runs" / step)
        if m is None:
            continue
        doc["main"][step] = m
        if not m.get("complete"):
            lines.append(f"{step}: no results.json (status {m.get('status')}: {m.get('error')})")
            continue
        st = m["stages"]
        parts = []
        if "sft" in st:
            if st["sft"]["reused"]:
                parts.append(f"sft reused from the cache ({f(st['sft']['steps'], 0)} steps, "
                             f"{f(st['sft']['seconds'], 1)} s when trained)")
            else:
                parts.append(f"sft {f(st['sft']['seconds'], 1)} s ({f(st['sft']['steps'], 0)} steps, "
                             f"{f(st['sft']['s_per_step'], 2)} s/step)")
        for k, v in st.items():
            if k.startswith("eval_"):
                b = "".join(f" + {n} {f(x, 1)} s" for n, x in v["benchmarks_seconds"].items())
                parts.append(f"{k} {f(v['seconds'], 1)} s{b}")
        if "rl" in st:
            rl = st["rl"]
            parts.append(f"rl {rl['steps']} steps {f(rl['seconds_steps'], 1)} s ({f(rl['s_per_step'], 2)} s/step: gen "
                         f"{f(rl.get('s_gen_mean'), 2)}, ref {f(rl.get('s_ref_mean'), 2)}, update "
                         f"{f(rl.get('s_update_actor_mean'), 2)}) + live eval {f(rl['seconds_live_eval'], 1)} s")
        lines.append(f"{step}: job wall {f(m['wall_s'], 1)} s ({m['status']}); " + "; ".join(parts)
                     + f"; other (loads, checkpoints, plots) {f(m['other_s'], 1)} s")
        lines.append(f"  held-out {'stage':8s}{'acc':>7s}{'acc@a':>7s}{'acc@b':>7s}{'cons':>7s}{'A-pref':>8s}"
                     f"{'parse-f':>8s}{'pairs':>6s}")
        for stage, r in m["held_out"].items():
            lines.append(f"  held-out {stage:8s}{f(r['accuracy']):>7s}{f(r['accuracy_a']):>7s}{f(r['accuracy_b']):>7s}"
                         f"{f(r['consistent_accuracy']):>7s}{f(r['a_preference_rate']):>8s}"
                         f"{f(r['parse_failure_rate']):>8s}{f(r['n_pairs'], 0):>6s}")
    for step in BENCH_STEPS:
        b = bench(keep / "logs" / f"{step}.log")
        if b is None:
            continue
        doc["bench"][step] = b
        sides = [k for k in b if k == "trl" or k.startswith("judge_rl/")]
        desc = ", ".join(f"{k} {f(b[k]['s_per_step'], 2)} s/step (gen {f(b[k]['gen'], 2)}, ref {f(b[k]['ref'], 2)}, "
                         f"update {f(b[k]['update'], 2)}; peak {f(b[k]['cuda_peak_mb'], 0)} MiB)" for k in sides)
        ratios = ", ".join(f"{k[len('ratio_'):]} {f(v, 2)}" for k, v in b.items()
                           if k.startswith("ratio_") and "per_generated" not in k)
        s = b["settings"]
        lines.append(f"{step} [{s['prompts']}x{s['n']}x{s['max_new_tokens']}, {s['device']}]: {desc}; ratio {ratios or '-'}")
    e = eval_harness(keep / "runs" / EVAL_STEP)
    if e is not None:
        doc["eval"] = e
        if "pairs_per_s" in e:
            lines.append(f"{EVAL_STEP}: {e['pairs']} pairs ({e['requests']} requests) in {f(e['seconds'], 1)} s = "
                         f"{f(e['pairs_per_s'], 2)} pairs/s, {f(e['requests_per_s'], 2)} requests/s; accuracy "
                         f"{f(e['accuracy'])}, parse failures {e['parse_failures']}")
        else:
            lines.append(f"{EVAL_STEP}: no summary (status {e.get('status')}: {e.get('error')})")
    doc["agreement"] = agreements(keep, Path(cpu_ref) if cpu_ref else None)
    if cpu_ref and not Path(cpu_ref).is_dir():
        lines.append(f"agreement with the CPU reference: no folder {cpu_ref} (compare later with compare_verdicts.py)")
    for label, files in doc["agreement"].items():
        for name, r in files.items():
            lines.append(f"agreement {label} {name}: {f(r['agreement'])} over {r['n_common']} items (parsed both "
                         f"{f(r['agreement_parsed'])}); accuracy {f(r['accuracy_a'])} vs {f(r['accuracy_b'])}"
                         + (f"; missing {r['n_only_a']} / {r['n_only_b']}" if r["n_only_a"] or r["n_only_b"] else ""))
    return write_summary(keep, lines, doc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="copy a run directory's judgments and summaries into a flat folder")
    c.add_argument("run_dir")
    c.add_argument("dest")
    r = sub.add_parser("report", help="summarize first_numbers.sh's folder")
    r.add_argument("work")
    r.add_argument("--cpu-ref", default=None, help="a collected CPU reference run")
    args = ap.parse_args(argv)
    if args.cmd == "collect":
        copied = collect(args.run_dir, args.dest)
        print(f"collected {len(copied)} files from {args.run_dir} into {args.dest}: {', '.join(copied) or 'none'}")
        return 0 if copied else 2
    print(report(args.work, args.cpu_ref)["text"], end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
