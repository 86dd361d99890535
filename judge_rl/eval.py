"""`python -m judge_rl.eval [overrides]`: evaluate a judge on a benchmark (see judge_rl/evaluation/app.py).

    python -m judge_rl.eval model=smollm2-135m benchmark=llmbar_natural
    python -m judge_rl.eval judge.checkpoint=outputs/.../model benchmark=rewardbench
    python -m judge_rl.eval server=openai server.base_url=http://127.0.0.1:8000/v1 judge.prompt=rewardbench_pairwise
    python -m judge_rl.eval -m benchmark=llmbar_natural,mt_bench_human,faireval
"""

import os
from pathlib import Path

import hydra
from omegaconf import DictConfig

from judge_rl.cli import hydra_task
from judge_rl.evaluation.app import run_eval

REPO_ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = str(REPO_ROOT / "conf")
os.environ.setdefault("JUDGE_RL_ROOT", str(REPO_ROOT))


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="evaluate")
def main(cfg: DictConfig) -> None:
    hydra_task(run_eval)(cfg)


if __name__ == "__main__":
    main()
