"""`python -m judge_rl [overrides]`: the main job (see judge_rl/app.py)."""

import os
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from judge_rl.app import run
from judge_rl.cli import hydra_task

REPO_ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = str(REPO_ROOT / "conf")
# conf/config.yaml adds the repo root to Hydra's search path so that experiments/ is a config group.
os.environ.setdefault("JUDGE_RL_ROOT", str(REPO_ROOT))


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    hydra_task(run)(cfg)


def _flags_to_overrides(argv: list[str]) -> list[str]:
    """`--dry-run` is sugar for the override `dry_run=true` (Hydra owns the other flags)."""
    return ["dry_run=true" if a == "--dry-run" else a for a in argv]


if __name__ == "__main__":
    sys.argv = [sys.argv[0], *_flags_to_overrides(sys.argv[1:])]
    main()
