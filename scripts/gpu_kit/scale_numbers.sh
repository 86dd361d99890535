#!/usr/bin/env bash
# Issue 53's GPU numbers: judges at the sizes researchers train (random weights of Qwen2.5-1.5B's and 7B's
# architectures, judge_rl/models/shape.py), at judge lengths, in one device `run` call once the GPU kit and its verl
# profile are installed on the same warm machine (scripts/gpu_kit/README.md, sections 2 and 4):
#
#   bash scripts/gpu_kit/scale_numbers.sh                                        # GPU: <= 9.5 min, run(timeout_s=600)
#   SCALE_NUMBERS_DEVICE=cpu SCALE_NUMBERS_TINY=1 bash scripts/gpu_kit/scale_numbers.sh   # wiring check on a CPU
#   SCALE_NUMBERS_PLAN=1 bash scripts/gpu_kit/scale_numbers.sh                   # print the steps and timeouts only
#
# Steps, in this order (a failing step is recorded and the next one runs; cap = its own timeout on a GPU):
#   shapes      240  the shape models' directories drawn on the GPU and cached (1.5B, 7B in bf16: 3 + 15 GB), so
#                    the jobs' times leave them out
#   bench_1.5b  420  scripts/bench_grpo_step.py at the 1.5B shape, bf16 mixed precision on both sides, gradient
#                    checkpointing: judge_rl's local GRPO step (hf and colocated vLLM rollouts) beside TRL's
#                    GRPOTrainer (hf, and vLLM colocate where TRL's pin allows), 8 prompts x 4 samples, prompts padded
#                    to 1,024 tokens, 512 new tokens (a random judge never stops early), the split of each step and
#                    the allocator's peak; target: judge_rl <= 1.0x TRL
#   verl_1.5b   540  `python -m judge_rl experiments=scale_1.5b_h200_verl model.weights=random stages=[rl]`, 3 steps of
#                    8 prompts x 4, 512 new tokens: verl's timing_s/*, perf/throughput, perf/mfu/actor (target >= 30%),
#                    nvidia-smi's peak beside the plan line the launch prints
#   local_1.5b  300  `python -m judge_rl experiments=scale_1.5b_h200_local model.weights=random stages=[rl]`, 2 steps,
#                    under cuda_peak.py: the allocator's peak beside the local plan
#   verl_7b     580  experiments=scale_7b_h200_verl (actor offloaded while vLLM rolls out), 2 steps: does a 7B judge's
#                    GRPO step run on one H200, and its peak beside the plan
#   verl_resume 540  left from issue 35: verl_numbers.sh's SIGTERM-and-resume step (VERL_NUMBERS_ONLY=verl_resume)
# A session's 15 device minutes hold the two kits (~165 s) and one call of this script: the steps take more than one
# session; SCALE_NUMBERS_ONLY=verl_7b,verl_resume runs the rest in the next.
#
# Outputs ($OUT): summary.txt and summary.json (each step's rc and seconds, the plan each launch printed, the measured
# peaks: nvidia-smi's and the allocator's, the bench's ratios and verl's perf/* of the last step), rewritten after
# every step; scale_numbers.tar.gz (keep/: every log, each run's results and metrics, nvidia-smi samples);
# bench_1.5b.log verl_1.5b.log verl_7b.log, those steps' output streamed.
#
# Environment: SCALE_NUMBERS_DEVICE (cuda | cpu: cluster=cpu_verl and the embedded model's shape stand in),
# SCALE_NUMBERS_TINY (1: toy sizes), SCALE_NUMBERS_BUDGET_S (deadline, default 560; 3600 on cpu), SCALE_NUMBERS_ONLY
# (comma list of steps; shapes always first), SCALE_NUMBERS_PLAN, SCALE_NUMBERS_WORK (default /tmp/scale_numbers),
# SCALE_NUMBERS_ENV (the kit's env.sh, default /tmp/gpu_kit_verl/env.sh; required on cuda), SCALE_NUMBERS_PYTHON.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD

