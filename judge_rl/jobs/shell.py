"""The one app shell of judge_rl's Hydra apps: `python -m judge_rl` (jobs/train.py), `python -m judge_rl.eval`
(jobs/evaluate.py), `python -m judge_rl.policy` (jobs/policy.py), `python -m judge_rl.curate` (curate/).

    hydra_app("evaluate", run_eval)     # an entry module's whole body: conf/ found once (config/paths.py)

- A failure prints one line, `judge_rl: error: <Type>: <message>`, and exits 1; Hydra's traceback is
  kept for `HYDRA_FULL_ERROR=1`.
- Every run directory ends with a `status.json` (judge_rl/rundir.py); a failure before the run
  directory was claimed (a bad config) is written into Hydra's job directory.
- In a multirun, a failing point does not stop or hide the others: its error goes into its own
  directory, the sweep goes on, and it ends (`SweepReport`, a Hydra callback in conf/*.yaml) with the
  list of points that did not finish and their one-line reasons, and exit code 1.
- SIGTERM (a scheduler's preemption or time limit) stops the app cleanly (judge_rl/stopping.py): status.json says
  "interrupted", the exit code is 143, and a re-run in the same run_dir resumes.
- A config-group choice that names no option (`algorithm=nope`, or one value of a sweep) fails before anything
  runs with one line listing the available options.
- `--dry-run` is sugar for the override `dry_run=true`.
- A sweep whose points read an environment variable that is not set (`${oc.env:JUDGE_RL_LADDER}` in
  conf/reward_judge/ladder_*.yaml) fails before any point runs, with one line saying what to set and which sweep
  makes the directory it names (`SweepReport.on_multirun_start`, `missing_sweep_env`).
- Compiled kernels a killed process left half-written in torch's shared cache are removed as an app starts
  (judge_rl/kernel_cache.py): one would otherwise fail every later run that compiles it.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from judge_rl import stopping
from judge_rl.kernel_cache import drop_truncated_kernels
from judge_rl.config.paths import CONF_DIR, REPO_ROOT, set_repo_root_env
from judge_rl.rundir import STATUS_FILE, one_line, read_status, write_status
from judge_rl.reports.logging import hydra_context
from judge_rl.reports.schema import hydra_overrides

HINT = "(HYDRA_FULL_ERROR=1 shows the traceback)"


def _full_error() -> bool:
    return os.environ.get("HYDRA_FULL_ERROR", "") not in ("", "0")


def _job_dir() -> Path | None:
    try:
        return Path(HydraConfig.get().runtime.output_dir)
    except (ValueError, AttributeError):  # not under Hydra (e.g. called directly)
        return None


def flags_to_overrides(argv: list[str]) -> list[str]:
    """`--dry-run` is sugar for the override `dry_run=true` (Hydra owns the other flags). A single run given
    `run_dir=<dir>` gets `hydra.run.dir=<dir>` too: Hydra's own files (`.hydra/`) and the job's log
    (`judge_rl.log`) go into the run directory, and nothing into ./outputs/<date>/<time>/ (a sweep's points are
    its own subfolders, and an explicit hydra.run.dir wins)."""
    argv = ["dry_run=true" if a == "--dry-run" else a for a in argv]
    run_dir = [a.split("=", 1)[1] for a in argv if a.startswith("run_dir=")]
    sweep = any(a in ("-m", "--multirun") for a in argv)
    if run_dir and not sweep and not any(a.startswith("hydra.run.dir=") for a in argv):
        argv.append(f"hydra.run.dir={run_dir[-1]}")
    return argv


def hydra_task(run_fn: Callable[[DictConfig], Any]) -> Callable[[DictConfig], Any]:
    """Wrap an app's `run(cfg)` for `@hydra.main` (see the module docstring)."""

    @functools.wraps(run_fn)
    def task(cfg: DictConfig) -> Any:
        stopping.install()  # again here: a launcher (submitit on SLURM) runs this in a process of its own
        drop_truncated_kernels()  # a kill -9 mid-compile must not break every later run on this machine
        try:
            return run_fn(cfg)
        except stopping.Terminated:  # status.json already says interrupted (rundir.claim_run_dir)
            job_dir = _job_dir()
            if job_dir is not None and read_status(job_dir) is None:
                job_dir.mkdir(parents=True, exist_ok=True)
                write_status(job_dir, "interrupted", stopping.signal_name())
            signal_name = stopping.stopped_for_requeue()
            if signal_name:
                print(f"judge_rl: stopped by {signal_name} (submitit: preemption or time limit); what was complete is "
                      "saved; submitit requeues the job, which resumes", file=sys.stderr, flush=True)  # fmt: skip
                stopping.requeue()  # exits: submitit requeues the job (or raises why it will not)
            print(f"judge_rl: interrupted by {stopping.signal_name()}; what was complete is saved, a re-run in the same "
                  f"run_dir resumes (exit {stopping.EXIT_CODE})", file=sys.stderr, flush=True)  # fmt: skip
            sys.exit(stopping.EXIT_CODE)  # a sweep stops too: its scheduler asked the whole job to stop
        except Exception as e:
            line = one_line(e)
            job_dir = _job_dir()
            if job_dir is not None and read_status(job_dir) is None:  # failed before claiming its run_dir
                job_dir.mkdir(parents=True, exist_ok=True)
                write_status(job_dir, "failed", line)
            if _full_error():
                raise
            if hydra_context()["multirun"]:
                print(f"judge_rl: sweep point {job_dir} failed: {line}", file=sys.stderr, flush=True)
                return None  # the sweep goes on; SweepReport lists the failures at its end
            print(f"judge_rl: error: {line} {HINT}", file=sys.stderr, flush=True)
            sys.exit(1)

    return task


