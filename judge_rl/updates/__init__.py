"""Updates: turn scored rollouts into weight changes (local engine) or a thinking-initialisation SFT."""

from judge_rl.registry import Registry

ENGINES: Registry = Registry("engine")
