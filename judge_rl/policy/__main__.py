"""`python -m judge_rl.policy [overrides]`: train a policy graded by an LLM judge (judge_rl/policy/job.py)."""

from judge_rl.jobs.shell import hydra_app
from judge_rl.policy.job import run

if __name__ == "__main__":
    hydra_app("policy", run)