DEVICE=${SCALE_NUMBERS_DEVICE:-cuda}
TINY=${SCALE_NUMBERS_TINY:-0}
ONLY=${SCALE_NUMBERS_ONLY:-}
GPU_STEPS_PLAN=${SCALE_NUMBERS_PLAN:-}
KIT_ENV=${SCALE_NUMBERS_ENV:-/tmp/gpu_kit_verl/env.sh}
RESERVE=15
MIN_STEP=30
case "$DEVICE" in
  cuda) SCALE=1 BUDGET=${SCALE_NUMBERS_BUDGET_S:-560} ;;
  cpu) SCALE=8 BUDGET=${SCALE_NUMBERS_BUDGET_S:-3600} ;;
  *) echo "SCALE_NUMBERS_DEVICE=$DEVICE: cuda or cpu" >&2; exit 2 ;;
esac
STEPS=(bench_1.5b verl_1.5b local_1.5b verl_7b verl_resume)
declare -A CAP=([shapes]=240 [bench_1.5b]=420 [verl_1.5b]=540 [local_1.5b]=300 [verl_7b]=580 [verl_resume]=540)
ORDER=("${STEPS[@]}")
if [ -n "$ONLY" ]; then IFS=, read -r -a ORDER <<<"$ONLY"; fi
for s in "${ORDER[@]}"; do
  [[ " ${STEPS[*]} " == *" $s "* ]] || { echo "SCALE_NUMBERS_ONLY: no step $s (steps: ${STEPS[*]})" >&2; exit 2; }
done
command -v timeout >/dev/null || { echo "scale_numbers: no 'timeout' (coreutils) on this machine" >&2; exit 2; }

# shellcheck source=scripts/gpu_kit/steps.sh
source scripts/gpu_kit/steps.sh
kit_setup scale_numbers "${SCALE_NUMBERS_WORK:-/tmp/scale_numbers}" "${SCALE_NUMBERS_PYTHON:-}"
CACHE=${JUDGE_RL_CACHE:-$WORK/cache}   # the shapes are kept between invocations on the same machine
export JUDGE_RL_CACHE=$CACHE PYTHONUNBUFFERED=1 HYDRA_FULL_ERROR=1 TOKENIZERS_PARALLELISM=false JUDGE_RL_ROOT=$REPO
export WANDB_MODE=disabled

pack() {
  [ -n "$GPU_STEPS_PLAN" ] && return 0
  pack_keep scale_numbers "$PY" scripts/gpu_kit/scale_numbers_report.py "$WORK"
}
trap 'stop_smi; pack >/dev/null 2>&1 || true' EXIT
after_step() {  # NAME RUN_DIR: keep the run's results and metrics, then pack
  if [ "$2" != - ] && [ -d "$2" ]; then
    mkdir -p "$KEEP/runs/$1"
    cp "$2"/results.json "$2"/status.json "$2"/metrics.jsonl "$2"/cuda_peak.json "$KEEP/runs/$1/" 2>/dev/null || true
  fi
  pack
}
fresh() { rm -rf "$1"; echo "$1"; }

# -- the sizes -------------------------------------------------------------------------------------------------------
if [ "$TINY" = 1 ]; then  # every code path at toy sizes: the embedded model's shape, short prompts and answers
  M15=(model=smollm2-135m model.weights=random model.dtype=float32)
  M7=("${M15[@]}")
  BENCH=(--model smollm2-135m --weights random --dtype float32 --prompt-tokens 96 --max-new-tokens 4 --prompts 2 --n 2
    --steps 1 --warmup 0 --micro-batch 2 --skip-raw)
  JOB=(trainer.prompts_per_step=2 trainer.max_new_tokens=8 model.max_prompt_length=512 eval.limit=4)
else
  M15=(model.weights=random)
  M7=(model.weights=random)
  BENCH=(--model qwen2.5-1.5b-instruct --weights random --dtype bfloat16 --gradient-checkpointing --prompt-tokens 1024
    --max-new-tokens 512 --prompts 8 --n 4 --micro-batch 8 --steps 2 --warmup 1 --skip-raw)
  JOB=(trainer.prompts_per_step=8 trainer.max_new_tokens=512)
