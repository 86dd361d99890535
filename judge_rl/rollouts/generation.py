"""Sampling judgments from the judge: batched, length-sorted, left-padded generation with a KV cache.

Used both for RL rollouts (sampling, n per prompt) and for evaluation (greedy). Prompts are sorted
by length before batching so that little compute is spent on padding; results come back in input
order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch


@dataclass(frozen=True)
class Generation:
    prompt_ids: list[int]
    response_ids: list[int]  # up to and including the end-of-turn token when one was produced
    text: str  # the response without special tokens
    finished: bool  # False when max_new_tokens cut it off
    # the sampler's log-prob of each response token (a sampler other than the policy: judge_rl/rollouts/samplers.py);
    # None when the policy sampled itself (its own log-probs are the trainer's)
    log_probs: tuple[float, ...] | None = None


# a sampler calls this with (prompt index, its samples) as each prompt's samples are done (judge_rl/rollouts/samplers.py):
# the policy job judges them there
OnGroup = Callable[[int, list[Generation]], None]


def encode_chat(tokenizer, messages: list[dict[str, str]]) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    return list(ids)


def _trim(row: list[int], eos_id: int, pad_id: int) -> tuple[list[int], bool]:
    if eos_id in row:
        return row[: row.index(eos_id) + 1], True
    while row and row[-1] == pad_id and pad_id != eos_id:
        row = row[:-1]
    return row, False


@torch.no_grad()
def generate(
    model,
    tokenizer,
    prompts: Sequence[list[int]],
    *,
    max_new_tokens: int,
    batch_size: int,
    num_samples: int = 1,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_p: float = 1.0,
    on_batch: Callable[[int], None] | None = None,
) -> list[list[Generation]]:
    """For each prompt, `num_samples` generations (a list per prompt, in input order).

    `batch_size` counts sequences, so a batch holds batch_size // num_samples prompts.
    `on_batch(k)` is called after each batch with the number of prompts it finished.
    """
    device = next(model.parameters()).device
    pad_id, eos_id = tokenizer.pad_token_id, tokenizer.eos_token_id
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    prompts_per_batch = max(1, batch_size // num_samples)
    results: list[list[Generation] | None] = [None] * len(prompts)
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(order), prompts_per_batch):
            chunk = order[start : start + prompts_per_batch]
            width = max(len(prompts[i]) for i in chunk)
            input_ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
            attention = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, i in enumerate(chunk):
                ids = prompts[i]
                input_ids[row, width - len(ids) :] = torch.tensor(ids)
                attention[row, width - len(ids) :] = 1
            sampling = dict(do_sample=True, temperature=temperature, top_p=top_p) if do_sample else dict(
                do_sample=False, temperature=None, top_p=None, top_k=None
            )
            out = model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention.to(device),
                max_new_tokens=max_new_tokens,
                num_return_sequences=num_samples,
                pad_token_id=pad_id,
                eos_token_id=eos_id,
                **sampling,
            )
            new_tokens = out[:, width:].tolist()
            for row, i in enumerate(chunk):
                gens = []
                for s in range(num_samples):
                    response, finished = _trim(new_tokens[row * num_samples + s], eos_id, pad_id)
                    text = tokenizer.decode(response, skip_special_tokens=True)
                    gens.append(Generation(list(prompts[i]), response, text, finished))
                results[i] = gens
            if on_batch:
                on_batch(len(chunk))
    finally:
        model.train(was_training)
    return results  # type: ignore[return-value]


def sample_tokens(logits: torch.Tensor, temperature: float, top_p: float = 1.0) -> torch.Tensor:
    """One token per row from (rows, vocab) logits: argmax at temperature 0, else softmax(logits / T)
    restricted to the smallest set of tokens whose probability reaches top_p (as `generate`'s
    TopPLogitsWarper keeps it), drawn from torch's global generator."""
    if temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, sorted_idx = probs.sort(dim=-1, descending=True)
        # drop a token when the tokens ranked above it already reach top_p (the first is always kept)
        drop = (sorted_probs.cumsum(-1) - sorted_probs) >= top_p
        sorted_probs = sorted_probs.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, sorted_idx, sorted_probs)
    return torch.multinomial(probs, 1).squeeze(-1)


