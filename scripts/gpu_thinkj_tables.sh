#!/usr/bin/env bash
# Think-J Table 3 or Table 4 at paper scale: Qwen2.5-7B-Instruct judges on HelpSteer2-preference, scored on
# RewardBench and RM-Bench, the rows of one table side by side in one report.
#
#   bash scripts/gpu_thinkj_tables.sh table4 [hydra overrides...]   # dpo_critic, ppo, reinforce_pp, grpo
#   bash scripts/gpu_thinkj_tables.sh table3 [hydra overrides...]   # direct, sft_direct, sft_cot, bt, grpo
#   PRINT_ONLY=1 bash scripts/gpu_thinkj_tables.sh table4            # print the commands, run nothing
#
# Online rows (ppo, reinforce_pp, grpo) train on verl (cluster=node_8gpu: Ray, vLLM rollouts, FSDP), after verl's own
# config checks in a CPU dry run. Offline rows (dpo_critic, sft_*, bt, direct) train with TRL on one GPU
# (cluster=local cluster.device=cuda): a 7B full fine-tune with a DPO reference fits an 80-141 GB GPU in bf16 only
# with small batches; their judge/critic sampling stages run in one process, so `accelerate launch` over several
# GPUs is not supported for them yet.
#
# The thinking init reads a curated set of traces (`sft.data`, Think-J's LIMJ707): make it first with
#   python -m judge_rl.curate data.loader=helpsteer2_preference ... accuracy.teacher=server ... limit=707 output=$INIT
# Needs: the GPU environment (pip install -e ".[gpu]"), network or a filled HF cache (model, data, benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
TABLE=${1:?usage: scripts/gpu_thinkj_tables.sh table3|table4 [hydra overrides...]}
shift
INIT=${INIT:-outputs/limj/limj707.jsonl}
OUT=${OUT:-multirun/thinkj_${TABLE}_paper}
case "$TABLE" in
  table4) ONLINE=ppo,reinforce_pp,grpo; OFFLINE=(dpo_critic) ;;
  table3) ONLINE=grpo; OFFLINE=(direct sft_direct sft_cot bt) ;;
  *) echo "unknown table '$TABLE': table3 or table4" >&2; exit 2 ;;
esac
# each offline method's own paper-scale fields (its `algorithm` node is typed by its recipe)
declare -A METHOD=(
  [dpo_critic]="algorithm.lr=5e-7 algorithm.batch_size=8 algorithm.max_new_tokens=1024 algorithm.critic.max_new_tokens=1024 algorithm.max_length=5120"
  [sft_cot]="algorithm.rejection.sampler=base algorithm.rejection.max_new_tokens=1024 algorithm.rejection.samples=8"
  [bt]="algorithm.lr=2e-6 algorithm.batch_size=32 algorithm.num_pairs=7000 algorithm.max_length=4096"
  [sft_direct]="" [direct]=""
)
# Think-J's settings where the paper gives them (Table 11: lr 1e-6, n=8 for online RL; DPO beta 0.1, SFT weight 1)
COMMON=(
  "+sweeps=thinkj_${TABLE}" model=qwen2.5-7b-instruct data=helpsteer2 reward=strength logger=wandb
  "eval.benchmarks=[rewardbench,rmbench]" eval.benchmark_limit=null eval.max_new_tokens=1024 eval.batch_size=32
  "sft.data={loader: pairs, kwargs: {path: ${INIT}}}" sft.num_examples=1414 sft.epochs=2 sft.lr=1e-5
  sft.batch_size=16 sft.max_length=4096 trainer.max_new_tokens=1024
)
ONLINE_RUN=(cluster=node_8gpu algorithm.lr=1e-6 algorithm.rollout_n=8)
OFFLINE_RUN=(cluster=local cluster.device=cuda)
run() {
  if [ -n "${PRINT_ONLY:-}" ]; then printf '%q ' python -m judge_rl "$@"; echo; else python -m judge_rl "$@"; fi
}
# the swept `algorithm` on the command line replaces the sweep file's list
run -m "algorithm=${ONLINE}" "${COMMON[@]}" "${ONLINE_RUN[@]}" "$@" --dry-run "hydra.sweep.dir=${OUT}/preflight"
run -m "algorithm=${ONLINE}" "${COMMON[@]}" "${ONLINE_RUN[@]}" "$@" "hydra.sweep.dir=${OUT}/online"
for method in "${OFFLINE[@]}"; do
  # shellcheck disable=SC2086  (the method's fields are words)
  run -m "algorithm=${method}" "${COMMON[@]}" "${OFFLINE_RUN[@]}" ${METHOD[$method]} "$@" "hydra.sweep.dir=${OUT}/offline_${method}"
done
if [ -z "${PRINT_ONLY:-}" ]; then
  python -m judge_rl.report "${OUT}"/offline_* "${OUT}/online" --paper "thinkj_${TABLE}" \
    --columns judge/rewardbench/official/overall,judge/rmbench/official/overall/avg_acc,judge/held_out/consistent_accuracy,judge_minus_sft/consistent_accuracy \
    --out "${OUT}"
fi
