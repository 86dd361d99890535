"""judge_rl's configuration, the bottom floor of the package: it imports no other judge_rl package.

    schema   the dataclasses behind conf/ (RunBase, JobBase, JobConfig, EvalJobConfig, ModelConfig, JudgeClientConfig, ...)
    checks   checks that need no registry: typed_config, check_ranges, validate_model, check_device,
             check_local_machine
    paths    where conf/ is, and one config file of a group read and typed (load_group_file; a model: load_model_config)
    model_dirs  where a model's weights are: a local path or a hub id, and the check that a directory holds a model

The checks that consult registries (recipes, rewards, benchmarks, servers) sit above them: judge_rl/jobs/.
"""

from judge_rl.config.checks import (  # noqa: F401
    EVAL_RANGES,
    JOB_RANGES,
    MODEL_RANGES,
    MODEL_SOURCES,
    MODEL_WEIGHTS,
    SHAPE_FIELDS,
    DEVICES,
    check_device,
    check_local_machine,
    check_ranges,
    typed_config,
    validate_model,
)
from judge_rl.config.schema import (  # noqa: F401
    ArchConfig,
    BenchmarkConfig,
    ClusterConfig,
    DataConfig,
    DatasetSpec,
    EVAL_NEUTRAL_KEYS,
    EvalConfig,
    EvalJobConfig,
    EvalScoringConfig,
    JobBase,
    RunBase,
    JobConfig,
    JudgeClientConfig,
    JudgeConfig,
    LoggerConfig,
    ModelConfig,
    NEUTRAL_KEYS,
    ReportConfig,
    RewardConfig,
    SFTConfig,
    STAGES,
    ServerConfig,
    TinyModelConfig,
    TrainerConfig,
    dotted_leaves,
    register_schemas,
)
