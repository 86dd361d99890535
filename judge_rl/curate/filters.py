"""The three filters, in the order the job runs them (see judge_rl.curate's docstring for exactly what each does).

1. `difficulty_filter`: keep the pairs the judge does not get right in every sampled judgment.
2. `diversity_filter`: embed each question (`embed_texts`, `load_embedder`) and drop near-duplicates by greedy
   leader clustering on cosines (`cosine_matrix_rows`, `near_duplicates`).
3. `accuracy_filter`: keep a pair when the teacher's judgments of both orders reach the gold verdict; they
   become its traces.

Each returns a `FilterResult`: the pairs kept, a `Dropped` for each pair dropped, and its own counts.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from judge_rl.config.model_dirs import looks_local
from judge_rl.curate.config import AccuracyConfig, DifficultyConfig, DiversityConfig
from judge_rl.curate.records import append_records, read_records
from judge_rl.curate.teacher import Judge, Teacher
from judge_rl.curate.traces import ClippedTrace, judge_output
from judge_rl.data.pairs import JudgeItem, PreferencePair, balanced_positions

# --------------------------------------------------------------------------- results


@dataclass
class Dropped:
    """A pair a filter dropped: the filter, a short reason (counted in counts.json) and details."""

    pair_id: str
    filter: str
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class FilterResult:
    """What one filter kept and dropped, plus its own counts (kept_because, reused, sampled, ...)."""

    kept: list[PreferencePair]
    dropped: list[Dropped]
    stats: dict[str, Any] = field(default_factory=dict)

    def summary(self, n_in: int) -> dict[str, Any]:
        return {"enabled": True, "in": n_in, "out": len(self.kept),
                "dropped": dict(Counter(d.reason for d in self.dropped)), **self.stats}


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --------------------------------------------------------------------------- 1. difficulty


def difficulty_filter(
    pairs: Sequence[PreferencePair],
    judge: Judge,
    prompt,
    cfg: DifficultyConfig,
    *,
    seed: int,
    max_prompt_length: int,
    records_path: Path,
) -> FilterResult:
    """Keep the pairs on which at least one of `cfg.samples` sampled judgments is wrong or unparsed.

    Positions: `balanced_positions(pairs, seed)`. Samples are appended to `records_path` chunk by chunk, one
    record per pair keyed by the judge, the prompt's tokens and the sampling settings; pairs with a record
    are not sampled again."""
    import torch

    from judge_rl.reports.console import progress_bar
    from judge_rl.rollouts import encode_chat, sample_generate
    from judge_rl.servers import stable_hash

    items = balanced_positions(pairs, seed)
    saved = {r["key"]: r for r in read_records(records_path) if "key" in r}
    kept, dropped = [], []
    because: Counter[str] = Counter()
    reused = 0
    todo: list[tuple[int, JudgeItem, list[int], str]] = []
    records: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(items):
        ids = encode_chat(judge.tokenizer, prompt.messages(item))
        if len(ids) > max_prompt_length:
            continue
        key = stable_hash({"judge": judge.identity, "prompt": ids, "samples": cfg.samples,
                           "temperature": cfg.temperature, "max_new_tokens": cfg.max_new_tokens})
        if key in saved:
            records[item.pair.pair_id] = saved[key]
            reused += 1
        else:
            todo.append((index, item, ids, key))
    if todo:
        with progress_bar("difficulty", len(todo)) as advance:
            for chunk in _chunks(todo, cfg.chunk_size):
                # each chunk seeded from `seed` and its first pair's place: a run is reproducible (a resumed run
                # samples only the missing pairs, in chunks of their own, so its draws differ from an unbroken run's)
                torch.manual_seed(seed * 1_000_003 + chunk[0][0])
                gens = sample_generate(judge.model, judge.tokenizer, [ids for _, _, ids, _ in chunk],
                                       num_samples=cfg.samples, max_new_tokens=cfg.max_new_tokens,
                                       batch_size=cfg.batch_size, temperature=cfg.temperature)
                new = []
                for (_, item, _, key), samples in zip(chunk, gens):
                    judgments = [prompt.parse(g.text) for g in samples]
                    record = {
                        "key": key,
                        "pair_id": item.pair.pair_id,
                        "position": item.chosen_position,
                        "outputs": [g.text for g in samples],
                        "winners": [j.winner for j in judgments],
                        "errors": [j.error for j in judgments],
                        "right": sum(j.ok and j.winner == item.chosen_position for j in judgments),
                    }
                    records[item.pair.pair_id] = record
                    new.append(record)
                append_records(records_path, new)
                advance(len(chunk))
    for item in items:
        pair = item.pair
        record = records.get(pair.pair_id)
        if record is None:
            dropped.append(Dropped(pair.pair_id, "difficulty", "prompt longer than model.max_prompt_length",
                                   {"max_prompt_length": max_prompt_length}))
            continue
        n, right = len(record["outputs"]), record["right"]
        if right == n:
            dropped.append(Dropped(pair.pair_id, "difficulty", f"easy: all {n} judgments right",
                                   {"position": record["position"]}))
            continue
        wrong = sum(err is None and w != record["position"] for w, err in zip(record["winners"], record["errors"]))
        because["a wrong verdict" if wrong else "unparsed judgments only"] += 1
        kept.append(dataclasses.replace(pair, meta={**pair.meta, "curation": {
            **pair.meta.get("curation", {}), "judge_right": right, "judge_samples": n}}))
    return FilterResult(kept, dropped, {"kept_because": dict(because), "sampled": len(todo), "reused": reused})


# --------------------------------------------------------------------------- 2. diversity


def embed_texts(model, tokenizer, texts: Sequence[str], *, batch_size: int, max_length: int):
    """Mean-pooled last hidden states of `model`'s base transformer, one float32 row per text.

    Right padding, so that a text's tokens sit at the same positions whatever it is batched with (a causal
    model's real tokens then never see the padding): identical texts get identical embeddings."""
    import torch

    base = getattr(model, "base_model", model)
    device = next(model.parameters()).device
    side = tokenizer.padding_side
    tokenizer.padding_side = "right"
    rows = []
    try:
        with torch.no_grad():
            for chunk in _chunks(list(texts), batch_size):
                enc = tokenizer(list(chunk), padding=True, truncation=True, max_length=max_length,
                                return_tensors="pt", add_special_tokens=True)
                mask = enc["attention_mask"].to(device)
                out = base(input_ids=enc["input_ids"].to(device), attention_mask=mask)
                hidden = out.last_hidden_state.float()
                weights = mask.unsqueeze(-1).float()
                rows.append(((hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)).cpu())
    finally:
        tokenizer.padding_side = side
    return torch.cat(rows) if rows else torch.zeros((0, 1))


