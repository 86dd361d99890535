"""Typed schema of the policy job (`python -m judge_rl.policy`, conf/policy.yaml).

The policy job trains a *policy* (not a judge) with online RL while a judge grades its answers. Its
config is its own primary Hydra config. It reuses the main job's groups for what means the same thing
(`model/` is the policy, `algorithm/` the online RL method, `trainer/` the RL loop, `cluster/`,
`logger/`) and adds its own:

    policy_reward/   how a sample is scored: rule | rubric | verif | judge_pairwise  (PolicyRewardConfig)
    judge/           which judge grades and how it is served: embedded | trained | openai | vllm | none
                     (RewardJudgeConfig)
    policy_data/     the training prompts: generated IFEval-style prompts, or a rubric / VerIF file

Every field is checked before a model loads (`validate_policy_job`): a key the schema does not have,
a wrong type, a value out of range, a judge-calling reward with `judge=none`, an endpoint without a
URL, fail with the key's name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from omegaconf import DictConfig, OmegaConf

from judge_rl.rollouts.samplers import resolve_rollout_engine
from judge_rl.updates.batch import resolve_logprob_pass
from judge_rl.config import (
    JOB_RANGES,
    ClusterConfig,
    JudgeClientConfig,
    JobBase,
    ModelConfig,
    ReportConfig,
    TrainerConfig,
    check_device,
    check_ranges,
    typed_config,
    validate_model,
)
from judge_rl.backends import check_cluster
from judge_rl.backends.algorithm import RL_RANGES, AlgorithmConfig, check_online_algorithm
from judge_rl.policy.rewards import POLICY_REWARDS
from judge_rl.policy.tasks.sources import POLICY_SOURCES

ENGINES = ("local", "openai", "vllm", "none")  # and auto, resolved to local or vllm when the config is read
FAILURE_MODES = ("mask", "drop_group")
CRITERION_FORMATS = ("json", "yesno")
OPPONENTS = ("reference", "group")


@dataclass
class PolicyRewardConfig:
    """The policy's reward (judge_rl/policy/rewards/<name>.py has the exact definitions)."""

    name: str = "rubric"  # rule | rubric | verif | judge_pairwise
    # rule: score = the fraction of IFEval instructions followed ("instruction") or all-or-nothing ("prompt")
    level: str = "instruction"
    # rule: and 0 where the response fails judge_rl/policy/tasks/guard.py (too short, a loop, off its task's topic):
    # the task's true score, which degenerate text cannot reach
    guard: bool = False
    # rubric: HealthBench's clip(met points / positive points); null: no clipping
    clip: Optional[list[float]] = field(default_factory=lambda: [0.0, 1.0])
    # rubric: true grades all criteria in one judge call (reply: a JSON list or lines, `batch_format`);
    # false asks one call per criterion (HealthBench's grading), whose reply is `criterion_format`
    batch_criteria: bool = False
    batch_format: str = "json"  # json | lines
    # one-criterion reply: json ({"criteria_met": true|false}) or yesno (exactly one "yes" or "no" word;
    # what a small untrained judge can write)
    criterion_format: str = "json"
    # judge_pairwise: the project's pairwise judge prompt, both orders (the score is their mean), strength
    judge_prompt: str = "strength"
    both_orders: bool = True
    use_strength: bool = True
    # judge_pairwise: what the policy's answer is compared with: the prompt's `reference` answer, or `group`: the
    # next sample of its own group (a ring over the group: no reference needed, both answers in the policy's own style)
    opponent: str = "reference"


