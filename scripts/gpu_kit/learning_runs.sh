#!/usr/bin/env bash
# Issue 56's learning runs at GPU speed on one H200, once the GPU kit's base part is installed on the same warm machine
# (scripts/gpu_kit/README.md, section 2; the local backend with the hf sampler and judge needs no verl/vLLM profile):
#
#   LEARNING_RUNS_ONLY=default_long bash scripts/gpu_kit/learning_runs.sh   # GPU: a step a call, run(timeout_s=600)
#   LEARNING_RUNS_DEVICE=cpu LEARNING_RUNS_TINY=1 bash scripts/gpu_kit/learning_runs.sh   # wiring check on a CPU
#   LEARNING_RUNS_PLAN=1 bash scripts/gpu_kit/learning_runs.sh                   # print the steps and timeouts only
#
# Steps, in this order (a failing step is recorded and the next one runs; cap = its own timeout on a GPU, seconds):
#   prep             90  the embedded model's GGUF -> safetensors conversion, cached in $JUDGE_RL_CACHE (first_numbers:
#                        51 s cold on the H200, 14 s cached), so the jobs' times leave it out
#   default_long    545  part 1: `python -m judge_rl experiments=learn_default_h200` (cluster=local_gpu): the default
#                        SFT init, 100 GRPO steps of 8 pairs x 4 samples (both orders in a group, lr 1e-5), 256 held-out
#                        pairs in both orders, the live curve on 64 of them every 20 steps
#   real_pairs_s42  545  part 2, seed 42: sweeps/real_pairs' consistency point (`real_pairs=grpo_consistency
#                        data=real_pairs eval=real_pairs`), 100 steps of 16 pairs x 4 samples, judged on the held-out
#                        real pairs, LLMBar-Natural and FairEval whole, both orders; live curve on 32 held-out pairs
#                        every 25 steps
#   real_pairs_s43  545  the same at seed 43
#   table4_a        545  part 3: `-m +sweeps=thinkj_table4 algorithm=dpo_critic,grpo` from the default SFT init (part
#                        1's), 50 steps of 4 pairs (200 training pairs a method), 256 held-out pairs in both orders, on
#                        `cluster=local cluster.device=cuda` (local_gpu's micro-batch key breaks dpo_critic: below)
#   table4_b        545  the same sweep's other two rows, algorithm=ppo,reinforce_pp; after each table4 step the four
#                        rows are reported together with Think-J's column (`python -m judge_rl.report <both sweep dirs>
#                        --paper thinkj_table4`, keep/table4/report.md)
# The seeds of part 2 are fixed here before any GPU result: 42 and 43, the two seeds of the CPU runs (docs/results.md
# "More steps of the consistency reward", "A second seed"), so each GPU judge starts from the SFT init its CPU run had
# and "what 10x the work changes" is read against the same init.
#
# Sizes, from the H200 numbers (docs/performance.md "On one NVIDIA H200": the default main job 111 s; its RL step 3.12 s
# at 4 pairs x 4 samples x 96 tokens = gen 1.99 + ref 0.23 + update 0.89 at micro-batch 4; decoding launch-bound at
# 46 steps/s at batch 8, 35 at batch 64; 96 held-out judgments 14.5 s at 16 a batch, i.e. ~2.4 s a batch of 80 tokens;
# the 8x8x128 bench step 5.6 s, update 1.68 s over 64 sequences; python start-up ~20 s on that machine):
#   default_long:  RL step at 8 x 4 = 32 sequences: gen ~2.2 s (launch-bound, as at 16) + ref ~0.3 + update ~0.9
#                  (2 micro-batches of local_gpu's 16) = ~3.4 s; 100 steps ~340 s. Held-out 256 pairs x 2 = 512
#                  judgments at 64 a batch: 8 batches x ~2.5 s = ~20 s per stage (x2). Live curve 6 x 128 judgments
#                  ~25 s. Start-up ~25 + SFT ~15 + checkpoints 4 x ~3 + plots ~10: ~470 s of the 545 s cap.
#   real_pairs_*:  RL step at 16 x 4 = 64 sequences of ~450-token prompts: gen ~2.7 s (96 tokens at ~35 steps/s) +
#                  ref ~0.4 + update ~1.4 (4 micro-batches of 16) = ~4.5 s; 100 steps ~450 s. Judged sets: 71 + 100 + 66
#                  pairs x 2 = 474 judgments of up to 128 tokens at 64 a batch: 8 x ~4 s = ~32 s per stage (x2). Live
#                  curve 4 x 64 judgments ~16 s; start-up + SFT ~40; checkpoints 2 x ~3: ~575 s, over the cap. So a
#                  seed is likely cut near its end: the SIGTERM finishes the RL step under way and checkpoints it
#                  (judge_rl/stopping.py), and `LEARNING_RUNS_RESUME=1 LEARNING_RUNS_ONLY=real_pairs_s42` in the next
#                  call on the same warm machine resumes the run (RL from its checkpoint; evaluations skip what was
#                  judged): ~60-120 s more. Less than 16 pairs or 100 steps would not be issue 56's part 2.
#   table4_*:      per point: start-up ~25 + the SFT init (cached after the first) + 2 evaluations of 512 judgments ~40.
#                  grpo and reinforce_pp: 50 steps of 16 sequences at the measured ~3.1 s (micro-batch 4, as
#                  measured) ~155 s each; ppo (1 sample, 2 epochs x 2 mini-batches, a critic) ~3 s a step ~150 s;
#                  dpo_critic judges and critiques its 200 pairs (~30 s) and runs 50 DPO steps (~25 s).
#                  table4_a ~2 x 65 + 55 + 155 = ~340 s; table4_b ~130 + 150 + 155 = ~435 s; both ~775 s, two calls.
# Device time: a session's 15 minutes hold the base kit's 6 calls (~60-150 s with the machine's start) and one call of
# this script (<= 575 s) plus a short one: default_long in one session; each real_pairs seed in one (with its resume
# call); table4_a and table4_b in one each (LEARNING_RUNS_ONLY=table4_a,table4_b runs table4_b too where time is left;
# the deadline skips a step that cannot start). Every estimate above is an extrapolation from the 4-pair default job;
# the summary records each step's seconds, and the first call's s/step is what to resize the others by.
#
# Outputs ($OUT; summary and tarball rewritten after every step, so a call cut at its limit still returns them):
#   summary.txt, summary.json    each step's rc and seconds; each kept run's accuracies with intervals (held out and
#                                benchmarks, both orders), A-preference, RL - SFT (paired bootstrap), the live held-out
#                                curve, the reward curve in 10 blocks, s/step (learning_runs_report.py)
#   learning_runs.tar.gz         keep/: every log, each run's results/status/config JSON, metrics.jsonl, judgments
#                                (eval/**/judgments.jsonl), plots; the table4 sweeps' report.md/csv and keep/table4/
#   <step>.log                   each job step's output, streamed
#
# Environment:
#   LEARNING_RUNS_DEVICE    cuda (default: cluster=local_gpu) | cpu (cluster=local cluster.device=cpu; caps x8)
#   LEARNING_RUNS_TINY      1: toy sizes (debug=tiny: the tiny random judge, 3 steps of 2 pairs, 4-8 pairs judged;
#                           table4 on the embedded judge at debug=cpu's 64-example SFT init, 2 steps of 2 pairs)
#   LEARNING_RUNS_BUDGET_S  the deadline for all steps, seconds from the start (default 575 on cuda, 7200 on cpu)
#   LEARNING_RUNS_ONLY      comma list of steps, run in that order (prep always first)
#   LEARNING_RUNS_RESUME    1: keep the steps' run directories, so a step cut by its timeout continues where it stopped
#                           (same warm machine; default: each step starts afresh, the cached SFT inits kept)
#   LEARNING_RUNS_PLAN      1: run nothing; print each step with the timeout it would get if the steps before it ran
#                           to their own timeouts
#   LEARNING_RUNS_WORK      scratch folder (default /tmp/learning_runs); OUT defaults to $LEARNING_RUNS_WORK/out
#   LEARNING_RUNS_ENV       the kit's environment file (default /tmp/gpu_kit/env.sh; required on cuda)
#   LEARNING_RUNS_PYTHON    the interpreter (default python3; .venv/bin/python where the kit is not installed)
#   JUDGE_RL_DATA           the data folder (scripts/gpu_data.sh): ../shared/data beside the checkout, else the carried
#                           gpu_kit_out/data (llmbar/{natural,faireval,mt-bench-human,llmeval2}.json and
#                           hh-rlhf/harmless-base-test.jsonl.gz: the real_pairs steps need all five)
#   JUDGE_RL_CACHE          converted models and SFT inits (default $LEARNING_RUNS_WORK/cache; kept between calls)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD

