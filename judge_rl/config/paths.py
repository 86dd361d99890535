"""Where judge_rl's config files are, worked out once: the checkout (`REPO_ROOT`), its `conf/` (`CONF_DIR`), and
one option of a config group read outside Hydra and typed (`load_group_file`), as the main job names benchmarks
(`eval.benchmarks`) and the judge server and policy job name models."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

REPO_ROOT = Path(__file__).resolve().parents[2]
CONF_DIR = REPO_ROOT / "conf"


def set_repo_root_env() -> None:
    """conf/config.yaml adds ${oc.env:JUDGE_RL_ROOT} to Hydra's search path, so experiments/ is a config group."""
    os.environ.setdefault("JUDGE_RL_ROOT", str(REPO_ROOT))


def group_options(group: str) -> list[str]:
    """The option names of a config group (conf/<group>/*.yaml, no leading underscore)."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml") if not p.stem.startswith("_"))


def load_group_file(group: str, name: str, schema: type, key: str, **overrides: Any) -> Any:
    """conf/<group>/<name>.yaml (or `name` itself, a path to a YAML file) merged onto `schema`; an unknown name is
    a ValueError naming `key` and the known options."""
    path = Path(name)
    if path.suffix not in (".yaml", ".yml"):
        path = CONF_DIR / group / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"{key}: unknown {group} {name!r}; known: {', '.join(group_options(group))} "
                         "(or a path to a YAML file)")
    option = OmegaConf.load(path)
    option.pop("defaults", None)  # a Hydra defaults list names the same schema merged here
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), option, overrides))


def load_benchmark_config(name: str, **overrides: Any):
    """conf/benchmark/<name>.yaml as a typed `BenchmarkConfig` (the main job names benchmarks this way)."""
    from judge_rl.config.schema import BenchmarkConfig

    return load_group_file("benchmark", name, BenchmarkConfig, "eval.benchmarks", **overrides)


def load_model_config(name: str, key: str = "model"):
    """A ModelConfig from conf/model/<name>.yaml, or from a YAML file path; an unknown name is a ValueError naming
    `key` and the known models (the judge server, the policy job's judge and the scripts name models this way)."""
    from judge_rl.config.schema import ModelConfig

    return load_group_file("model", name, ModelConfig, key)
