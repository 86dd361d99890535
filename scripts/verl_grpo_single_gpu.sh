#!/usr/bin/env bash
# A short, real verl GRPO job on one GPU: Ray, vLLM rollouts, FSDP actor, judge_rl's reward module.
# Needs a CUDA machine with the GPU environment (environment.yml, or `pip install -e ".[gpu]"`).
# Runs the main job's stages around it: SFT init (TRL on the GPU), verl GRPO, merge of the FSDP checkpoint with
# `python -m verl.model_merger`, eval of the merged judge on the held-out pairs and LLMBar-Natural. Extra args are
# Hydra overrides.
#
#   bash scripts/verl_grpo_single_gpu.sh [hydra overrides...]
#   DRY_RUN=1 bash scripts/verl_grpo_single_gpu.sh    # the preflight only: prints the verl command and config
#
# The LLMBar file is read from $JUDGE_RL_DATA (scripts/gpu_data.sh); PYTHON picks the interpreter (default python).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_data.sh
require_data llmbar/natural.json
PYTHON=${PYTHON:-python}
JOB=(cluster=single_gpu model=smollm2-135m algorithm=grpo reward=strength "eval.benchmarks=[llmbar_natural]"
     trainer.total_steps=5 trainer.prompts_per_step=16 trainer.max_new_tokens=256 logger=none "$@")
# The preflight first (judge_rl/backends/verl/preflight.py): verl's own config checks, TP against the model's heads,
# lengths against its context, the reward file loading in a fresh process, the logger's mode, writable paths. It
# fails here, in seconds, instead of minutes into the GPU job. The job itself then checks this machine (vllm, the
# GPU, flash_attn) before any model loads.
if [ -n "${DRY_RUN:-}" ]; then
  exec "$PYTHON" -m judge_rl "${JOB[@]}" --dry-run
fi
"$PYTHON" -m judge_rl "${JOB[@]}" --dry-run > /dev/null
"$PYTHON" -m judge_rl "${JOB[@]}"
