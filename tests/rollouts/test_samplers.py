"""Who samples the local backend's rollouts: the choice (trainer.rollout_engine), and a real colocated vLLM engine on
the embedded model: reproducible draws, the trainer's log-probs, weights that follow the policy, groups streamed."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest
import torch

from judge_rl.backends.algorithm import AlgorithmConfig
from judge_rl.backends.local.backend import LocalBackend
from judge_rl.config import TrainerConfig
from judge_rl.data import load_dataset_pairs
from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.prompts import get_prompt
from judge_rl.recipes.stages import training_items
from judge_rl.rewards import build_reward, compute_score
from judge_rl.rollouts import build_sampler, encode_chat, resolve_rollout_engine, sample_generate
from judge_rl.rollouts import vllm_engine
from judge_rl.config.paths import load_model_config
from judge_rl.updates.batch import build_batch, shared_prefix_log_probs
from conftest import CACHE_DIR
from vllm_support import require_vllm

QUESTIONS = ("Write a haiku about rain.", "What is 2+2? Answer in one word.")


# peak memory: 3.1 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_the_rollout_engine_choice(monkeypatch):
    with pytest.raises(ValueError, match=r"trainer.rollout_engine='sglang': expected one of auto, hf, vllm"):
        resolve_rollout_engine("sglang", "cpu", "gguf_package")
    assert resolve_rollout_engine("hf", "cpu", "gguf_package") == "hf"
    # auto: hf for the tiny random test model and on a GPU (not measured there), whatever is installed
    assert resolve_rollout_engine("auto", "cpu", "tiny_random") == "hf"
    assert resolve_rollout_engine("auto", "cuda", "gguf_package") == "hf"
    monkeypatch.setattr(vllm_engine, "vllm_installed", lambda: True)
    assert resolve_rollout_engine("auto", "cpu", "gguf_package") == "vllm"
    monkeypatch.setattr(vllm_engine, "vllm_installed", lambda: False)
    assert resolve_rollout_engine("auto", "cpu", "gguf_package") == "hf"
    with pytest.raises(ValueError, match=r"trainer.rollout_engine=vllm: vllm is not installed"):
        resolve_rollout_engine("vllm", "cpu", "gguf_package")


CHILD_START = """
import sys, tempfile, torch
from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.rollouts import build_sampler
from judge_rl.config.paths import load_model_config
cfg = load_model_config("tiny-random")
tokenizer = load_tokenizer(cfg, sys.argv[1])
build_sampler("vllm", load_model(cfg, sys.argv[1], torch.device("cpu"), seed=0), tokenizer)
"""


# peak memory: 3.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.usefixtures("cleans_up_after_kills")
def test_a_start_killed_mid_way_leaves_a_folder_the_next_start_removes(tmp_path):
    """On the main before this, kill -9 while the engine started left judge_rl_rollout_vllm_* (the policy's weights,
    517 MB for a 135M model) in the temp directory for good. Real: a child starts the colocated engine and is killed
    once the weights are on disk."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from judge_rl.rollouts.vllm_sampler import remove_orphan_workdirs, rollout_workdir

    require_vllm()
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    child = subprocess.Popen([sys.executable, "-c", CHILD_START, str(CACHE_DIR)], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("judge_rl_rollout_vllm_*/model/config.json")):
        if child.poll() is not None:
            pytest.fail(f"the child ended before its weights were saved: {child.stderr.read().decode()[-2000:]}")
        assert time.monotonic() < deadline, "the child saved no weights in 120 s"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stderr.close()
    [orphan] = list(tmp_path.glob("judge_rl_rollout_vllm_*"))
    assert orphan.name.startswith(f"judge_rl_rollout_vllm_{child.pid}@")
    live = rollout_workdir(tmp_path)  # the next start (what VLLMSampler.from_policy makes first): the orphan is gone
    assert not orphan.exists() and live.name.startswith(f"judge_rl_rollout_vllm_{os.getpid()}@")
    assert remove_orphan_workdirs(tmp_path) == [] and live.is_dir()  # a live owner's folder stays
    # not ours to judge: a name without a pid, and another host's (whose pids this one cannot see)
    strangers = [tmp_path / "judge_rl_rollout_vllm_abc", tmp_path / f"judge_rl_rollout_vllm_{child.pid}@elsewhere@x1"]
    for path in strangers:
        path.mkdir()
    assert remove_orphan_workdirs(tmp_path) == [] and all(p.is_dir() for p in strangers)


