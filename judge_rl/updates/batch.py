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

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def select(self, idx: Sequence[int]) -> "RolloutBatch":
        i = torch.as_tensor(list(idx), dtype=torch.long)
        return RolloutBatch(
            self.input_ids[i],
            self.attention_mask[i],
            self.position_ids[i],
            self.responses[i],
            self.response_mask[i],
            self.prompt_width,
            self.uids[np.asarray(list(idx))],
            None if self.rollout_log_probs is None else self.rollout_log_probs[i],
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
        )


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
                        rollout_log_probs)


def _forward(model, batch: RolloutBatch, **kwargs) -> torch.Tensor:
    return model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        use_cache=False,
        **kwargs,
    ).logits


def response_log_probs(
    model, batch: RolloutBatch, temperature: float, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs (and entropies) of the response tokens over the padded batch; logits scaled by the sampling
    temperature as verl does. The definition `shared_prefix_log_probs` (what the local backend runs) is tested against."""
    R = batch.responses.shape[1]
    # Only the last R + 1 positions predict response tokens: skipping the LM head over the prompt
    # saves a large share of the compute with a 49k-token vocabulary.
    logits = _forward(model, batch, logits_to_keep=R + 1)[:, :R].float() / temperature
    log_probs = verl_F.logprobs_from_logits(logits, batch.responses)
    entropy = verl_F.entropy_from_logits(logits) if with_entropy else None
    return log_probs, entropy


def shared_prefix_log_probs(
    model, batch: RolloutBatch, temperature: float, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """`response_log_probs` without the padding and without computing a prompt more than once.

    Rows with the same prompt (the samples of one GRPO group) share one forward pass over it: the
    prompt runs alone, unpadded, its KV cache is repeated for the rows (gradients flow back through it
    to every row that attends to it), and the responses run on top, right-padded only to the group's
    longest one. The logits are the same as the padded batch's, up to float rounding (tested); with n
    samples of a P-token prompt and R-token responses the forward covers P + nR tokens instead of
    n(P + R) plus padding.
    """
    B, R = batch.responses.shape
    P = batch.prompt_width
    device = batch.input_ids.device
    prompt_lens = batch.attention_mask[:, :P].sum(-1).tolist()
    response_lens = batch.response_mask.sum(-1).long().tolist()
    groups: dict[tuple[int, ...], list[int]] = {}
    for row in range(B):
        groups.setdefault(tuple(batch.input_ids[row, P - prompt_lens[row] : P].tolist()), []).append(row)
    log_probs = torch.zeros((B, R), device=device)
    entropy = torch.zeros((B, R), device=device) if with_entropy else None
    for prompt, rows in groups.items():
        k, p = len(rows), len(prompt)
        width = max(1, max(response_lens[r] for r in rows))
        out = model(input_ids=torch.tensor([prompt], device=device), use_cache=True, logits_to_keep=1)
        logits = out.logits[:, -1:].expand(k, 1, -1)
        if width > 1:
            cache = out.past_key_values
            cache.batch_repeat_interleave(k)
            rest = model(
                input_ids=batch.responses[rows, : width - 1],
                position_ids=torch.arange(p, p + width - 1, device=device).expand(k, -1),
                past_key_values=cache,
                use_cache=True,
            ).logits
            logits = torch.cat([logits, rest], dim=1)
        logits = logits.float() / temperature
        index = torch.tensor(rows, device=device)
        log_probs = log_probs.index_put((index,), torch.nn.functional.pad(
            verl_F.logprobs_from_logits(logits, batch.responses[rows, :width]), (0, R - width)))
        if entropy is not None:
            entropy = entropy.index_put((index,), torch.nn.functional.pad(verl_F.entropy_from_logits(logits), (0, R - width)))
    return log_probs * batch.response_mask, (entropy * batch.response_mask if entropy is not None else None)


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
