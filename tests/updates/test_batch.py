"""The update's two log-prob passes (judge_rl/updates/batch.py) compute the same log-probs, entropies and gradients,
from the batch's host copies as from its tensors; and the local backend's update is the same step with either."""

from __future__ import annotations

import pytest
import torch

from judge_rl.backends.algorithm import AlgorithmConfig
from judge_rl.backends.local.backend import LocalBackend
from judge_rl.config import ModelConfig, TrainerConfig
from judge_rl.data.pairs import JudgeItem, PreferencePair
from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.prompts import get_prompt
from judge_rl.rollouts import Generation
from judge_rl.updates.batch import (LOGPROB_PASSES, RolloutBatch, build_batch, resolve_logprob_pass, response_log_probs,
                                    shared_prefix_log_probs)

from conftest import CACHE_DIR

TINY = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
CPU = torch.device("cpu")

# two prompts whose samples interleave (rows 0, 2, 4 share one prompt; 1, 3 the other), responses of mixed lengths
GENERATIONS = [
    Generation([5, 6, 7, 11], [8, 9, 2], "a", True),
    Generation([4, 6], [10, 14, 15, 2], "d", True),
    Generation([5, 6, 7, 11], [12, 2], "b", True),
    Generation([4, 6], [2], "e", True),
    Generation([5, 6, 7, 11], [13], "c", False),
]


def _without_host_copies(batch: RolloutBatch) -> RolloutBatch:
    return RolloutBatch(batch.input_ids, batch.attention_mask, batch.position_ids, batch.responses, batch.response_mask,
                        batch.prompt_width, batch.uids, batch.rollout_log_probs)  # fmt: skip


def _pass(fn, model, batch, entropy_grad=True):
    lp, ent = fn(model, batch, temperature=0.7, with_entropy=True, entropy_grad=entropy_grad)
    mask = batch.response_mask.bool()
    grads = torch.autograd.grad(lp[mask].sum(), list(model.parameters()))
    return lp, ent, grads


def test_both_passes_give_the_same_log_probs_entropies_and_gradients_on_interleaved_groups():
    tok = load_tokenizer(TINY, CACHE_DIR)
    model = load_model(TINY, CACHE_DIR, CPU, seed=0)
    batch = build_batch(GENERATIONS, ["u", "v", "u", "v", "u"], tok.pad_token_id)
    assert batch.prompts[1] == (4, 6) and batch.response_lens == (3, 4, 2, 1, 1)
    assert batch.host_layout() == _without_host_copies(batch).host_layout()
    mask = batch.response_mask.bool()
    padded = _pass(response_log_probs, model, batch)
    shared = _pass(shared_prefix_log_probs, model, batch)
    from_tensors = _pass(shared_prefix_log_probs, model, _without_host_copies(batch))
    for other in (shared, from_tensors):
        torch.testing.assert_close(other[0], padded[0], atol=1e-5, rtol=1e-4)  # padding positions are 0 in both
        torch.testing.assert_close(other[1][mask], padded[1][mask], atol=1e-5, rtol=1e-4)
        for a, b in zip(other[2], padded[2]):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-3)
    assert torch.all(padded[0][~mask] == 0) and torch.all(padded[1][~mask] == 0)
    # a selection keeps each row's host copies: the interleaved rows 1 and 3 alone give rows 1 and 3's values
    part = batch.select([1, 3])
    assert part.prompts == ((4, 6), (4, 6)) and part.response_lens == (4, 1)
    lp, _ = shared_prefix_log_probs(model, part, temperature=0.7, with_entropy=False)
    torch.testing.assert_close(lp, padded[0][[1, 3]].detach(), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(LOGPROB_PASSES))
def test_entropy_without_a_graph_has_the_same_values_and_leaves_the_log_prob_gradients_alone(name):
    tok = load_tokenizer(TINY, CACHE_DIR)
    model = load_model(TINY, CACHE_DIR, CPU, seed=0)
    batch = build_batch(GENERATIONS, ["u", "v", "u", "v", "u"], tok.pad_token_id)
    with_graph = _pass(LOGPROB_PASSES[name], model, batch, entropy_grad=True)
    without = _pass(LOGPROB_PASSES[name], model, batch, entropy_grad=False)
    assert with_graph[1].requires_grad and not without[1].requires_grad
    torch.testing.assert_close(without[1], with_graph[1].detach())
    for a, b in zip(without[2], with_graph[2]):
        torch.testing.assert_close(a, b)


