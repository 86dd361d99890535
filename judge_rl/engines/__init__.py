"""Engines beyond the local one: adapters that run a judge_rl job on another trainer.

judge_rl's own config (conf/, typed by `judge_rl.config.JobConfig`) is the single source of truth.
An engine adapter TRANSLATES it into the other trainer's config; it never merges judge_rl's groups
into that trainer's config namespace (verl, for one, owns Hydra groups named model/algorithm/reward/
data, and a same-named group would silently replace its files).

  judge_rl.engines.verl   verl 0.9.x: `verl_config` (JobConfig -> verl's composed `ppo_trainer`),
                          `validate` (verl's own checks), `ignored_keys`, and `export_parquet`
                          (judge items -> verl's RL parquet rows).
"""
