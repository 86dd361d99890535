"""Stop a training job once it has checkpointed a given step, then run it again and record how it resumed.

    python3 scripts/gpu_kit/kill_resume.py --checkpoints RUN/verl/checkpoints --after-step 2 --run-dir RUN \
        --record keep/resume.json [--signal TERM|KILL] [--grace 120] -- python3 -m judge_rl ... run_dir=RUN

1. Starts the command in its own process group, its output passed through.
2. Polls `<checkpoints>/latest_checkpointed_iteration.txt` (verl writes it after a checkpoint is complete) until it
   names `--after-step` or later, then sends the signal: TERM to the job's own process (judge_rl passes it on to
   verl's process and stops as "interrupted" with exit 143: docs/guarantees.md, "SIGTERM stops cleanly"), or KILL to the whole
   group (a crash: nothing gets to clean up). A job that ends before that is a failure (exit 3).
3. Waits `--grace` seconds for the job to exit, then kills what is left of its group (Ray's and vLLM's processes,
   which would otherwise keep the GPU's memory) and gives them a moment to go.
4. Runs the same command again, passing its output through, and keeps the lines that say where it resumed (verl:
   "Resuming from .../global_step_2", "Setting global step to 2").
5. Writes `--record` (JSON): the signal, the step checkpointed when it was sent, the first run's exit status, the
   checkpoint and status.json status it left, the resume lines, the second run's exit status, both walls.
Exit status: the second run's; 3 when the first run ended before the checkpoint. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

LATEST = "latest_checkpointed_iteration.txt"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
RESUME_MARKERS = ("Resuming from", "Setting global step to", "Load from checkpoint folder")
POLL_S = 0.5
CLEANUP_S = float(os.environ.get("KILL_RESUME_CLEANUP_S", "5"))  # after the first run: Ray and vLLM exit

_children: list[subprocess.Popen] = []


def latest_step(checkpoints: Path) -> int | None:
    try:
        return int((checkpoints / LATEST).read_text().strip())
    except (OSError, ValueError):
        return None


def kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def on_term(signum, _frame) -> None:
    """`timeout` stopping this script stops the job it runs (its whole group) too."""
    for proc in _children:
        kill_group(proc)
    sys.exit(128 + signum)


def start(command: list[str], resume_lines: list[str]) -> tuple[subprocess.Popen, threading.Thread]:
    """The command in its own process group; a thread passes its output through, keeping the resume lines."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            errors="replace", start_new_session=True)
    _children.append(proc)

    def pump() -> None:
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            if any(m in line for m in RESUME_MARKERS):
                resume_lines.append(ANSI.sub("", line).strip())  # Ray colours its workers' prefixes

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return proc, thread


def status_of(run_dir: Path | None) -> str | None:
    if run_dir is None:
        return None
    try:
        return json.loads((run_dir / "status.json").read_text()).get("status")
    except (OSError, ValueError):
        return None


def first_run(command: list[str], checkpoints: Path, after_step: int, sig: str, grace: float) -> dict:
    """Run until `after_step` is checkpointed, signal, wait, clean up the group; what happened."""
    t0 = time.monotonic()
    proc, thread = start(command, [])
    sent_at, deadline = None, None
    while proc.poll() is None:
        step = latest_step(checkpoints)
        if sent_at is None and step is not None and step >= after_step:
            sent_at = step
            print(f"\n== kill_resume: global_step_{step} checkpointed; sending SIG{sig}", flush=True)
            if sig == "KILL":
                kill_group(proc)
            else:
                proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + grace
        if deadline is not None and time.monotonic() > deadline:
            print(f"\n== kill_resume: still running {grace:.0f} s after the signal; killing its group", flush=True)
            kill_group(proc)
            deadline = None
        time.sleep(POLL_S)
    rc = proc.returncode
    kill_group(proc)  # Ray's and vLLM's processes left in the group
    thread.join(timeout=10)
    time.sleep(CLEANUP_S)
    return {"signal": sig, "signalled_after_step": sent_at, "first_rc": rc, "first_s": round(time.monotonic() - t0, 1),
            "checkpoint_after_first": latest_step(checkpoints)}


def second_run(command: list[str]) -> dict:
    t0 = time.monotonic()
    lines: list[str] = []
    proc, thread = start(command, lines)
    proc.wait()
    kill_group(proc)
    thread.join(timeout=10)
    return {"second_rc": proc.returncode, "second_s": round(time.monotonic() - t0, 1), "resume_lines": lines}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoints", required=True, type=Path, help=f"the folder with {LATEST}")
    ap.add_argument("--after-step", type=int, default=2)
    ap.add_argument("--signal", choices=("TERM", "KILL"), default="TERM")
    ap.add_argument("--grace", type=float, default=120.0, help="seconds the job gets to exit after the signal")
    ap.add_argument("--run-dir", type=Path, default=None, help="the job's run directory (its status.json)")
    ap.add_argument("--record", type=Path, required=True)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command (after --)")
    signal.signal(signal.SIGTERM, on_term)
    record = {"command": command, "after_step": args.after_step}
    record.update(first_run(command, args.checkpoints, args.after_step, args.signal, args.grace))
    record["status_after_first"] = status_of(args.run_dir)
    args.record.parent.mkdir(parents=True, exist_ok=True)
    args.record.write_text(json.dumps(record, indent=1))
    if record["signalled_after_step"] is None:
        print(f"== kill_resume: the job ended (exit {record['first_rc']}) before global_step_{args.after_step} was "
              "checkpointed; nothing to resume", flush=True)
        return 3
    print(f"== kill_resume: first run exit {record['first_rc']} (status {record['status_after_first']}), latest "
          f"checkpoint global_step_{record['checkpoint_after_first']}; running it again", flush=True)
    record.update(second_run(command))
    record["status_after_second"] = status_of(args.run_dir)
    args.record.write_text(json.dumps(record, indent=1))
    print(f"== kill_resume: resumed: {record['resume_lines'][-1] if record['resume_lines'] else 'no resume line'}; "
          f"second run exit {record['second_rc']}", flush=True)
    return record["second_rc"]


if __name__ == "__main__":
    sys.exit(main())
