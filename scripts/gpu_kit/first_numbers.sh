#!/usr/bin/env bash
# Issue 26's first GPU numbers in one device `run` call, once the GPU kit is installed (scripts/gpu_kit/README.md):
#
#   bash scripts/gpu_kit/first_numbers.sh                                   # GPU: ~7-8 min, run(timeout_s=600)
#   FIRST_NUMBERS_DEVICE=cpu FIRST_NUMBERS_TINY=1 bash scripts/gpu_kit/first_numbers.sh   # wiring check on a CPU
#
# Steps, in this order (a failing step is recorded and the next one runs):
#   env            nvidia-smi, date, versions (torch, CUDA, transformers, trl)
#   prep           the embedded model's GGUF -> safetensors conversion (cached; kept out of the main jobs' times)
#   main_fp32      the default main job (`python -m judge_rl`, logger=none) on cluster.device=cuda, fp32
#   eval_hf        `python -m judge_rl.eval server=hf` on LLMBar-Natural (100 pairs, both orders): pairs/s
#   bench_2x4x64   scripts/bench_grpo_step.py --device cuda: judge_rl's local step vs TRL's GRPOTrainer
#   bench_8x8x128  the same at 8 prompts x 8 samples x 128 new tokens
#   main_bf16      the default main job again with model.dtype=bfloat16
# Both main jobs pin trainer.rollout_engine=hf eval.server=hf: on the GPU (no vLLM) that is what `auto` resolves to
# (judge_rl/rollouts/samplers.py, judge_rl/recipes/stages.py: auto is hf on any non-CPU device), and the CPU
# reference run pins the same, so both sides judge with the same engine.
#
# Time: each step runs under `timeout` (SIGTERM, then SIGKILL 20 s later; judge_rl exits 143 and saves what it
# has), capped by its own budget and by a deadline FIRST_NUMBERS_BUDGET_S (default 480 s) after the start; a step
# with under 30 s left is skipped. Measured on an H200 (2026-11-26, the step walls including loads): prep 51 s (14 s
# with the conversion cached), main_fp32 132 s, eval_hf 59 s, bench_2x4x64 37 s, bench_8x8x128 64 s, main_bf16 199 s
# (pure bf16 then; cut at 108 s in the first call, rerun alone with FIRST_NUMBERS_ONLY=main_bf16): ~540 s in all,
# so main_bf16 needs its own call when the install shares the first one.
#
# Outputs ($OUT, the device tool's folder that comes back: at most 8 files, so everything else is in one tarball):
#   summary.txt, summary.json     the compact summary (also printed at the end), rewritten after every step
#   first_numbers.tar.gz          keep/: every log, judgments of every run (keep/runs/<step>/<stage>.jsonl), each
#                                 run's results/summary/status JSON, nvidia-smi samples, peaks, steps.tsv, env.txt
#   main_fp32.log eval_hf.log bench_2x4x64.log bench_8x8x128.log main_bf16.log   each step's full output, streamed
#
# Environment:
#   FIRST_NUMBERS_DEVICE   cuda (default) | cpu
#   FIRST_NUMBERS_TINY     1: the tiny random judge (debug=tiny), 1-2 steps, a few pairs: checks the wiring in minutes
#   FIRST_NUMBERS_BUDGET_S the deadline for all steps, seconds from the start (default 480)
#   FIRST_NUMBERS_ONLY     comma list of steps to run (e.g. main_bf16,bench_8x8x128 for a rerun); env and prep always
#   FIRST_NUMBERS_CPU_REF  a collected CPU reference run (first_numbers_report.py collect), default
#                          gpu_kit_out/cpu_ref: its verdicts are compared with the GPU runs' in the summary
#   FIRST_NUMBERS_DATA     where a carried llmbar/natural.json is (default gpu_kit_out/data): the device machine has
#                          no ../shared beside the repo
#   FIRST_NUMBERS_WORK     scratch folder (default /tmp/first_numbers); OUT defaults to $FIRST_NUMBERS_WORK/out
#   FIRST_NUMBERS_ENV      the kit's environment file (default /tmp/gpu_kit/env.sh; required on cuda)
#   FIRST_NUMBERS_PYTHON   the interpreter (default python3; .venv/bin/python where the kit is not installed)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD

