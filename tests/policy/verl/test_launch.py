"""The policy job on verl (judge_rl/policy/verl/: launch.py, reward.py, reward_manager.py): its config translated
to verl 0.9's and passed through verl's own checks on CPU with no key verl would ignore, its parquet rows, the async
judge reward against a real local HTTP server with scripted replies, the reward manager on hand-built DataProtos,
the dry run from the command line, no API key in any written file, and scripts/gpu_policy_judge.sh's commands."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from judge_rl.backends.verl.launch import task_env, translated
from judge_rl.backends.verl.translate import VerlTranslationError, ignored_keys, validate
from judge_rl.policy.config import to_policy_config
from judge_rl.policy.tasks.prompts import Criterion, PolicyPrompt
from judge_rl.policy.rewards import JUDGE_SERVER_ERROR, NO_VERDICT, unparseable
from judge_rl.policy.verl.launch import (
    export_policy_data,
    policy_dry_run,
    policy_reward_kwargs,
    policy_rl_task,
    policy_verl_task,
    read_policy_prompts,
)

from servers.test_client import Answer, ScriptedServer  # tests/ is on the path (pyproject)

REPO_ROOT = Path(__file__).resolve().parents[3]
CONF_DIR = REPO_ROOT / "conf"
SCRIPT = REPO_ROOT / "scripts" / "gpu_policy_judge.sh"
SECRET = "sk-policy-verl-test-7c1e2d3f4a5b6c7d8e9f"
TINY = ["policy_debug=tiny", "model=smollm2-135m"]  # verl loads the policy from a checkpoint: not tiny-random
NODE = ["cluster=node_8gpu", "policy_reward=verif", "judge=vllm", "judge.base_url=http://x/v1", "logger=none"]


def compose_policy(overrides: list[str], run_dir: Path):
    os.environ["JUDGE_RL_ROOT"] = str(REPO_ROOT)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="policy", overrides=[f"run_dir={run_dir}", *overrides])
    return to_policy_config(cfg)


def translate(job, tmp_path: Path, base_url: str | None = "http://127.0.0.1:8011/v1"):
    cfg, verl = translated(job, tmp_path, policy_rl_task(job, base_url))  # as the verl backend's launch does
    assert ignored_keys(cfg) == []
    validate(cfg)  # verl's own checks (validate_config, AlgoConfig, estimator, loss, reward manager and function)
    return cfg, verl.data_files


# --------------------------------------------------------------------------------------------------
# translation, validated by verl
# --------------------------------------------------------------------------------------------------


def test_the_default_policy_config_passes_verls_checks_with_the_judge_reward_manager(tmp_path):
    job = compose_policy(TINY, tmp_path)
    cfg, _ = translate(job, tmp_path)
    reward = cfg.reward
    assert reward.custom_reward_function.path == str(REPO_ROOT / "judge_rl" / "policy" / "verl" / "reward.py")
    assert reward.custom_reward_function.name == "compute_score"
    assert (reward.reward_manager.source, reward.reward_manager.name) == ("importlib", "JudgeRewardManager")
    assert reward.reward_manager.module.path == "pkg://judge_rl.policy.verl.reward_manager"
    # judge.concurrency 32 (conf/judge/embedded.yaml): 8 reward workers x 4 samples and calls in flight
    assert (reward.num_workers, reward.max_concurrent) == (8, 4)
    kwargs = reward.custom_reward_function.reward_kwargs
    assert kwargs.reward_name == "rubric" and kwargs.reward_criterion_format == "yesno"
    assert kwargs.judge_concurrency == 4 and kwargs.judge_api_key_env == "OPENAI_API_KEY"
    assert kwargs.judge_base_url == "http://127.0.0.1:8011/v1" and kwargs.judge_model == "tiny-random"
    assert reward.timeout >= 300
    assert cfg.trainer.use_v1 is True and cfg.trainer.val_before_train is False and cfg.trainer.test_freq == -1
    assert cfg.algorithm.adv_estimator == "grpo" and cfg.actor_rollout_ref.rollout.n == job.algorithm.rollout_n
    assert cfg.data.train_batch_size == job.trainer.prompts_per_step == 2
    assert cfg.data.max_response_length == job.trainer.max_new_tokens == 12
    sampler = cfg.trainer.v1.sampler
    assert (sampler.custom_sampler.path, sampler.custom_sampler.name) == ("pkg://judge_rl.backends.verl.sampler",
                                                                          "RefillingReplayBuffer")
    assert sampler.sampler_kwargs.max_failed_group_refills == 4 * 2 and sampler.sync_refill_failed_groups is True


def test_on_a_cpu_cluster_one_reward_worker_keeps_every_judge_call_in_flight(tmp_path):
    # 8 reward workers of ~0.7 GB each took the tiny policy job to 21 of 23 GB, near Ray's memory monitor's 95%
    job = compose_policy([*TINY, "cluster=cpu_verl"], tmp_path)
    cfg, _ = translate(job, tmp_path)
    assert (cfg.reward.num_workers, cfg.reward.max_concurrent) == (1, job.judge.concurrency) == (1, 32)
    assert cfg.reward.custom_reward_function.reward_kwargs.judge_concurrency == 32


# peak memory: 6.1 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_node_8gpu_verif_with_a_vllm_judge_dry_run_validates_and_writes_no_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    job = compose_policy(NODE, tmp_path)
    assert job.judge.api_key_env == "OPENAI_API_KEY"
    out = policy_dry_run(job, tmp_path)  # export, translate, verl's validate, preflight (reward loads in a fresh process)
    cfg = OmegaConf.load(out["verl_config"])
    assert out["command"][1:3] == ["-m", "judge_rl.backends.verl.entry"]
    assert cfg.trainer.n_gpus_per_node == 8 and cfg.data.train_batch_size == 64
    assert cfg.actor_rollout_ref.actor.ppo_mini_batch_size == 16
    kwargs = cfg.reward.custom_reward_function.reward_kwargs
    assert kwargs.reward_name == "verif" and kwargs.judge_base_url == "http://x/v1"
    assert kwargs.judge_model == "Qwen/Qwen3-8B" and kwargs.judge_enable_thinking is False
    assert (cfg.reward.num_workers, cfg.reward.max_concurrent, kwargs.judge_concurrency) == (8, 8, 8)
    assert ignored_keys(cfg) == []
    validate(cfg)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in written) and any(p.suffix == ".yaml" for p in written)
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    # the key's variable NAME goes to the entry process, which never puts its value in Ray's runtime env (verl and Ray
    # log it): the workers of the Ray it starts inherit it, an existing cluster's nodes must have it
    env = task_env(job, tmp_path, policy_verl_task(job, tmp_path, "http://x/v1"))
    assert env["JUDGE_RL_FORWARD_ENV"] == "OPENAI_API_KEY,JUDGE_RL_REWARD_OUTCOMES"
    from judge_rl.backends.verl.entry import with_forwarded_env

    forwarded = with_forwarded_env(OmegaConf.create(OmegaConf.to_container(cfg)), env)
    assert "OPENAI_API_KEY" not in forwarded.ray_kwargs.ray_init.runtime_env.env_vars
    # the reward workers write each sample's outcome where the job reads it back (reward_outcomes.py)
    outcomes = forwarded.ray_kwargs.ray_init.runtime_env.env_vars.JUDGE_RL_REWARD_OUTCOMES
    assert outcomes == str((tmp_path / "verl" / "reward_outcomes.jsonl").resolve())
    assert SECRET not in Path(out["verl_config"]).read_text()


# peak memory: 6.0 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_judge_the_job_starts_on_127_0_0_1_is_refused_on_two_nodes(tmp_path, monkeypatch):
    """On today's main this dry run passed: on a GPU cluster the reward workers verl placed on the second node
    reached no judge at 127.0.0.1 and their samples were lost."""
    from judge_rl.backends.verl.preflight import PreflightError

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    job = compose_policy(["cluster=nodes_2x8", "cluster.ray_address=auto", "policy_reward=verif", "judge=vllm",
                          "logger=none"], tmp_path)  # fmt: skip
    with pytest.raises(PreflightError) as err:
        policy_dry_run(job, tmp_path)
    (line,) = [line.strip() for line in str(err.value).splitlines()[1:]]
    assert line.startswith("judge.engine=vllm with judge.base_url null serves the judge on this machine only "
                           "(http://127.0.0.1:8011/v1), but verl's reward workers run on every node of the Ray cluster "
                           "(cluster.nnodes=2 and cluster.ray_address=auto)")
    assert line.endswith("set judge.base_url to it")


def test_rule_reward_uses_the_sync_rule_adapter_and_verls_naive_manager(tmp_path):
    from verl.trainer.ppo.reward import get_custom_reward_fn

    job = compose_policy([*TINY, "policy_reward=rule", "judge=none"], tmp_path)
    cfg, files = translate(job, tmp_path, base_url=None)
    from judge_rl.policy.rewards.rule import rule_compute_score

    assert cfg.reward.custom_reward_function.path == str(REPO_ROOT / "judge_rl" / "policy" / "verl" / "reward.py")
    assert cfg.reward.custom_reward_function.name == "rule_compute_score"
    assert OmegaConf.to_container(cfg.reward.custom_reward_function.reward_kwargs) == {"level": "instruction", "guard": False}
    assert (cfg.reward.reward_manager.source, cfg.reward.reward_manager.name) == ("register", "naive")
    prompt = read_policy_prompts(files["train"])[0]
    fn = get_custom_reward_fn(cfg)  # verl's own loader, with the reward_kwargs
    assert fn.args[0] is rule_compute_score
    out = fn(data_source="policy", solution_str="", ground_truth=json.dumps(prompt.to_dict()), extra_info={})
    assert out["score"] == 0.0 and out["judge_failed"] == 0 and out["n_followed"] == 0.0  # a blank answer follows nothing


def test_what_verl_cannot_express_is_refused(tmp_path):
    with pytest.raises(VerlTranslationError, match="tiny_random"):
        translate(compose_policy(["policy_debug=tiny"], tmp_path), tmp_path)
    job = compose_policy([*TINY, "judge_failure.mode=drop_group"], tmp_path)
    with pytest.raises(VerlTranslationError, match="drop_group"):
        translated(job, tmp_path, policy_rl_task(job, "http://127.0.0.1:1/v1"))
    with pytest.raises(VerlTranslationError, match="base_url"):
        policy_reward_kwargs(compose_policy(TINY, tmp_path), None)


# --------------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------------


def test_exported_rows_round_trip_to_the_policy_prompts(tmp_path):
    import pyarrow.parquet as pq

    from judge_rl.policy.tasks.prompts import generate_policy_prompts
    from judge_rl.policy.tasks.sources import load_policy_prompts

    job = compose_policy(TINY, tmp_path)
    files = export_policy_data(job, tmp_path / "data")
    train = load_policy_prompts(job)
    assert read_policy_prompts(files["train"]) == train and len(train) == job.policy_data.n_train
    val = read_policy_prompts(files["val"])
    assert val == generate_policy_prompts(len(val), seed=job.policy_data.seed, split="test", min_constraints=1,
                                          max_constraints=job.policy_data.max_constraints)
    assert not {p.prompt for p in val} & {p.prompt for p in train}
    rows = pq.read_table(files["train"]).to_pylist()
    assert set(rows[0]) == {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    for i, (row, prompt) in enumerate(zip(rows, train)):
        assert row["prompt"] == prompt.chat() and row["reward_model"]["style"] == "rule"
        assert row["data_source"] == "policy/generated/train" and row["ability"] == "instruction_following"
        assert row["extra_info"] == {"index": i, "prompt_id": prompt.prompt_id, "reward_name": "rubric", "split": "train"}


def test_a_rubric_file_exports_its_rows(tmp_path):
    path = tmp_path / "rubrics.jsonl"
    rows = [{"prompt": f"Describe tide number {i}.", "rubrics": [{"criterion": "Mentions the moon.", "points": 3}]}
            for i in range(5)]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows))
    job = compose_policy([*TINY, "policy_data=rubric_file", f"policy_data.path={path}"], tmp_path)
    files = export_policy_data(job, tmp_path / "data")
    prompts = read_policy_prompts(files["train"])
    assert [p.prompt for p in prompts] == [r["prompt"] for r in rows]
    assert prompts[0].rubric == (Criterion("Mentions the moon.", 3.0),)
    assert read_policy_prompts(files["val"]) == prompts  # a file's first rows (here: all five)


# --------------------------------------------------------------------------------------------------
# the async reward against a real local server
# --------------------------------------------------------------------------------------------------

RUBRIC_PROMPT = PolicyPrompt(
    prompt_id="p1",
    prompt="Write about the sea.",
    rubric=(Criterion("CRIT-A mentions waves", 2.0), Criterion("CRIT-B mentions the moon", 3.0),
            Criterion("CRIT-C is padded with filler", -2.0)),
)  # fmt: skip


def yesno_script(replies: dict[str, str]):
    """A yes/no judge: the reply for the criterion whose tag (CRIT-A, ...) is in the request."""

    def script(n: int, body: dict) -> Answer:
        text = body["messages"][-1]["content"]
        for tag, reply in replies.items():
            if tag in text:
                return Answer(text=reply)
        return Answer(status=500)

    return script


def reward_fn(job, server: ScriptedServer, model: str = "judge"):
    """compute_score as verl loads it (get_custom_reward_fn: the file, the name, the reward_kwargs)."""
    from verl.trainer.ppo.reward import get_custom_reward_fn

    kwargs = policy_reward_kwargs(job, server.base_url, model)
    path = str(REPO_ROOT / "judge_rl" / "policy" / "verl" / "reward.py")
    cfg = OmegaConf.create({"reward": {"custom_reward_function": {"path": path, "name": "compute_score",
                                                                 "reward_kwargs": kwargs}}})  # fmt: skip
    return get_custom_reward_fn(cfg)


@pytest.fixture
def yesno_job(tmp_path):
    return compose_policy([*TINY, "judge.max_retries=0", "judge.timeout_s=10"], tmp_path)


def test_async_compute_score_gives_exact_scores_and_names_failures(yesno_job, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    truth = json.dumps(RUBRIC_PROMPT.to_dict())
    server = ScriptedServer(yesno_script({"CRIT-A": "Yes", "CRIT-B": "no", "CRIT-C": "No."}))
    try:
        fn = reward_fn(yesno_job, server)
        out = asyncio.run(fn(data_source="policy", solution_str="The waves roll in.", ground_truth=truth, extra_info={}))
        # HealthBench: met points 2 of positive points 5
        assert out["score"] == pytest.approx(0.4) and out["judge_failed"] == 0 and out["failure_reason"] == ""
        assert out["met_points"] == 2.0 and out["n_met"] == 1.0 and out["positive_points"] == 5.0
        assert server.requests == 3 and all(b["model"] == "judge" for b in server.bodies)
        assert all(a == f"Bearer {SECRET}" for a in server.authorization)  # read from the environment at each request
        # the same answer again: the process's one client answers from its cache
        again = asyncio.run(fn(data_source="policy", solution_str="The waves roll in.", ground_truth=truth))
        assert again == out and server.requests == 3
    finally:
        server.stop()

    server = ScriptedServer(yesno_script({"CRIT-A": "Yes", "CRIT-B": "maybe", "CRIT-C": "no"}))
    try:
        out = asyncio.run(reward_fn(yesno_job, server)(data_source="policy", solution_str="x", ground_truth=truth))
        assert out["judge_failed"] == 1 and out["score"] == 0.0
        assert out["failure_reason"] == unparseable(NO_VERDICT)
        assert np.isnan(out["met_points"])  # the same keys as a success, the judge's ones NaN
    finally:
        server.stop()

    server = ScriptedServer(lambda n, body: Answer(status=500))
    try:
        out = asyncio.run(reward_fn(yesno_job, server)(data_source="policy", solution_str="x", ground_truth=truth))
        assert out["judge_failed"] == 1 and out["failure_reason"] == JUDGE_SERVER_ERROR
    finally:
        server.stop()


def test_compute_score_refuses_an_unknown_setting(yesno_job):
    from judge_rl.policy.verl.reward import compute_score

    with pytest.raises(TypeError, match="judge_timeout"):
        asyncio.run(compute_score("policy", "x", json.dumps(RUBRIC_PROMPT.to_dict()), None, judge_timeout=3,
                                  **policy_reward_kwargs(yesno_job, "http://127.0.0.1:1/v1", "judge")))  # fmt: skip


# --------------------------------------------------------------------------------------------------
# the reward manager on hand-built DataProtos
# --------------------------------------------------------------------------------------------------


class WordTokenizer:
    """decode(ids) -> the words of `vocab` at those ids."""

    vocab = ["<pad>", "The", "waves", "roll", "in."]

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(self.vocab[int(i)] for i in ids if int(i))


def sample(ground_truth: str):
    from verl import DataProto

    prompts, responses = torch.tensor([[1, 1]]), torch.tensor([[1, 2, 3, 4, 0]])
    attention = torch.tensor([[1, 1, 1, 1, 1, 1, 0]])
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": attention},
        non_tensors={"data_source": np.array(["policy"], dtype=object),
                     "reward_model": np.array([{"style": "rule", "ground_truth": ground_truth}], dtype=object),
                     "extra_info": np.array([{"index": 0}], dtype=object)},
    )  # fmt: skip


def manager_for(job, server_url: str, compute_score, timeout: float = 30.0):
    from judge_rl.policy.verl.reward_manager import JudgeRewardManager

    kwargs = policy_reward_kwargs(job, server_url, "judge")
    config = OmegaConf.create({"reward": {"max_concurrent": 2, "timeout": timeout,
                                          "custom_reward_function": {"reward_kwargs": kwargs}}})  # fmt: skip
    return JudgeRewardManager(config, WordTokenizer(), compute_score)


def test_the_reward_manager_passes_grades_and_drops_failed_samples(yesno_job, tmp_path, monkeypatch):
    from judge_rl.policy.verl.reward_outcomes import OUTCOMES_ENV, read_outcomes
    from judge_rl.policy.verl.reward_manager import JudgeRewardManager, JudgeSampleFailed

    truth = json.dumps(RUBRIC_PROMPT.to_dict())
    JudgeRewardManager.reset_counts()
    monkeypatch.setenv(OUTCOMES_ENV, str(tmp_path / "outcomes.jsonl"))
    server = ScriptedServer(yesno_script({"CRIT-A": "yes", "CRIT-B": "yes", "CRIT-C": "no"}))
    try:
        manager = manager_for(yesno_job, server.base_url, reward_fn(yesno_job, server))
        out = manager.loop.run_until_complete(manager.run_single(sample(truth)))
        assert out["reward_score"] == 1.0 and out["reward_extra_info"]["judge_failed"] == 0
        assert any("The waves roll in." in b["messages"][-1]["content"] for b in server.bodies)  # decoded answer
    finally:
        server.stop()
    server = ScriptedServer(yesno_script({"CRIT-A": "yes", "CRIT-B": "", "CRIT-C": "no"}))
    try:
        manager = manager_for(yesno_job, server.base_url, reward_fn(yesno_job, server))
        with pytest.raises(JudgeSampleFailed) as failed:
            manager.loop.run_until_complete(manager.run_single(sample(truth)))
        assert failed.value.reason == unparseable("empty reply")
        assert str(failed.value) == (f"judge at {server.base_url} failed on this sample: judge reply unparseable: "
                                     "empty reply; the sample leaves the batch")  # fmt: skip
    finally:
        server.stop()
    counts = JudgeRewardManager.failure_counts()
    assert counts["samples"] == 2 and counts["failures"] == 1 and counts["failures/judge reply unparseable: empty reply"] == 1
    # what the policy job reads back: verl's metrics never see the dropped sample
    outcomes = read_outcomes(tmp_path / "outcomes.jsonl")
    assert outcomes["samples"] == 2 and outcomes["failures"] == 1 and outcomes["rate"] == 0.5
    assert outcomes["reasons"] == {unparseable("empty reply"): 1}
    assert outcomes["judge"]["calls"] >= 6 and outcomes["judge"]["failures"] >= 1  # one call per criterion, 2 samples


def test_verls_own_timeout_and_error_zeros_are_not_rewards(yesno_job):
    from judge_rl.policy.verl.reward_manager import JudgeSampleFailed, RewardFunctionError

    truth = json.dumps(RUBRIC_PROMPT.to_dict())

    async def slow(**kwargs):
        await asyncio.sleep(5)
        return {"score": 1.0, "judge_failed": 0, "failure_reason": ""}

    manager = manager_for(yesno_job, "http://127.0.0.1:1/v1", slow, timeout=0.05)
    with pytest.raises(JudgeSampleFailed, match="judge server error.*reward.timeout=0.05"):
        manager.loop.run_until_complete(manager.run_single(sample(truth)))

    async def broken(**kwargs):
        raise ValueError("bad ground truth")

    manager = manager_for(yesno_job, "http://127.0.0.1:1/v1", broken)
    with pytest.raises(RewardFunctionError, match="bad ground truth"):
        manager.loop.run_until_complete(manager.run_single(sample(truth)))


# --------------------------------------------------------------------------------------------------
# the command line and the GPU script
# --------------------------------------------------------------------------------------------------


# peak memory: 6.6 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_the_dry_run_flag_prints_the_verl_command_and_config(tmp_path):
    env = {**os.environ, "JUDGE_RL_ROOT": str(REPO_ROOT), "OPENAI_API_KEY": SECRET}
    proc = subprocess.run([sys.executable, "-m", "judge_rl.policy", "cluster=node_8gpu", "--dry-run", "logger=none",
                           f"run_dir={tmp_path}", f"hydra.run.dir={tmp_path / 'hydra'}"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "judge_rl.backends.verl.entry" in proc.stdout and "JudgeRewardManager" in proc.stdout
    assert "validate_config] All configuration checks passed" in proc.stdout + proc.stderr
    cfg = OmegaConf.load(tmp_path / "verl" / "ppo_trainer.yaml")
    assert cfg.trainer.n_gpus_per_node == 8 and cfg.reward.custom_reward_function.reward_kwargs.reward_name == "rubric"
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def script_commands(*args: str) -> list[list[str]]:
    out = subprocess.run(["bash", str(SCRIPT), *args], env={**os.environ, "PRINT_ONLY": "1"}, capture_output=True,
                         text=True, check=True, cwd=REPO_ROOT).stdout  # fmt: skip
    return [shlex.split(line) for line in out.splitlines() if line.strip() and not line.startswith("#")]


def test_gpu_script_print_only_serves_the_judge_and_runs_a_valid_policy_job(tmp_path):
    commands = script_commands("trainer.total_steps=3")
    assert [c[:3] for c in commands] == [["python", "-m", "judge_rl.policy"], ["vllm", "serve", "Qwen/Qwen3-8B"],
                                         ["python", "-m", "judge_rl.policy"]]  # fmt: skip
    serve = commands[1]
    port = serve[serve.index("--port") + 1]
    preflight, train = commands[0][3:], commands[2][3:]
    assert preflight[-1] == "--dry-run" and "--dry-run" not in train
    jobs = []
    for args in (preflight, train):
        overrides = ["dry_run=true" if a == "--dry-run" else a for a in args if not a.startswith("run_dir=")]
        jobs.append(compose_policy(overrides, tmp_path / str(len(jobs))))
    for job in jobs:
        assert job.cluster.name == "single_gpu" and job.cluster.backend == "verl"
        assert job.judge.engine == "vllm" and job.judge.base_url == f"http://127.0.0.1:{port}/v1"
        assert job.judge.served_model == "Qwen/Qwen3-8B" and job.judge.enable_thinking is False
        assert job.trainer.total_steps == 3  # extra arguments reach the job
    assert jobs[0].dry_run and not jobs[1].dry_run
    cfg, _ = translate(jobs[1], tmp_path / "t", base_url=jobs[1].judge.base_url)
    assert cfg.actor_rollout_ref.rollout.gpu_memory_utilization == 0.3  # leaves room for the judge's vLLM
    assert cfg.reward.custom_reward_function.reward_kwargs.judge_model == "Qwen/Qwen3-8B"


def test_a_judge_failure_crosses_rays_process_boundary_intact():
    # verl's reward worker raises it and Ray pickles it to the agent loop; before __reduce__, unpickling failed
    # ("Failed to deserialize exception", seen on a real cluster=cpu_verl policy run)
    import pickle

    from judge_rl.policy.verl.reward_manager import JudgeSampleFailed

    failed = pickle.loads(pickle.dumps(JudgeSampleFailed("http://judge:8011/v1", "judge reply truncated", "32 tokens")))
    assert (failed.endpoint, failed.reason, failed.detail) == ("http://judge:8011/v1", "judge reply truncated", "32 tokens")
    assert str(failed) == ("judge at http://judge:8011/v1 failed on this sample: judge reply truncated (32 tokens); "
                           "the sample leaves the batch")
