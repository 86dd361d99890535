"""The single-process online RL engine (CPU, or one CUDA device).

One step: sample `rollout_n` judgments per prompt, score them with the same `compute_score` verl
imports, turn scores into advantages and the clipped policy loss, the KL to a frozen reference and
the entropy bonus with verl's own functions (`verl.trainer.ppo.core_algos`), then AdamW with gradient
clipping. Mini-batches, micro-batches and PPO epochs follow verl's actor: old log-probs are computed
once before the update, losses are aggregated over the whole mini-batch (`global_batch_info`), so
gradient accumulation gives the same update as one big batch.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo import core_algos
from verl.workers.config.actor import ActorConfig

from judge_rl.config import AlgorithmConfig, TrainerConfig
from judge_rl.data.pairs import JudgeItem
from judge_rl.rollouts import encode_chat, generate
from judge_rl.updates.batch import RolloutBatch, build_batch, response_log_probs, token_level_scores


def actor_config(algo: AlgorithmConfig, micro: int) -> ActorConfig:
    """verl's ActorConfig carrying the fields its policy-loss functions read."""
    return ActorConfig(
        strategy="local",
        rollout_n=algo.rollout_n,
        ppo_micro_batch_size_per_gpu=micro,
        clip_ratio=algo.clip_ratio,
        clip_ratio_low=algo.clip_ratio,
        clip_ratio_high=algo.clip_ratio,
        loss_agg_mode=algo.loss_agg_mode,
        entropy_coeff=algo.entropy_coeff,
        use_kl_loss=algo.use_kl_loss,
        kl_loss_coef=algo.kl_loss_coef,
        kl_loss_type=algo.kl_loss_type,
        ppo_epochs=algo.ppo_epochs,
        use_torch_compile=False,
    )


def compute_advantages(algo: AlgorithmConfig, token_level_rewards, response_mask, uids) -> torch.Tensor:
    """Advantages from verl's registered estimator, called with the arguments verl's trainer passes."""
    fn = core_algos.get_adv_estimator_fn(algo.adv_estimator)
    accepted = inspect.signature(fn).parameters
    kwargs: dict[str, Any] = {"token_level_rewards": token_level_rewards, "response_mask": response_mask}
    if "index" in accepted:
        kwargs["index"] = uids
    if "norm_adv_by_std_in_grpo" in accepted:
        kwargs["norm_adv_by_std_in_grpo"] = algo.norm_adv_by_std_in_grpo
    if "config" in accepted:
        kwargs["config"] = AlgoConfig(adv_estimator=algo.adv_estimator, norm_adv_by_std_in_grpo=algo.norm_adv_by_std_in_grpo)
    advantages, _returns = fn(**kwargs)
    return advantages


@dataclass
class ScoredRollouts:
    batch: RolloutBatch
    scores: torch.Tensor  # (B,)
    rewards: list[dict[str, Any]]  # compute_score's dict per sample
    texts: list[str]
    finished: list[bool]


