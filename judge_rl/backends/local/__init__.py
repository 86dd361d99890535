"""The local backend: online RL in one process (CPU, or one CUDA device), verl's math.

  backend.py   LocalBackend: one step (sample, score, advantages, KL, update) with verl.trainer.ppo.core_algos
  loop.py      train_local (registered as BACKENDS "local", runs an RLTask): steps, checkpoints, resume, live evaluation
"""

from judge_rl.backends.local.backend import LocalBackend
from judge_rl.backends import RLResult
from judge_rl.backends.local.loop import eval_due, evaluate_live, latest_checkpoint, step_items, train_local

__all__ = ["LocalBackend", "RLResult", "eval_due", "evaluate_live", "latest_checkpoint", "step_items", "train_local"]
