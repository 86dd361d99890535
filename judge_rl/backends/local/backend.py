"""The local backend's step (one process: CPU, or one CUDA device).

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
import verl.utils.torch_functional as verl_F
from verl.trainer.ppo import core_algos

from judge_rl.backends.algorithm import ACTOR, AlgorithmConfig, actor_config, verl_algo_config, verl_algorithm_keys
from judge_rl.config import TrainerConfig
from judge_rl.data.pairs import JudgeItem
from judge_rl.reports.judge_metrics import verdict_metrics
from judge_rl.rollouts import Generation, HFSampler, Sampler, encode_chat
from judge_rl.rollouts.generation import OnGroup
from judge_rl.updates.batch import (LOGPROB_PASSES, RolloutBatch, build_batch, resolve_logprob_pass, response_values,
                                    row_index, shared_prefix_log_probs, token_level_scores)


def compute_advantages(
    algo: AlgorithmConfig, token_level_rewards, response_mask, uids, values: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns) from verl's registered estimator, called with the arguments verl's
    `ray_trainer.compute_advantage` passes it."""
    if algo.adv_estimator == "gae":
        if values is None:
            raise ValueError("adv_estimator=gae needs the critic's values")
        return core_algos.compute_gae_advantage_return(
            token_level_rewards=token_level_rewards,
            values=values,
            response_mask=response_mask,
            gamma=algo.gamma,
            lam=algo.lam,
        )
    fn = core_algos.get_adv_estimator_fn(algo.adv_estimator)
    accepted = inspect.signature(fn).parameters
    kwargs: dict[str, Any] = {"token_level_rewards": token_level_rewards, "response_mask": response_mask}
    if "index" in accepted:
        kwargs["index"] = uids
    if "norm_adv_by_std_in_grpo" in accepted:
        kwargs["norm_adv_by_std_in_grpo"] = algo.norm_adv_by_std_in_grpo
    if "config" in accepted:
        kwargs["config"] = verl_algo_config(algo)
    return fn(**kwargs)


def apply_kl_penalty(
    token_level_scores: torch.Tensor,
    old_log_prob: torch.Tensor,
    ref_log_prob: torch.Tensor,
    response_mask: torch.Tensor,
    kl_ctrl,
    kl_penalty: str,
) -> tuple[torch.Tensor, dict[str, float]]:
    """KL to the reference inside the reward, as verl's `ray_trainer.apply_kl_penalty` computes it
    (the same core_algos estimator and controller, the controller updated once per batch)."""
    kld = core_algos.kl_penalty(old_log_prob, ref_log_prob, kl_penalty=kl_penalty) * response_mask
    beta = kl_ctrl.value
    rewards = token_level_scores - beta * kld
    current_kl = verl_F.masked_mean(kld, mask=response_mask, axis=-1).mean().item()
    kl_ctrl.update(current_kl=current_kl, n_steps=token_level_scores.shape[0])
    return rewards, {"actor/reward_kl_penalty": current_kl, "actor/reward_kl_penalty_coeff": beta}


# the most float32 logits one no-grad padded forward holds (2^28: 1 GiB; 42 rows of 128-token responses over SmolLM2's
# 49k vocabulary), the old and reference log-prob passes' batch bound
NO_GRAD_LOGITS = 2**28


@dataclass
class ScoredRollouts:
    batch: RolloutBatch
    scores: torch.Tensor  # (B,)
    rewards: list[dict[str, Any]]  # compute_score's dict per sample
    texts: list[str]
    finished: list[bool]