@pytest.fixture(scope="module")
def embedded():
    require_vllm()
    cfg = load_model_config("smollm2-135m")
    tokenizer = load_tokenizer(cfg, CACHE_DIR)
    policy = load_model(cfg, CACHE_DIR, torch.device("cpu"), seed=0)
    saved = lambda: set(Path(tempfile.gettempdir()).glob("judge_rl_rollout_vllm_*"))  # noqa: E731
    before = saved()
    sampler = build_sampler("vllm", policy, tokenizer)
    # the weights the engine was built from are gone as soon as it holds them (a killed run leaks no copy);
    # refreshes go through memory (test_vllm_weights_follow_the_policy)
    assert saved() == before
    yield policy, tokenizer, sampler
    sampler.close()


def prompts(tokenizer) -> list[list[int]]:
    return [encode_chat(tokenizer, [{"role": "user", "content": q}]) for q in QUESTIONS]


def draw(sampler, tokenizer, seed: int, **kw):
    torch.manual_seed(seed)
    settings = {"num_samples": 3, "max_new_tokens": 24, "temperature": 1.0, "top_p": 1.0, **kw}
    return sampler.sample(prompts(tokenizer), **settings)


# peak memory: 5.9 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_vllm_samples_are_reproducible_and_carry_the_trainers_log_probs(embedded):
    policy, tokenizer, sampler = embedded
    streamed = []
    groups = draw(sampler, tokenizer, 7, on_group=lambda i, group: streamed.append((i, group)))
    assert [len(g) for g in groups] == [3, 3]
    assert sorted(i for i, _ in streamed) == [0, 1] and all(groups[i] == group for i, group in streamed)
    # the same torch seed draws the same samples (a resumed step samples what the first attempt sampled)
    assert draw(sampler, tokenizer, 7) == groups
    assert draw(sampler, tokenizer, 8) != groups
    gens = [g for group in groups for g in group]
    for g in gens:
        assert 0 < len(g.response_ids) <= 24 and len(g.log_probs) == len(g.response_ids)
        assert g.finished == (g.response_ids[-1] == tokenizer.eos_token_id)
        assert g.text == tokenizer.decode(g.response_ids, skip_special_tokens=True)
    batch = build_batch(gens, ["0"] * 3 + ["1"] * 3, tokenizer.pad_token_id)
    with torch.no_grad():
        trainer = shared_prefix_log_probs(policy, batch, 1.0, with_entropy=False)[0]
    mask = batch.response_mask.bool()
    assert (trainer - batch.rollout_log_probs)[mask].abs().max().item() < 1e-3


# peak memory: 7.1 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_vllm_weights_follow_the_policy(embedded):
    policy, tokenizer, sampler = embedded
    sampler.sync(policy)  # the engine is in step with the policy as it was built
    greedy = {"num_samples": 1, "max_new_tokens": 16, "temperature": 0.0}
    before = [g[0].response_ids for g in draw(sampler, tokenizer, 0, **greedy)]
    hf = sample_generate(policy, tokenizer, prompts(tokenizer), num_samples=1, max_new_tokens=16, batch_size=2, temperature=1e-5)
    assert before == [g[0].response_ids for g in hf]
    saved = {k: v.clone() for k, v in policy.state_dict().items()}
    try:
        with torch.no_grad():
            torch.manual_seed(0)
            for p in policy.parameters():
                p.add_(torch.randn_like(p) * 0.02)
        assert [g[0].response_ids for g in draw(sampler, tokenizer, 0, **greedy)] == before  # not synced yet
        sampler.sync(policy)
        after = [g[0].response_ids for g in draw(sampler, tokenizer, 0, **greedy)]
        hf = sample_generate(policy, tokenizer, prompts(tokenizer), num_samples=1, max_new_tokens=16, batch_size=2, temperature=1e-5)
        assert after == [g[0].response_ids for g in hf] and after != before
    finally:
        policy.load_state_dict(saved)
        sampler.sync(policy)


# peak memory: 8.7 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_local_step_with_vllm_rollouts_logs_the_sampler_trainer_mismatch(embedded):
    policy, tokenizer, sampler = embedded
    prompt = get_prompt(build_reward("strength").prompt)
    items = training_items(list(load_dataset_pairs("synthetic", n=4, seed=0, split="train")), prompt, 0)[:2]
    backend = LocalBackend(policy, None, tokenizer, AlgorithmConfig(rollout_n=2, use_kl_loss=False, lr=1e-6),
                           TrainerConfig(max_new_tokens=12), prompt.messages,
                           functools.partial(compute_score, reward_name="strength"))  # fmt: skip
    backend.sampler = sampler  # the module's engine (closed by its fixture)
    saved = {k: v.clone() for k, v in policy.state_dict().items()}
    try:
        torch.manual_seed(0)
        m = backend.step(items)
    finally:
        policy.load_state_dict(saved)
        sampler.sync(policy)
    assert m["training/rollout_probs_diff_valid"] == 1
    assert m["training/rollout_probs_diff_max"] < 1e-3 and abs(m["training/rollout_is_ratio_mean"] - 1) < 1e-3
    assert m["timing_s/gen"] > 0 and "timing_s/update_weights" in m