DEVICE=${LEARNING_RUNS_DEVICE:-cuda}
TINY=${LEARNING_RUNS_TINY:-0}
ONLY=${LEARNING_RUNS_ONLY:-}
RESUME=${LEARNING_RUNS_RESUME:-0}
GPU_STEPS_PLAN=${LEARNING_RUNS_PLAN:-}
KIT_ENV=${LEARNING_RUNS_ENV:-/tmp/gpu_kit/env.sh}
RESERVE=15     # seconds kept after the last step for the summary and the tarball
MIN_STEP=30    # a step with less time than this left is skipped
case "$DEVICE" in
  cuda) SCALE=1 BUDGET=${LEARNING_RUNS_BUDGET_S:-575} ;;
  cpu) SCALE=8 BUDGET=${LEARNING_RUNS_BUDGET_S:-7200} ;;
  *) echo "LEARNING_RUNS_DEVICE=$DEVICE: cuda or cpu" >&2; exit 2 ;;
esac
SEEDS=(42 43)   # part 2's two seeds, fixed before any GPU result (the header says why these)
STEPS=(default_long real_pairs_s42 real_pairs_s43 table4_a table4_b)
declare -A CAP=([prep]=90 [default_long]=545 [real_pairs_s42]=545 [real_pairs_s43]=545 [table4_a]=545 [table4_b]=545)
ORDER=("${STEPS[@]}")
if [ -n "$ONLY" ]; then IFS=, read -r -a ORDER <<<"$ONLY"; fi
for s in "${ORDER[@]}"; do
  [[ " ${STEPS[*]} " == *" $s "* ]] || { echo "LEARNING_RUNS_ONLY: no step $s (steps: ${STEPS[*]})" >&2; exit 2; }
