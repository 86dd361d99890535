"""`python -m judge_rl [overrides]`: the main job, train and evaluate a judge (judge_rl/jobs/train.py)."""

from judge_rl.jobs.shell import hydra_app
from judge_rl.jobs.train import run

if __name__ == "__main__":
    hydra_app("config", run)
