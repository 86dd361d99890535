
from judge_rl.rundir import register_resolvers as _register_resolvers

_register_resolvers()  # ${unique:} in conf/*.yaml: Hydra's default run directories differ per process