def unknown_choice(argv: list[str], config_name: str = "config") -> str | None:
    """The first config-group choice on the command line that names no option of its group (`algorithm=nope`, or
    one value of a sweep `algorithm=direct,nope`), as one line naming the available options; None when every choice
    exists. Hydra would say so only after composing, in several lines, and a sweep would run nothing. A group the
    app's config lists in its defaults added with `+` (`+experiments=x`, the spelling before it was listed) is named
    too: Hydra's own words for it ("Multiple values for experiments") do not say what to type."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType

    if any(a.startswith(("--config-dir", "--config-path", "-cd", "-cp", "hydra.searchpath")) for a in argv):
        return None  # options may come from other directories: Hydra itself says which exist
    try:
        overrides = OverridesParser.create().parse_overrides([a for a in argv if not a.startswith("-")])
    except Exception:  # noqa: BLE001  a malformed override: Hydra's own message says what is wrong
        return None
    roots = _config_roots()
    listed = _defaults_groups(config_name)
    for o in overrides:
        group = o.key_or_group
        dirs = [d / group for d in roots if not group.startswith("hydra") and (d / group).is_dir()]
        if o.is_delete() or not dirs:
            continue
        if o.is_add() and group in listed:
            return (f"{o.input_line}: {group} is in conf/{config_name}.yaml's defaults list, so it is chosen without "
                    f"the +: {o.input_line.removeprefix('+')}")
        if o.value_type == ValueType.ELEMENT:
            values = [o.value()]
        elif o.value_type in (ValueType.CHOICE_SWEEP, ValueType.SIMPLE_CHOICE_SWEEP):
            values = list(o.value().list)
        else:  # glob, range, interval: Hydra resolves them
            continue
        for value in values:
            if isinstance(value, str) and not any((d / f"{value}.yaml").is_file() for d in dirs):
                known = sorted({p.stem for d in dirs for p in d.glob("*.yaml") if not p.stem.startswith("_")})
                return f"{group}={value}: no such {group} option; available: {', '.join(known)}"
    return None


_ENV_NO_DEFAULT = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)\}")


def _defaults_groups(config_name: str) -> set[str]:
    """The config groups conf/<config_name>.yaml lists in its defaults (`model`, `experiments`, ...)."""
    import yaml

    path = CONF_DIR / f"{config_name}.yaml"
    entries = yaml.safe_load(path.read_text()).get("defaults", []) if path.is_file() else []
    return {key.removeprefix("optional ").strip() for entry in entries if isinstance(entry, dict) for key in entry}


def _config_roots() -> tuple[Path, ...]:
    return (CONF_DIR, Path(os.environ.get("JUDGE_RL_ROOT") or REPO_ROOT))  # conf/config.yaml's search path


def _swept_option_files(overrides: list[str]) -> list[tuple[str, Path]]:
    """The config-group option files that overrides (`+reward_judge=a,b`, sweeps included) choose, as
    ("group=value", file); choices that name no file (plain values, globs, ranges) are left out."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception:  # noqa: BLE001  a malformed override: Hydra's own message says what is wrong
        return []
    out = []
    for o in parsed:
        group = o.key_or_group
        if o.is_delete() or group.startswith("hydra"):
            continue
        if o.value_type == ValueType.ELEMENT:
            values = [o.value()]
        elif o.value_type in (ValueType.CHOICE_SWEEP, ValueType.SIMPLE_CHOICE_SWEEP):
            values = list(o.value().list)
        else:
            continue
        for value in values:
            for root in _config_roots():
                path = root / group / f"{value}.yaml"
                if isinstance(value, str) and path.is_file():
                    out.append((f"{group}={value}", path))
                    break
    return out


