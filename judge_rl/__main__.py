"""`python -m judge_rl [overrides]`: the main job (see judge_rl/app.py)."""

import os
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from judge_rl.app import run
from judge_rl.cli import flags_to_overrides, hydra_task

REPO_ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = str(REPO_ROOT / "conf")
# conf/config.yaml adds the repo root to Hydra's search path so that experiments/ is a config group.
os.environ.setdefault("JUDGE_RL_ROOT", str(REPO_ROOT))


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    hydra_task(run)(cfg)


if __name__ == "__main__":
    sys.argv = [sys.argv[0], *flags_to_overrides(sys.argv[1:])]
    main()
