"""A local Hugging Face causal LM behind the engine interface: greedy, batched `generate`."""

from __future__ import annotations

from judge_rl.evaluation.engines import INFERENCE_ENGINES, Completion
from judge_rl.rollouts import encode_chat, generate


@INFERENCE_ENGINES.register("hf")
class HFEngine:
    def __init__(self, model, tokenizer, batch_size: int = 8):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size}: expected >= 1")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"HFEngine(model={type(self.model).__name__}, batch_size={self.batch_size})"

    def complete(self, batch_of_messages: list[list[dict]], *, max_new_tokens: int) -> list[Completion]:
        results: list[Completion | None] = [None] * len(batch_of_messages)
        prompts, where = [], []
        for i, messages in enumerate(batch_of_messages):
            try:  # a malformed conversation fails alone, not the whole batch
                prompts.append(encode_chat(self.tokenizer, messages))
                where.append(i)
            except Exception as e:  # noqa: BLE001
                results[i] = Completion.failure(f"could not apply the chat template: {type(e).__name__}: {e}")
        if prompts:
            gens = generate(self.model, self.tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=self.batch_size)
            for i, (g,) in zip(where, gens):
                results[i] = Completion(text=g.text, error=None, finished=g.finished)
        return results  # type: ignore[return-value]
