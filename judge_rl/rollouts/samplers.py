"""Who generates the local backend's rollouts (`trainer.rollout_engine`): the trainer's own model, or a vLLM
engine colocated in the training process whose weights follow the trainer's.

    sampler = build_sampler(trainer.rollout_engine, policy, tokenizer, device)
    sampler.sync(policy)                          # before each step's sampling: the engine gets the current weights
    groups = sampler.sample(prompts, num_samples=n, max_new_tokens=..., temperature=..., top_p=...)
    sampler.close()

  hf    `sample_generate` on the policy itself (judge_rl/rollouts/generation.py): no copy, no start-up.
  vllm  vLLM's offline engine in this process (TRL's `use_vllm` colocate mode is the model: judge_rl/rollouts/
        vllm_sampler.py): continuous batching and paged attention, 3-4x the hf sampler's tokens/s on the embedded
        model on 2 CPU cores (scripts/bench_serving.py, sampling rows). Its weights are reloaded from the policy
        after each update (0.3 s for 135M), its per-token log-probs come back with each sample, and the update's
        log-probs stay the trainer's own: the mismatch between the two is logged (verl's `training/rollout_probs_*`
        and the importance ratio `training/rollout_is_ratio_*`).
  auto  vllm where vLLM is installed, the run is on the CPU, and the policy has weights to serve (not the tiny
        random test model); hf otherwise. On a GPU ask for vllm by name (not measured there yet).

Sampling stays reproducible: the colocated vLLM engine draws from torch's global generator, which the loop seeds per
step, so a resumed run samples what the uninterrupted run sampled (as the hf sampler does).
"""

from __future__ import annotations

from typing import Protocol, Sequence

from judge_rl.rollouts.generation import Generation, OnGroup, sample_generate
from judge_rl.rollouts import vllm_engine

ROLLOUT_ENGINES = ("auto", "hf", "vllm")


class Sampler(Protocol):
    name: str

    def sync(self, policy) -> None: ...

    def sample(self, prompts: Sequence[list[int]], *, num_samples: int, max_new_tokens: int, temperature: float,
               top_p: float, on_group: OnGroup | None = None) -> list[list[Generation]]: ...  # fmt: skip

    def close(self) -> None: ...


class HFSampler:
    """The policy samples its own rollouts (`sample_generate`, all prompts of the step in one batch, so `on_group`
    is called for every prompt once the batch is done: no overlap with what the caller does per group)."""

    name = "hf"

    def __init__(self, policy, tokenizer):
        self.policy, self.tokenizer = policy, tokenizer

    def sync(self, policy) -> None:
        self.policy = policy

    def sample(self, prompts, *, num_samples, max_new_tokens, temperature, top_p, on_group=None):
        groups = sample_generate(self.policy, self.tokenizer, prompts, num_samples=num_samples, max_new_tokens=max_new_tokens,
                                 batch_size=len(prompts) * num_samples, temperature=temperature, top_p=top_p)  # fmt: skip
        for i, group in enumerate(groups if on_group is not None else ()):
            on_group(i, group)
        return groups

    def close(self) -> None:
        pass


def resolve_rollout_engine(choice: str, device_type: str, model_source: str) -> str:
    """The engine `trainer.rollout_engine=choice` means here (pure but for the vllm lookup): see the module docstring.
    A one-line ValueError for an unknown choice, or vllm asked for where it is not installed."""
    if choice not in ROLLOUT_ENGINES:
        raise ValueError(f"trainer.rollout_engine={choice!r}: expected one of {', '.join(ROLLOUT_ENGINES)}")
    if choice == "vllm" and not vllm_engine.vllm_installed():
        raise ValueError("trainer.rollout_engine=vllm: vllm is not installed in this Python (CPU: make install; GPU: "
                         "pip install 'judge_rl[gpu]'), or use trainer.rollout_engine=hf")
    if choice == "auto":
        return vllm_engine.auto_server(model_source, "cpu") if device_type == "cpu" else "hf"
    return choice


def build_sampler(engine: str, policy, tokenizer, *, max_model_len: int | None = None) -> Sampler:
    """The sampler of a resolved engine ("hf" or "vllm") for `policy` as it is now."""
    if engine == "hf":
        return HFSampler(policy, tokenizer)
    if engine == "vllm":
        from judge_rl.rollouts.vllm_sampler import VLLMSampler

        return VLLMSampler.from_policy(policy, tokenizer, max_model_len=max_model_len)
    raise ValueError(f"rollout engine {engine!r}: expected hf or vllm")
