"""Preference strength from a Bradley-Terry model's margin (Think-J 3.2.2), for data that has none.

Think-J's strength reward needs to know *how much* better the chosen response is. HelpSteer2 says so
(1..3); HH-RLHF, LLMBar-style sets and Skywork do not. `data.strength_from=<bt model dir>` (a reward model
trained by `algorithm=bt`, its `bt_model/`) scores both responses of every pair; the margin
r(chosen) - r(rejected) is binned into 1..3 by its terciles *on the training split* (the same edges label the
held-out pairs: nothing is fitted on evaluation data). Pairs that already carry a strength keep it.
Scores are cached per (model content, pair texts) under `cache_dir/strength_from/`, so a sweep labels once.

A step of the shared setup (judge_rl/recipes/stages.py `setup`), not a data loader: it loads the BT model and scores
with it (judge_rl/servers/scalar.py, the `scalar` prompt), which judge_rl/data/ sits below.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from judge_rl.data.pairs import PreferencePair
from judge_rl.prompts.scalar import scalar_messages


def content_key(p: PreferencePair) -> str:
    """What a margin depends on: the texts scored (a pair id may name other texts in another file)."""
    payload = json.dumps([p.question, p.chosen, p.rejected, p.meta.get("reference")], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def margins(pairs: Sequence[PreferencePair], model_dir: Path, job, tokenizer, device) -> dict[str, float]:
    """r(chosen) - r(rejected) for every pair, by pair id (cached by the model's content hash and each pair's
    texts)."""
    from judge_rl.models.identity import directory_fingerprint
    from judge_rl.models.loading import load_score_model
    from judge_rl.servers.scalar import scalar_ids, score_sequences

    cache = Path(job.cache_dir).expanduser() / "strength_from" / f"{directory_fingerprint(model_dir, job.cache_dir)}.jsonl"
    known: dict[str, float] = {}
    if cache.exists():
        for line in cache.read_text().splitlines():
            try:
                r = json.loads(line)
                known[r["key"]] = r["margin"]
            except (json.JSONDecodeError, KeyError):
                continue  # a line cut short by a crash
    todo = list({content_key(p): p for p in pairs if content_key(p) not in known}.values())
    if todo:
        model = load_score_model(job.model, job.cache_dir, device, checkpoint=model_dir)
        seqs = []
        for p in todo:
            ref = p.meta.get("reference")
            seqs += [scalar_ids(tokenizer, scalar_messages(p.question, p.chosen, ref)),
                     scalar_ids(tokenizer, scalar_messages(p.question, p.rejected, ref))]
        pad = model.config.pad_token_id if model.config.pad_token_id is not None else tokenizer.pad_token_id
        scores = score_sequences(model, pad, seqs, job.eval.batch_size)
        cache.parent.mkdir(parents=True, exist_ok=True)
        with cache.open("a") as f:
            for i, p in enumerate(todo):
                known[content_key(p)] = scores[2 * i] - scores[2 * i + 1]
                f.write(json.dumps({"key": content_key(p), "pair_id": p.pair_id, "margin": known[content_key(p)]}) + "\n")
    return {p.pair_id: known[content_key(p)] for p in pairs}


def tercile_edges(train_margins: Sequence[float]) -> tuple[float, float]:
    """The 1/3 and 2/3 quantiles of the training margins: <= the first is strength 1, <= the second 2, else 3."""
    if len(train_margins) < 3:
        raise ValueError(f"data.strength_from: {len(train_margins)} unlabelled training pairs; terciles need at least 3")
    q1, q2 = np.quantile(np.asarray(train_margins, dtype=float), [1 / 3, 2 / 3])
    return float(q1), float(q2)


def bin_strength(margin: float, edges: tuple[float, float]) -> int:
    return 1 if margin <= edges[0] else 2 if margin <= edges[1] else 3


def label_strengths(train: Sequence[PreferencePair], held_out: Sequence[PreferencePair], model_dir: str, job, tokenizer,
                    device) -> tuple[list[PreferencePair], list[PreferencePair], dict[str, Any]]:
    """Both splits with every missing strength filled from the BT margin (edges fitted on `train`), and a
    summary (edges, how many were labelled, the strengths' distribution per split)."""
    path = Path(model_dir).expanduser()
    unlabelled_train = [p for p in train if p.strength is None]
    unlabelled_eval = [p for p in held_out if p.strength is None]
    m = margins([*unlabelled_train, *unlabelled_eval], path, job, tokenizer, device)
    edges = tercile_edges([m[p.pair_id] for p in unlabelled_train])

    def fill(pairs: Sequence[PreferencePair]) -> list[PreferencePair]:
        return [dataclasses.replace(p, strength=bin_strength(m[p.pair_id], edges)) if p.strength is None else p
                for p in pairs]

    train_out, eval_out = fill(train), fill(held_out)
    info = {
        "model": str(path),
        "edges": list(edges),
        "labelled": {"train": len(unlabelled_train), "eval": len(unlabelled_eval)},
        "strengths": {"train": dict(sorted(Counter(p.strength for p in train_out).items())),
                      "eval": dict(sorted(Counter(p.strength for p in eval_out).items()))},
        "margin_mean": {"train": float(np.mean([m[p.pair_id] for p in unlabelled_train]))},
    }
    return train_out, eval_out, info