fi
if [ "$DEVICE" = cuda ]; then
  VERL15=(experiments=scale_1.5b_h200_verl "${M15[@]}")
  VERL7=(experiments=scale_7b_h200_verl "${M7[@]}")
  LOCAL15=(experiments=scale_1.5b_h200_local "${M15[@]}")
  BENCH+=(--device cuda --rollout-engines hf vllm --trl-engines hf vllm)
else  # cluster=cpu_verl stands in for single_gpu; the local experiment on the CPU device
  VERL15=(cluster=cpu_verl "${M15[@]}")
  VERL7=(cluster=cpu_verl "${M7[@]}")
  LOCAL15=(experiments=scale_1.5b_h200_local cluster=local cluster.device=cpu trainer.rollout_engine=hf
    trainer.gradient_checkpointing=true "${M15[@]}")
  BENCH+=(--device cpu --rollout-engines hf --gradient-checkpointing)
fi
COMMON=(logger=none "stages=[rl]" trainer.save_every=100 "${JOB[@]}")

SHAPES_PY='
import sys, time
from judge_rl.config.paths import load_model_config
from judge_rl.models.loading import shape_model_dir
cache, names = sys.argv[1], sys.argv[2:]
for name in names:
    cfg = load_model_config(name)
    cfg.weights = "random"
    t = time.perf_counter()
    print(f"{name}: {shape_model_dir(cfg, cache)} ({time.perf_counter() - t:.1f} s)", flush=True)
'
if [ "$TINY" = 1 ]; then SHAPES=(smollm2-135m); else SHAPES=(qwen2.5-1.5b-instruct qwen2.5-7b-instruct); fi
if [ -z "$GPU_STEPS_PLAN" ]; then
  { echo "mode: device=$DEVICE tiny=$TINY budget=${BUDGET}s only=${ONLY:-all} python=$PY cache=$CACHE"
    echo "date: $(date -Is)"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    echo "host memory: $(free -g | awk '/^Mem:/{print $2}') GiB; cpus $(nproc)"; } >"$KEEP/env.txt" 2>&1 || true
  cat "$KEEP/env.txt"
fi
run_step shapes "$((CAP[shapes] * SCALE))" 0 - "$PY" -c "$SHAPES_PY" "$CACHE" "${SHAPES[@]}"

step_bench_1.5b() {
  run_step bench_1.5b "$((CAP[bench_1.5b] * SCALE))" 1 - "$PY" scripts/bench_grpo_step.py "${BENCH[@]}" \
    --json "$KEEP/bench_1.5b.json"
}
job_step() {  # NAME ARGS...: a main job under cuda_peak.py, its run directory kept
  local name=$1 dir
  shift
  dir=$(fresh "$RUNS/$name")
  run_step "$name" "$((CAP[$name] * SCALE))" 1 "$dir" "$PY" scripts/gpu_kit/cuda_peak.py "$dir/cuda_peak.json" \
    -m judge_rl "$@" "${COMMON[@]}" "run_dir=$dir" "hydra.run.dir=$dir"
}
step_verl_1.5b() { job_step verl_1.5b "${VERL15[@]}" trainer.total_steps=3; }
step_local_1.5b() { job_step local_1.5b "${LOCAL15[@]}" trainer.total_steps=2; }
step_verl_7b() { job_step verl_7b "${VERL7[@]}" trainer.total_steps=2; }
step_verl_resume() {
  local t
  t=$(step_timeout "$((CAP[verl_resume] * SCALE))")
  run_step verl_resume "$t" 1 - env VERL_NUMBERS_ONLY=verl_resume "VERL_NUMBERS_BUDGET_S=$((t - 10))" \
    "VERL_NUMBERS_DEVICE=$DEVICE" "VERL_NUMBERS_TINY=$TINY" "VERL_NUMBERS_WORK=$WORK/verl_numbers" \
    "OUT=$WORK/verl_numbers/out" "VERL_NUMBERS_ENV=$KIT_ENV" "VERL_NUMBERS_PYTHON=$PY" bash scripts/gpu_kit/verl_numbers.sh
}
for s in "${ORDER[@]}"; do "step_$s"; done

finish_steps