@dataclass
class JudgeFaultsConfig:
    """Failures the judge this job serves itself injects (judge.engine=local; the hooks of judge_rl/servers/http.py),
    to rehearse a study's failure handling: what judge_failure.* does with a judge that errs, hangs or talks
    nonsense, before a real judge does it. Request n counts from 1 over the job's judge calls; 0 / null: off."""

    fail_first_n: int = 0  # requests 1..n answer HTTP 500 (a judge that recovers)
    fail_every: int = 0  # request n with n % k == 0 answers HTTP 500 (a flaky judge)
    hang_every: int = 0  # request n with n % k == 0 waits hang_s first
    hang_s: Optional[float] = None  # null: judge.timeout_s + 1, so a hung call is a timeout
    garbage_every: int = 0  # request n with n % k == 0 answers HTTP 200 with a body that is not JSON
    reply: Optional[str] = None  # every reply's text instead of the model's (e.g. "perhaps": no verdict)

    def server_kwargs(self, timeout_s: float) -> dict[str, Any]:
        """ChatCompletionServer's keyword arguments for these faults (`timeout_s`: the client's, for hang_s null)."""
        text = self.reply
        hang_s = self.hang_s if self.hang_s is not None else timeout_s + 1.0
        return {"fail_first_n": self.fail_first_n, "fail_every": self.fail_every, "hang_every": self.hang_every,
                "hang_s": hang_s, "garbage_every": self.garbage_every,
                "reply_override": None if text is None else (lambda n, body: text)}  # fmt: skip

    def active(self) -> bool:
        return self != JudgeFaultsConfig()


@dataclass
class RewardJudgeConfig(JudgeClientConfig):
    """The judge that grades the policy and how it is reached (conf/judge/<name>.yaml).

    engine local: the job loads `model` (a conf/model name; `checkpoint`: trained weights, e.g. the main
    job's `<run>/rl_model`) and serves it on 127.0.0.1 over the OpenAI chat API, batching concurrent
    requests. engine openai: any OpenAI-compatible endpoint at `base_url` (the key from the environment
    variable `api_key_env`, never from a file). engine vllm: `base_url` of a running `vllm serve`, or
    none and the job starts `vllm serve` itself (on a GPU, or on the CPU with vLLM's CPU build).
    engine none: no judge (policy_reward=rule).
    """

    name: str = "embedded"
    engine: str = "local"  # local | openai | vllm | none
    model: Optional[str] = "smollm2-135m"  # local / vllm: a conf/model name or a model YAML path
    checkpoint: Optional[str] = None  # local / vllm: a saved model directory to serve instead
    # where this judge's own quality was measured: a main-job run directory and the stage of its held-out evaluation
    # (base, sft, rl); the policy job copies that evaluation into its results as `grader` (cells grader/held_out/...)
    quality_run: Optional[str] = None
    quality_stage: Optional[str] = None
    # the client (JudgeClientConfig): base_url (openai: required; vllm: a running server, null: start one),
    # served_model, api_key_env, concurrency, timeout_s, max_retries, backoff_s; and its cache
    cache_size: int = 100_000
    # generation
    max_tokens: int = 256
    temperature: float = 0.0
    # thinking judges (Qwen3): sent as chat_template_kwargs={"enable_thinking": ...} in the body (vLLM reads
    # it there); `<think>` is stripped before parsing either way. null: not sent
    enable_thinking: Optional[bool] = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    # local server: requests batched per generate call, and how long the first waits for company
    max_batch: int = 32
    batch_wait_s: float = 0.05
    device: str = "auto"
    # vLLM's server (started by the job when base_url is null; judge_rl/servers/endpoint.py)
    port: Optional[int] = None  # null: the first free port from 8011, locked for this job; a port: that one or refused
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.5
    startup_timeout_s: float = 900.0
    max_model_len: Optional[int] = None  # --max-model-len; null: the model's context on a GPU, 2048 on a CPU
    vllm_args: list[str] = field(default_factory=list)
    faults: JudgeFaultsConfig = field(default_factory=JudgeFaultsConfig)  # local: injected failures (rehearsals)


@dataclass
class JudgeFailurePolicy:
    """What a judge failure does to training (never a score: judge_rl/policy/rewards/)."""

    # mask: the failed sample leaves the batch (no advantage, no loss, not in reward means); its group's
    # advantages come from the samples that were graded. drop_group: as mask, and a group left with fewer
    # than `min_group_size` graded samples leaves too
    mode: str = "mask"
    min_group_size: int = 2
    # a step whose share of failed samples exceeds this stops the run, naming the endpoint and the
    # commonest reason
    max_failure_rate: float = 0.5