class LocalBackend:
    def __init__(
        self,
        policy,
        reference,
        tokenizer,
        algo: AlgorithmConfig,
        trainer: TrainerConfig,
        messages_fn: Callable[[JudgeItem], list[dict[str, str]]],
        score_fn: Callable[..., dict[str, Any]],
        critic=None,
        group_fn: Callable[[list[dict[str, Any]], list[dict[str, Any]]], None] | None = None,
    ):
        self.policy, self.reference, self.tokenizer = policy, reference, tokenizer
        self.critic = critic
        # J1-style consistency: when set, each prompt's group holds both orders of its pair (half the
        # samples each) and group_fn(order_a_rewards, order_b_rewards) rescores them jointly, in place.
        self.group_fn = group_fn
        self.algo, self.trainer = algo, trainer
        self.messages_fn, self.score_fn = messages_fn, score_fn
        self.device = next(policy.parameters()).device
        # how the update computes log-probs (trainer.logprob_pass: one padded forward, or one per prompt group)
        self.logprob_pass = LOGPROB_PASSES[resolve_logprob_pass(trainer.logprob_pass, self.device.type,
                                                                       trainer.gradient_checkpointing)]
        # the optimizer from the same keys the verl backend writes (judge_rl/backends/algorithm.py)
        self.keys = verl_algorithm_keys(algo)
        self.optimizer = torch.optim.AdamW(
            [p for p in policy.parameters() if p.requires_grad],
            lr=self.keys[f"{ACTOR}.optim.lr"],
            weight_decay=self.keys[f"{ACTOR}.optim.weight_decay"],
        )
        if reference is not None:
            reference.eval().requires_grad_(False)
        self.policy_loss_fn = core_algos.get_policy_loss_fn(algo.policy_loss)
        self.kl_ctrl = core_algos.get_kl_controller(verl_algo_config(algo).kl_ctrl)
        self.critic_optimizer = None
        if critic is not None:
            self.critic_optimizer = torch.optim.AdamW(
                critic.parameters(), lr=algo.critic.lr, weight_decay=algo.critic.weight_decay
            )
        self.global_step = 0
        # who samples the rollouts (trainer.rollout_engine; the loop installs a vLLM engine with `use_sampler`)
        self.sampler: Sampler = HFSampler(policy, tokenizer)

    def use_sampler(self, sampler: Sampler) -> None:
        """Sample the rollouts with `sampler` (built from the policy as it is now) instead of the policy itself."""
        self.sampler.close()
        self.sampler = sampler

    def close(self) -> None:
        """Release the sampler's engine (a colocated vLLM's KV cache)."""
        self.sampler.close()

    def sample(self, prompts: list[list[int]], num_samples: int, timing: dict[str, float] | None = None,
               on_group: OnGroup | None = None) -> list[list[Generation]]:  # fmt: skip
        """`num_samples` rollouts per prompt from the sampler, given the policy's current weights first (timed as
        `timing_s/update_weights`, verl's name, when `timing` is given); `on_group` as the sampler's."""
        t = time.perf_counter()
        self.sampler.sync(self.policy)
        if timing is not None:
            timing["timing_s/update_weights"] = time.perf_counter() - t
        return self.sampler.sample(prompts, num_samples=num_samples, max_new_tokens=self.trainer.max_new_tokens,
                                   temperature=self.trainer.temperature, top_p=self.trainer.top_p, on_group=on_group)  # fmt: skip

    def state_dict(self) -> dict[str, Any]:
        """Optimizer and controller state for checkpoints (the models are saved as HF directories)."""
        state = {"optimizer": self.optimizer.state_dict(), "kl_coef": self.kl_ctrl.value}
        if self.critic_optimizer is not None:
            state["critic_optimizer"] = self.critic_optimizer.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.kl_ctrl.value = state["kl_coef"]
        if self.critic_optimizer is not None:
            self.critic_optimizer.load_state_dict(state["critic_optimizer"])

    # -- rollout ---------------------------------------------------------------------------------
    def rollout(self, items: Sequence[JudgeItem], timing: dict[str, float] | None = None) -> ScoredRollouts:
        n = self.algo.rollout_n
        if self.group_fn is not None or self.algo.group_both_orders:
            # both orders of each pair, n/2 samples each, one group per pair
            shown = [it for item in items for it in (item, item.swapped())]
            per_prompt, group_of = n // 2, [item.pair.pair_id for item in items for _ in (0, 1)]
        else:
            shown, per_prompt, group_of = list(items), n, [item.item_id for item in items]
        prompts = [encode_chat(self.tokenizer, self.messages_fn(item)) for item in shown]
        groups = self.sample(prompts, per_prompt, timing)
        generations, uids, rewards = [], [], []
        for item, uid, group in zip(shown, group_of, groups):
            for g in group:
                generations.append(g)
                uids.append(uid)
                rewards.append(
                    self.score_fn(
                        data_source=item.pair.source,
                        solution_str=g.text,
                        ground_truth=item.ground_truth,
                        extra_info={"pair_id": item.pair.pair_id},
                    )
                )
        if self.group_fn is not None:
            for start in range(0, len(rewards), 2 * per_prompt):
                self.group_fn(rewards[start : start + per_prompt], rewards[start + per_prompt : start + 2 * per_prompt])
        batch = build_batch(generations, uids, self.tokenizer.pad_token_id)
        scores = torch.tensor([float(r["score"]) for r in rewards])
        return ScoredRollouts(batch, scores, rewards, [g.text for g in generations], [g.finished for g in generations])

    # -- update ----------------------------------------------------------------------------------
    def _clock(self) -> float:
        """perf_counter once the device's queued work is done (CUDA launches return at once): the timing_s/* splits
        measure the work, at one sync per split, not per micro-batch."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    @torch.no_grad()
    def _log_probs(self, model, batch: RolloutBatch) -> torch.Tensor:
        """Old or reference log-probs of the whole batch (on the device, as `batch` is): the shared-prefix pass runs
        one group at a time; the padded pass as many rows at a time as keep their float32 logits within
        NO_GRAD_LOGITS elements (no graph is kept, so the logits are what bounds memory), at least a micro-batch:
        a launch-bound GPU does the whole of a small step in one or two forwards."""
        chunk = len(batch)
        if self.logprob_pass is not shared_prefix_log_probs:
            per_row = (batch.responses.shape[1] + 1) * model.config.vocab_size
            chunk = max(self.algo.ppo_micro_batch_size, NO_GRAD_LOGITS // per_row)
        return torch.cat([self.logprob_pass(model, batch.select(range(s, min(s + chunk, len(batch)))),
                                            self.trainer.temperature, with_entropy=False)[0]
                          for s in range(0, len(batch), chunk)])  # fmt: skip

    def update(self, rollouts: ScoredRollouts, timing: dict[str, float]) -> dict[str, float]:
        algo, batch = self.algo, rollouts.batch
        B = len(batch)
        mini = self._mini_batch_size(B)
        micro = min(algo.ppo_micro_batch_size, mini)
        needs_ref = algo.use_kl_loss or algo.use_kl_in_reward
        # With one epoch over one mini-batch the policy has not moved when the loss is taken, so the
        # old log-probs equal the current ones detached; verl recomputes them, we save that forward.
        single_pass = algo.ppo_epochs == 1 and mini == B and not algo.use_kl_in_reward
        t = self._clock()
        # the step's batch goes to the device once; micro-batches are slices of it (row_index), and the per-token
        # tensors the loss reads (old and reference log-probs, advantages) stay there too
        on_device = batch.to(self.device)
        old_log_prob = None if single_pass else self._log_probs(self.policy, on_device)
        timing["timing_s/old_log_prob"] = self._clock() - t
        t = self._clock()
        ref_log_prob = self._log_probs(self.reference, on_device) if needs_ref else None
        timing["timing_s/ref"] = self._clock() - t

        values = None
        if self.critic is not None:
            t = time.perf_counter()
            values = self._values(batch)
            timing["timing_s/values"] = time.perf_counter() - t

        t = time.perf_counter()
        token_level_rewards = token_level_scores(rollouts.scores, batch.response_mask)
        kl_metrics: dict[str, float] = {}
        if algo.use_kl_in_reward:
            token_level_rewards, kl_metrics = apply_kl_penalty(
                token_level_rewards, old_log_prob.cpu(), ref_log_prob.cpu(), batch.response_mask, self.kl_ctrl,
                algo.kl_penalty,
            )
        advantages, returns = compute_advantages(algo, token_level_rewards, batch.response_mask, batch.uids, values)
        timing["timing_s/adv"] = time.perf_counter() - t

        critic_metrics: dict[str, float] = {}
        if self.critic is not None:
            t = time.perf_counter()
            critic_metrics = self._update_critic(batch, values, returns)
            timing["timing_s/update_critic"] = time.perf_counter() - t
        self.global_step += 1
        if self.critic is not None and self.global_step <= algo.critic.warmup_steps:
            # verl's critic warm-up: the critic learns the returns before the actor follows its advantages
            return {**kl_metrics, **critic_metrics, **self._advantage_metrics(advantages, returns, batch)}

        t = self._clock()
        self.policy.train()
        advantages_on_device = advantages.to(self.device)
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}

        def add(key: str, value: float) -> None:
            sums[key] = sums.get(key, 0.0) + float(value)
            counts[key] = counts.get(key, 0) + 1

        grad_norms = []
        # the trainer's log-probs of the sampled tokens before this update, against the sampler's (another engine)
        sampler_check = batch.rollout_log_probs is not None
        # (on the device until the update ends: filling it per micro-batch reads nothing back)
        actor_old = old_log_prob if old_log_prob is not None or not sampler_check else torch.zeros_like(on_device.rollout_log_probs)
        cfg = actor_config(algo, micro)  # verl's ActorConfig, from the mapping both backends read
        # verl's actor computes no entropy at coefficient 0; the local one logs it, without a graph (no backward cost)
        entropy_grad = bool(cfg.entropy_coeff)
        for _epoch in range(cfg.ppo_epochs):
            for mini_start in range(0, B, mini):
                mini_idx = list(range(mini_start, min(mini_start + mini, B)))  # the last may be short (masked samples)
                mini_mask = batch.response_mask[mini_idx]
                cfg.global_batch_info.update(
                    dp_size=1,
                    batch_num_tokens=int(mini_mask.sum().item()),
                    global_batch_size=len(mini_idx),
                    loss_scale_factor=cfg.loss_scale_factor,
                )
                self.optimizer.zero_grad(set_to_none=True)
                # the losses' sums stay on the device until the mini-batch ends: a .item() per micro-batch would wait
                # for its backward before the next forward could be queued
                pg_total = kl_total = ent_total = torch.zeros((), device=self.device)
                for micro_start in range(0, len(mini_idx), micro):
                    idx = mini_idx[micro_start : micro_start + micro]
                    rows = row_index(idx, self.device)
                    part = on_device.select(idx)
                    mask = part.response_mask
                    log_prob, entropy = self.logprob_pass(self.policy, part, self.trainer.temperature, with_entropy=True,
                                                          entropy_grad=entropy_grad)  # fmt: skip
                    old = log_prob.detach() if old_log_prob is None else old_log_prob[rows]
                    if sampler_check and old_log_prob is None and _epoch == 0:
                        actor_old[rows] = old.to(actor_old.dtype)
                    pg_loss, pg_metrics = self.policy_loss_fn(
                        old_log_prob=old,
                        log_prob=log_prob,
                        advantages=advantages_on_device[rows],
                        response_mask=mask,
                        loss_agg_mode=cfg.loss_agg_mode,
                        config=cfg,
                    )
                    loss = pg_loss
                    entropy_loss = core_algos.agg_loss(entropy, mask, cfg.loss_agg_mode, **cfg.global_batch_info)
                    if cfg.entropy_coeff:
                        loss = loss - cfg.entropy_coeff * entropy_loss
                    if cfg.use_kl_loss:
                        kld = core_algos.kl_penalty(log_prob, ref_log_prob[rows], cfg.kl_loss_type)
                        kl_loss = core_algos.agg_loss(kld, mask, cfg.loss_agg_mode, **cfg.global_batch_info)
                        loss = loss + cfg.kl_loss_coef * kl_loss
                        kl_total = kl_total + kl_loss.detach()
                    loss.backward()
                    pg_total = pg_total + pg_loss.detach()
                    ent_total = ent_total + entropy_loss.detach()
                    for k, v in pg_metrics.items():
                        add(k, v)
                grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.keys[f"{ACTOR}.grad_clip"])
                if torch.isfinite(grad_norm):
                    self.optimizer.step()
                grad_norms.append(float(grad_norm))
                add("actor/pg_loss", pg_total)
                add("actor/entropy", ent_total)
                if cfg.use_kl_loss:
                    add("actor/kl_loss", kl_total)
        self.optimizer.zero_grad(set_to_none=True)
        timing["timing_s/update_actor"] = self._clock() - t

        metrics = {k: sums[k] / counts[k] for k in sums}
        if sampler_check:
            metrics.update(sampler_mismatch_metrics(batch.rollout_log_probs, actor_old.cpu(), batch.response_mask,
                                                    batch.responses))  # fmt: skip
        metrics["actor/grad_norm"] = float(np.mean(grad_norms))
        metrics["actor/lr"] = self.optimizer.param_groups[0]["lr"]
        return {**metrics, **kl_metrics, **critic_metrics, **self._advantage_metrics(advantages, returns, batch)}

    @staticmethod
    def _advantage_metrics(advantages, returns, batch: RolloutBatch) -> dict[str, float]:
        valid = batch.response_mask.bool()
        return {
            "critic/advantages/mean": advantages[valid].mean().item(),
            "critic/advantages/max": advantages[valid].max().item(),
            "critic/advantages/min": advantages[valid].min().item(),
            "critic/returns/mean": returns[valid].mean().item(),
        }

    def _mini_batch_size(self, batch_size: int) -> int:
        """Sequences per optimizer step: verl counts ppo_mini_batch_size in prompts, each with rollout_n samples."""
        if self.algo.ppo_mini_batch_size is None:
            return batch_size
        return self.algo.ppo_mini_batch_size * self.algo.rollout_n

    # -- critic ----------------------------------------------------------------------------------
    @torch.no_grad()
    def _values(self, batch: RolloutBatch) -> torch.Tensor:
        micro = self.algo.ppo_micro_batch_size
        out = []
        for start in range(0, len(batch), micro):
            part = batch.select(range(start, min(start + micro, len(batch)))).to(self.device)
            out.append(response_values(self.critic, part).cpu())
        return torch.cat(out) * batch.response_mask

    def _update_critic(self, batch: RolloutBatch, values: torch.Tensor, returns: torch.Tensor) -> dict[str, float]:
        """verl's critic update: clipped value loss (core_algos.compute_value_loss), same epochs and batches as the actor."""
        algo, B = self.algo, len(batch)
        mini = self._mini_batch_size(B)
        micro = min(algo.ppo_micro_batch_size, mini)
        self.critic.train()
        losses, clipfracs, grad_norms = [], [], []
        for _epoch in range(algo.ppo_epochs):
            for mini_start in range(0, B, mini):
                mini_idx = list(range(mini_start, min(mini_start + mini, B)))
                n_tokens = int(batch.response_mask[mini_idx].sum().item())
                self.critic_optimizer.zero_grad(set_to_none=True)
                loss_total = 0.0
                for micro_start in range(0, len(mini_idx), micro):
                    idx = mini_idx[micro_start : micro_start + micro]
                    part = batch.select(idx).to(self.device)
                    vpreds = response_values(self.critic, part)
                    vf_loss, vf_clipfrac = core_algos.compute_value_loss(
                        vpreds=vpreds,
                        returns=returns[idx].to(self.device),
                        values=values[idx].to(self.device),
                        response_mask=part.response_mask,
                        cliprange_value=algo.critic.cliprange_value,
                        loss_agg_mode=algo.loss_agg_mode,
                        dp_size=1,
                        batch_num_tokens=n_tokens,
                        global_batch_size=len(mini_idx),
                        loss_scale_factor=algo.loss_scale_factor,
                    )
                    vf_loss.backward()
                    loss_total += vf_loss.item()
                    clipfracs.append(float(vf_clipfrac))
                grad_norm = torch.nn.utils.clip_grad_norm_(self.critic.parameters(), algo.critic.grad_clip)
                if torch.isfinite(grad_norm):
                    self.critic_optimizer.step()
                grad_norms.append(float(grad_norm))
                losses.append(loss_total)
        self.critic_optimizer.zero_grad(set_to_none=True)
        valid = batch.response_mask.bool()
        return {
            "critic/vf_loss": float(np.mean(losses)),
            "critic/vf_clipfrac": float(np.mean(clipfracs)),
            "critic/grad_norm": float(np.mean(grad_norms)),
            "critic/lr": self.critic_optimizer.param_groups[0]["lr"],
            "critic/values/mean": values[valid].mean().item(),
        }

    # -- one step --------------------------------------------------------------------------------
    def step(self, items: Sequence[JudgeItem]) -> dict[str, float]:
        t0 = time.perf_counter()
        timing: dict[str, float] = {}
        rollouts = self.rollout(items, timing)
        timing["timing_s/gen"] = time.perf_counter() - t0 - timing.get("timing_s/update_weights", 0.0)
        metrics = self.update(rollouts, timing)
        timing["timing_s/step"] = time.perf_counter() - t0
        metrics.update(timing)
        metrics.update(rollout_metrics(rollouts))
        metrics.update(verdict_metrics(rollouts.rewards))  # A-preference, strengths, parse failures by reason
        metrics["perf/total_num_tokens"] = float(rollouts.batch.attention_mask.sum())
        metrics["perf/throughput"] = metrics["perf/total_num_tokens"] / timing["timing_s/step"]
        return metrics