def test_select_of_consecutive_rows_is_a_view_and_of_scattered_rows_a_copy():
    tok = load_tokenizer(TINY, CACHE_DIR)
    batch = build_batch(GENERATIONS, ["u", "v", "u", "v", "u"], tok.pad_token_id)
    run = batch.select(range(1, 4))
    assert run.input_ids.data_ptr() == batch.input_ids[1].data_ptr()  # a slice: nothing copied
    scattered = batch.select([4, 0])
    assert scattered.input_ids.tolist() == [batch.input_ids[4].tolist(), batch.input_ids[0].tolist()]
    assert list(scattered.uids) == ["u", "u"] and scattered.response_lens == (1, 3)


def test_auto_picks_the_pass_per_device_and_an_unknown_pass_is_one_line():
    assert resolve_logprob_pass("auto", "cpu") == "shared_prefix"
    assert resolve_logprob_pass("auto", "cuda") == "padded"
    assert resolve_logprob_pass("shared_prefix", "cuda") == "shared_prefix"  # an explicit choice wins
    with pytest.raises(ValueError, match=r"^trainer.logprob_pass='flash': expected auto or one of padded, shared_prefix$"):
        resolve_logprob_pass("flash", "cpu")
    # gradient checkpointing keeps no KV cache in training: auto is padded, shared_prefix refused in one line
    assert resolve_logprob_pass("auto", "cpu", gradient_checkpointing=True) == "padded"
    with pytest.raises(ValueError, match=r"^trainer.logprob_pass=shared_prefix shares a KV cache, .*padded"):
        resolve_logprob_pass("shared_prefix", "cpu", gradient_checkpointing=True)


def _pair(i: int) -> PreferencePair:
    return PreferencePair(f"p{i}", "test", f"What is {i} + {i}?", f"It is {2 * i}.", f"It is {2 * i + 1}.", 1)


def _score(data_source, solution_str, ground_truth, extra_info=None):
    return {"score": len(solution_str) / 100.0, "correct": 0.0, "parse_error": "x"}


@pytest.mark.parametrize("algo_kwargs", [
    {},  # one epoch over one mini-batch: old log-probs are the current ones, detached
    {"ppo_epochs": 2, "ppo_mini_batch_size": 1, "entropy_coeff": 0.01},  # old log-probs recomputed; entropy in the loss
])
def test_the_update_is_the_same_step_with_either_pass(algo_kwargs):
    """One GRPO update from the same rollouts with the padded pass and with the shared-prefix pass: the same weights
    after it and the same metrics, to float tolerance (micro-batches of 2 split a group of 4 across them)."""
    tok = load_tokenizer(TINY, CACHE_DIR)
    algo = AlgorithmConfig(lr=1e-3, rollout_n=4, ppo_micro_batch_size=2, **algo_kwargs)
    items = [JudgeItem(_pair(1), "a"), JudgeItem(_pair(2), "b")]
    weights, metrics, rollouts = [], [], None
    for name in ("padded", "shared_prefix"):
        policy = load_model(TINY, CACHE_DIR, CPU, seed=0)
        reference = load_model(TINY, CACHE_DIR, CPU, seed=0)
        backend = LocalBackend(policy, reference, tok, algo, TrainerConfig(max_new_tokens=12, logprob_pass=name),
                               get_prompt("strength").messages, _score)  # fmt: skip
        assert backend.logprob_pass is LOGPROB_PASSES[name]
        if rollouts is None:
            torch.manual_seed(0)
            rollouts = backend.rollout(items)
            assert rollouts.scores.std() > 0
        metrics.append(backend.update(rollouts, {}))
        weights.append(torch.cat([p.detach().flatten() for p in policy.parameters()]))
    before = torch.cat([p.detach().flatten() for p in load_model(TINY, CACHE_DIR, CPU, seed=0).parameters()])
    moved = [w - before for w in weights]
    assert moved[0].abs().max() > 1e-4  # the update moved the weights
    # Adam divides by each gradient's own scale, so float rounding in a near-zero gradient moves its weight visibly:
    # the two steps agree to 0.1% of the step's size (a wrong pass, e.g. one shifted token, is off by ~100%)
    assert (moved[1] - moved[0]).norm() < 1e-3 * moved[0].norm()
    for key in ("actor/pg_loss", "actor/kl_loss", "actor/entropy", "actor/grad_norm", "actor/pg_clipfrac"):
        assert metrics[1][key] == pytest.approx(metrics[0][key], rel=1e-3, abs=1e-6), key
