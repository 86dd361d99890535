"""`python -m judge_rl.eval [overrides]`: evaluate a judge on a benchmark (judge_rl/jobs/evaluate.py).

    python -m judge_rl.eval model=smollm2-135m benchmark=llmbar_natural
    python -m judge_rl.eval judge.checkpoint=outputs/.../model benchmark=rewardbench
    python -m judge_rl.eval server=openai server.base_url=http://127.0.0.1:8000/v1 judge.prompt=rewardbench_pairwise
    python -m judge_rl.eval -m benchmark=llmbar_natural,mt_bench_human,faireval
"""

import sys

from judge_rl.__main__ import main  # the app table: module, function and config of `judge-rl eval`

if __name__ == "__main__":
    sys.exit(main(["eval", *sys.argv[1:]]))