@torch.no_grad()
def _decode(
    model,
    tokenizer,
    prompts: Sequence[list[int]],
    *,
    copies: int,
    max_new_tokens: int,
    batch_size: int,
    pick: Callable[[torch.Tensor], torch.Tensor],
    on_batch: Callable[[int], None] | None = None,
) -> list[list[Generation]]:
    """`copies` continuations of every prompt, each prompt prefilled once.

    Prompts are sorted by length and taken in batches of at most `batch_size` rows (prompts x copies).
    Each prompt is prefilled alone (no padding: SDPA's causal kernel, ~1.9x the prompt tokens/s of a
    padded, masked batch on CPU) and its KV cache is shared by its copies; the caches are left-padded
    into one batch cache that decodes together with explicit position ids (as if each row ran alone).
    A row that reaches the end token leaves the batch. `pick(logits)` chooses each step's tokens for
    the active rows (argmax, or a draw from the global generator).
    """
    from transformers import DynamicCache

    device = next(model.parameters()).device
    pad_id, eos_id = tokenizer.pad_token_id, tokenizer.eos_token_id
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    per_batch = max(1, batch_size // copies)
    results: list[list[Generation] | None] = [None] * len(prompts)
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(order), per_batch):
            chunk = order[start : start + per_batch]
            rows = [i for i in chunk for _ in range(copies)]  # batch row -> prompt
            width = max(len(prompts[i]) for i in chunk)
            per_layer: list[list[tuple[torch.Tensor, torch.Tensor]]] = []
            last_logits = []
            for i in chunk:
                out = model(input_ids=torch.tensor([prompts[i]], device=device), use_cache=True, logits_to_keep=1)
                last_logits.append(out.logits[0, -1].float().expand(copies, -1))
                pad = width - len(prompts[i])
                for layer_idx, layer in enumerate(out.past_key_values.layers):
                    if layer_idx == len(per_layer):
                        per_layer.append([])
                    k, v = layer.keys, layer.values
                    if pad:
                        k = torch.nn.functional.pad(k, (0, 0, pad, 0))
                        v = torch.nn.functional.pad(v, (0, 0, pad, 0))
                    if copies > 1:
                        k, v = k.expand(copies, -1, -1, -1), v.expand(copies, -1, -1, -1)
                    per_layer[layer_idx].append((k, v))
            cache = DynamicCache(
                ddp_cache_data=[(torch.cat([k for k, _ in kv]), torch.cat([v for _, v in kv])) for kv in per_layer],
                config=model.config,
            )
            del per_layer
            mask = torch.zeros((len(rows), width), dtype=torch.long, device=device)
            for r, i in enumerate(rows):
                mask[r, width - len(prompts[i]) :] = 1
            positions = torch.tensor([len(prompts[i]) for i in rows], device=device)
            active = list(range(len(rows)))  # batch slot -> row
            generated: list[list[int]] = [[] for _ in rows]
            token = pick(torch.cat(last_logits))
            for step in range(max_new_tokens):
                picked = token.tolist()  # one device-to-host copy a step (one per row was a sync per row on CUDA)
                for slot, r in enumerate(active):
                    generated[r].append(picked[slot])
                if step == max_new_tokens - 1:
                    break
                keep = [slot for slot, tok in enumerate(picked) if tok != eos_id]
                if not keep:
                    break
                if len(keep) < len(active):
                    index = torch.tensor(keep, device=device)
                    cache.batch_select_indices(index)
                    mask, positions, token = mask[index], positions[index], token[index]
                    active = [active[slot] for slot in keep]
                mask = torch.cat([mask, torch.ones((len(active), 1), dtype=mask.dtype, device=device)], dim=1)
                out = model(
                    input_ids=token[:, None], attention_mask=mask, position_ids=positions[:, None],
                    past_key_values=cache, use_cache=True,
                )
                positions = positions + 1
                token = pick(out.logits[:, -1].float())
            del cache
            for c, i in enumerate(chunk):
                gens = []
                for r in range(c * copies, (c + 1) * copies):
                    response, finished = _trim(generated[r], eos_id, pad_id)
                    gens.append(Generation(list(prompts[i]), response, tokenizer.decode(response, skip_special_tokens=True), finished))
                results[i] = gens
            if on_batch:
                on_batch(len(chunk))
    finally:
        model.train(was_training)
    return results  # type: ignore[return-value]


def greedy_generate(
    model,
    tokenizer,
    prompts: Sequence[list[int]],
    *,
    max_new_tokens: int,
    batch_size: int,
    on_batch: Callable[[int], None] | None = None,
) -> list[Generation]:
    """Greedy decoding for evaluation, faster than `generate` on CPU for the same tokens (`_decode`:
    unpadded prefill, finished rows leave the batch). Same argmax decisions as
    `generate(do_sample=False)` up to float rounding."""
    gens = _decode(model, tokenizer, prompts, copies=1, max_new_tokens=max_new_tokens, batch_size=batch_size,
                   pick=lambda logits: logits.argmax(-1), on_batch=on_batch)
    return [g[0] for g in gens]


def sample_generate(
    model,
    tokenizer,
    prompts: Sequence[list[int]],
    *,
    num_samples: int,
    max_new_tokens: int,
    batch_size: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
) -> list[list[Generation]]:
    """RL rollouts: `num_samples` sampled generations per prompt (a list per prompt, in input order).

    Each prompt is prefilled once and its KV cache shared by its samples (`generate` with
    num_return_sequences prefills it n times, padded and masked), and finished samples leave the batch.
    Draws come from torch's global generator in a fixed order, so a step seeded with `torch.manual_seed`
    samples the same tokens every time (resume stays exact). At temperature 0 it is greedy decoding.
    """
    return _decode(model, tokenizer, prompts, copies=num_samples, max_new_tokens=max_new_tokens,
                   batch_size=batch_size, pick=lambda logits: sample_tokens(logits, temperature, top_p))
