"""`python -m judge_rl [overrides]`: the main job, train and evaluate a judge (judge_rl/jobs/train.py).

`judge-rl` (installed with the package) is the same command, with another app as an optional first word:

    judge-rl [overrides]            python -m judge_rl          the main job (conf/config.yaml)
    judge-rl eval [overrides]       python -m judge_rl.eval     evaluate a judge (conf/evaluate.yaml)
    judge-rl policy [overrides]     python -m judge_rl.policy   train a policy graded by a judge (conf/policy.yaml)
    judge-rl curate [overrides]     python -m judge_rl.curate   curate an SFT init set (conf/curate.yaml)
    judge-rl report <dirs> [flags]  python -m judge_rl.report   tables and charts of runs and sweeps

A Hydra override always has `=` in it (or starts with `~`, `+` or `-`), so a bare first word names an app; one
that names none fails in one line listing the apps. Each app's module is imported only when it runs. The apps' own
entry modules (`python -m judge_rl.eval`, `.policy`, `.curate`) call `main` with their word: HYDRA_APPS is the one
table of apps.
"""

from __future__ import annotations

import importlib
import sys
from typing import Sequence

# app word -> (module, function, conf/<name>.yaml); the main job has no word
HYDRA_APPS = {
    None: ("judge_rl.jobs.train", "run", "config"),
    "eval": ("judge_rl.jobs.evaluate", "run_eval", "evaluate"),
    "policy": ("judge_rl.jobs.policy", "run", "policy"),
    "curate": ("judge_rl.jobs.curate", "run_curate", "curate"),
}
APPS = (*[a for a in HYDRA_APPS if a], "report")


def main(argv: Sequence[str] | None = None) -> int:
    """The `judge-rl` console command: dispatch on the first word, then run that app on the rest of the line."""
    args = list(sys.argv[1:] if argv is None else argv)
    word = args[0] if args and not args[0].startswith(("-", "+", "~")) and "=" not in args[0] else None
    if word == "report":
        from judge_rl.report import main as report_main

        return report_main(args[1:])
    if word is not None and word not in HYDRA_APPS:
        print(f"judge-rl: error: no app {word!r}; the first word is one of {', '.join(APPS)}, or an override "
              "(key=value) of the main job", file=sys.stderr)  # fmt: skip
        return 2
    if word is not None:
        args = args[1:]
    module, function, config = HYDRA_APPS[word]
    from judge_rl.jobs.shell import hydra_app

    sys.argv = [sys.argv[0], *args]  # Hydra reads its command line from sys.argv
    hydra_app(config, getattr(importlib.import_module(module), function))
    return 0


if __name__ == "__main__":
    sys.exit(main())