done
command -v timeout >/dev/null || { echo "learning_runs: no 'timeout' (coreutils) on this machine" >&2; exit 2; }

if [ "$DEVICE" = cuda ] && [ -z "$GPU_STEPS_PLAN" ] && [ ! -f "$KIT_ENV" ]; then
  echo "learning_runs: $KIT_ENV is missing: install the GPU kit's base part first (scripts/gpu_kit/README.md," \
       "section 2; the verl profile is not needed), in the same warm machine" >&2
  exit 2
fi

# shellcheck source=scripts/gpu_kit/steps.sh
source scripts/gpu_kit/steps.sh
WORK_DIR=${LEARNING_RUNS_WORK:-/tmp/learning_runs}
if [ "$RESUME" = 1 ] && [ -z "$GPU_STEPS_PLAN" ] && [ -d "$WORK_DIR/runs" ]; then
  # kit_setup makes keep/ and runs/ afresh: set the runs aside and put them back
  rm -rf "$WORK_DIR/runs.resume" && mv "$WORK_DIR/runs" "$WORK_DIR/runs.resume"
fi
kit_setup learning_runs "$WORK_DIR" "${LEARNING_RUNS_PYTHON:-}" table4
if [ -d "$WORK/runs.resume" ]; then rm -rf "$RUNS" && mv "$WORK/runs.resume" "$RUNS"; fi
CACHE=${JUDGE_RL_CACHE:-$WORK/cache}   # conversions and SFT inits are kept between invocations on the same machine
export JUDGE_RL_CACHE=$CACHE PYTHONUNBUFFERED=1 HYDRA_FULL_ERROR=1 TOKENIZERS_PARALLELISM=false JUDGE_RL_ROOT=$REPO
export WANDB_MODE=disabled
# shellcheck source=scripts/gpu_data.sh
source scripts/gpu_data.sh   # JUDGE_RL_DATA: ../shared/data, else the carried gpu_kit_out/data