def cosine_matrix_rows(embeddings, center: bool):
    """Unit rows for cosines: optionally centered on their mean. Rows left at zero by centering (equal to the
    mean) are given one extra shared dimension, so that they are at cosine 1 with each other (they are
    identical) and 0 with every other row."""
    import torch

    x = embeddings.float()
    if center and len(x) > 1:
        scale = x.norm(dim=1, keepdim=True).clamp(min=1e-12)
        x = x - x.mean(0, keepdim=True)
        zero = (x.norm(dim=1, keepdim=True) <= 1e-6 * scale).float()
        x = torch.cat([x * (1 - zero), zero], dim=1)
    return torch.nn.functional.normalize(x, dim=1)


def near_duplicates(embeddings, threshold: float, *, center: bool = True, block: int = 256) -> list[tuple[int | None, float]]:
    """Greedy leader clustering in row order: for each row, (index of the first kept row at cosine >= threshold
    (less 1e-6), that cosine) when it is a near-duplicate, else (None, its highest cosine to a kept row, or 0).
    Kept rows are the ones with None; each cluster keeps its first row."""
    import torch

    x = cosine_matrix_rows(embeddings, center)
    bar = threshold - 1e-6
    leaders: list[int] = []
    result: list[tuple[int | None, float]] = []
    for start in range(0, len(x), block):
        rows = x[start : start + block]
        to_leaders = rows @ x[leaders].T if leaders else torch.zeros((len(rows), 0))
        within = rows @ rows.T
        block_leaders: list[int] = []  # offsets within this block
        for r in range(len(rows)):
            sims = torch.cat([to_leaders[r], within[r, block_leaders]]) if block_leaders else to_leaders[r]
            owners = leaders + [start + b for b in block_leaders]
            hit = (sims >= bar).nonzero()
            if len(hit):
                first = int(hit[0])
                result.append((owners[first], float(sims[first])))
            else:
                result.append((None, float(sims.max()) if len(sims) else 0.0))
                block_leaders.append(r)
        leaders += [start + b for b in block_leaders]
    return result


