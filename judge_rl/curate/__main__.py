"""`python -m judge_rl.curate [overrides]`: curate a LIMJ-style SFT init set (judge_rl/jobs/curate.py)."""

import sys

from judge_rl.__main__ import main  # the app table: module, function and config of `judge-rl curate`

if __name__ == "__main__":
    sys.exit(main(["curate", *sys.argv[1:]]))
