"""The local backend's math is verl's: advantages, policy loss and KL come from core_algos."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from verl.trainer.ppo import core_algos

from judge_rl.backends.algorithm import AlgorithmConfig
from judge_rl.config import ModelConfig, TrainerConfig
from judge_rl.data.pairs import JudgeItem, PreferencePair
from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.prompts import get_prompt
from judge_rl.rollouts import Generation
from judge_rl.updates.batch import build_batch, response_log_probs, token_level_scores, shared_prefix_log_probs
from judge_rl.backends.local.backend import LocalBackend, compute_advantages

from conftest import CACHE_DIR

TINY = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")


def test_grpo_advantages_match_verl():
    scores = torch.tensor([1.0, 0.0, 0.75, 0.0, 1.0, 1.0])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]]).float()
    uids = np.array(["p1", "p1", "p1", "p2", "p2", "p2"])
    rewards = token_level_scores(scores, mask)
    assert rewards.sum(-1).tolist() == scores.tolist()
    assert rewards[0, 2] == 1.0 and rewards[2, 3] == 0.75  # on the last valid token
    ours, _ = compute_advantages(AlgorithmConfig(adv_estimator="grpo"), rewards, mask, uids)
    theirs, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, uids, norm_adv_by_std_in_grpo=True)
    torch.testing.assert_close(ours, theirs)
    g1 = torch.tensor([1.0, 0.0, 0.75])
    expected = (g1 - g1.mean()) / (g1.std() + 1e-6)
    torch.testing.assert_close(ours[:3, 0], expected)
    dr, _ = compute_advantages(AlgorithmConfig(adv_estimator="grpo", norm_adv_by_std_in_grpo=False), rewards, mask, uids)
    torch.testing.assert_close(dr[:3, 0], g1 - g1.mean())


def test_batch_layout_and_log_probs_match_a_plain_forward():
    tok = load_tokenizer(TINY, CACHE_DIR)
    model = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
    gens = [Generation([5, 6, 7], [8, 9, 2], "x", True), Generation([5, 6], [10], "y", False)]
    batch = build_batch(gens, ["u", "u"], tok.pad_token_id)
    assert batch.prompt_width == 3 and batch.responses.shape == (2, 3)
    assert batch.response_mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch.input_ids[1].tolist()[:1] == [tok.pad_token_id]  # left-padded prompt
    with torch.no_grad():
        lp, ent = response_log_probs(model, batch, temperature=1.0, with_entropy=True)
        # the unpadded second row, by hand
        logits = model(torch.tensor([[5, 6, 10]])).logits[0]
        expected = torch.log_softmax(logits[1], -1)[10]
    torch.testing.assert_close(lp[1, 0], expected, atol=1e-4, rtol=1e-4)
    assert ent.shape == (2, 3) and torch.all(ent[batch.response_mask.bool()] > 0)


def _pair(i: int) -> PreferencePair:
    return PreferencePair(f"p{i}", "test", f"What is {i} + {i}?", f"It is {2 * i}.", f"It is {2 * i + 1}.", 1)


def test_grpo_step_moves_weights_towards_high_reward_samples():
    torch.manual_seed(0)
    tok = load_tokenizer(TINY, CACHE_DIR)
    policy = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
    reference = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
    prompt = get_prompt("strength")

    # A reward that varies within each group, so advantages are not all zero: longer is better.
    def score_fn(data_source, solution_str, ground_truth, extra_info=None):
        return {"score": len(solution_str) / 100.0, "correct": 0.0, "parse_error": "x"}

    algo = AlgorithmConfig(lr=1e-3, rollout_n=4, ppo_micro_batch_size=2)
    trainer = TrainerConfig(max_new_tokens=16)
    backend = LocalBackend(policy, reference, tok, algo, trainer, prompt.messages, score_fn)
    items = [JudgeItem(_pair(1), "a"), JudgeItem(_pair(2), "b")]
    rollouts = backend.rollout(items)
    assert len(rollouts.batch) == 8 and rollouts.scores.std() > 0
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    with torch.no_grad():
        lp_before = response_log_probs(policy, rollouts.batch, 1.0, False)[0]
    metrics = backend.update(rollouts, {})
    changed = [k for k, v in policy.state_dict().items() if not torch.equal(v, before[k])]
    assert len(changed) > 0.9 * len(before)
    for key in ("actor/pg_loss", "actor/kl_loss", "actor/entropy", "actor/grad_norm"):
        assert np.isfinite(metrics[key]), key
    assert metrics["actor/grad_norm"] > 0
    # first-order improvement: log-probs of positive-advantage samples went up relative to negative ones
    with torch.no_grad():
        lp_after = response_log_probs(policy, rollouts.batch, 1.0, False)[0]
    adv, _ = compute_advantages(algo, token_level_scores(rollouts.scores, rollouts.batch.response_mask),
                             rollouts.batch.response_mask, rollouts.batch.uids)
    mask = rollouts.batch.response_mask
    gain = ((lp_after - lp_before) * adv * mask).sum()
    assert gain > 0


def test_a_bfloat16_policy_update_lands_even_below_bfloat16_resolution():
    """model.dtype=bfloat16 trains in mixed precision: a step at lr 1e-6 moves nearly every float32 master weight;
    with the weights themselves in bf16 (what the H200's first run did) the same step changes almost none."""
    from dataclasses import replace

    from judge_rl.models.loading import mixed_precision

    cpu, cfg = torch.device("cpu"), replace(TINY, dtype="bfloat16")
    tok = load_tokenizer(cfg, CACHE_DIR)

    def score_fn(data_source, solution_str, ground_truth, extra_info=None):
        return {"score": len(solution_str) / 100.0, "correct": 0.0, "parse_error": "x"}

    def changed_share(policy) -> float:
        torch.manual_seed(0)
        algo = AlgorithmConfig(lr=1e-6, rollout_n=4, ppo_micro_batch_size=4, use_kl_loss=False)
        backend = LocalBackend(policy, None, tok, algo, TrainerConfig(max_new_tokens=8), get_prompt("strength").messages,
                               score_fn)  # fmt: skip
        rollouts = backend.rollout([JudgeItem(_pair(1), "a"), JudgeItem(_pair(2), "b")])
        assert rollouts.scores.std() > 0
        before = [p.detach().clone() for p in policy.parameters()]
        backend.update(rollouts, {})
        moved = sum(int((p.detach() != b).sum()) for p, b in zip(policy.parameters(), before))
        return moved / sum(b.numel() for b in before)

    mixed = mixed_precision(load_model(cfg, CACHE_DIR, cpu, seed=0, train=True), "bfloat16", cpu)
    assert changed_share(mixed) > 0.9
    assert changed_share(load_model(cfg, CACHE_DIR, cpu, seed=0)) < 0.2  # pure bf16: the update is lost


def _length_score(data_source, solution_str, ground_truth, extra_info=None):
    return {"score": float(len(solution_str) % 7), "parse_error": ""}


def _update_delta(backend: LocalBackend, policy) -> torch.Tensor:
    """How far one update on two pairs' rollouts moves the policy's parameters, with plain SGD at lr 1: the parameters
    move by exactly the accumulated gradient (Adam would divide a ~0 gradient by its own magnitude and turn float
    summation order into visible differences)."""
    backend.optimizer = torch.optim.SGD(policy.parameters(), lr=1.0)
    before = torch.cat([p.detach().flatten() for p in policy.parameters()])
    torch.manual_seed(1)
    rollouts = backend.rollout([JudgeItem(_pair(1), "a"), JudgeItem(_pair(2), "b")])
    backend.update(rollouts, {})
    return torch.cat([p.detach().flatten() for p in policy.parameters()]) - before


def test_micro_batching_gives_the_same_update_as_one_batch():
    """verl's global_batch_info aggregation: 4 micro-batches of 2 == 1 micro-batch of 8."""
    tok = load_tokenizer(TINY, CACHE_DIR)
    prompt = get_prompt("strength")
    results = []
    for micro in (2, 8):
        torch.manual_seed(0)
        policy = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
        reference = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
        backend = LocalBackend(policy, reference, tok, AlgorithmConfig(lr=1e-3, rollout_n=4, ppo_micro_batch_size=micro),
                             TrainerConfig(max_new_tokens=8), prompt.messages, _length_score)
        results.append(_update_delta(backend, policy))
    assert results[0].abs().max() > 1e-4  # the update did something
    torch.testing.assert_close(results[0], results[1], atol=1e-6, rtol=1e-4)


def test_gradient_checkpointing_gives_the_same_update():
    """trainer.gradient_checkpointing recomputes each layer in the backward (the memory plan's checkpointed
    activations): the same update as keeping them, with the padded pass that auto picks for it (the shared-prefix
    pass needs a KV cache, which checkpointing turns off in training)."""
    from judge_rl.backends.local.loop import checkpointed

    tok = load_tokenizer(TINY, CACHE_DIR)
    prompt = get_prompt("strength")
    results = []
    for gc in (False, True):
        torch.manual_seed(0)
        trainer = TrainerConfig(max_new_tokens=8, gradient_checkpointing=gc)
        policy = checkpointed(load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0, train=True), trainer)
        reference = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
        backend = LocalBackend(policy, reference, tok, AlgorithmConfig(lr=1e-3, rollout_n=4, ppo_micro_batch_size=4),
                               trainer, prompt.messages, _length_score)
        assert backend.logprob_pass.__name__ == ("response_log_probs" if gc else "shared_prefix_log_probs")
        assert policy.model.gradient_checkpointing is gc
        results.append(_update_delta(backend, policy))
    assert results[0].abs().max() > 1e-4
    torch.testing.assert_close(results[0], results[1], atol=1e-6, rtol=1e-4)