def env_maker(name: str) -> str | None:
    """The sweep whose points are written under `$name` (its `hydra.sweep.dir` is `${oc.env:name}`), as the command
    that runs it; None when no sweep of sweeps/ does."""
    for root in _config_roots():
        for sweep in sorted((root / "sweeps").glob("*.yaml")):
            text = sweep.read_text()
            if re.search(r"^\s*dir:\s*\$\{oc\.env:" + re.escape(name) + r"\}", text, re.M):
                app = "judge_rl.policy" if "\n# job: judge_rl.policy" in text else "judge_rl"
                return f"python -m {app} -m +sweeps={sweep.stem} (sweeps/{sweep.name})"
    return None


def missing_sweep_env(config: DictConfig) -> str | None:
    """One line for the first environment variable that a point of this multirun reads without a default
    (`${oc.env:NAME}` in a swept config-group option) and that is not set: which points read it, what to set, and
    which sweep makes the directory; None when every one is set. Without it such a sweep runs its other points and
    fails each of these with an InterpolationResolutionError."""
    overrides = [str(o) for o in (config.hydra.overrides.get("task") or [])]
    params = config.hydra.sweeper.get("params") or {}
    overrides += [f"{k}={v}" for k, v in params.items()]
    readers: dict[str, list[str]] = {}
    for choice, path in _swept_option_files(overrides):
        for name in _ENV_NO_DEFAULT.findall(path.read_text()):
            if not os.environ.get(name) and choice not in readers.setdefault(name, []):
                readers[name].append(choice)
    for name, choices in readers.items():
        maker = env_maker(name)
        made = f", the directory `{maker}` writes its points into (run that sweep first)" if maker else ""
        more = f" and {len(choices) - 1} more" if len(choices) > 1 else ""
        return f"{name} is not set, and the sweep's points {choices[0]}{more} read it: export {name}=<dir>{made}"
    return None


