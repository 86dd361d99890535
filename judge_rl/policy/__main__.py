"""`python -m judge_rl.policy [overrides]`: train a policy graded by an LLM judge (judge_rl/policy/job.py)."""

import os
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from judge_rl.cli import flags_to_overrides, hydra_task
from judge_rl.policy.job import run

REPO_ROOT = Path(__file__).resolve().parents[2]
CONF_DIR = str(REPO_ROOT / "conf")
os.environ.setdefault("JUDGE_RL_ROOT", str(REPO_ROOT))


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="policy")
def main(cfg: DictConfig) -> None:
    hydra_task(run)(cfg)


if __name__ == "__main__":
    sys.argv = [sys.argv[0], *flags_to_overrides(sys.argv[1:])]
    main()
