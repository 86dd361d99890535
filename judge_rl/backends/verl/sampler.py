"""verl's sync replay buffer for every judge_rl job on verl: a rollout group none of whose samples finished is
replaced by a fresh prompt, a bounded number of times a step, instead of ending the run.

Set by the translation (judge_rl/backends/verl/translate.py, `refill_values`) for every job:

    trainer.v1.sampler.sync_refill_failed_groups: true   (verl then fetches one prompt at a time: gen_batch_size 1)
    trainer.v1.sampler.custom_sampler.path: pkg://judge_rl.backends.verl.sampler
    trainer.v1.sampler.custom_sampler.name: RefillingReplayBuffer
    trainer.v1.sampler.sampler_kwargs.max_failed_group_refills: <4 x prompts a step>

Why: in verl 0.9.1's v1 trainer a rollout that raises (its generation, or its reward: a judge that fails to grade
a sample, judge_rl/policy/verl/reward_manager.py) fails its session, and verl marks its whole group "failure":
the group's other samples stay, a group whose samples all failed has no trajectory. When every group a step
selects is such a group, verl's sync buffer (`ReplayBuffer.sample`) raises "Sync replay buffer selected terminal
groups with no materializable trajectories" and the run ends (seen in CI: the tiny policy job, 2 prompts x 4
samples graded by an untrained judge whose replies are mostly cut short, and the main job's 2 prompts). The local
backend masks such a step and goes on. Here verl's own `sync_refill_failed_groups` replaces each group with no
trajectory by a fresh prompt (`refill_fn`, the trainer's `_add_prompts_to_generate`); groups with some finished
samples stay as they are (mask). Rollouts that always fail would make that refill loop forever, so the refills of
one step are counted and, above the bound, the step stops the run with one line saying so; the agent loop's own
"Error in _run_prompt" reports in the log say why each failed.

Extension point: `trainer.v1.sampler.custom_sampler.{path,name}` (verl/trainer/ppo/v1/trainer_base.py,
`_build_replay_buffer`), which passes a custom class the base constructor's first arguments and `refill_fn` only.
"""

from __future__ import annotations

from typing import Any, Callable

from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

MODULE_PATH = "pkg://judge_rl.backends.verl.sampler"
CLASS_NAME = "RefillingReplayBuffer"
REFILLS_PER_PROMPT = 4  # the bound: this many fresh prompts a step for each prompt of the step
REFILLS_KEY = "max_failed_group_refills"


class StepGroupsFailed(RuntimeError):
    """More groups of one step had no finished sample than `max_failed_group_refills`: the rollouts are failing."""


class RefillingReplayBuffer(ReplayBuffer):
    """verl's sync ReplayBuffer with failed groups refilled (`sync_refill_failed_groups`, which needs
    `gen_batch_size=1`), at most `sampler_kwargs.max_failed_group_refills` prompts a step."""

    def __init__(self, *, sampler_kwargs: Any, refill_fn: Callable[[int], Any] | None = None, **kwargs: Any) -> None:
        if refill_fn is None:
            raise ValueError(f"{CLASS_NAME}: verl passed no refill_fn; it replaces the failed groups")
        self.max_refills = int((sampler_kwargs or {}).get(REFILLS_KEY, 0))
        if self.max_refills < 1:
            raise ValueError(f"{CLASS_NAME}: trainer.v1.sampler.sampler_kwargs.{REFILLS_KEY} must be >= 1")
        self.refills = 0
        self._refill = refill_fn
        super().__init__(sampler_kwargs=sampler_kwargs, refill_fn=self._bounded_refill, gen_batch_size=1,
                         sync_refill_failed_groups=True, **kwargs)  # fmt: skip

    def _bounded_refill(self, n: int) -> Any:
        self.refills += n
        if self.refills > self.max_refills:
            raise StepGroupsFailed(
                f"{self.refills} rollout groups of this step had no finished sample (more than {REFILLS_KEY}="
                f"{self.max_refills}): the rollouts are failing; the agent loop's 'Error in _run_prompt' reports in the "
                "log above say why (a judge that fails to grade: judge_rl/policy/verl/reward_manager.py's one-line "
                "failures and counts)"
            )
        return self._refill(n)

    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> Any:
        self.refills = 0  # the bound is per step
        return super().sample(global_steps, partition_id, batch_size)