def quiet_library_progress() -> None:
    """No per-file tqdm bars from the libraries (transformers' "Loading weights", datasets' "Tokenizing train
    dataset", the hub's downloads): each stage shows one bar of its own (judge_rl/reports/console.py). An explicit
    HF_HUB_DISABLE_PROGRESS_BARS / HF_DATASETS_DISABLE_PROGRESS_BARS=0 in the environment keeps them."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    if os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and "transformers" in sys.modules:  # imported before this
        sys.modules["transformers"].utils.logging.disable_progress_bar()


def hydra_app(config_name: str, run_fn: Callable[[DictConfig], Any]) -> None:
    """Run `run_fn` as the Hydra app of conf/<config_name>.yaml on this process's command line (see the module
    docstring)."""
    set_repo_root_env()
    stopping.install()
    quiet_library_progress()
    sys.argv = [sys.argv[0], *flags_to_overrides(sys.argv[1:])]
    bad = unknown_choice(sys.argv[1:], config_name)
    if bad is not None:
        print(f"judge_rl: error: {bad}", file=sys.stderr, flush=True)
        sys.exit(1)
    try:
        hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name=config_name)(hydra_task(run_fn))()
    except stopping.Terminated:  # between sweep points, or while Hydra composes: nothing of a run to save
        print("judge_rl: interrupted by SIGTERM", file=sys.stderr, flush=True)
        sys.exit(stopping.EXIT_CODE)


def write_sweep_report(config: DictConfig, sweep_dir: Path) -> None:
    """The sweep's report.{md,csv,png} (judge_rl/report.py); a report that cannot be written is said, and
    never hides the sweep's own outcome."""
    from judge_rl.report import write_report

    report = config.get("report") or {}
    try:
        files = write_report([sweep_dir], sweep_dir, columns=report.get("columns"), paper=report.get("paper"),
                             chart=report.get("chart"), scatter=report.get("scatter"), versus=report.get("versus"))
    except Exception as e:  # noqa: BLE001  the points' results are on disk; the report can be rerun by hand
        print(f"judge_rl: sweep report not written: {one_line(e)}; rerun `python -m judge_rl.report {sweep_dir}`",
              file=sys.stderr, flush=True)
        return
    files.pop("table")
    print(files["markdown"].read_text(), flush=True)
    print(f"judge_rl: sweep report: {', '.join(str(p) for p in files.values())}", flush=True)


def sweep_failures(sweep_dir: Path) -> list[str]:
    """One line per point of a sweep that did not finish: its directory, the overrides that make it
    differ from the other points, and its reason."""
    points = sorted({p.parent for p in sweep_dir.glob(f"*/{STATUS_FILE}")} | {p.parent for p in sweep_dir.glob("*/.hydra")},
                    key=lambda p: (len(p.name), p.name))
    overrides = {p: hydra_overrides(p) for p in points}
    shared = set.intersection(*(set(o) for o in overrides.values())) if len(points) > 1 else set()
    lines = []
    for point in points:
        status = read_status(point) or {"status": "no status written", "error": None}
        if status["status"] != "finished":
            swept = " ".join(o for o in overrides[point] if o not in shared)
            lines.append(f"{point} ({swept}): {status['status']}: {status.get('error') or status['status']}")
    return lines


class SweepReport(Callback):
    """At the end of a multirun: write the sweep's table (`python -m judge_rl.report`, with the config's
    `report.*`) into the sweep directory, then list the points that did not finish, and exit 1 if there
    are any (their rows in the table say so too). At its start: refuse, in one line, a sweep whose points read an
    environment variable that is not set (`missing_sweep_env`), before any point runs."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        missing = missing_sweep_env(config)
        if missing is not None:
            print(f"judge_rl: error: {missing}", file=sys.stderr, flush=True)
            sys.exit(1)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        write_sweep_report(config, sweep_dir)
        failed = sweep_failures(sweep_dir)
        if failed:
            n_points = len({p.parent for p in sweep_dir.glob("*/.hydra")})
            print(f"judge_rl: {len(failed)} of {n_points} sweep points did not finish:", file=sys.stderr)
            for line in failed:
                print(f"  {line}", file=sys.stderr)
            sys.stderr.flush()
            sys.exit(1)
