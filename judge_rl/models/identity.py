"""What a judge *is*, as a short hash: its architecture config and the content of its weights.

The evaluation harness keys every saved judgment by the judge's identity, the rendered prompt and the
decoding settings (`servers.*.request_key`). Names and paths are not identities: the same
`rl_model/` directory holds other weights after another training run, and two tiny random models of
one name differ by seed and shape. So the key carries a content hash:
- `weights_fingerprint(model)`: a loaded torch model (config without paths or versions, then every
  parameter's name, dtype, shape and bytes). ~0.5 s for SmolLM2-135M on 2 CPU cores.
- `directory_fingerprint(path, cache_dir)`: a model directory on disk (what vLLM loads), file by
  file, remembered per (path, sizes, mtimes) so a large checkpoint is hashed once.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch

# config fields that say where a model came from or what wrote it, not what it computes
_NOT_IDENTITY = ("_name_or_path", "transformers_version", "_attn_implementation", "_attn_implementation_autoset",
                 "_commit_hash", "torch_dtype", "dtype")


def _config_payload(config) -> str:
    d = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    return json.dumps({k: v for k, v in d.items() if k not in _NOT_IDENTITY}, sort_keys=True, default=str)


def weights_fingerprint(model) -> str:
    h = hashlib.sha256(_config_payload(model.config).encode())
    seen: set[int] = set()
    for name, tensor in sorted(model.state_dict().items()):
        if tensor.data_ptr() in seen and tensor.numel():  # tied weights (embeddings / lm_head) count once
            continue
        seen.add(tensor.data_ptr())
        t = tensor.detach().contiguous().cpu()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}".encode())
        if t.dtype in (torch.bfloat16, torch.float16):
            t = t.view(torch.int16)
        elif t.dtype == torch.bool:
            t = t.to(torch.uint8)
        h.update(memoryview(t.numpy()).cast("B"))
    return h.hexdigest()[:16]


_WEIGHT_FILES = (".safetensors", ".bin", ".pt", ".gguf", ".json", ".model", ".txt")


def directory_fingerprint(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> str:
    """A content hash of a model directory's files (weights, config, tokenizer)."""
    root = Path(path).expanduser().resolve()
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(_WEIGHT_FILES))
    stamp = [(str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    memo = Path(cache_dir).expanduser() / "fingerprints.json" if cache_dir is not None else None
    memo_key = hashlib.sha256(json.dumps([str(root), stamp]).encode()).hexdigest()
    known: dict[str, str] = {}
    if memo is not None and memo.exists():
        try:
            known = json.loads(memo.read_text())
        except ValueError:
            known = {}
        if memo_key in known:
            return known[memo_key]
    h = hashlib.sha256()
    for p, (rel, size, _) in zip(files, stamp):
        h.update(f"{rel}|{size}".encode())
        with p.open("rb") as f:
            for block in iter(lambda: f.read(1 << 24), b""):
                h.update(block)
    digest = h.hexdigest()[:16]
    if memo is not None:
        memo.parent.mkdir(parents=True, exist_ok=True)
        known[memo_key] = digest
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known))
        tmp.replace(memo)
    return digest
