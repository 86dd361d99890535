"""A pairwise judge's verdict likelihoods in both orders: how far it leans to one position, and whether it tells the
responses apart once that lean is taken out.

Greedy decoding turns a lean into a constant: a judge that gives "(b)" 0.55 and "(a)" 0.45 names (b) every time, and
its accuracy, consistent accuracy and A-preference then say nothing of what it knows. Here each pair, in each order,
is scored by teacher forcing instead of decoding: the judge's log-likelihood of two complete outputs, the label trace
of the pair (judge_rl/data/real.py: both responses' openings quoted, then the preference) naming the response shown
at (a) and the same naming (b), each ending in the prompt's own verdict line. What is measured from them:

- the likelihood verdict in each order (the likelier output's winner): accuracy at each order, consistent accuracy,
  A-preference, as the harness reports for decoded verdicts;
- `p_a`: the mean probability the judge gives the (a) output of the two (0.5: no lean);
- the position-calibrated verdict (Wang et al., 2023, "Large Language Models are not Fair Evaluators": balanced
  position calibration), which adds the chosen response's log-likelihood margin of the two orders: order-free by
  construction, its accuracy is what the judge knows about the pair with its lean to a position removed.

Each with a 95% bootstrap interval over pairs. For judges trained on label traces (the real-pair data), where these
outputs are the ones the judge learned to write; for a judge that writes other thinking it is a probe of the verdict
alone, in this template.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from judge_rl.data.pairs import JudgeItem, PreferencePair
from judge_rl.data.real import LABEL_TRACE_STRENGTH, label_thinking
from judge_rl.reports.schema import bootstrap_ci


def candidate_outputs(item: JudgeItem, prompt) -> dict[str, str]:
    """The two outputs scored for `item`, keyed by the winner they name: the label trace of the pair as shown, ending
    in `prompt`'s verdict line (with the label traces' strength where the prompt has one)."""
    return {w: prompt.output(label_thinking(item.response_a, item.response_b, w), w, LABEL_TRACE_STRENGTH)
            for w in ("a", "b")}  # fmt: skip


@torch.no_grad()
def output_log_likelihoods(model, tokenizer, prompt_ids: Sequence[int], outputs: Sequence[str]) -> list[float]:
    """log P(output | prompt) of each output (its tokens' log-probs summed), in one padded forward."""
    device = next(model.parameters()).device
    rows = [list(prompt_ids) + tokenizer(o, add_special_tokens=False)["input_ids"] for o in outputs]
    width, p = max(len(r) for r in rows), len(prompt_ids)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=device)
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=device)
    logits = model(input_ids=ids, attention_mask=mask).logits[:, p - 1 : -1].float()
    targets = ids[:, p:]
    token_lp = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1) * mask[:, p:]
    return [float(x) for x in token_lp.sum(-1)]


@torch.no_grad()
def log_likelihood_margin(model, tokenizer, prompt_ids: Sequence[int], first: str, second: str) -> float:
    """log P(first | prompt) - log P(second | prompt), `output_log_likelihoods`' difference computed once over what the
    two share: the tokens before their first difference cancel, so the prompt and that shared part run once (their
    KV cache kept) and only each output's rest after it, with the LM head only where a token is scored. The two
    label-trace outputs of a pair differ from the position they name on: ~1/25 of the tokens of two full passes."""
    device = next(model.parameters()).device
    ids = [tokenizer(o, add_special_tokens=False)["input_ids"] for o in (first, second)]
    k = next((i for i, (x, y) in enumerate(zip(*ids)) if x != y), min(map(len, ids)))
    if ids[0] == ids[1]:
        return 0.0
    head = model(input_ids=torch.tensor([list(prompt_ids) + ids[0][:k]], device=device), use_cache=True,
                 logits_to_keep=1)  # fmt: skip
    first_lp = torch.log_softmax(head.logits[0, -1].float(), -1)
    total = []
    for rest in (ids[0][k:], ids[1][k:]):
        lp = float(first_lp[rest[0]]) if rest else 0.0
        if len(rest) > 1:
            cache = copy.deepcopy(head.past_key_values)
            logits = model(input_ids=torch.tensor([rest[:-1]], device=device), past_key_values=cache, use_cache=True).logits
            lp += float(torch.log_softmax(logits[0].float(), -1).gather(-1, torch.tensor(rest[1:], device=device)
                                                                         .unsqueeze(-1)).sum())  # fmt: skip
        total.append(lp)
    return total[0] - total[1]


def item_margins(model, tokenizer, prompt, pairs: Sequence[PreferencePair], encode) -> list[dict[str, Any]]:
    """For each pair in both orders: log P(output naming (a)) - log P(output naming (b)), `margin_a`. `encode(messages)`
    gives the prompt's token ids (the chat template the judge was served with)."""
    out = []
    for pair in pairs:
        for pos in ("a", "b"):
            item = JudgeItem(pair, pos)
            outputs = candidate_outputs(item, prompt)
            margin = log_likelihood_margin(model, tokenizer, encode(prompt.messages(item)), outputs["a"], outputs["b"])
            out.append({"pair_id": pair.pair_id, "chosen_position": pos, "margin_a": margin})
    return out


@dataclass(frozen=True)
class LeanSummary:
    """Per set: the likelihood verdicts' harness metrics, the lean, the calibrated verdict's accuracy (intervals)."""

    n_pairs: int
    accuracy: dict[str, float]
    acc_at_a: float
    acc_at_b: float
    consistent_accuracy: dict[str, float]
    a_preference: dict[str, float]
    p_a: dict[str, float]
    calibrated_accuracy: dict[str, float]


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def summarize(margins: Sequence[dict[str, Any]], seed: int = 0) -> LeanSummary:
    """The metrics of `item_margins`' rows (both orders of each pair present). A tie (margin 0) is a wrong verdict."""
    by_pair: dict[str, dict[str, float]] = {}
    for r in margins:
        by_pair.setdefault(r["pair_id"], {})[r["chosen_position"]] = r["margin_a"]
    incomplete = [pid for pid, m in by_pair.items() if set(m) != {"a", "b"}]
    if incomplete:
        raise ValueError(f"lean: pair {incomplete[0]} lacks an order (both orders of every pair are needed)")
    right_a = [float(m["a"] > 0) for m in by_pair.values()]  # chosen at (a): right when (a) is likelier
    right_b = [float(m["b"] < 0) for m in by_pair.values()]
    per_pair = [(x + y) / 2 for x, y in zip(right_a, right_b)]
    # the chosen response's margin in each order, added: > 0 names it whichever position it is shown at
    calibrated = [float(m["a"] - m["b"] > 0) for m in by_pair.values()]
    # per pair (the bootstrap's unit): the share of its two orders where (a) is likelier, its mean probability of (a)
    names_a = [(float(m["a"] > 0) + float(m["b"] > 0)) / 2 for m in by_pair.values()]
    p_a = [(_sigmoid(m["a"]) + _sigmoid(m["b"])) / 2 for m in by_pair.values()]
    return LeanSummary(
        n_pairs=len(by_pair),
        accuracy=bootstrap_ci(per_pair, seed=seed),
        acc_at_a=sum(right_a) / len(right_a),
        acc_at_b=sum(right_b) / len(right_b),
        consistent_accuracy=bootstrap_ci([x * y for x, y in zip(right_a, right_b)], seed=seed),
        a_preference=bootstrap_ci(names_a, seed=seed),
        p_a=bootstrap_ci(p_a, seed=seed),
        calibrated_accuracy=bootstrap_ci(calibrated, seed=seed),
    )
