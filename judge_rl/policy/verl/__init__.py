"""The policy job on verl 0.9: its translation and launch, and what runs inside verl's reward workers.

- `launch`: the policy's prompts as verl's RL parquet, its config translated to verl's `ppo_trainer`, the dry run;
  the launch itself is the `verl` backend (judge_rl/backends/verl/launch.py).
- `reward`: the file verl imports as `reward.custom_reward_function.path` (`compute_score`, one sample a call).
- `reward_manager`: verl's rate-limited reward manager with judge failures that leave the batch instead of
  becoming rewards of 0.
- `reward_outcomes`: what the reward workers graded, one JSON line a sample, read back into the job's summary.

Submodules are imported explicitly (nothing is imported here): verl imports `reward` and `reward_manager` by path
in its own workers.
"""
