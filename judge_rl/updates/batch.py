"""Rollouts as the padded tensors verl's algorithm functions expect.

Layout follows verl's DataProto: prompts left-padded to one width, responses right-padded to another,
`response_mask` over the response part only; log-probs are those of response tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import verl.utils.torch_functional as verl_F

from judge_rl.rollouts import Generation


@dataclass
class RolloutBatch:
    input_ids: torch.Tensor  # (B, P + R)
    attention_mask: torch.Tensor  # (B, P + R)
    position_ids: torch.Tensor  # (B, P + R)
    responses: torch.Tensor  # (B, R)
    response_mask: torch.Tensor  # (B, R) float
    prompt_width: int
    uids: np.ndarray  # (B,) group id: samples of one prompt share it
    # (B, R) the sampler's log-probs of the response tokens, when another engine than the policy sampled them
    # (verl's `rollout_log_probs`); None when the policy sampled itself
    rollout_log_probs: torch.Tensor | None = None
    # host copies of each row's prompt tokens and response length (build_batch fills them from the generations), so a
    # pass over a batch on a GPU groups its rows without reading the device's tensors back (a sync per read)
    prompts: tuple[tuple[int, ...], ...] | None = None
    response_lens: tuple[int, ...] | None = None

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def select(self, idx: Sequence[int]) -> "RolloutBatch":
        """The rows `idx`, on the batch's device. A run of consecutive rows (every micro-batch of the update) is a
        slice: no index tensor is copied to the device, so selecting does not wait for the GPU."""
        rows = list(idx)
        i = row_index(rows, self.input_ids.device)
        return RolloutBatch(
            self.input_ids[i],
            self.attention_mask[i],
            self.position_ids[i],
            self.responses[i],
            self.response_mask[i],
            self.prompt_width,
            self.uids[np.asarray(rows)],
            None if self.rollout_log_probs is None else self.rollout_log_probs[i],
            None if self.prompts is None else tuple(self.prompts[r] for r in rows),
            None if self.response_lens is None else tuple(self.response_lens[r] for r in rows),
        )

    def to(self, device: torch.device) -> "RolloutBatch":
        return RolloutBatch(
            self.input_ids.to(device),
            self.attention_mask.to(device),
            self.position_ids.to(device),
            self.responses.to(device),
            self.response_mask.to(device),
            self.prompt_width,
            self.uids,
            None if self.rollout_log_probs is None else self.rollout_log_probs.to(device),
            self.prompts,
            self.response_lens,
        )

    def host_layout(self) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
        """(prompt tokens, response length) of every row: the host copies, or read from the tensors (a sync on a GPU)."""
        if self.prompts is not None and self.response_lens is not None:
            return self.prompts, self.response_lens
        P = self.prompt_width
        prompt_lens = self.attention_mask[:, :P].sum(-1).tolist()
        prompts = tuple(tuple(self.input_ids[row, P - n : P].tolist()) for row, n in enumerate(prompt_lens))
        return prompts, tuple(self.response_mask.sum(-1).long().tolist())


def build_batch(generations: Sequence[Generation], uids: Sequence[str], pad_id: int) -> RolloutBatch:
    P = max(len(g.prompt_ids) for g in generations)
    R = max(1, max(len(g.response_ids) for g in generations))
    B = len(generations)
    input_ids = torch.full((B, P + R), pad_id, dtype=torch.long)
    attention = torch.zeros((B, P + R), dtype=torch.long)
    response_mask = torch.zeros((B, R), dtype=torch.float32)
    for row, g in enumerate(generations):
        p, r = len(g.prompt_ids), len(g.response_ids)
        input_ids[row, P - p : P] = torch.tensor(g.prompt_ids)
        attention[row, P - p : P] = 1
        if r:
            input_ids[row, P : P + r] = torch.tensor(g.response_ids)
            attention[row, P : P + r] = 1
            response_mask[row, :r] = 1.0
    position_ids = (attention.cumsum(-1) - 1).clamp(min=0)
    rollout_log_probs = None
    if all(g.log_probs is not None for g in generations):
        rollout_log_probs = torch.zeros((B, R), dtype=torch.float32)
        for row, g in enumerate(generations):
            if g.log_probs:
                rollout_log_probs[row, : len(g.log_probs)] = torch.tensor(g.log_probs)
    return RolloutBatch(input_ids, attention, position_ids, input_ids[:, P:], response_mask, P, np.asarray(uids),
                        rollout_log_probs, tuple(tuple(g.prompt_ids) for g in generations),
                        tuple(len(g.response_ids) for g in generations))


def _forward(model, batch: RolloutBatch, **kwargs) -> torch.Tensor:
    return model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        use_cache=False,
        **kwargs,
    ).logits


def _entropy(logits: torch.Tensor, grad: bool) -> torch.Tensor:
    """Per-token entropy of the (temperature-scaled) logits; with `grad=False` no graph is built (verl's actor
    computes no entropy at all when its coefficient is 0: judge_rl still logs `actor/entropy`, at no backward cost)."""
    if grad:
        return verl_F.entropy_from_logits(logits)
    with torch.no_grad():
        return verl_F.entropy_from_logits(logits.detach())


def row_index(rows: list[int], device: torch.device) -> slice | torch.Tensor:
    """An index for `rows`: a slice where they are consecutive (no index tensor copied to the device, no GPU sync)."""
    if rows and rows == list(range(rows[0], rows[0] + len(rows))):
        return slice(rows[0], rows[0] + len(rows))
    return torch.as_tensor(rows, dtype=torch.long, device=device)


def response_log_probs(
    model, batch: RolloutBatch, temperature: float, with_entropy: bool, entropy_grad: bool = True
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs (and entropies) of the response tokens over the padded batch, in one forward; logits scaled by the
    sampling temperature as verl does; zero where `response_mask` is. The `padded` log-prob pass, and the definition
    `shared_prefix_log_probs` is tested against."""
    R = batch.responses.shape[1]
    # Only the last R + 1 positions predict response tokens: skipping the LM head over the prompt
    # saves a large share of the compute with a 49k-token vocabulary.
    logits = _forward(model, batch, logits_to_keep=R + 1)[:, :R].float() / temperature
    log_probs = verl_F.logprobs_from_logits(logits, batch.responses) * batch.response_mask
    entropy = _entropy(logits, entropy_grad) * batch.response_mask if with_entropy else None
    return log_probs, entropy