@dataclass
class PolicyDataConfig:
    """The policy's training prompts."""

    name: str = "generated"
    source: str = "generated"  # generated | rubric_file | verif_file
    path: Optional[str] = None  # rubric_file / verif_file: the JSONL file
    n_train: int = 256  # generated: how many prompts (deterministic by `seed`)
    seed: int = 0
    min_constraints: int = 1
    max_constraints: int = 2
    # generated: the constraint types to draw from (IFEval instruction ids; null: all 24 the generator knows)
    instruction_ids: Optional[list[str]] = None
    limit: Optional[int] = None  # files: the first N rows


@dataclass
class TaskEvalConfig:
    """The policy's true score on its own task, held out: `n` generated prompts on the base tasks of the test split
    (never trained on: judge_rl/policy/tasks/prompts.py `task_split`), the same constraint mix as policy_data, scored by the
    rule checkers (strict and loose, prompt and instruction level, as IFEval), greedy, before and after RL, with a
    paired bootstrap interval of the change. Off by default; the judge-quality studies turn it on. `guard`: an
    instruction counts as followed only where the response also passes judge_rl/policy/tasks/guard.py (long enough, not a
    loop, on its task's topic): the checkers alone are passed by degenerate text a policy learns under RL."""

    enabled: bool = False
    guard: bool = True
    n: int = 48
    seed: int = 1
    max_new_tokens: int = 128
    batch_size: int = 16


@dataclass
class IFEvalRunConfig:
    """IFEval on the policy: before training, every `every` steps, and after."""

    enabled: bool = True
    path: str = "../shared/data/ifeval/input_data.jsonl"
    limit: Optional[int] = 32  # the first N of the 541 prompts (null, or full=true: all)
    full: bool = False  # all 541 prompts, whatever `limit` says
    every: int = 0  # also evaluate every K RL steps (0: before and after only)
    max_new_tokens: int = 256
    batch_size: int = 16


@dataclass
class PolicyJobConfig(JobBase):
    """`python -m judge_rl.policy` (conf/policy.yaml): GRPO on a policy graded by a judge or by rules."""

    run_dir: str = "outputs/policy"
    model: ModelConfig = field(default_factory=ModelConfig)  # the policy
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    policy_reward: PolicyRewardConfig = field(default_factory=PolicyRewardConfig)
    judge: RewardJudgeConfig = field(default_factory=RewardJudgeConfig)
    policy_data: PolicyDataConfig = field(default_factory=PolicyDataConfig)
    judge_failure: JudgeFailurePolicy = field(default_factory=JudgeFailurePolicy)
    ifeval: IFEvalRunConfig = field(default_factory=IFEvalRunConfig)
    task_eval: TaskEvalConfig = field(default_factory=TaskEvalConfig)
    dry_run: bool = False  # verl backend: print the verl command and config, launch nothing


POLICY_NEUTRAL_KEYS = (
    "run_dir", "cache_dir", "logger", "dry_run", "resume", "cluster.threads", "cluster.device", "cluster.ray_address",
    "cluster.shared_fs", "trainer.save_every", "trainer.keep_checkpoints", "report", "judge.concurrency",
    "judge.timeout_s", "judge.max_retries", "judge.backoff_s", "judge.api_key_env", "judge.max_batch",
    "judge.batch_wait_s", "judge.device", "judge.port", "judge.startup_timeout_s", "judge.base_url",
    "judge_failure.max_failure_rate", "ifeval.batch_size", "judge.quality_run", "judge.quality_stage", "model.arch",
    "cluster.gpu_memory_gib", "trainer.gradient_checkpointing",
)  # fmt: skip

