"""A local Hugging Face causal LM behind the server interface: greedy decoding with
`judge_rl.rollouts.greedy_generate` (length-sorted batches, each prompt prefilled alone without padding,
then batched decoding over a left-padded KV cache; finished rows leave the batch).

Its identity is the model's name plus a content hash of its config and weights
(`models.identity.weights_fingerprint`), so saved judgments are never reused for another judge that
happens to share a name or a directory. A prompt that, with `max_new_tokens`, does not fit the model's
context (`max_position_embeddings`) is refused before generation (`too_long`)."""

from __future__ import annotations

from judge_rl.servers import SERVERS, Completion, stable_hash
from judge_rl.models.identity import weights_fingerprint
from judge_rl.rollouts import encode_chat, greedy_generate


@SERVERS.register("hf")
class HFServer:
    def __init__(self, model, tokenizer, batch_size: int = 8, name: str | None = None):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size}: expected >= 1")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        # what the request keys say about the judge: two judges must not share stored results
        name = name or getattr(model.config, "_name_or_path", "") or type(model).__name__
        self.identity = f"hf:{name}:{weights_fingerprint(model)}"
        self.context_length: int | None = getattr(model.config, "max_position_embeddings", None)
        self.on_batch = None  # progress callback: called with the number of prompts each batch finished

    @classmethod
    def from_config(cls, server_cfg, model_cfg, cache_dir: str, checkpoint: str | None = None, seed: int = 0) -> "HFServer":
        from judge_rl.models.loading import load_model, load_tokenizer, resolve_device

        tokenizer = load_tokenizer(model_cfg, cache_dir)
        model = load_model(model_cfg, cache_dir, resolve_device(server_cfg.device), checkpoint=checkpoint, seed=seed)
        return cls(model, tokenizer, server_cfg.batch_size, name=model_cfg.name)

    def __repr__(self) -> str:
        return f"HFServer({self.identity}, batch_size={self.batch_size})"

    def request_key(self, messages: list[dict], max_new_tokens: int) -> str:
        try:
            prompt = encode_chat(self.tokenizer, messages)
        except Exception:  # noqa: BLE001  (the request fails in `complete`, and is keyed by its messages)
            prompt = messages
        return stable_hash({"engine": self.identity, "prompt": prompt, "max_new_tokens": max_new_tokens})

    def too_long(self, messages: list[dict], max_new_tokens: int) -> str | None:
        """Why this request cannot fit the model's context, or None when it fits."""
        if self.context_length is None:
            return None
        try:
            n = len(encode_chat(self.tokenizer, messages))
        except Exception:  # noqa: BLE001  (a malformed conversation fails in `complete`, one request alone)
            return None
        if n + max_new_tokens > self.context_length:
            return f"prompt of {n} tokens + max_new_tokens {max_new_tokens} > the model's context of {self.context_length}"
        return None

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
            gens = greedy_generate(
                self.model,
                self.tokenizer,
                prompts,
                max_new_tokens=max_new_tokens,
                batch_size=self.batch_size,
                on_batch=self.on_batch,
            )
            for i, g in zip(where, gens):
                results[i] = Completion(text=g.text, error=None, finished=g.finished)
        return results  # type: ignore[return-value]
