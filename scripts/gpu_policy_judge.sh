#!/usr/bin/env bash
# The policy job on one GPU, on verl, graded by a vLLM judge (Qwen3-8B, thinking off) that this script serves:
#
#   bash scripts/gpu_policy_judge.sh [hydra overrides...]     # e.g. policy_reward=verif trainer.total_steps=50
#   PRINT_ONLY=1 bash scripts/gpu_policy_judge.sh             # print the commands, run nothing
#
# 1. the verl preflight in a CPU dry run (`--dry-run`: verl's own config checks, TP against the heads, the reward
#    file loading in a fresh process): it fails in seconds instead of minutes into the GPU job;
# 2. `vllm serve` for the judge on 127.0.0.1:$PORT, sharing the GPU with verl (the judge takes JUDGE_GPU_MEM of it,
#    verl's vLLM rollout ROLLOUT_GPU_MEM), logging to $OUT/vllm_judge.log;
# 3. waits until the judge answers /v1/models (at most STARTUP_TIMEOUT seconds; a judge that exits fails here);
# 4. the policy job: IFEval before, GRPO on verl (Ray, vLLM rollouts, FSDP) with the judge reached at
#    judge.base_url, IFEval after; its run directory is $OUT/run (the dry run's: $OUT/preflight);
# 5. stops the judge (also when the job fails).
# Needs: a CUDA GPU, the GPU environment (pip install -e ".[gpu]": vllm, verl), network or a filled HF cache.
# The judge is asked without an API key (a local vLLM needs none): no key is read or written.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8011}
JUDGE_MODEL=${JUDGE_MODEL:-Qwen/Qwen3-8B}
JUDGE_GPU_MEM=${JUDGE_GPU_MEM:-0.35}
ROLLOUT_GPU_MEM=${ROLLOUT_GPU_MEM:-0.3}
STARTUP_TIMEOUT=${STARTUP_TIMEOUT:-900}
OUT=${OUT:-outputs/policy_judge_gpu}
BASE_URL="http://127.0.0.1:${PORT}/v1"

SERVE=(vllm serve "$JUDGE_MODEL" --host 127.0.0.1 --port "$PORT" --served-model-name "$JUDGE_MODEL"
       --gpu-memory-utilization "$JUDGE_GPU_MEM" --max-model-len 8192)
JOB=(cluster=single_gpu judge=vllm "judge.base_url=${BASE_URL}" "judge.served_model=${JUDGE_MODEL}"
     judge.enable_thinking=false policy_reward=rubric_yesno logger=none
     "+cluster.verl_overrides.actor_rollout_ref.rollout.gpu_memory_utilization=${ROLLOUT_GPU_MEM}"
     "$@")

run() {
  if [ -n "${PRINT_ONLY:-}" ]; then printf '%q ' "$@"; echo; else "$@"; fi
}

if [ -n "${PRINT_ONLY:-}" ]; then
  run python -m judge_rl.policy "${JOB[@]}" "run_dir=${OUT}/preflight" --dry-run
  run "${SERVE[@]}"
  echo "# wait until ${BASE_URL}/models answers (at most ${STARTUP_TIMEOUT}s)"
  run python -m judge_rl.policy "${JOB[@]}" "run_dir=${OUT}/run"
  echo "# stop the judge"
  exit 0
fi

python - <<'PY'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit("scripts/gpu_policy_judge.sh needs a CUDA GPU")
import vllm, verl  # noqa: F401  (fail here, clearly, when the GPU extras are missing)
PY

python -m judge_rl.policy "${JOB[@]}" "run_dir=${OUT}/preflight" --dry-run > /dev/null

mkdir -p "$OUT"
"${SERVE[@]}" > "$OUT/vllm_judge.log" 2>&1 &
JUDGE_PID=$!
stop_judge() {
  if kill -0 "$JUDGE_PID" 2>/dev/null; then
    kill "$JUDGE_PID" 2>/dev/null || true
    wait "$JUDGE_PID" 2>/dev/null || true
  fi
}
trap stop_judge EXIT

deadline=$((SECONDS + STARTUP_TIMEOUT))
until curl -sf "${BASE_URL}/models" > /dev/null; do
  if ! kill -0 "$JUDGE_PID" 2>/dev/null; then
    echo "vllm serve exited before answering; see $OUT/vllm_judge.log:" >&2
    tail -n 30 "$OUT/vllm_judge.log" >&2
    exit 1
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "vllm serve did not answer ${BASE_URL}/models within ${STARTUP_TIMEOUT}s; see $OUT/vllm_judge.log" >&2
    exit 1
  fi
  sleep 5
done
echo "judge ${JUDGE_MODEL} is up at ${BASE_URL}"

python -m judge_rl.policy "${JOB[@]}" "run_dir=${OUT}/run"