POLICY_RANGES = {
    # the main job's ranges of the groups both jobs share
    **{k: v for k, v in JOB_RANGES.items() if k.split(".")[0] in ("model", "trainer", "cluster", "seed")},
    "judge.concurrency": ">= 1",
    "judge.timeout_s": "> 0",
    "judge.max_retries": ">= 0",
    "judge.backoff_s": ">= 0",
    "judge.cache_size": ">= 0",
    "judge.max_tokens": ">= 1",
    "judge.temperature": ">= 0",
    "judge.max_batch": ">= 1",
    "judge.batch_wait_s": ">= 0",
    "judge.port": "[1, 65535]",
    "judge.tensor_parallel_size": ">= 1",
    "judge.gpu_memory_utilization": "(0, 1]",
    "judge.startup_timeout_s": "> 0",
    "judge.max_model_len": ">= 1",
    "judge.faults.fail_first_n": ">= 0",
    "judge.faults.fail_every": ">= 0",
    "judge.faults.hang_every": ">= 0",
    "judge.faults.hang_s": "> 0",
    "judge.faults.garbage_every": ">= 0",
    "judge_failure.min_group_size": ">= 1",
    "judge_failure.max_failure_rate": "[0, 1]",
    "policy_data.n_train": ">= 1",
    "policy_data.min_constraints": ">= 1",
    "policy_data.limit": ">= 1",
    "ifeval.limit": ">= 1",
    "ifeval.every": ">= 0",
    "ifeval.max_new_tokens": ">= 1",
    "ifeval.batch_size": ">= 1",
    "task_eval.n": ">= 1",
    "task_eval.max_new_tokens": ">= 1",
    "task_eval.batch_size": ">= 1",
    **RL_RANGES,
}


def _is_local_url(url: str) -> bool:
    from urllib.parse import urlparse

    return (urlparse(url).hostname or "") in ("127.0.0.1", "localhost", "::1")


def _choice(value: str, key: str, known: tuple[str, ...]) -> None:
    if value not in known:
        raise ValueError(f"{key}={value!r}: expected one of {', '.join(known)}")


def to_policy_config(cfg: DictConfig) -> PolicyJobConfig:
    """Resolve and type-check the policy job's composed config; refuse what cannot work before a model loads."""
    recipe = OmegaConf.select(cfg, "algorithm.recipe", default="online_rl")
    if recipe != "online_rl":
        name = OmegaConf.select(cfg, "algorithm.name")
        raise ValueError(f"algorithm={name} (recipe {recipe}): the policy job trains with online RL "
                         "(algorithm=grpo, dr_grpo, rloo, reinforce_pp, reinforce_pp_baseline, ppo)")
    job: PolicyJobConfig = typed_config(cfg, PolicyJobConfig)
    if job.judge.engine == "auto":  # chosen once, here: the run's config names the engine that served
        from judge_rl.servers.endpoint import auto_engine

        job.judge.engine = auto_engine(job.judge)
    validate_policy_job(job)
    return job


