"""A policy trained with an LLM judge (or rules) as its reward: prompts, rubric files and reward functions.

- `judge_rl.policy.data`: `PolicyPrompt` and `Criterion` (a prompt with verifiable IFEval constraints,
  soft constraints and a HealthBench-style rubric), and a seeded generator of instruction-following
  training prompts with new wording (train/test disjoint by base task).
- `judge_rl.policy.rubric_files`: loaders for RuscaRL/HealthBench rubric files and VerIF-style rows
  (rule checkers named from the IFEval registry, never code).
- `judge_rl.policy.rewards`: pure reward functions (`rule_score`, `rubric_score`, `verif_score`,
  `judge_pairwise_score`) returning `PolicyReward`, the judge prompts and strict reply parsers they
  need, and `POLICY_REWARDS`. A judge failure is never a score ("no silent zeros").

Submodules are imported explicitly (nothing is imported here), so importing one stays cheap.
"""