def sampler_mismatch_metrics(rollout_log_probs: torch.Tensor, actor_log_probs: torch.Tensor, response_mask: torch.Tensor,
                             responses: torch.Tensor) -> dict[str, float]:  # fmt: skip
    """How far the sampler's log-probs of the sampled tokens are from the trainer's (a colocated vLLM engine against the
    policy): verl's `training/rollout_probs_diff_*` and probability correlation (verl.utils.debug.metrics), and the
    per-token importance ratio trainer/sampler, exp(actor - rollout), that a correction (verl's and TRL's TIS) would
    weight the loss with: `training/rollout_is_ratio_mean`, `_max`, `_min` over the response tokens."""
    from verl import DataProto
    from verl.utils.debug.metrics import calculate_debug_metrics

    data = DataProto.from_dict({"rollout_log_probs": rollout_log_probs.float(), "old_log_probs": actor_log_probs.float(),
                                "response_mask": response_mask.float(), "responses": responses})  # fmt: skip
    out = {k: float(v) for k, v in calculate_debug_metrics(data).items()}
    valid = response_mask.bool()
    if valid.any():
        ratio = torch.exp(actor_log_probs.float() - rollout_log_probs.float())[valid]
        out.update({"training/rollout_is_ratio_mean": ratio.mean().item(), "training/rollout_is_ratio_max": ratio.max().item(),
                    "training/rollout_is_ratio_min": ratio.min().item()})  # fmt: skip
    return out


