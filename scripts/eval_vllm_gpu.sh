#!/usr/bin/env bash
# Evaluate a judge with the vLLM engine on one GPU (needs `pip install -e ".[gpu]"`): the embedded
# SmolLM2 judge on LLMBar-Natural, then RewardBench 2 with its own 4-way prompt when the hub is reachable.
# Compare the LLMBar numbers with `server=hf` on the same model: both are greedy, so verdicts should
# agree on nearly every item (vLLM's kernels differ slightly from transformers').
#
#   bash scripts/eval_vllm_gpu.sh [hydra overrides...]
#   DRY_RUN=1 bash scripts/eval_vllm_gpu.sh     # each command composes and prints its resolved config, none runs
#
# The LLMBar file is read from $JUDGE_RL_DATA (scripts/gpu_data.sh); PYTHON picks the interpreter (default python).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_data.sh
require_data llmbar/natural.json
PYTHON=${PYTHON:-python}
DRY=()
if [ -n "${DRY_RUN:-}" ]; then DRY=(--cfg job --resolve); fi
evaluate() { "$PYTHON" -m judge_rl.eval "$@" "${DRY[@]}"; }

evaluate model=smollm2-135m server=vllm benchmark=llmbar_natural server.max_new_tokens=512 "$@"
evaluate model=smollm2-135m server=hf server.device=cuda benchmark=llmbar_natural server.max_new_tokens=512 "$@"
if [ -n "${DRY_RUN:-}" ] || "$PYTHON" -c "import urllib.request; urllib.request.urlopen('https://huggingface.co', timeout=5)" 2>/dev/null; then
  evaluate model=smollm2-135m server=vllm benchmark=rewardbench2 benchmark.limit=200 "$@"
fi
