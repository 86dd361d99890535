"""`python -m judge_rl [overrides]`: the main job (see judge_rl/app.py)."""

from pathlib import Path

import hydra
from omegaconf import DictConfig

from judge_rl.app import run

CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
