# The step runner of the GPU kit's one-call scripts (first_numbers.sh, verl_numbers.sh, scale_numbers.sh): sourced, not run.
#
# The sourcing script sets START and DEADLINE (epoch seconds; kit_setup below sets them, and WORK, PY, OUT, KEEP and RUNS,
# for verl_numbers.sh and scale_numbers.sh), RESERVE (seconds kept after the last step), MIN_STEP
# (a step with less time than this left is skipped), KEEP (its keep/ folder, with logs/ and nvsmi/), OUT, ONLY (a
# comma list of steps to run; empty: all), and defines `after_step NAME RUN_DIR`, called after every step that ran
# (collect the run, rewrite the summary and the tarball under $OUT, so a call cut at its limit still returns them).
# GPU_STEPS_PLAN=1 runs nothing: each step prints the timeout it would get if every step before it ran to its own
# timeout (a simulated clock, SIM_NOW), which is how the deadline logic is checked without a GPU.

# kit_setup NAME WORK_DIR PYTHON [EXTRA_KEEP_DIR...]: WORK and PY of a one-call script (verl_numbers.sh,
# scale_numbers.sh), then OUT, START, DEADLINE (BUDGET seconds on), KEEP and RUNS made afresh. Under GPU_STEPS_PLAN a
# throwaway WORK and python3; else the GPU kit's environment file KIT_ENV sourced where it exists (PYTHONPATH=<kits>,
# HF_HUB_OFFLINE=1, ...), refused on cuda without it, and on a CPU this checkout's .venv. PYTHON: the interpreter asked
# for (empty: python3, or the .venv's on a CPU without the kit).
kit_setup() {
  local name=$1 work=$2 python=$3
  shift 3
  if [ -n "${GPU_STEPS_PLAN:-}" ]; then
    WORK=$(mktemp -d)
    PY=python3
  elif [ -f "$KIT_ENV" ]; then
    WORK=$work
    # shellcheck disable=SC1090
    source "$KIT_ENV"
    PY=${python:-python3}
  elif [ "$DEVICE" = cuda ]; then
    echo "$name: $KIT_ENV is missing: install the GPU kit and its verl profile first" \
         "(scripts/gpu_kit/README.md), in the same warm machine" >&2
    exit 2
  else
    WORK=$work
    PY=${python:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
  fi
  OUT=${OUT:-$WORK/out}
  START=$(date +%s)
  DEADLINE=$((START + BUDGET))
  KEEP=$WORK/keep
  RUNS=$WORK/runs
  mkdir -p "$OUT" "$WORK"
  rm -rf "$KEEP" "$RUNS"
  mkdir -p "$KEEP"/{logs,nvsmi,runs} "$RUNS"
  local extra
  for extra in "$@"; do mkdir -p "$KEEP/$extra"; done
  printf '' >"$KEEP/steps.tsv"
}

SMI_PID=""
stop_smi() {
  if [ -n "$SMI_PID" ]; then
    kill "$SMI_PID" 2>/dev/null || true
    wait "$SMI_PID" 2>/dev/null || true
    SMI_PID=""
  fi
}

selected() {  # name: is this step in ONLY (or is ONLY empty)?
  [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]
}

clock() {  # now, in epoch seconds (the simulated clock under GPU_STEPS_PLAN=1)
  if [ -n "${GPU_STEPS_PLAN:-}" ]; then echo "${SIM_NOW:-$START}"; else date +%s; fi
}

step_timeout() {  # CAP: the seconds a step may run: its cap, cut to what is left before the deadline less RESERVE
  local left=$((DEADLINE - $(clock) - RESERVE))
  echo $(($1 < left ? $1 : left))
}

record_skip() {  # NAME NOTE: a step that did not run, in steps.tsv (and said)
  local now
  now=$(clock)
  printf '%s\tskipped\t%s\t%s\t0\t%s\n' "$1" "$now" "$now" "$2" >>"$KEEP/steps.tsv"
  echo "== $1: skipped ($2)"
}

# run_step NAME CAP TO_OUT RUN_DIR CMD...: CMD under `timeout` (SIGTERM at the step's timeout, SIGKILL 20 s later), its
# output teed into keep/logs/NAME.log (and $OUT/NAME.log when TO_OUT=1), nvidia-smi sampled meanwhile; rc, start,
# end, timeout and a note appended to keep/steps.tsv; then `after_step NAME RUN_DIR`.
run_step() {
  local name=$1 cap=$2 to_out=$3 run_dir=$4 t rc start end note=""
  shift 4
  t=$(step_timeout "$cap")
  if ((t < MIN_STEP)); then
    record_skip "$name" "deadline: ${t}s left"
    return 0
  fi
  if [ -n "${GPU_STEPS_PLAN:-}" ]; then
    local shown=() a
    for a in "$@"; do if ((${#a} > 100)); then shown+=("<${#a} characters>"); else shown+=("$a"); fi; done
    echo "== $name: at +$(($(clock) - START))s, timeout ${t}s: ${shown[*]}"
    SIM_NOW=$(($(clock) + t))
    return 0
  fi
  local logs=("$KEEP/logs/$name.log")
  if [ "$to_out" = 1 ]; then logs+=("$OUT/$name.log"); fi
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=timestamp,memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits -l 1 \
      >"$KEEP/nvsmi/$name.csv" 2>/dev/null &
    SMI_PID=$!
  fi
  start=$(date +%s.%N)
  { echo "== $name: $(date -Is), timeout ${t}s"; printf '%q ' "$@"; echo; } | tee "${logs[@]}"
  rc=0
  timeout -k 20 "$t" "$@" 2>&1 | tee -a "${logs[@]}" || rc=$?
  end=$(date +%s.%N)
  stop_smi
  if [ "$rc" = 124 ]; then note="timed out after ${t}s"; fi
  if [ "$rc" = 137 ]; then note="killed after ${t}s + 20s"; fi
  echo "== $name: rc $rc, $(date -Is) $note" | tee -a "${logs[@]}"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$start" "$end" "$t" "$note" >>"$KEEP/steps.tsv"
  after_step "$name" "$run_dir"
}

# The embedded model's GGUF -> safetensors conversion (and the tiny model's tokenizer), cached under the cache folder
# given as argv[1]: the `prep` step of both scripts, so the jobs' times leave it out.
PREP_PY='
import sys, time
from judge_rl.config import ModelConfig
from judge_rl.config.paths import load_group_file
from judge_rl.models.loading import converted_gguf_dir, tokenizer_dir
cache = sys.argv[1]
for name in ("smollm2-135m", "tiny-random"):
    cfg = load_group_file("model", name, ModelConfig, "model")
    t = time.perf_counter()
    path = converted_gguf_dir(cfg, cache) if cfg.source == "gguf_package" else tokenizer_dir(cfg, cache)
    print(f"{name}: {path} ({time.perf_counter() - t:.1f} s)")
'

# pack_keep NAME REPORT_COMMAND...: a script's `pack`, called after every step (so a call cut at its limit still returns
# them): REPORT_COMMAND writes KEEP's summary.txt and summary.json (its errors in keep/report.err), both copied into
# OUT, and WORK's keep/ into OUT/NAME.tar.gz (written beside it, then moved: never half a tarball).
pack_keep() {
  local name=$1
  shift
  "$@" >/dev/null 2>"$KEEP/report.err" || echo "$name: report failed (keep/report.err)"
  cp "$KEEP/summary.txt" "$KEEP/summary.json" "$OUT/" 2>/dev/null || true
  { tar czf "$OUT/$name.tar.gz.tmp" -C "$WORK" keep && mv "$OUT/$name.tar.gz.tmp" "$OUT/$name.tar.gz"; } \
    || echo "$name: the tarball could not be written"
}

# finish_steps: the end of a kit_setup script once its steps ran: under GPU_STEPS_PLAN the plan's closing line (and the
# throwaway WORK removed); else the summary and tarball packed a last time (the script's `pack`) and printed.
finish_steps() {
  trap - EXIT
  if [ -n "${GPU_STEPS_PLAN:-}" ]; then
    rm -rf "$WORK"
    echo "plan: deadline ${BUDGET}s, reserve ${RESERVE}s, a step with under ${MIN_STEP}s left is skipped"
    exit 0
  fi
  pack
  echo
  cat "$KEEP/summary.txt"
  echo "total $(($(date +%s) - START)) s; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
}
