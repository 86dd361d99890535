"""`python -m judge_rl.policy [overrides]`: train a policy graded by an LLM judge (judge_rl/jobs/policy.py)."""

import sys

from judge_rl.__main__ import main  # the app table: module, function and config of `judge-rl policy`

if __name__ == "__main__":
    sys.exit(main(["policy", *sys.argv[1:]]))
