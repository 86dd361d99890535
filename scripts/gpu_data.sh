# Sourced by the GPU scripts, from the repo root. Exports JUDGE_RL_DATA, the data folder conf/benchmark/*.yaml read:
# the environment's; else ../shared/data beside the checkout; else the GPU kit's carried copy, gpu_kit_out/data (the
# device machine has no ../shared: scripts/gpu_kit/README.md). `require_data FILE...` stops the script with one line
# for each file missing under it.
if [ -z "${JUDGE_RL_DATA:-}" ]; then
  if [ -d ../shared/data ]; then JUDGE_RL_DATA=$(cd ../shared/data && pwd); else JUDGE_RL_DATA=$PWD/gpu_kit_out/data; fi
fi
export JUDGE_RL_DATA

require_data() {
  local file missing=0
  for file in "$@"; do
    if [ ! -f "$JUDGE_RL_DATA/$file" ]; then
      echo "$0: no $JUDGE_RL_DATA/$file (JUDGE_RL_DATA; on the GPU machine carry gpu_kit_out/data: scripts/gpu_kit/README.md)" >&2
      missing=1
    fi
  done
  if [ "$missing" = 1 ]; then exit 2; fi
}
