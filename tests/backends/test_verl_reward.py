"""verl 0.9's reward path scores judge outputs exactly as judge_rl's compute_score does.

For every reward option that verl can run, the translated config is handed to verl's own
`load_reward_manager` (and to `RewardLoopWorker`, the class verl's Ray reward workers run), and a
judge output, tokenized and decoded the way verl decodes a rollout, gets the same score and the same
logged components as `judge_rl.rewards.compute_score`. The DataProto is built field for field as
verl's agent loop builds it (verl.experimental.agent_loop.agent_loop.AgentLoopWorker._compute_score).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from conftest import CONF_DIR
from tensordict import TensorDict

from judge_rl.backends.verl import judge_rows
from judge_rl.backends.verl.export import judge_items
from judge_rl.prompts import get_prompt
from judge_rl.rewards import build_reward, compute_score
from judge_rl.updates.sft import trace_for_prompt

REWARDS = sorted(p.stem for p in (CONF_DIR / "reward").glob("*.yaml") if p.stem != "consistency")
HUB = "model=qwen2.5-7b-instruct"


def _one(value) -> np.ndarray:
    """A length-1 object array holding `value` as one element (lists and dicts included)."""
    arr = np.empty(1, dtype=object)
    arr[0] = value
    return arr


def agent_loop_batch(tokenizer, row: dict, text: str, pad: int = 0):
    """One finished trajectory as verl's agent loop sends it to a reward worker: prompt ids from the
    chat template, the response ids (then `pad` right-padding tokens the attention mask excludes)."""
    from verl import DataProto

    prompt_ids = tokenizer.apply_chat_template(
        row["prompt"], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    response_ids = tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]
    prompts = torch.tensor([list(prompt_ids)], dtype=torch.int64)
    responses = torch.tensor([response_ids + [tokenizer.pad_token_id] * pad], dtype=torch.int64)
    input_ids = torch.cat([prompts, responses], dim=1)
    attention_mask = torch.ones_like(input_ids)
    if pad:
        attention_mask[:, -pad:] = 0
    batch = TensorDict(
        {
            "prompts": prompts,
            "responses": responses,
            "attention_mask": attention_mask,
            "input_ids": input_ids,
            "position_ids": torch.arange(input_ids.shape[1])[None],
        },
        batch_size=1,
    )
    fields = {k: copy.deepcopy(v) for k, v in row.items() if k != "prompt"}
    fields["raw_prompt"] = row["prompt"]
    non_tensor = {k: _one(v) for k, v in fields.items()}
    non_tensor.update(
        {
            "__num_turns__": np.array([2]),
            "tool_extra_fields": np.array([{}], dtype=object),
            "prompt_len": np.array([prompts.shape[1]]),
            "response_len": np.array([len(response_ids)]),
        }
    )
    return DataProto(batch=batch, non_tensor_batch=non_tensor)


def outputs_for(item, prompt) -> dict[str, str]:
    """A gold judgment (judge_rl's SFT trace), a well-formed wrong one and a malformed one."""
    thinking = "I compared the responses with the question."
    if prompt.kind == "pointwise":
        wrong = prompt.output(thinking, 0 if item.which == "chosen" else 4)
    else:
        other = "b" if item.chosen_position == "a" else "a"
        wrong = prompt.output(thinking, other, item.pair.strength)
    return {"gold": trace_for_prompt(item, prompt), "wrong": wrong, "malformed": "I cannot decide which is better."}


@pytest.fixture(scope="module")
def pairs():
    from judge_rl.data import load_dataset_pairs

    return list(load_dataset_pairs("synthetic", n=4, seed=3, split="train"))


@pytest.mark.parametrize("reward", REWARDS)
def test_verl_reward_manager_scores_like_compute_score(reward, translate, smollm2_tokenizer, pairs):
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.trainer.ppo.reward import load_reward_manager

    job, cfg = translate([HUB, f"reward={reward}"])
    weights = dict(job.reward.weights)
    prompt = get_prompt(build_reward(reward, **weights).prompt)
    manager = load_reward_manager(cfg, smollm2_tokenizer)  # as RewardLoopWorker._init_reward_fn calls it
    assert isinstance(manager, NaiveRewardManager)

    items = judge_items(pairs, prompt, seed=job.seed)
    rows = judge_rows(pairs, prompt, seed=job.seed, reward_name=reward)
    scores = set()
    for item, row in list(zip(items, rows))[:2]:
        for kind, text in outputs_for(item, prompt).items():
            data = agent_loop_batch(smollm2_tokenizer, row, text, pad=3)
            got = manager.loop.run_until_complete(manager.run_single(data))
            expected = compute_score(
                data_source=item.pair.source,
                solution_str=text,
                ground_truth=item.ground_truth,
                extra_info={"pair_id": item.pair.pair_id},
                reward_name=reward,
                **weights,
            )
            assert got["reward_score"] == pytest.approx(expected["score"]), (reward, kind)
            assert got["reward_extra_info"] == expected, (reward, kind)
            scores.add((kind, expected["score"]))
    gold = {s for k, s in scores if k == "gold"}
    bad = {s for k, s in scores if k != "gold"}
    assert min(gold) > max(bad)  # the outputs do exercise different branches of the reward


def test_verl_reward_loop_worker_scores_like_compute_score(translate, smollm2_tokenizer, smollm2_tokenizer_dir, pairs):
    """The class verl runs as its Ray reward workers, built from the translated config (its tokenizer
    path pointed at SmolLM2's, since the config's model is a hub name this machine cannot fetch)."""
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    job, cfg = translate([HUB, "reward=judgelrm"])
    cfg = copy.deepcopy(cfg)
    cfg.actor_rollout_ref.model.path = smollm2_tokenizer_dir
    worker = RewardLoopWorker(cfg)
    prompt = get_prompt("judgelrm")
    item = judge_items(pairs, prompt, seed=job.seed)[0]
    row = judge_rows(pairs, prompt, seed=job.seed, reward_name="judgelrm")[0]
    for text in outputs_for(item, prompt).values():
        got = worker.loop.run_until_complete(worker.compute_score(agent_loop_batch(smollm2_tokenizer, row, text)))
        expected = compute_score(
            item.pair.source, text, item.ground_truth, reward_name="judgelrm", **job.reward.weights
        )
        assert got["reward_score"] == pytest.approx(expected["score"])
        assert got["reward_extra_info"] == expected


def test_decoded_response_is_the_judge_output(smollm2_tokenizer, pairs):
    """What verl's naive manager decodes (valid response ids, special tokens skipped) is the text."""
    prompt = get_prompt("strength")
    item = judge_items(pairs, prompt, seed=0)[0]
    row = judge_rows(pairs, prompt, seed=0, reward_name="strength")[0]
    text = trace_for_prompt(item, prompt)
    data = agent_loop_batch(smollm2_tokenizer, row, text, pad=2)
    responses, mask = data.batch["responses"][0], data.batch["attention_mask"][0]
    valid = responses[: mask[-responses.shape[-1] :].sum()]
    assert smollm2_tokenizer.decode(valid, skip_special_tokens=True) == text
