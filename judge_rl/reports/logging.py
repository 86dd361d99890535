"""Metrics sinks: `metrics.jsonl` in the run directory always, Weights & Biases when `logger=wandb`.

W&B runs offline when no WANDB_API_KEY is in the environment (sync later with `wandb sync`), and in
whatever mode an explicit WANDB_MODE in the environment says; the key is only ever read from the
environment, never from config or written to logs. The run id is derived
from the run directory, so a resumed run continues the same W&B run.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from judge_rl.config import LoggerConfig
from judge_rl.reports.jsonl import open_for_append, read_jsonl


WANDB_MODES = ("auto", "online", "offline", "disabled", "shared")


def wandb_mode(configured: str, environ: Mapping[str, str] | None = None) -> str:
    """The W&B mode a run uses. An explicit `WANDB_MODE` in the environment wins (a user who exported
    WANDB_MODE=offline must never be logged in just because a key is also set); then `logger.mode`;
    `auto` is online with a `WANDB_API_KEY` in the environment and offline without one."""
    environ = os.environ if environ is None else environ
    explicit = environ.get("WANDB_MODE", "").strip()
    if explicit:
        if explicit not in WANDB_MODES[1:]:
            raise ValueError(f"WANDB_MODE={explicit!r} in the environment: expected one of {', '.join(WANDB_MODES[1:])}")
        return explicit
    if configured not in WANDB_MODES:
        raise ValueError(f"logger.mode={configured!r}: expected one of {', '.join(WANDB_MODES)}")
    if configured == "auto":
        return "online" if environ.get("WANDB_API_KEY") else "offline"
    return configured


def sweep_group(sweep_dir: str | Path) -> str:
    """The W&B group of a sweep's points: its multirun directory, `<date>_<time-suffix>`."""
    path = Path(sweep_dir)
    return f"{path.parent.name}_{path.name}" if path.parent.name else path.name


def hydra_context() -> dict[str, Any]:
    """What Hydra knows of this run: whether it is a multirun point, the sweep directory, and the
    command-line overrides (the swept choices). Outside Hydra (tests calling `run(cfg)`): a single run."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
    except (ImportError, ValueError):
        return {"multirun": False, "sweep_dir": None, "overrides": []}
    multirun = hc.mode == RunMode.MULTIRUN
    return {"multirun": multirun, "sweep_dir": str(hc.sweep.dir) if multirun else None,
            "overrides": [str(o) for o in hc.overrides.task]}


def wandb_run_labels(cfg: LoggerConfig, context: dict[str, Any]) -> dict[str, Any]:
    """W&B group, job type and the `swept` config columns: the points of one sweep share a group (the
    multirun directory unless `logger.group` is set) and a job type (`logger.job_type`, else "sweep"), and
    each carries its swept choices as `swept.<key>` config columns."""
    from judge_rl.reports.schema import override_choices

    swept = override_choices(context["overrides"])
    group = cfg.group or (sweep_group(context["sweep_dir"]) if context["multirun"] else None)
    job_type = cfg.job_type or ("sweep" if context["multirun"] else "run")
    return {"group": group, "job_type": job_type, "swept": swept}


def metrics_row(metrics: dict[str, Any], step: int) -> dict[str, Any]:
    """One line of metrics.jsonl: the step, then the metrics, NaN written as null."""
    return {"step": step, **{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}}


class MetricsLogger:
    def __init__(self, run_dir: Path, cfg: LoggerConfig, config: dict[str, Any], resume_step: int | None = None):
        self.path = run_dir / "metrics.jsonl"
        self.cfg = cfg
        self.wandb_run = None
        self.last_step: int | None = None  # the last step logged by this process
        if cfg.name == "wandb":
            import wandb

            mode = wandb_mode(cfg.mode)
            run_id = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:12]
            labels = wandb_run_labels(cfg, hydra_context())
            self.wandb_run = wandb.init(
                project=cfg.project,
                entity=cfg.entity,
                group=labels["group"],
                job_type=labels["job_type"],
                dir=str(run_dir),
                config={**config, "swept": labels["swept"]},
                tags=list(cfg.tags),
                mode=mode,
                id=run_id,
                resume="allow",
            )
        elif cfg.name != "none":
            raise ValueError(f"logger.name={cfg.name!r}: expected wandb or none")

    def drop_steps_after(self, step: int, saved: Sequence[dict[str, Any]] = ()) -> None:
        """On resume from the checkpoint of `step`: forget logged steps it does not contain (they will be redone)
        and a line torn by a crash, and write back, from `saved` (the rows the checkpoint holds), any step it
        covers whose row is missing, so every step up to `step` has exactly one row."""
        if not self.path.exists() and not saved:
            return
        rows = {int(r["step"]): r for r in saved if int(r.get("step", 0)) <= step}
        if self.path.exists():
            rows.update({int(r["step"]): r for r in read_jsonl(self.path) if r.get("step", 0) <= step})
        tmp = self.path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(json.dumps(rows[k]) + "\n" for k in sorted(rows)))
        tmp.replace(self.path)

    def log(self, metrics: dict[str, float], step: int) -> None:
        with open_for_append(self.path) as f:
            f.write(json.dumps(metrics_row(metrics, step)) + "\n")
        self.last_step = step
        if self.wandb_run is not None:
            self.wandb_run.log(metrics, step=step)

    def log_images(self, paths: Sequence[Path], prefix: str = "plots") -> None:
        """Image files (the learning-curve PNGs) to W&B as `<prefix>/<file stem>`, at the last step this
        process logged (W&B keeps steps increasing), or W&B's next step when it logged none. The files
        themselves stay in the run directory; without W&B this does nothing."""
        if self.wandb_run is None or not paths:
            return
        import wandb

        images = {f"{prefix}/{Path(p).stem}": wandb.Image(str(p)) for p in paths}
        if self.last_step is None:
            self.wandb_run.log(images)
        else:
            self.wandb_run.log(images, step=self.last_step)

    def summary(self, values: dict[str, Any]) -> None:
        if self.wandb_run is not None:
            self.wandb_run.summary.update(values)

    def history(self) -> list[dict[str, Any]]:
        return read_jsonl(self.path)

    def finish(self) -> None:
        if self.wandb_run is not None:
            self.wandb_run.finish()
