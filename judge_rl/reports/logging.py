"""Metrics sinks: `metrics.jsonl` in the run directory always, Weights & Biases when `logger=wandb`.

W&B runs offline when no WANDB_API_KEY is in the environment (sync later with `wandb sync`); the key
is only ever read from the environment, never from config or written to logs. The run id is derived
from the run directory, so a resumed run continues the same W&B run.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

from judge_rl.config import LoggerConfig


class MetricsLogger:
    def __init__(self, run_dir: Path, cfg: LoggerConfig, config: dict[str, Any], resume_step: int | None = None):
        self.path = run_dir / "metrics.jsonl"
        self.cfg = cfg
        self.wandb_run = None
        if cfg.name == "wandb":
            import wandb

            mode = cfg.mode
            if mode == "auto":
                mode = "online" if os.environ.get("WANDB_API_KEY") else "offline"
            run_id = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:12]
            self.wandb_run = wandb.init(
                project=cfg.project,
                entity=cfg.entity,
                dir=str(run_dir),
                config=config,
                tags=list(cfg.tags),
                mode=mode,
                id=run_id,
                resume="allow",
            )
        elif cfg.name != "none":
            raise ValueError(f"logger.name={cfg.name!r}: expected wandb or none")

    def drop_steps_after(self, step: int) -> None:
        """On resume: forget logged steps the checkpoint does not contain (they will be redone)."""
        if not self.path.exists():
            return
        keep = [line for line in self.path.read_text().splitlines() if json.loads(line).get("step", 0) <= step]
        self.path.write_text("".join(line + "\n" for line in keep))

    def log(self, metrics: dict[str, float], step: int) -> None:
        clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}
        with self.path.open("a") as f:
            f.write(json.dumps({"step": step, **clean}) + "\n")
        if self.wandb_run is not None:
            self.wandb_run.log(metrics, step=step)

    def summary(self, values: dict[str, Any]) -> None:
        if self.wandb_run is not None:
            self.wandb_run.summary.update(values)

    def history(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines()]

    def finish(self) -> None:
        if self.wandb_run is not None:
            self.wandb_run.finish()
