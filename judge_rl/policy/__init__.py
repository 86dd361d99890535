"""The policy job (`python -m judge_rl.policy`): a policy trained with an LLM judge (or rules) as its reward.

- `config`: the job's typed schema (conf/policy.yaml; groups policy_reward/, judge/, policy_data/).
- `data`: `PolicyPrompt` and `Criterion`, and a seeded generator of instruction-following training prompts
  (IFEval instruction types, new wording, train/test disjoint by base task), each with rubric and checkers.
- `rubric_files`: loaders for RuscaRL/HealthBench rubric files and VerIF-style rows (checkers named from the
  IFEval registry, never code).
- `rewards`: pure reward functions (`rule_score`, `rubric_score`, `verif_score`, `judge_pairwise_score`)
  returning `PolicyReward`, the judge prompts and strict reply parsers. A judge failure is never a score.
- `grading`: `Grader`, the configured reward over the judge client (`judge_rl.servers.client`; one step's calls
  concurrent).
- `backend`: `PolicyBackend`, the local backend's step with judge failures masked (or their groups dropped)
  and the failure-rate stop; `bias`: the judge's bias against the rule checkers, per step.
- `ifeval_run`: IFEval of a policy (answers saved and reused; the intervals, resampling prompts, are
  judge_rl/reports/ifeval_stats.py).
- `job`: the job itself; `verl`, `verl_reward`, `verl_reward_manager`: its translation to verl 0.9.

Submodules are imported explicitly (nothing is imported here), so importing one stays cheap.
"""
