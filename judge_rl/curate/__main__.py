"""`python -m judge_rl.curate [overrides]`: curate a LIMJ-style SFT init set (judge_rl/curate/job.py)."""

from judge_rl.curate.job import run_curate
from judge_rl.jobs.shell import hydra_app

if __name__ == "__main__":
    hydra_app("curate", run_curate)
