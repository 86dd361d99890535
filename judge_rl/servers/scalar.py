"""A scalar judge (a Bradley-Terry reward model) behind the server interface, so the evaluation harness,
its saved judgments, resume and every benchmark treat it as they treat a generative judge.

The "request" is the conversation of the `scalar` prompt (judge_rl/prompts/scalar.py: the question as the
user turn, one response as the assistant turn); the "completion" is the model's score for it as text
(`%.6f`), which the prompt parses back. `scalar_ids` is the one tokenization of such a conversation, used by
training (judge_rl/recipes/bt.py) and scoring alike, so the model is read at the token it was trained at.
Scores come from batches sorted by length and right-padded; the sequence classifier pools at each row's last
non-pad token (transformers' rule, the one TRL's RewardTrainer trains with).
"""

from __future__ import annotations

import torch

from judge_rl.models.identity import weights_fingerprint
from judge_rl.servers import SERVERS, Completion, stable_hash


def scalar_ids(tokenizer, messages: list[dict]) -> list[int]:
    """The token ids a reward model scores for a conversation (the chat template, no generation prompt)."""
    return list(tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=False, return_dict=False))


@torch.no_grad()
def score_sequences(model, pad_id: int, sequences: list[list[int]], batch_size: int) -> list[float]:
    """The model's scalar for each token sequence, in input order."""
    device = next(model.parameters()).device
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    scores: list[float] = [0.0] * len(sequences)
    for start in range(0, len(order), batch_size):
        rows = [sequences[i] for i in order[start : start + batch_size]]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for j, r in enumerate(rows):
            ids[j, : len(r)] = torch.tensor(r)
            mask[j, : len(r)] = 1
        logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
        for j, i in enumerate(order[start : start + batch_size]):
            scores[i] = float(logits[j, 0])
    return scores


@SERVERS.register("scalar")
class ScalarServer:
    """Answers each conversation with a sequence classifier's score (`num_labels=1`)."""

    def __init__(self, model, tokenizer, batch_size: int = 8, name: str | None = None):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size}: expected >= 1")
        if getattr(model.config, "num_labels", None) != 1:
            raise ValueError(f"a scalar judge needs a sequence classifier with num_labels=1, got {model.config.num_labels}")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.pad_id = model.config.pad_token_id if model.config.pad_token_id is not None else tokenizer.pad_token_id
        name = name or getattr(model.config, "_name_or_path", "") or type(model).__name__
        self.identity = f"scalar:{name}:{weights_fingerprint(model)}"
        self.context_length: int | None = getattr(model.config, "max_position_embeddings", None)
        self.on_batch = None

    @classmethod
    def from_config(cls, server_cfg, model_cfg, cache_dir: str, checkpoint: str | None = None, seed: int = 0) -> "ScalarServer":
        from judge_rl.models.loading import load_score_model, load_tokenizer, resolve_device

        if checkpoint is None:
            raise ValueError("server=scalar scores with a trained reward model: set judge.checkpoint=<bt run>/bt_model")
        tokenizer = load_tokenizer(model_cfg, cache_dir)
        model = load_score_model(model_cfg, cache_dir, resolve_device(server_cfg.device), checkpoint=checkpoint, seed=seed)
        return cls(model, tokenizer, server_cfg.batch_size, name=model_cfg.name)

    def __repr__(self) -> str:
        return f"ScalarServer({self.identity}, batch_size={self.batch_size})"

    def request_key(self, messages: list[dict], max_new_tokens: int) -> str:
        try:
            prompt = scalar_ids(self.tokenizer, messages)
        except Exception:  # noqa: BLE001  (fails in `complete`, alone)
            prompt = messages
        # max_new_tokens does not change a score: it is not part of the key
        return stable_hash({"engine": self.identity, "prompt": prompt})

    def too_long(self, messages: list[dict], max_new_tokens: int) -> str | None:
        if self.context_length is None:
            return None
        try:
            n = len(scalar_ids(self.tokenizer, messages))
        except Exception:  # noqa: BLE001
            return None
        if n > self.context_length:
            return f"conversation of {n} tokens > the model's context of {self.context_length}"
        return None

    def complete(self, batch_of_messages: list[list[dict]], *, max_new_tokens: int) -> list[Completion]:
        results: list[Completion | None] = [None] * len(batch_of_messages)
        seqs, where = [], []
        for i, messages in enumerate(batch_of_messages):
            try:
                seqs.append(scalar_ids(self.tokenizer, messages))
                where.append(i)
            except Exception as e:  # noqa: BLE001
                results[i] = Completion.failure(f"could not apply the chat template: {type(e).__name__}: {e}")
        if seqs:
            scores = score_sequences(self.model, self.pad_id, seqs, self.batch_size)
            for i, s in zip(where, scores):
                results[i] = Completion(text=f"{s:.6f}", error=None, finished=True)
            if self.on_batch is not None:
                self.on_batch(len(seqs))
        return results  # type: ignore[return-value]