def score_metrics(scores: torch.Tensor) -> dict[str, float]:
    """verl's names for a step's score statistics (`critic/score/*`, `critic/rewards/mean`), as the local backend and
    the policy job (judge_rl/policy/backend.py) both log them."""
    return {
        "critic/score/mean": scores.mean().item(),
        "critic/score/max": scores.max().item(),
        "critic/score/min": scores.min().item(),
        "critic/score/std": scores.std(unbiased=False).item(),  # judge_rl's: the step's spread (verl logs min/max)
        "critic/rewards/mean": scores.mean().item(),
    }


def length_metrics(lengths: Any) -> dict[str, float]:
    """verl's `response_length/mean`, `max` and `min` of the samples' lengths (a tensor or an array)."""
    return {
        "response_length/mean": float(lengths.mean()),
        "response_length/max": float(lengths.max()),
        "response_length/min": float(lengths.min()),
    }


def clip_ratio_metric(finished: Sequence[bool]) -> dict[str, float]:
    """verl's `response_length/clip_ratio`: the share of samples cut at the token budget."""
    return {"response_length/clip_ratio": float(np.mean([not f for f in finished]))}


def rollout_metrics(r: ScoredRollouts) -> dict[str, float]:
    """verl's names for score and length statistics, plus the reward's components."""
    lengths = r.batch.response_mask.sum(-1)
    prompt_lengths = r.batch.attention_mask[:, : r.batch.prompt_width].sum(-1).float()
    m = {
        **score_metrics(r.scores),
        **length_metrics(lengths),
        **clip_ratio_metric(r.finished),
        "prompt_length/mean": prompt_lengths.mean().item(),
    }
    numeric = {k for k, v in r.rewards[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "score"}
    for key in sorted(numeric):
        # -1 marks "not available" in the predicted-value components (no strength, no parse): skip it
        skip_missing = key.startswith("pred_") or key.endswith("_error")
        vals = [float(x[key]) for x in r.rewards if not (skip_missing and float(x[key]) == -1)]
        if vals:
            m[f"reward/{key}"] = float(np.mean(vals))
    m["reward/parse_failure_rate"] = float(np.mean([bool(x.get("parse_error")) for x in r.rewards]))
    return m
