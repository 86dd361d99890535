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