def shared_prefix_log_probs(
    model, batch: RolloutBatch, temperature: float, with_entropy: bool, entropy_grad: bool = True
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """`response_log_probs` without the padding and without computing a prompt more than once.

    Rows with the same prompt (the samples of one GRPO group) share one forward pass over it: the
    prompt runs alone, unpadded, its KV cache is repeated for the rows (gradients flow back through it
    to every row that attends to it), and the responses run on top, right-padded only to the group's
    longest one. The logits are the same as the padded batch's, up to float rounding (tested); with n
    samples of a P-token prompt and R-token responses the forward covers P + nR tokens instead of
    n(P + R) plus padding, in two forwards per group. The rows are grouped from the batch's host copies
    (`host_layout`), so on a GPU nothing is read back from the device.
    """
    B, R = batch.responses.shape
    P = batch.prompt_width
    device = batch.input_ids.device
    prompts, response_lens = batch.host_layout()
    groups: dict[tuple[int, ...], list[int]] = {}
    for row, prompt in enumerate(prompts):
        groups.setdefault(prompt, []).append(row)
    log_prob_parts, entropy_parts = [], []
    for prompt, rows in groups.items():
        k, p = len(rows), len(prompt)
        width = max(1, max(response_lens[r] for r in rows))
        out = model(input_ids=batch.input_ids[rows[0] : rows[0] + 1, P - p : P], use_cache=True, logits_to_keep=1)
        logits = out.logits[:, -1:].expand(k, 1, -1)
        responses = batch.responses[row_index(rows, device), :width]
        if width > 1:
            cache = out.past_key_values
            cache.batch_repeat_interleave(k)
            rest = model(
                input_ids=responses[:, : width - 1],
                position_ids=torch.arange(p, p + width - 1, device=device).expand(k, -1),
                past_key_values=cache,
                use_cache=True,
            ).logits
            logits = torch.cat([logits, rest], dim=1)
        logits = logits.float() / temperature
        log_prob_parts.append(torch.nn.functional.pad(verl_F.logprobs_from_logits(logits, responses), (0, R - width)))
        if with_entropy:
            entropy_parts.append(torch.nn.functional.pad(_entropy(logits, entropy_grad), (0, R - width)))
    order = [r for rows in groups.values() for r in rows]

    def in_row_order(parts: list[torch.Tensor]) -> torch.Tensor:
        stacked = torch.cat(parts)
        if order == list(range(B)):  # the groups' rows are consecutive (build_batch lays them out so)
            return stacked
        return torch.zeros_like(stacked).index_copy(0, torch.as_tensor(order, device=device), stacked)

    log_probs = in_row_order(log_prob_parts) * batch.response_mask
    return log_probs, (in_row_order(entropy_parts) * batch.response_mask if with_entropy else None)


# the local backend's log-prob passes (trainer.logprob_pass); the same log-probs and gradients (tested)
LOGPROB_PASSES = {"padded": response_log_probs, "shared_prefix": shared_prefix_log_probs}


def resolve_logprob_pass(choice: str, device_type: str, gradient_checkpointing: bool = False) -> str:
    """The pass `trainer.logprob_pass=choice` means on `device_type`; a one-line ValueError for an unknown choice.

    With `trainer.gradient_checkpointing` a training forward keeps no KV cache (transformers turns it off), which the
    shared-prefix pass is made of: auto means padded there, and shared_prefix is refused.

    auto: shared_prefix on the CPU, where compute is the cost (scripts/bench_grpo_step.py, 2 cores: it is what made
    the local step 0.73 of TRL's); padded on CUDA, where a small model is launch-bound and one forward per
    micro-batch launches half the kernels of two per group, and repeats no KV cache. Both are measured side by side
    by `scripts/bench_grpo_step.py --logprob-pass padded shared_prefix`."""
    if choice == "auto":
        return "shared_prefix" if device_type == "cpu" and not gradient_checkpointing else "padded"
    if choice not in LOGPROB_PASSES:
        raise ValueError(f"trainer.logprob_pass={choice!r}: expected auto or one of {', '.join(LOGPROB_PASSES)}")
    if choice == "shared_prefix" and gradient_checkpointing:
        raise ValueError("trainer.logprob_pass=shared_prefix shares a KV cache, which trainer.gradient_checkpointing=true "
                         "turns off in training: use trainer.logprob_pass=padded (or auto)")
    return choice


def token_level_scores(scores: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """An outcome reward sits on the last response token (verl's reward managers do the same)."""
    out = torch.zeros_like(response_mask)
    last = (response_mask.sum(-1).long() - 1).clamp(min=0)
    out[torch.arange(len(scores)), last] = scores.to(out.dtype)
    return out


def response_values(critic, batch: RolloutBatch) -> torch.Tensor:
    """The critic's value for each response token: the value head's output one position earlier,
    the state before the token is chosen (verl's critic takes values[:, -R - 1 : -1])."""
    R = batch.responses.shape[1]
    return _forward(critic, batch)[:, -R - 1 : -1, 0].float()