def test_shared_prefix_log_probs_match_the_padded_batch_and_its_gradients():
    """One prompt forward per group (KV cache repeated for its rows) gives the padded computation's
    log-probs, entropies and gradients to float tolerance."""
    tok = load_tokenizer(TINY, CACHE_DIR)
    model = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
    gens = [
        Generation([5, 6, 7, 11], [8, 9, 2], "a", True),
        Generation([5, 6, 7, 11], [12, 2], "b", True),
        Generation([5, 6, 7, 11], [13], "c", False),
        Generation([4, 6], [10, 14, 15, 2], "d", True),
        Generation([4, 6], [2], "e", True),
    ]
    batch = build_batch(gens, ["u", "u", "u", "v", "v"], tok.pad_token_id)
    padded, padded_ent = response_log_probs(model, batch, temperature=0.7, with_entropy=True)
    grads_padded = torch.autograd.grad(padded[batch.response_mask.bool()].sum(), list(model.parameters()))
    shared, shared_ent = shared_prefix_log_probs(model, batch, temperature=0.7, with_entropy=True)
    grads_shared = torch.autograd.grad(shared[batch.response_mask.bool()].sum(), list(model.parameters()))
    mask = batch.response_mask.bool()
    torch.testing.assert_close(shared[mask], padded[mask], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(shared_ent[mask], padded_ent[mask], atol=1e-5, rtol=1e-4)
    assert torch.all(shared[~mask] == 0)
    for a, b in zip(grads_shared, grads_padded):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-3)


