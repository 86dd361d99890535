"""The policy's task: what a policy is trained and measured on, and where its prompts come from.

- `prompts`: `PolicyPrompt` and `Criterion`, and a seeded generator of instruction-following training prompts
  (IFEval instruction types, new wording, train/test disjoint by base task), each with rubric and checkers.
- `guard`: what the rule checkers cannot see (answers that pass them while answering nothing).
- `rubric_files`: loaders for RuscaRL/HealthBench rubric files and VerIF-style rows (checkers named from the
  IFEval registry, never code).
- `sources`: the registry of prompt sources (`policy_data.source`) and the check that each prompt has what its reward
  needs.
- `pairs`: preference pairs on this task (`data=policy_task` of the main job), built from `task_bodies.jsonl`.

Submodules are imported explicitly (nothing is imported here).
"""
