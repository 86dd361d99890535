"""Where a model's weights are: a path that names a local directory, and the check that it holds a model.

Shared by every config that names a model or a checkpoint (the job configs, curation's teacher and embedder),
so "is this a path?" and "is this a model directory?" have one answer and one error message.
"""

from __future__ import annotations

from pathlib import Path


def looks_local(path: str) -> bool:
    """`path` names a local file or directory (absolute, relative with ./ ../ ~, or existing), not a hub id."""
    return path.startswith(("/", "./", "../", "~")) or Path(path).expanduser().exists()


def require_model_dir(path: str, key: str) -> None:
    """A one-line error naming `key` unless `path` is a directory with a config.json."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ValueError(f"{key}={path}: no such directory")
    if not (p / "config.json").exists():
        raise ValueError(f"{key}={path}: not a model directory (no config.json)")