def load_embedder(name: str, judge: Judge | None, device: str):
    """(model, tokenizer) that embed questions: the judge's, or a sentence-transformers-style model."""
    from transformers import AutoModel, AutoTokenizer

    from judge_rl.models.loading import resolve_device

    if name == "judge":
        if judge is None:
            raise ValueError("diversity.embedder=judge: the judge model was not loaded")
        return judge.model, judge.tokenizer
    path = str(Path(name).expanduser()) if looks_local(name) else name
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    model = AutoModel.from_pretrained(path).to(resolve_device(device)).eval()
    return model, tokenizer


def diversity_filter(pairs: Sequence[PreferencePair], model, tokenizer, cfg: DiversityConfig) -> FilterResult:
    """Drop each pair whose question is a near-duplicate (cosine >= cfg.threshold) of an earlier kept one."""
    embeddings = embed_texts(model, tokenizer, [p.question for p in pairs], batch_size=cfg.batch_size,
                             max_length=cfg.max_length)
    kept, dropped = [], []
    for pair, (owner, cosine) in zip(pairs, near_duplicates(embeddings, cfg.threshold, center=cfg.center)):
        if owner is None:
            kept.append(pair)
        else:
            dropped.append(Dropped(pair.pair_id, "diversity", "near-duplicate question",
                                   {"duplicate_of": pairs[owner].pair_id, "cosine": round(cosine, 6)}))
    return FilterResult(kept, dropped, {"clusters": len(kept)})


# --------------------------------------------------------------------------- 3. accuracy


def accuracy_filter(pairs: Sequence[PreferencePair], teacher: Teacher, prompt, acc: AccuracyConfig,
                    *, limit: int | None) -> FilterResult:
    """Keep a pair when the teacher's judgments of both orders reach the gold verdict; they become its traces
    (`traces = {"a": ..., "b": ...}`). With `limit`, stops once `limit` pairs are kept (the rest: not_checked)."""
    from judge_rl.reports.console import progress_bar

    kept, dropped = [], []
    clipped = checked = 0
    per_chunk = max(1, acc.server.chunk_size // 2)  # requests per chunk: both orders of each pair
    with progress_bar("accuracy", len(pairs)) as advance:
        for chunk in _chunks(list(pairs), per_chunk):
            if limit is not None and len(kept) >= limit:
                break
            items = [JudgeItem(p, pos) for p in chunk for pos in ("a", "b")]
            outputs = teacher.outputs(items)
            for n, pair in enumerate(chunk):
                checked += 1
                reads = []
                for item, (text, failure) in zip(items[2 * n : 2 * n + 2], outputs[2 * n : 2 * n + 2]):
                    reads.append(ClippedTrace(None, failure) if text is None else judge_output(text, item, prompt, acc))
                failing = [(pos, r) for pos, r in zip("ab", reads) if r.trace is None]
                if failing:
                    dropped.append(Dropped(pair.pair_id, "accuracy", failing[0][1].error,
                                           {"positions": {pos: r.error for pos, r in failing}}))
                    continue
                clipped += sum(r.clipped for r in reads)
                curation = {**pair.meta.get("curation", {}), "teacher": teacher.name,
                            "clipped": [pos for pos, r in zip("ab", reads) if r.clipped]}
                kept.append(dataclasses.replace(pair, traces={"a": reads[0].trace, "b": reads[1].trace},
                                                meta={**pair.meta, "curation": curation}))
            advance(len(chunk))
    stats = {"teacher": teacher.name, "checked": checked, "not_checked": len(pairs) - checked,
             "clipped_traces": clipped, "requests": teacher.requests, "reused": teacher.reused}
    return FilterResult(kept, dropped, stats)