def validate_policy_job(job: PolicyJobConfig) -> None:
    check_ranges(job, POLICY_RANGES)
    validate_model(job.model)
    resolve_rollout_engine(job.trainer.rollout_engine, "cpu", job.model.source)  # an unknown or absent engine: one line
    resolve_logprob_pass(job.trainer.logprob_pass, "cpu", job.trainer.gradient_checkpointing)  # an unknown pass: one line
    r, j, a = job.policy_reward, job.judge, job.algorithm
    _choice(r.name, "policy_reward.name", tuple(POLICY_REWARDS.names()))  # judge_rl/policy/rewards/<name>.py
    spec = POLICY_REWARDS.get(r.name)
    _choice(r.level, "policy_reward.level", ("instruction", "prompt"))
    _choice(r.batch_format, "policy_reward.batch_format", ("json", "lines"))
    _choice(r.criterion_format, "policy_reward.criterion_format", CRITERION_FORMATS)
    _choice(r.opponent, "policy_reward.opponent", OPPONENTS)
    if r.opponent == "group" and r.name != "judge_pairwise":
        raise ValueError(f"policy_reward.opponent=group: only policy_reward=judge_pairwise compares samples, not {r.name}")
    if r.opponent == "group" and job.cluster.backend == "verl":
        raise ValueError("policy_reward.opponent=group needs the local backend (verl's reward workers grade one sample "
                         "at a time); use policy_reward.opponent=reference with references, or cluster.backend=local")
    if r.opponent == "group" and job.algorithm.rollout_n < 2:
        raise ValueError(f"policy_reward.opponent=group: algorithm.rollout_n={job.algorithm.rollout_n}, a group needs 2 samples")
    if r.clip is not None and (len(r.clip) != 2 or not r.clip[0] < r.clip[1]):
        raise ValueError(f"policy_reward.clip={r.clip}: expected [low, high] with low < high, or null")
    if spec.check is not None:
        spec.check(r)
    _choice(j.engine, "judge.engine", ENGINES)
    if spec.needs_judge and j.engine == "none":
        raise ValueError(f"policy_reward={r.name} asks a judge; judge=none has none (use judge=embedded, trained, "
                         "openai or vllm, or policy_reward=rule)")
    if j.faults.active() and (j.engine != "local" or j.base_url):
        reached = f"judge.engine={j.engine}" if j.engine != "local" else f"judge.base_url={j.base_url}"
        raise ValueError(f"judge.faults.*: injected failures come from the judge server this job starts (judge.engine=local, "
                         f"no base_url); {reached} reaches another server, which would never inject them")
    if j.engine == "openai" and not j.base_url:
        raise ValueError("judge.engine=openai needs judge.base_url (e.g. judge.base_url=https://api.openai.com/v1)")
    if j.engine == "openai" and not _is_local_url(j.base_url) and not os.environ.get(j.api_key_env):
        raise ValueError(f"judge={j.name} ({j.base_url}) needs an API key: the environment variable {j.api_key_env} is "
                         "not set (the key is read only from the environment, never from a config)")
    if j.engine == "openai" and not j.served_model:
        raise ValueError("judge.engine=openai needs judge.served_model (the model id the endpoint expects)")
    if j.engine in ("local", "vllm") and not j.base_url and j.model is None and j.checkpoint is None:
        raise ValueError(f"judge.engine={j.engine} serves a model: set judge.model (a conf/model name) or judge.checkpoint")
    if j.engine in ("local", "vllm") and j.checkpoint is not None:
        from judge_rl.config.model_dirs import require_model_dir

        require_model_dir(j.checkpoint, "judge.checkpoint")
    check_device(j.device, "judge.device")
    _choice(job.judge_failure.mode, "judge_failure.mode", FAILURE_MODES)
    if job.judge_failure.mode == "drop_group" and job.judge_failure.min_group_size > a.rollout_n:
        raise ValueError(f"judge_failure.min_group_size={job.judge_failure.min_group_size} exceeds algorithm.rollout_n="
                         f"{a.rollout_n}: every group would be dropped")
    d = job.policy_data
    _choice(d.source, "policy_data.source", tuple(POLICY_SOURCES.names()))
    if d.source != "generated" and not d.path:
        raise ValueError(f"policy_data.source={d.source} needs policy_data.path (a JSONL file)")
    if d.source != "generated" and not Path(d.path).expanduser().is_file():
        raise ValueError(f"policy_data.path={d.path}: no such file")
    if d.min_constraints > d.max_constraints:
        raise ValueError(f"policy_data.min_constraints={d.min_constraints} exceeds max_constraints={d.max_constraints}")
    if d.instruction_ids is not None:
        from judge_rl.policy.tasks.prompts import GENERATED_INSTRUCTION_IDS

        unknown = [i for i in d.instruction_ids if i not in GENERATED_INSTRUCTION_IDS]
        if unknown or not d.instruction_ids:
            raise ValueError(f"policy_data.instruction_ids: {unknown or 'empty'}: expected ids from "
                             f"{', '.join(GENERATED_INSTRUCTION_IDS)}")
    check_cluster(job.cluster, job.dry_run)
    if job.dry_run and job.cluster.backend != "verl":
        raise ValueError("dry_run (--dry-run) of the policy job prints a verl launch: it needs a verl cluster option "
                         "(e.g. cluster=node_8gpu)")
    check_online_algorithm(a, job.trainer.prompts_per_step)
