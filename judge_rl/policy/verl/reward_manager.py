"""verl's reward manager for a judge-graded policy: verl's rate-limited manager, with judge failures that leave
the batch instead of becoming rewards of 0.

Selected by the translation (judge_rl/policy/verl/launch.py) for every reward that calls a judge:

    reward.reward_manager.source: importlib
    reward.reward_manager.module.path: pkg://judge_rl.policy.verl.reward_manager
    reward.reward_manager.name: JudgeRewardManager

(`pkg://` makes verl import the module by name, so each process has one copy of the class and of its counts;
verl's `register` source would need the module imported before the trainer resolves the name, which nothing
in verl does.)

What it changes over `RateLimitedRewardManager` (verl.experimental.reward_loop.reward_manager.limited), which
caps the samples graded at once per reward worker (`reward.max_concurrent`) and bounds each sample's grading
(`reward.timeout`):

1. No silent zeros. verl's manager turns a timeout or an exception of the reward function into reward 0.0
   (with `timeout` / `error` in the extra info). Here a timeout is a judge failure ("judge server error") and an
   exception a `RewardFunctionError`; neither becomes a score.
2. A failed sample leaves the batch. When compute_score reports `judge_failed=1` (judge_rl/policy/verl/reward.py)
   the manager raises `JudgeSampleFailed` (one line: the endpoint and the reason). In verl 0.9.1's trainer
   (`trainer.use_v1=true`, its default; the translation sets it) a sample whose reward raises is a failed
   session: `AgentLoopWorkerTQ._run_prompt` marks its prompt's group "failure" and the failed trajectory never
   reaches the TransferQueue; the group's other samples stay sampleable (`trainer.v1.sync_refill_failed_groups
   =false`), the GRPO advantage is computed per uid over the trajectories present, i.e. from the graded samples
   only; the batch is then padded with no-op samples whose response_mask is 0 (no PPO, entropy or KL loss) and
   which the metrics skip (`padding_utils.upsample_batch_to_divisible_size`). That is judge_failure.mode=mask
   (one difference: verl's GRPO gives a group left with a single graded sample that sample's raw score as its
   advantage, not 0). A group whose samples all failed has no trajectory: judge_rl/backends/verl/sampler.py replaces
   it with a fresh prompt (verl's `sync_refill_failed_groups`), at most a bounded number a step.
   mode=drop_group has no verl counterpart (a group left with fewer than min_group_size graded samples cannot be
   dropped): the translation refuses it. In validation a failed sample is likewise absent from the reward means.
3. Counts. Each process counts its samples and failures per reason (`failure_counts()`), logs one line per
   failure with the running counts and the commonest reason, and appends each sample's outcome and its judge
   calls so far to the run's outcomes file (judge_rl/policy/verl/reward_outcomes.py), which the policy job reads back
   into its summary: verl's own metrics never see a dropped sample.

Not possible from a reward manager in verl 0.9.1 (verified in its source):
- Seeing a group. With no reward model (`reward.reward_model.enable=false`) verl streams rewards: the agent loop
  sends each finished rollout alone to one of `reward.num_workers` reward workers
  (`RewardLoopWorker.compute_score(data[i:i+1])` -> `run_single`); the only batch-level hook,
  `assemble_rm_scores`, is called only on the colocated reward-model path. So a failed sample's score cannot be
  replaced by its group's mean here; dropping the sample (2.) gives the same advantage semantics.
- Stopping the run above `judge_failure.max_failure_rate`. Any exception raised in `run_single` is caught by the
  agent loop as that sample's failure (2.), so it cannot stop training; the advantage computation (the only
  place that sees a whole step) runs in verl's TaskRunner actor and reads only uid, response_mask and rm_scores.
  A judge that fails every call stops the run through the replay buffer instead (judge_rl/backends/verl/sampler.py: more groups of
  one step with no graded sample than its bound); the failures are in the logs (one line each) and these counts.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter
from typing import Any

from verl.experimental.reward_loop.reward_manager.limited import RateLimitedRewardManager

from judge_rl.servers.client import redact_url
from judge_rl.policy.verl.reward_outcomes import judge_totals, record_outcome
from judge_rl.policy.rewards import JUDGE_SERVER_ERROR, POLICY_REWARDS
from judge_rl.policy.verl.reward import process_graders

logger = logging.getLogger(__name__)

MODULE_PATH = "pkg://judge_rl.policy.verl.reward_manager"
MANAGER_NAME = "JudgeRewardManager"


class JudgeSampleFailed(RuntimeError):
    """The judge gave no usable grade for one sample; verl drops the sample (module docstring, 2.)."""

    def __init__(self, endpoint: str, reason: str, detail: str = ""):
        self.endpoint, self.reason, self.detail = endpoint, reason, detail
        extra = f" ({detail})" if detail else ""
        super().__init__(f"judge at {endpoint} failed on this sample: {reason}{extra}; the sample leaves the batch")

    def __reduce__(self):
        # Ray pickles a worker's exception to the caller (verl's agent loop); the default rebuilds it from the
        # message alone, which this __init__ cannot take ("Failed to deserialize exception", seen on cluster=cpu_verl)
        return type(self), (self.endpoint, self.reason, self.detail)


class RewardFunctionError(RuntimeError):
    """The reward function raised (bad data or a bug, not the judge); verl drops the sample, loudly."""


class JudgeRewardManager(RateLimitedRewardManager):
    """verl's rate-limited reward manager without silent zeros (module docstring)."""

    # own class-level limiter state: not shared with (or pre-empted by) a plain RateLimitedRewardManager
    _semaphore = None
    _max_concurrent = None
    _rpm_limiter = None
    _max_rpm = None
    _tpm_limiter = None
    _max_tpm = None
    _estimated_tokens_per_request = None
    _class_initialized = False

    _counts_lock = threading.Lock()
    _counts: Counter = Counter()

    def __init__(self, config, tokenizer, compute_score, reward_router_address=None, reward_model_tokenizer=None,
                 **kwargs: Any):  # fmt: skip
        super().__init__(config, tokenizer, compute_score, reward_router_address=reward_router_address,
                         reward_model_tokenizer=reward_model_tokenizer, **kwargs)  # fmt: skip
        settings = (config.reward.get("custom_reward_function") or {}).get("reward_kwargs") or {}
        self.reward_name = str(settings.get("reward_name", "rubric"))
        self.component_keys = POLICY_REWARDS.get(self.reward_name).component_keys
        self.endpoint = redact_url(str(settings.get("judge_base_url") or "(no judge)"))

    # -- counts ---------------------------------------------------------------------------------------
    @classmethod
    def failure_counts(cls) -> dict[str, int]:
        """This process's counts: "samples", "failures", and "failures/<reason>" per reason."""
        with cls._counts_lock:
            return dict(cls._counts)

    @classmethod
    def reset_counts(cls) -> None:
        with cls._counts_lock:
            cls._counts.clear()

    def _count(self, reason: str | None) -> None:
        with self._counts_lock:
            self._counts["samples"] += 1
            if reason is not None:
                self._counts["failures"] += 1
                self._counts[f"failures/{reason}"] += 1
                samples, failures = self._counts["samples"], self._counts["failures"]
                reasons = Counter({k[len("failures/"):]: v for k, v in self._counts.items() if k.startswith("failures/")})
                commonest, n = reasons.most_common(1)[0]
        record_outcome(reason is not None, reason, judge_totals([g.telemetry.summary() for g in process_graders()]))
        if reason is not None:
            logger.warning(f"judge_rl: judge at {self.endpoint} failed: {reason} ({failures} of {samples} samples in "
                           f"this reward worker; commonest: {commonest} ({n}))")  # fmt: skip

    # -- one sample -----------------------------------------------------------------------------------
    async def run_single(self, data) -> dict:
        out = await super().run_single(data)
        info = out.get("reward_extra_info") or {}
        if "judge_failed" not in info:
            # verl's own fallback: reward 0.0 with `timeout` or `error`, never a grade
            if info.get("timeout"):
                self._count(JUDGE_SERVER_ERROR)
                detail = f"grading took longer than reward.timeout={self.timeout}s"
                raise JudgeSampleFailed(self.endpoint, JUDGE_SERVER_ERROR, detail)
            if "error" in info:
                self._count("reward function error")
                raise RewardFunctionError(f"policy reward {self.reward_name!r} raised: {info['error']}")
            raise RewardFunctionError(f"policy reward {self.reward_name!r} returned no judge_failed flag: {sorted(info)}")
        if int(info["judge_failed"]):
            reason = str(info.get("failure_reason") or JUDGE_SERVER_ERROR)
            self._count(reason)
            raise JudgeSampleFailed(self.endpoint, reason)
        self._count(None)
        score = float(out["reward_score"])
        if not math.isfinite(score):
            raise RewardFunctionError(f"policy reward {self.reward_name!r} gave a non-finite score {score}")
        return out
