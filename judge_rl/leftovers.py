"""`python -m judge_rl.leftovers RUN_DIR [--list]`: stop, on this machine, every process an earlier verl launch of
RUN_DIR left running, and the shared memory they held.

A verl job's processes die with it (docs/guarantees.md), except where what owns them is killed from outside: after
`ray stop --force` on a Ray cluster the job did not start, vLLM's engine and worker processes of the job's rollout
actors outlive the actors (2.9 GB each pair). Every process of a launch carries the run dir's verl metrics path in
its environment (VERL_FILE_LOGGER_PATH, forwarded to every node), which is how they are found here. A re-launch on
the same run dir does this on its own machine before it starts; run this on each other node of the cluster. Never
while a launch of RUN_DIR is running: its processes would be stopped too.
"""

from __future__ import annotations

import argparse
import sys

from judge_rl.backends.verl.session_watchdog import command_line, launch_metrics_dir, leftover_pids, stop_leftovers

GRACE_S = 10.0  # SIGTERM, then SIGKILL


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m judge_rl.leftovers", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--list", action="store_true", help="list them (pid and command), stop nothing")
    args = parser.parse_args(argv)
    metrics = launch_metrics_dir(args.run_dir)
    if args.list:
        for pid in leftover_pids(metrics):
            print(pid, command_line(pid)[:100])
        return 0
    stopped = stop_leftovers(metrics, GRACE_S)
    print(f"judge_rl: stopped {len(stopped)} process(es) of {args.run_dir} on this machine"
          + "".join(f"\n  {name}" for name in stopped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