def test_both_order_groups_put_a_pairs_two_orders_in_one_group():
    """algorithm.group_both_orders: n/2 samples of each order share one uid, so a position-biased judge
    meets its own mistake inside its group (per-order groups would be all right or all wrong)."""
    tok = load_tokenizer(TINY, CACHE_DIR)
    policy = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
    prompt = get_prompt("strength")
    shown_first: list[str] = []

    def score_fn(data_source, solution_str, ground_truth, extra_info=None):
        shown_first.append(ground_truth)
        return {"score": 1.0 if ground_truth["winner"] == "b" else 0.0, "parse_error": ""}

    algo = AlgorithmConfig(rollout_n=4, group_both_orders=True)
    backend = LocalBackend(policy, None, tok, algo, TrainerConfig(max_new_tokens=4), prompt.messages, score_fn)
    torch.manual_seed(0)
    rollouts = backend.rollout([JudgeItem(_pair(1), "a"), JudgeItem(_pair(2), "b")])
    assert list(rollouts.batch.uids) == ["p1"] * 4 + ["p2"] * 4
    assert [g["winner"] for g in shown_first] == ["a", "a", "b", "b", "b", "b", "a", "a"]
    adv, _ = compute_advantages(algo, token_level_scores(rollouts.scores, rollouts.batch.response_mask),
                                rollouts.batch.response_mask, rollouts.batch.uids)
    assert torch.all(adv.abs().sum(-1) > 0)  # every sample has a non-zero advantage: the group is mixed


def test_both_order_groups_are_refused_where_they_cannot_work():
    from conftest import compose_config
    from judge_rl.jobs.train import to_job_config

    with pytest.raises(ValueError, match="algorithm.group_both_orders=true rolls out both orders"):
        to_job_config(compose_config(["run_dir=/tmp/x", "algorithm.group_both_orders=true", "algorithm.rollout_n=3"]))
    with pytest.raises(ValueError, match="needs a pairwise judge"):
        to_job_config(compose_config(["run_dir=/tmp/x", "algorithm.group_both_orders=true", "reward=pointwise"]))
