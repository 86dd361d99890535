"""judge_rl's Hydra launcher plugins (Hydra loads launchers from the `hydra_plugins` namespace only)."""