DEVICE=${FIRST_NUMBERS_DEVICE:-cuda}
TINY=${FIRST_NUMBERS_TINY:-0}
BUDGET=${FIRST_NUMBERS_BUDGET_S:-480}
ONLY=${FIRST_NUMBERS_ONLY:-}
WORK=${FIRST_NUMBERS_WORK:-/tmp/first_numbers}
OUT=${OUT:-$WORK/out}
KIT_ENV=${FIRST_NUMBERS_ENV:-/tmp/gpu_kit/env.sh}
DATA=${FIRST_NUMBERS_DATA:-gpu_kit_out/data}
CPU_REF=${FIRST_NUMBERS_CPU_REF:-gpu_kit_out/cpu_ref}
RESERVE=15     # seconds kept after the last step for the summary and the tarball
MIN_STEP=30    # a step with less time than this left is skipped

case "$DEVICE" in cuda | cpu) ;; *) echo "FIRST_NUMBERS_DEVICE=$DEVICE: cuda or cpu" >&2; exit 2 ;; esac
command -v timeout >/dev/null || { echo "first_numbers: no 'timeout' (coreutils) on this machine" >&2; exit 2; }

if [ -f "$KIT_ENV" ]; then
  # shellcheck disable=SC1090
  source "$KIT_ENV"   # PYTHONPATH=<kit site-packages>:$PWD, HF_HUB_OFFLINE=1 (run from the repo root)
  PY=${FIRST_NUMBERS_PYTHON:-python3}
elif [ "$DEVICE" = cuda ]; then
  echo "first_numbers: $KIT_ENV is missing: install the GPU kit first (scripts/gpu_kit/README.md), in the same warm machine" >&2
  exit 2
