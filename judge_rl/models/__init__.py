"""Models: their architecture and attention (`arch`, `attention`), loading and saving (`loading`), and an identity
for caches (`identity`). Import the module you need: this package imports nothing. Where a model's weights are (a
local directory with a config.json, or a hub id) is a config check, judge_rl/config/model_dirs.py, so a check that
only asks that does not load torch."""
