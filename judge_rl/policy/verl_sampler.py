"""verl's sync replay buffer for a judge-graded policy: a rollout group none of whose samples was graded is
replaced by a fresh prompt, a bounded number of times a step, instead of ending the run.

Selected by the translation (judge_rl/policy/verl.py, `policy_reward_keys`) for every reward that calls a judge:

    trainer.v1.sampler.sync_refill_failed_groups: true   (verl then fetches one prompt at a time: gen_batch_size 1)
    trainer.v1.sampler.custom_sampler.path: pkg://judge_rl.policy.verl_sampler
    trainer.v1.sampler.custom_sampler.name: JudgeFailureReplayBuffer
    trainer.v1.sampler.sampler_kwargs.max_failed_group_refills: <4 x prompts a step>

Why: a sample the judge fails to grade leaves the batch (verl_reward_manager.py: its session fails). When every
sample of a group failed, verl 0.9.1's sync buffer (`ReplayBuffer.sample`) has a group with no trajectory; when
every group of a step is such a group it raises "Sync replay buffer selected terminal groups with no
materializable trajectories" and the run ends (seen in CI: the tiny policy job, 2 prompts x 4 samples graded by an
untrained judge whose replies are mostly cut short). The local backend masks such a step and goes on. Here verl's
own `sync_refill_failed_groups` replaces each group with no trajectory by a fresh prompt (`refill_fn`, the
trainer's `_add_prompts_to_generate`); groups with some graded samples stay as they are (mask). A judge that fails
every call would make that refill loop forever, so the refills of one step are counted and, above the bound, the
step stops the run with one line saying so. The failures themselves are counted per reason by the reward manager.

Extension point: `trainer.v1.sampler.custom_sampler.{path,name}` (verl/trainer/ppo/v1/trainer_base.py,
`_build_replay_buffer`), which passes a custom class the base constructor's first arguments and `refill_fn` only.
"""

from __future__ import annotations

from typing import Any, Callable

from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

MODULE_PATH = "pkg://judge_rl.policy.verl_sampler"
CLASS_NAME = "JudgeFailureReplayBuffer"
REFILLS_KEY = "max_failed_group_refills"


class StepGroupsFailed(RuntimeError):
    """More groups of one step had no graded sample than `max_failed_group_refills`: the judge is failing."""


class JudgeFailureReplayBuffer(ReplayBuffer):
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
                f"{self.refills} rollout groups of this step had no sample the judge graded (more than "
                f"{REFILLS_KEY}={self.max_refills}): the judge is failing; its one-line failures and counts are in "
                "the log above (judge_rl/policy/verl_reward_manager.py)"
            )
        return self._refill(n)

    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> Any:
        self.refills = 0  # the bound is per step
        return super().sample(global_steps, partition_id, batch_size)
