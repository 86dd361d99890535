"""Backends: what trains a judge online. `cluster.backend` picks one; both read the same job config.

  local   judge_rl.backends.local   one process, CPU or one CUDA device; the step calls verl's own
                                    `core_algos` (advantages, policy loss, KL), so the math is verl's
  verl    judge_rl.backends.verl    verl 0.9.x on Ray, vLLM and GPUs: judge_rl's config is TRANSLATED into
                                    verl's `ppo_trainer` config, never merged into its namespace (verl owns
                                    Hydra groups named model/algorithm/reward/data, and a same-named group
                                    would silently replace its files)

A backend is a function `(job, init_model, train_items, messages_fn, score_fn, log, run_dir, *, group_fn,
eval_fn) -> RLResult`, registered here by name (`BACKENDS.get(name)`). (Servers, which answer judge prompts, are
`judge_rl.servers`.)
"""

from judge_rl.registry import Registry

# the modules that register backends are imported on the first lookup (the local one imports torch and
# verl's core_algos; the verl one verl's config machinery)
BACKENDS: Registry = Registry("backend", modules=("judge_rl.backends.local.loop", "judge_rl.backends.verl.launch"))
