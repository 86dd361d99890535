"""The policy job's machinery (the job itself: judge_rl/jobs/policy.py, `python -m judge_rl.policy`): a policy
trained with an LLM judge (or rules) as its reward. By concern:

- `config`: the job's typed schema (conf/policy.yaml; groups policy_reward/, judge/, policy_data/).
- `tasks/`: the task: generated prompts with rubric and checkers, the guard, rubric and VerIF files, the prompt
  sources, and preference pairs on the task for training its judges.
- `rewards/`: pure reward functions (`rule_score`, `rubric_score`, `verif_score`, `judge_pairwise_score`)
  returning `PolicyReward`, the judge prompts and strict reply parsers (a judge failure is never a score);
  `grading`: `Grader`, the configured reward over the judge client (one step's calls concurrent); `bias`: the
  judge's bias against the rule checkers, per step.
- `backend`: `PolicyBackend`, the local backend's step with judge failures masked (or their groups dropped)
  and the failure-rate stop.
- `verl/`: the job on verl 0.9 (translation, the reward function and manager verl's workers import, their outcomes).
- `ifeval_run`: IFEval of a policy (answers saved and reused; the intervals, resampling prompts, are
  judge_rl/reports/ifeval_stats.py).

Submodules are imported explicitly (nothing is imported here), so importing one stays cheap.
"""