class LocalEngine:
    def __init__(
        self,
        policy,
        reference,
        tokenizer,
        algo: AlgorithmConfig,
        trainer: TrainerConfig,
        messages_fn: Callable[[JudgeItem], list[dict[str, str]]],
        score_fn: Callable[..., dict[str, Any]],
    ):
        self.policy, self.reference, self.tokenizer = policy, reference, tokenizer
        self.algo, self.trainer = algo, trainer
        self.messages_fn, self.score_fn = messages_fn, score_fn
        self.device = next(policy.parameters()).device
        self.optimizer = torch.optim.AdamW(
            [p for p in policy.parameters() if p.requires_grad], lr=algo.lr, weight_decay=algo.weight_decay
        )
        if reference is not None:
            reference.eval().requires_grad_(False)
        self.policy_loss_fn = core_algos.get_policy_loss_fn(algo.policy_loss)

    # -- rollout ---------------------------------------------------------------------------------
    def rollout(self, items: Sequence[JudgeItem]) -> ScoredRollouts:
        n = self.algo.rollout_n
        prompts = [encode_chat(self.tokenizer, self.messages_fn(item)) for item in items]
        groups = generate(
            self.policy,
            self.tokenizer,
            prompts,
            max_new_tokens=self.trainer.max_new_tokens,
            batch_size=len(prompts) * n,
            num_samples=n,
            do_sample=True,
            temperature=self.trainer.temperature,
            top_p=self.trainer.top_p,
        )
        generations, uids, rewards = [], [], []
        for item, group in zip(items, groups):
            for g in group:
                generations.append(g)
                uids.append(item.item_id)
                rewards.append(
                    self.score_fn(
                        data_source=item.pair.source,
                        solution_str=g.text,
                        ground_truth=item.ground_truth,
                        extra_info={"pair_id": item.pair.pair_id},
                    )
                )
        batch = build_batch(generations, uids, self.tokenizer.pad_token_id)
        scores = torch.tensor([float(r["score"]) for r in rewards])
        return ScoredRollouts(batch, scores, rewards, [g.text for g in generations], [g.finished for g in generations])

    # -- update ----------------------------------------------------------------------------------
    @torch.no_grad()
    def _log_probs(self, model, batch: RolloutBatch) -> torch.Tensor:
        micro = self.algo.ppo_micro_batch_size
        out = []
        for start in range(0, len(batch), micro):
            part = batch.select(range(start, min(start + micro, len(batch)))).to(self.device)
            out.append(response_log_probs(model, part, self.trainer.temperature, with_entropy=False)[0].cpu())
        return torch.cat(out)

    def update(self, rollouts: ScoredRollouts, timing: dict[str, float]) -> dict[str, float]:
        algo, batch = self.algo, rollouts.batch
        B = len(batch)
        mini = algo.ppo_mini_batch_size or B
        micro = min(algo.ppo_micro_batch_size, mini)
        needs_ref = algo.use_kl_loss or algo.use_kl_in_reward
        # With one epoch over one mini-batch the policy has not moved when the loss is taken, so the
        # old log-probs equal the current ones detached; verl recomputes them, we save that forward.
        single_pass = algo.ppo_epochs == 1 and mini == B
        t = time.perf_counter()
        old_log_prob = None if single_pass else self._log_probs(self.policy, batch)
        timing["timing_s/old_log_prob"] = time.perf_counter() - t
        t = time.perf_counter()
        ref_log_prob = self._log_probs(self.reference, batch) if needs_ref else None
        timing["timing_s/ref"] = time.perf_counter() - t

        t = time.perf_counter()
        scores = token_level_scores(rollouts.scores, batch.response_mask)
        token_level_rewards = scores
        if algo.use_kl_in_reward:
            raise NotImplementedError("use_kl_in_reward lands with the PPO / REINFORCE++ algorithms")
        advantages = compute_advantages(algo, token_level_rewards, batch.response_mask, batch.uids)
        timing["timing_s/adv"] = time.perf_counter() - t

        t = time.perf_counter()
        self.policy.train()
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}

        def add(key: str, value: float) -> None:
            sums[key] = sums.get(key, 0.0) + float(value)
            counts[key] = counts.get(key, 0) + 1

        grad_norms = []
        for _epoch in range(algo.ppo_epochs):
            for mini_start in range(0, B, mini):
                mini_idx = list(range(mini_start, mini_start + mini))
                mini_mask = batch.response_mask[mini_idx]
                cfg = actor_config(algo, micro)
                cfg.global_batch_info.update(
                    dp_size=1, batch_num_tokens=int(mini_mask.sum().item()), global_batch_size=len(mini_idx)
                )
                self.optimizer.zero_grad(set_to_none=True)
                pg_total = kl_total = ent_total = 0.0
                for micro_start in range(0, mini, micro):
                    idx = mini_idx[micro_start : micro_start + micro]
                    part = batch.select(idx).to(self.device)
                    mask = part.response_mask
                    log_prob, entropy = response_log_probs(self.policy, part, self.trainer.temperature, with_entropy=True)
                    old = log_prob.detach() if old_log_prob is None else old_log_prob[idx].to(self.device)
                    pg_loss, pg_metrics = self.policy_loss_fn(
                        old_log_prob=old,
                        log_prob=log_prob,
                        advantages=advantages[idx].to(self.device),
                        response_mask=mask,
                        loss_agg_mode=algo.loss_agg_mode,
                        config=cfg,
                    )
                    loss = pg_loss
                    entropy_loss = core_algos.agg_loss(entropy, mask, algo.loss_agg_mode, **cfg.global_batch_info)
                    if algo.entropy_coeff:
                        loss = loss - algo.entropy_coeff * entropy_loss
                    if algo.use_kl_loss:
                        kld = core_algos.kl_penalty(log_prob, ref_log_prob[idx].to(self.device), algo.kl_loss_type)
                        kl_loss = core_algos.agg_loss(kld, mask, algo.loss_agg_mode, **cfg.global_batch_info)
                        loss = loss + algo.kl_loss_coef * kl_loss
                        kl_total += kl_loss.item()
                    loss.backward()
                    pg_total += pg_loss.item()
                    ent_total += entropy_loss.item()
                    for k, v in pg_metrics.items():
                        add(k, v)
                grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), algo.grad_clip)
                if torch.isfinite(grad_norm):
                    self.optimizer.step()
                grad_norms.append(float(grad_norm))
                add("actor/pg_loss", pg_total)
                add("actor/entropy", ent_total)
                if algo.use_kl_loss:
                    add("actor/kl_loss", kl_total)
        self.optimizer.zero_grad(set_to_none=True)
        timing["timing_s/update_actor"] = time.perf_counter() - t

        metrics = {k: sums[k] / counts[k] for k in sums}
        metrics["actor/grad_norm"] = float(np.mean(grad_norms))
        metrics["actor/lr"] = self.optimizer.param_groups[0]["lr"]
        valid_adv = advantages[batch.response_mask.bool()]
        metrics["critic/advantages/mean"] = valid_adv.mean().item()
        metrics["critic/advantages/max"] = valid_adv.max().item()
        metrics["critic/advantages/min"] = valid_adv.min().item()
        return metrics

    # -- one step --------------------------------------------------------------------------------
    def step(self, items: Sequence[JudgeItem]) -> dict[str, float]:
        t0 = time.perf_counter()
        timing: dict[str, float] = {}
        rollouts = self.rollout(items)
        timing["timing_s/gen"] = time.perf_counter() - t0
        metrics = self.update(rollouts, timing)
        timing["timing_s/step"] = time.perf_counter() - t0
        metrics.update(timing)
        metrics.update(rollout_metrics(rollouts))
        metrics["perf/total_num_tokens"] = float(rollouts.batch.attention_mask.sum())
        metrics["perf/throughput"] = metrics["perf/total_num_tokens"] / timing["timing_s/step"]
        return metrics


def rollout_metrics(r: ScoredRollouts) -> dict[str, float]:
    """verl's names for score and length statistics, plus the reward's components."""
    lengths = r.batch.response_mask.sum(-1)
    prompt_lengths = r.batch.attention_mask[:, : r.batch.prompt_width].sum(-1).float()
    m = {
        "critic/score/mean": r.scores.mean().item(),
        "critic/score/max": r.scores.max().item(),
        "critic/score/min": r.scores.min().item(),
        "critic/rewards/mean": r.scores.mean().item(),
        "response_length/mean": lengths.mean().item(),
        "response_length/max": lengths.max().item(),
        "response_length/min": lengths.min().item(),
        "response_length/clip_ratio": float(np.mean([not f for f in r.finished])),
        "prompt_length/mean": prompt_lengths.mean().item(),
    }
    numeric = {k for k, v in r.rewards[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "score"}
    for key in sorted(numeric):
        vals = [float(x[key]) for x in r.rewards if float(x[key]) >= 0 or key not in ("strength_error", "pred_strength")]
        if vals:
            m[f"reward/{key}"] = float(np.mean(vals))
    m["reward/parse_failure_rate"] = float(np.mean([bool(x.get("parse_error")) for x in r.rewards]))
    return m