pack() {
  [ -n "$GPU_STEPS_PLAN" ] && return 0
  pack_keep learning_runs "$PY" scripts/gpu_kit/learning_runs_report.py "$WORK"
}
trap 'stop_smi; pack >/dev/null 2>&1 || true' EXIT

keep_run() {  # RUN_DIR DEST: what a run leaves that is worth bringing back (no checkpoints, no model)
  local src=$1 dest=$2 f
  mkdir -p "$dest"
  for f in results.json status.json metrics.jsonl resolved_config.yaml judge_rl.log .hydra/overrides.yaml; do
    if [ -f "$src/$f" ]; then mkdir -p "$dest/$(dirname "$f")" && cp "$src/$f" "$dest/$f"; fi
  done
  [ -d "$src/plots" ] && cp -r "$src/plots" "$dest/" || true
  if [ -d "$src/eval" ]; then
    (cd "$src" && find eval -name '*.jsonl' -o -name 'summary.json') | while read -r f; do
      mkdir -p "$dest/$(dirname "$f")" && cp "$src/$f" "$dest/$f"
    done
  fi
}
table4_report() {  # the four rows together, Think-J's column beside them, from whichever table4 sweeps ran
  local dirs=() d
  for d in "$RUNS/table4_a" "$RUNS/table4_b"; do [ -d "$d" ] && dirs+=("$d"); done
  [ ${#dirs[@]} -gt 0 ] || return 0
  "$PY" -m judge_rl.report "${dirs[@]}" --paper thinkj_table4 --out "$KEEP/table4" --columns \
"judge/held_out/accuracy,judge/held_out/consistent_accuracy,judge/held_out/accuracy_a,judge/held_out/accuracy_b,\
judge/held_out/a_preference_rate,judge/held_out/parse_failure_rate,sft/held_out/consistent_accuracy,\
judge_minus_sft/consistent_accuracy,training/rl/steps,training/rl/reward_last_mean,training/dpo/pairs_kept,wall_s" \
    >"$KEEP/logs/table4_report.log" 2>&1 || echo "learning_runs: the table4 report failed (keep/logs/table4_report.log)"
}
after_step() {  # NAME RUN_DIR: keep the run (each point of a sweep), then pack
  local name=$1 dir=$2 p
  if [ "$dir" != - ] && [ -d "$dir" ]; then
    rm -rf "${KEEP:?}/runs/$name"
    if [ -f "$dir/multirun.yaml" ] || [[ $name == table4_* ]]; then
      for p in "$dir"/*/; do
        if [ -f "$p/.hydra/overrides.yaml" ]; then keep_run "$p" "$KEEP/runs/$name/$(basename "$p")"; fi
      done
      cp "$dir"/report.md "$dir"/report.csv "$dir"/multirun.yaml "$KEEP/runs/$name/" 2>/dev/null || true
    else
      keep_run "$dir" "$KEEP/runs/$name"
    fi
  fi
  [[ $name == table4_* ]] && table4_report
  pack
}
run_dir_for() {  # NAME: the step's run (or sweep) directory, afresh unless LEARNING_RUNS_RESUME=1
  [ "$RESUME" = 1 ] || rm -rf "${RUNS:?}/$1"
  echo "$RUNS/$1"
}

# -- the commands ------------------------------------------------------------------------------------------------------
# hf sampler and judge pinned on both devices: on the GPU `auto` is hf without vLLM (the base kit has none); on this
# CPU machine `auto` would take vLLM, and the wiring check should run the GPU's path
ENGINES=(trainer.rollout_engine=hf eval.server=hf)
# table4 runs on `cluster=local cluster.device=cuda`, not local_gpu: local_gpu sets algorithm.ppo_micro_batch_size,
# a key dpo_critic's config does not have (ConfigKeyError; found composing the sweep with dry_run=true), and each online
# row keeps its own micro-batch, as on the CPU (the default job's 3.1 s a step on the H200 ran that way)
if [ "$DEVICE" = cuda ]; then
  CLUSTER=(cluster=local_gpu)
  CLUSTER_T4=(cluster=local cluster.device=cuda)
else
  CLUSTER=(cluster=local cluster.device=cpu)
  CLUSTER_T4=("${CLUSTER[@]}")
fi
DEFAULT_LONG=(experiments=learn_default_h200)
REAL_PAIRS=(real_pairs=grpo_consistency data=real_pairs eval=real_pairs trainer.total_steps=100
  trainer.prompts_per_step=16 trainer.save_every=50 trainer.eval_every=25 trainer.eval_subset=32 eval.batch_size=64)
TABLE4=(+sweeps=thinkj_table4 data.eval.kwargs.n=256 trainer.total_steps=50 trainer.prompts_per_step=4
  trainer.save_every=25 trainer.eval_every=0 eval.batch_size=64 "eval.benchmarks=[]")
TABLE4_A=dpo_critic,grpo
TABLE4_B=ppo,reinforce_pp
if [ "$TINY" = 1 ]; then  # every step's code path at toy sizes (debug=tiny comes after experiments= and real_pairs=)
  DEFAULT_LONG+=(debug=tiny trainer.total_steps=3 trainer.eval_every=2 trainer.eval_subset=4 eval.limit=8)
  REAL_PAIRS+=(debug=tiny trainer.total_steps=3 trainer.prompts_per_step=2 trainer.eval_every=2 trainer.eval_subset=4
    eval.limit=8 "eval.benchmarks=[llmbar_natural,faireval]" eval.benchmark_limit=4 data.train.kwargs.per_set=8
    data.eval.kwargs.per_set=4)
  # table4 on the embedded judge (debug=cpu: a 64-example SFT init): the critic of dpo_critic must write traces that
  # reach a verdict, which the tiny random model never does (tests/recipes/test_methods.py)
  TABLE4+=(debug=cpu trainer.total_steps=2 trainer.prompts_per_step=2 eval.limit=4 eval.max_new_tokens=72)
fi
COMMON=(logger=none "${ENGINES[@]}")

if [ -z "$GPU_STEPS_PLAN" ]; then
  { echo "mode: device=$DEVICE tiny=$TINY budget=${BUDGET}s only=${ONLY:-all} resume=$RESUME python=$PY cache=$CACHE"
    echo "data: $JUDGE_RL_DATA"
    for f in llmbar/natural.json llmbar/faireval.json llmbar/mt-bench-human.json llmbar/llmeval2.json \
             hh-rlhf/harmless-base-test.jsonl.gz; do
      echo "  $f $([ -f "$JUDGE_RL_DATA/$f" ] && echo present || echo MISSING)"
    done
    echo "date: $(date -Is)"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    echo "host memory: $(free -g | awk '/^Mem:/{print $2}') GiB; cpus $(nproc)"; } >"$KEEP/env.txt" 2>&1 || true
  cat "$KEEP/env.txt"
fi
run_step prep "$((CAP[prep] * SCALE))" 0 - "$PY" -c "$PREP_PY" "$CACHE"

job_step() {  # NAME ARGS...: one main job in the step's run directory
  local name=$1 dir
  shift
  dir=$(run_dir_for "$name")
  run_step "$name" "$((CAP[$name] * SCALE))" 1 "$dir" "$PY" -m judge_rl "$@" "${COMMON[@]}" "${CLUSTER[@]}" \
    "run_dir=$dir" "hydra.run.dir=$dir"
}
sweep_step() {  # NAME POINTS ARGS...: a multirun of the table4 sweep into the step's sweep directory
  local name=$1 points=$2 dir
  shift 2
  dir=$(run_dir_for "$name")
  run_step "$name" "$((CAP[$name] * SCALE))" 1 "$dir" "$PY" -m judge_rl -m "$@" "algorithm=$points" "${COMMON[@]}" \
    "${CLUSTER_T4[@]}" "hydra.sweep.dir=$dir"
}
step_default_long() { job_step default_long "${DEFAULT_LONG[@]}"; }
step_real_pairs_s42() { job_step real_pairs_s42 "${REAL_PAIRS[@]}" "seed=${SEEDS[0]}"; }
step_real_pairs_s43() { job_step real_pairs_s43 "${REAL_PAIRS[@]}" "seed=${SEEDS[1]}"; }
step_table4_a() { sweep_step table4_a "$TABLE4_A" "${TABLE4[@]}"; }
step_table4_b() { sweep_step table4_b "$TABLE4_B" "${TABLE4[@]}"; }
for s in "${ORDER[@]}"; do "step_$s"; done

finish_steps
