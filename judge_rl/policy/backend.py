"""The local backend's step for a policy graded by a judge: sample, grade over HTTP, mask failures, update.

One step: `rollout_n` samples per prompt (the main job's sampler, trainer.rollout_engine), every sample graded by
the `Grader` (a group's judge calls start as soon as its samples exist, while other groups still generate; all of a
step's calls may be in flight together), then the update of `LocalBackend` (verl's core_algos:
advantages, clipped loss, KL) on the samples that were graded.

No silent zeros. A sample whose grading failed (judge_rl/policy/rewards/) is never given a score:

  mask        it leaves the batch: no advantage, no loss, not in the reward means. Its group's baseline
              comes from the samples that were graded.
  drop_group  as mask, and a group left with fewer than `judge_failure.min_group_size` graded samples
              leaves with all its samples.

With a group-relative estimator (GRPO, RLOO, REINFORCE++ with baseline) a group always needs two graded
samples: verl's GRPO gives a lone sample its raw score as advantage (mean 0, std 1 for a group of one),
which would reward a sample for its group-mates' failures. Such groups are dropped in both modes.

Before the update, the step's failed share is compared with `judge_failure.max_failure_rate`; above it the
run stops (`JudgeFailureRateExceeded`: one line with the endpoint and the commonest reason) and nothing of
the step is applied, so a resumed run redoes it. A step where every sample failed (allowed only with
max_failure_rate 1) updates nothing and says so (`judge_failure/skipped_update` 1).

Logged per step, besides the main job's names (`critic/score/*` over graded samples, `response_length/*`,
`actor/*`, `timing_s/*`):
  timing_s/gen, timing_s/judge, timing_s/update    where the step's seconds went (judge: from the first judge call to
                                                   the last group graded, overlapping generation where it can)
  timing_s/judge_wait                              how long the step waited for the judge after sampling ended
  timing_s/update_weights                          the vLLM sampler's weight reload (trainer.rollout_engine)
  judge/*                                          per-call telemetry (JudgeTelemetry.summary)
  judge_failure/samples, judge_failure/rate, judge_failure/masked_samples, judge_failure/dropped_groups,
  judge_failure/dropped_samples, judge_failure/reason/<reason>          per-sample failure accounting
  reward/<component>                               the reward's components, over graded samples (NaN-free)
  bias/*                                           judge_rl/policy/bias.py
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from judge_rl.backends.local.backend import LocalBackend, ScoredRollouts, clip_ratio_metric, length_metrics, score_metrics
from judge_rl.backends.algorithm import AlgorithmConfig
from judge_rl.config import TrainerConfig
from judge_rl.policy.bias import bias_metrics
from judge_rl.policy.config import JudgeFailurePolicy
from judge_rl.policy.tasks.prompts import PolicyPrompt
from judge_rl.policy.grading import Graded, Grader
from judge_rl.servers.client import JudgeFailureRateExceeded, redact_url
from judge_rl.rollouts import encode_chat
from judge_rl.updates.batch import build_batch

GROUP_ESTIMATORS = ("grpo", "rloo", "reinforce_plus_plus_baseline", "grpo_passk", "opo", "gpg")


def kept_samples(uids: Sequence[str], ok: Sequence[bool], policy: JudgeFailurePolicy, adv_estimator: str) -> tuple[list[int], int]:
    """Indices of the samples that train (in order) and the number of groups dropped (module docstring)."""
    floor = 1
    if policy.mode == "drop_group":
        floor = policy.min_group_size
    if adv_estimator in GROUP_ESTIMATORS:
        floor = max(floor, 2)
    graded: Counter[str] = Counter(u for u, good in zip(uids, ok) if good)
    dropped = {u for u in set(uids) if 0 < graded[u] < floor}
    keep = [i for i, (u, good) in enumerate(zip(uids, ok)) if good and u not in dropped]
    return keep, len(dropped)


@dataclass
class GradedRollouts:
    scored: ScoredRollouts | None  # the samples that train (None: none left)
    graded: list[Graded]  # every sample, in sampling order
    lengths: list[int]  # response tokens of every sample
    keep: list[int]
    dropped_groups: int
    gen_s: float
    judge_s: float


class PolicyBackend(LocalBackend):
    """LocalBackend whose rollouts are a policy's answers graded by `grader` (module docstring)."""

    def __init__(self, policy, reference, tokenizer, algo: AlgorithmConfig, trainer: TrainerConfig, grader: Grader,
                 failure: JudgeFailurePolicy, critic=None, samples_dir: Path | None = None):  # fmt: skip
        super().__init__(policy, reference, tokenizer, algo, trainer, messages_fn=None, score_fn=None, critic=critic)
        self.grader = grader
        self.failure = failure
        # samples_dir/step_<k>.jsonl: every sample of step k, its grade and the judge's replies (None: not kept)
        self.samples_dir = samples_dir

    def rollout_graded(self, prompts: Sequence[PolicyPrompt], timing: dict[str, float] | None = None) -> GradedRollouts:
        """Sample every prompt's group and grade it: a group's judge calls start as soon as its samples are done
        (`Grader.stream`), while the sampler still decodes the other groups (the vLLM sampler finishes groups one
        by one; the hf sampler finishes them all at once, so there its judging follows generation)."""
        n = self.algo.rollout_n
        timing = {} if timing is None else timing
        encoded = [encode_chat(self.tokenizer, p.chat()) for p in prompts]
        futures: list = [None] * len(prompts)
        t = time.perf_counter()
        with self.grader.stream() as stream:

            def judge_group(i: int, group) -> None:
                texts = [g.text for g in group]
                futures[i] = stream.submit(self.grader.group_prompts(prompts[i], texts), texts)

            groups = self.sample(encoded, n, timing, on_group=judge_group)
            generated = time.perf_counter()
            graded = [g for future in futures for g in future.result()]
            waited = time.perf_counter()
            judge_s = stream.busy_s()
        gen_s = generated - t - timing.get("timing_s/update_weights", 0.0)
        timing["timing_s/judge_wait"] = waited - generated  # the step idle, waiting for the judge after sampling
        generations = [g for group in groups for g in group]
        shown = [p for p, group in zip(prompts, groups) for _ in group]
        # a step may draw the same prompt twice (small data, wrap-around): each draw is its own group
        uids = [f"{k}:{p.prompt_id}" for k, (p, group) in enumerate(zip(prompts, groups)) for _ in group]
        keep, dropped = kept_samples(uids, [g.reward.ok for g in graded], self.failure, self.algo.adv_estimator)
        if self.samples_dir is not None:
            self._save_samples(shown, generations, graded, set(keep))
        scored = None
        if keep:
            batch = build_batch([generations[i] for i in keep], [uids[i] for i in keep], self.tokenizer.pad_token_id)
            rewards = [graded[i].reward.to_verl_dict() for i in keep]
            scores = torch.tensor([graded[i].reward.graded_score for i in keep])
            scored = ScoredRollouts(batch, scores, rewards, [generations[i].text for i in keep],
                                    [generations[i].finished for i in keep])  # fmt: skip
        lengths = [len(g.response_ids) for g in generations]
        return GradedRollouts(scored, graded, lengths, keep, dropped, gen_s, judge_s)

    def _save_samples(self, prompts, generations, graded: list[Graded], keep: set[int]) -> None:
        """Every sample of the step being taken, as graded (rewritten whole: a redone step replaces it)."""
        self.samples_dir.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
        rows = [{"prompt_id": p.prompt_id, "response": g.text, "finished": g.finished, "score": gr.reward.score,
                 "failure": gr.reward.failure, "trained": i in keep, "rule_score": gr.rule_score,
                 "components": {k: (None if math.isnan(v) else v) for k, v in gr.reward.components.items()},
                 "judge_replies": gr.replies}
                for i, (p, g, gr) in enumerate(zip(prompts, generations, graded))]  # fmt: skip
        path = self.samples_dir / f"step_{self.global_step + 1}.jsonl"  # type: ignore[operator]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def failure_metrics(self, r: GradedRollouts) -> dict[str, float]:
        n = len(r.graded)
        failed = [g.reward.failure for g in r.graded if not g.reward.ok]
        out = {
            "judge_failure/samples": float(len(failed)),
            "judge_failure/rate": len(failed) / n if n else math.nan,
            "judge_failure/masked_samples": float(len(failed)),
            "judge_failure/dropped_groups": float(r.dropped_groups),
            "judge_failure/dropped_samples": float(n - len(failed) - len(r.keep)),
            "judge_failure/trained_samples": float(len(r.keep)),
        }
        for reason, count in sorted(Counter(failed).items()):
            out[f"judge_failure/reason/{reason}"] = float(count)
        return out

    def check_failure_rate(self, r: GradedRollouts) -> None:
        failed = Counter(g.reward.failure for g in r.graded if not g.reward.ok)
        n, total = len(r.graded), sum(failed.values())
        if n and total / n > self.failure.max_failure_rate:
            reason, count = failed.most_common(1)[0]
            raise JudgeFailureRateExceeded(redact_url(self.grader.endpoint), total / n, self.failure.max_failure_rate,
                                           total, n, reason, count, unit="samples")  # fmt: skip

    def step(self, prompts: Sequence[PolicyPrompt]) -> dict[str, float]:  # type: ignore[override]
        t0 = time.perf_counter()
        self.grader.telemetry.reset()
        timing: dict[str, float] = {}
        r = self.rollout_graded(prompts, timing)
        metrics: dict[str, float] = {**self.grader.telemetry.summary(), **self.failure_metrics(r)}
        try:
            self.check_failure_rate(r)
        except JudgeFailureRateExceeded as e:  # the caller logs what the stopped step saw
            e.metrics, e.step = {**metrics, **bias_metrics(r.graded, r.lengths)}, self.global_step + 1  # type: ignore[attr-defined]
            raise
        timing.update({"timing_s/gen": r.gen_s, "timing_s/judge": r.judge_s})
        t = time.perf_counter()
        if r.scored is not None:
            metrics.update(self.update(r.scored, timing))
            metrics.update(graded_metrics(r.scored))
        else:
            self.global_step += 1
            metrics["judge_failure/skipped_update"] = 1.0
        timing["timing_s/update"] = time.perf_counter() - t
        timing["timing_s/step"] = time.perf_counter() - t0
        metrics.update(timing)
        metrics.update(bias_metrics(r.graded, r.lengths))
        metrics.update(length_metrics(np.asarray(r.lengths, dtype=float)))
        return metrics


def graded_metrics(r: ScoredRollouts) -> dict[str, float]:
    """Score statistics over the samples that trained (verl's names) and the reward's numeric components."""
    m = {**score_metrics(r.scores), **clip_ratio_metric(r.finished)}
    keys = [k for k, v in r.rewards[0].items() if isinstance(v, (int, float)) and k not in ("score", "judge_failed")]
    for key in keys:
        vals = [float(x[key]) for x in r.rewards if not math.isnan(float(x[key]))]
        if vals:
            m[f"reward/{key}"] = float(np.mean(vals))
    return m
