"""The verl backend adapter (verl 0.9.x): translate a judge_rl job into verl's own `ppo_trainer` config
and export its judge items as verl's RL parquet.

  verl_config(job, *, data_files, reward_module, ...)  JobConfig -> verl DictConfig (translate.py)
  validate(cfg)                                        verl's own start-up checks, as main_ppo runs them
  ignored_keys(cfg)                                    keys verl 0.9.1 would not read
  unresolved_keys(cfg) / missing_keys(cfg)             `${...}` / `???` values left in a config
  export_parquet(pairs, prompt, path, ...)             judge items -> verl RL parquet rows (export.py)
  reward_module_path()                                 the file verl imports `compute_score` from
  judge_verl_task(job, run_dir, reward)                what the judge job's reward adds to a launch (export.py)

launch.py is the backend registered as `verl` (`train_verl(job, run_dir, task, log)`): it takes any job's RLTask
(judge_rl/backends/__init__.py), the main job's or the policy job's, translates, validates, preflights and launches.

Nothing here starts Ray, vLLM or a GPU: the result is a config and data files for verl's own
entry point, which on a GPU cluster runs what `verl.trainer.main_ppo.main` runs after composing:
`validate(cfg)`, then `verl.trainer.main_ppo.run_ppo(cfg, task_runner_class=TaskRunnerV1)`.
"""

from judge_rl.backends.verl.export import export_job_data, export_parquet, judge_items, judge_rows, reward_module_path
from judge_rl.backends.verl.translate import (
    REWARD_FUNCTION_NAME,
    REWARD_MANAGER,
    ROLLOUT_ENGINE,
    VerlTranslationError,
    compose_verl_defaults,
    ignored_keys,
    missing_keys,
    unresolved_keys,
    validate,
    verl_config,
    verl_model_path,
)

__all__ = [
    "REWARD_FUNCTION_NAME",
    "REWARD_MANAGER",
    "ROLLOUT_ENGINE",
    "VerlTranslationError",
    "compose_verl_defaults",
    "export_job_data",
    "export_parquet",
    "ignored_keys",
    "judge_items",
    "judge_rows",
    "missing_keys",
    "reward_module_path",
    "unresolved_keys",
    "validate",
    "verl_config",
    "verl_model_path",
]
