#!/usr/bin/env bash
# A short, real verl GRPO job on one GPU: Ray, vLLM rollouts, FSDP actor, judge_rl's reward module.
# Needs a CUDA machine with the GPU environment (environment.yml, or `pip install -e ".[gpu]"`).
# Runs the main job's stages around it: base eval, SFT init (TRL on the GPU), verl GRPO, merge of the
# FSDP checkpoint with `python -m verl.model_merger`, eval of the merged judge. Extra args are
# Hydra overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
python - <<'PY'
import torch, sys
if not torch.cuda.is_available():
    sys.exit("scripts/verl_grpo_single_gpu.sh needs a CUDA GPU")
import vllm, verl  # noqa: F401  (fail here, clearly, when the GPU extras are missing)
PY
JOB=(cluster=single_gpu model=smollm2-135m algorithm=grpo reward=strength
     trainer.total_steps=5 trainer.prompts_per_step=16 trainer.max_new_tokens=256 logger=none "$@")
# The preflight first (judge_rl/engines/verl/preflight.py): verl's own config checks, TP against the
# model's heads, lengths against its context, the reward file loading in a fresh process, the logger's
# mode, writable paths. It fails here, in seconds, instead of minutes into the GPU job.
python -m judge_rl "${JOB[@]}" --dry-run > /dev/null
python -m judge_rl "${JOB[@]}"
