"""`python -m judge_rl.eval [overrides]`: evaluate a judge on a benchmark (judge_rl/jobs/evaluate.py).

    python -m judge_rl.eval model=smollm2-135m benchmark=llmbar_natural
    python -m judge_rl.eval judge.checkpoint=outputs/.../model benchmark=rewardbench
    python -m judge_rl.eval server=openai server.base_url=http://127.0.0.1:8000/v1 judge.prompt=rewardbench_pairwise
    python -m judge_rl.eval -m benchmark=llmbar_natural,mt_bench_human,faireval
"""

from judge_rl.jobs.evaluate import run_eval
from judge_rl.jobs.shell import hydra_app

if __name__ == "__main__":
    hydra_app("evaluate", run_eval)