else
  PY=${FIRST_NUMBERS_PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
fi

START=$(date +%s)
DEADLINE=$((START + BUDGET))
KEEP=$WORK/keep
mkdir -p "$OUT" "$WORK"
rm -rf "$KEEP" "$WORK/runs"
mkdir -p "$KEEP"/{logs,peak,nvsmi,runs} "$WORK/runs"
printf '' >"$KEEP/steps.tsv"
if [ "$TINY" = 1 ]; then
  # the tiny runs share this machine's cache (the bench's embedded model is converted once)
  CACHE=${JUDGE_RL_CACHE:-$HOME/.cache/judge_rl}
else
  CACHE=$WORK/cache
  rm -rf "$CACHE/sft"   # every invocation trains its SFT inits afresh (a rerun times the same work); conversions stay
fi
export JUDGE_RL_CACHE=$CACHE PYTHONUNBUFFERED=1 HYDRA_FULL_ERROR=1 TOKENIZERS_PARALLELISM=false
export JUDGE_RL_ROOT=$REPO

# -- the benchmark file: ../shared does not travel to the device machine; a carried copy does --------------------
BENCH_FILE=$REPO/../shared/data/llmbar/natural.json
BENCH_NOTE=""
if [ ! -f "$BENCH_FILE" ] && [ -f "$DATA/llmbar/natural.json" ]; then
  # the main job reads conf/benchmark/llmbar_natural.yaml's path (../shared/...); put the carried copy there
  if mkdir -p "$REPO/../shared/data/llmbar" 2>/dev/null && cp "$DATA/llmbar/natural.json" "$BENCH_FILE" 2>/dev/null; then
    BENCH_NOTE="llmbar natural.json copied from $DATA to ../shared/data/llmbar"
  else
    BENCH_FILE=$(realpath "$DATA/llmbar/natural.json")
    BENCH_NOTE="../shared not writable: the main jobs skip llmbar_natural; eval_hf reads $BENCH_FILE"
  fi
fi
[ -f "$BENCH_FILE" ] || BENCH_NOTE="no llmbar natural.json (here or in $DATA/llmbar): main jobs skip it, eval_hf is skipped"

# -- helpers (the step runner: steps.sh) -----------------------------------------------------------------------------
# shellcheck source=scripts/gpu_kit/steps.sh
source scripts/gpu_kit/steps.sh

pack() {  # summary + tarball into $OUT (after every step, so a run killed at its limit still returns them)
  pack_keep first_numbers "$PY" scripts/gpu_kit/first_numbers_report.py report "$WORK" --cpu-ref "$CPU_REF"
}
trap 'stop_smi; pack >/dev/null 2>&1 || true' EXIT

after_step() {  # NAME RUN_DIR: collect the run's judgments (when it has a run directory), then pack
  if [ "$2" != - ] && [ -d "$2" ]; then
    "$PY" scripts/gpu_kit/first_numbers_report.py collect "$2" "$KEEP/runs/$1" >/dev/null || true
  fi
  pack
}

# -- env -------------------------------------------------------------------------------------------------------------
{
  echo "mode: device=$DEVICE tiny=$TINY budget=${BUDGET}s only=${ONLY:-all} python=$PY cache=$CACHE"
  echo "date: $(date -Is)"
  echo "bench file: $BENCH_FILE ${BENCH_NOTE:+($BENCH_NOTE)}"
  echo "cpu reference: $CPU_REF $([ -d "$CPU_REF" ] && echo present || echo absent)"
  if command -v nvidia-smi >/dev/null; then
    echo "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"
    nvidia-smi 2>&1 || true
  else
    echo "gpu: none (no nvidia-smi)"
  fi
  "$PY" -c "
import sys, torch, transformers, trl, judge_rl
cuda = torch.cuda.is_available()
print(f'python: {sys.version.split()[0]} {sys.executable}')
print(f'torch: {torch.__version__} cuda {torch.version.cuda} available {cuda}'
      + (f' {torch.cuda.get_device_name()}' if cuda else '') + f'; transformers {transformers.__version__}; '
      f'trl {trl.__version__}; judge_rl {judge_rl.__file__}; threads {torch.get_num_threads()}')
" 2>&1 || echo "torch: the version probe failed"
  echo "cpus: $(nproc)"
} >"$KEEP/env.txt" 2>&1
cat "$KEEP/env.txt"

# -- prep: the embedded model's safetensors copy (the bench and the main jobs load it) --------------------------------
run_step prep 120 0 - "$PY" -c "$PREP_PY" "$CACHE"

# -- the commands ------------------------------------------------------------------------------------------------------
MAIN_ARGS=(logger=none "cluster.device=$DEVICE" trainer.rollout_engine=hf eval.server=hf)
EVAL_ARGS=(server=hf "server.device=$DEVICE" benchmark=llmbar_natural "benchmark.path=$BENCH_FILE" logger=none)
BENCH_ARGS=(--device "$DEVICE" --rollout-engines hf)
BENCH_SMALL=(--prompts 2 --n 4 --max-new-tokens 64 --steps 3 --warmup 1)
BENCH_LARGE=(--prompts 8 --n 8 --max-new-tokens 128 --steps 2 --warmup 1)
CAP_MAIN=210 CAP_EVAL=100 CAP_BENCH_SMALL=100 CAP_BENCH_LARGE=130
if [ "$TINY" = 1 ]; then
  # the same commands at toy scale; the benchmark is kept (2 rows) so its path is exercised
  MAIN_ARGS+=(debug=tiny "eval.benchmarks=[llmbar_natural]" eval.benchmark_limit=2)
  EVAL_ARGS+=(model=tiny-random benchmark.limit=4 server.max_new_tokens=8)
  # the bench has no tiny model (TRL builds its reference from the model's directory): the embedded one, minimal
  BENCH_SMALL=(--prompts 2 --n 2 --max-new-tokens 4 --steps 1 --warmup 0 --micro-batch 2 --raw-prompt-tokens 32
    --raw-decode-steps 2)
  BENCH_LARGE=(--prompts 2 --n 2 --max-new-tokens 6 --steps 1 --warmup 0 --micro-batch 4 --skip-raw)
fi

main_job() {  # name dtype
  local dir=$WORK/runs/$1
  rm -rf "$dir"
  run_step "$1" "$CAP_MAIN" 1 "$dir" "$PY" scripts/gpu_kit/cuda_peak.py "$KEEP/peak/$1.json" -m judge_rl \
    "${MAIN_ARGS[@]}" "model.dtype=$2" "run_dir=$dir" "hydra.run.dir=$dir"
}

if selected main_fp32; then main_job main_fp32 float32; fi
if selected eval_hf; then
  if [ -f "$BENCH_FILE" ]; then
    dir=$WORK/runs/eval_hf
    rm -rf "$dir"
    run_step eval_hf "$CAP_EVAL" 1 "$dir" "$PY" scripts/gpu_kit/cuda_peak.py "$KEEP/peak/eval_hf.json" -m judge_rl.eval \
      "${EVAL_ARGS[@]}" "run_dir=$dir" "hydra.run.dir=$dir"
  else
    record_skip eval_hf "no llmbar natural.json"
  fi
fi
if selected bench_2x4x64; then
  run_step bench_2x4x64 "$CAP_BENCH_SMALL" 1 - "$PY" scripts/bench_grpo_step.py "${BENCH_ARGS[@]}" "${BENCH_SMALL[@]}"
fi
if selected bench_8x8x128; then
  run_step bench_8x8x128 "$CAP_BENCH_LARGE" 1 - "$PY" scripts/bench_grpo_step.py "${BENCH_ARGS[@]}" "${BENCH_LARGE[@]}"
fi
if selected main_bf16; then main_job main_bf16 bfloat16; fi

trap - EXIT
pack
echo
cat "$KEEP/summary.txt"
echo "total $(($(date +%s) - START)) s; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
