"""The typed schema of `python -m judge_rl.curate` (conf/curate.yaml) and the checks that refuse a bad config.

`to_curate_config(cfg)` resolves and type-checks a composed config and `validate_curate` refuses what cannot
work (ranges, the loader and its arguments, the prompt, the judge's weights, the embedder, the teacher, the
output path), each with one line naming the key, before any data or model loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from omegaconf import DictConfig

from judge_rl.config import (DatasetSpec, ModelConfig, RunBase, ServerConfig, check_device, check_ranges, typed_config,
                             validate_model)
from judge_rl.config.model_dirs import looks_local, require_model_dir

TEACHERS = ("gold", "server", "checkpoint")


@dataclass
class DifficultyConfig:
    """Filter 1: keep the pairs the judge does not already get right every time.

    enabled: run the filter (false: every pair passes).
    samples: judgments sampled per pair (Think-J's k); a pair all `samples` right is easy and dropped.
    temperature: sampling temperature (> 0).
    max_new_tokens: the longest judgment sampled; a judgment cut off before its verdict counts as unparsed.
    batch_size: sequences (prompts x samples) decoded together.
    chunk_size: pairs sampled between two appends to difficulty.jsonl (a crash loses at most one chunk).
    checkpoint: a saved model directory whose weights the judge uses (e.g. an earlier SFT or RL judge);
        null: `model` as configured. The diversity filter's `embedder: judge` uses the same weights.
    """

    enabled: bool = True
    samples: int = 4
    temperature: float = 1.0
    max_new_tokens: int = 256
    batch_size: int = 16
    chunk_size: int = 32
    checkpoint: Optional[str] = None


@dataclass
class DiversityConfig:
    """Filter 2: merge near-duplicate questions, keeping the first pair of each cluster.

    enabled: run the filter (false: every pair passes).
    embedder: "judge" (the judge model's mean-pooled last hidden states: offline, nothing else to download)
        or a sentence-transformers-style model, a local directory or hub name, loaded with transformers'
        AutoModel and AutoTokenizer and mean-pooled the same way.
    threshold: cosine in (0, 1] at or above which a question is a near-duplicate of an earlier kept one.
    center: subtract the questions' mean embedding before the cosine (see judge_rl.curate's docstring: without it a
        decoder judge puts distinct questions at cosine 0.9 and more).
    batch_size: questions embedded per forward pass.
    max_length: tokens of a question embedded (longer questions are cut).
    """

    enabled: bool = True
    embedder: str = "judge"
    threshold: float = 0.95
    center: bool = True
    batch_size: int = 32
    max_length: int = 512


def _teacher_server() -> ServerConfig:
    return ServerConfig(name="openai", max_new_tokens=4096, timeout_s=600.0)


@dataclass
class AccuracyConfig:
    """Filter 3: keep a pair only when a teacher's judgments of both orders reach the gold verdict; those
    judgments become the pair's traces.

    enabled: run the filter (false: pairs pass with the traces they came with).
    teacher: "gold" (the data's own traces; pairs without them are dropped), "server" (an OpenAI-compatible
        endpoint, `server`) or "checkpoint" (the local model directory `checkpoint`, run by the hf server).
    checkpoint: the teacher's model directory (config.json and tokenizer), for teacher=checkpoint; it is
        loaded with `model.dtype`.
    server: teacher=server: the endpoint (`name` must be openai; `base_url` and `served_model` required;
        the key is read from the environment variable `api_key_env`) and its limits. teacher=checkpoint reads
        its max_new_tokens, batch_size, chunk_size and device (the hf server; `name` is not read).
        `max_new_tokens` bounds the whole output, a reasoning model's thinking included.
    clip: read outputs with `clip_trace` (a reasoning model's output keeps its final explanation as the
        thinking); false: an output must parse under `prompt` as it is.
    max_thinking_chars: the longest thinking a clipped trace keeps (its end, cut at a sentence start).
    match_strength: also require the teacher's strength to equal the pair's label (prompts with strength;
        pairs without a label pass on the winner alone).
    """

    enabled: bool = True
    teacher: str = "gold"
    checkpoint: Optional[str] = None
    server: ServerConfig = field(default_factory=_teacher_server)
    clip: bool = True
    max_thinking_chars: int = 2000
    match_strength: bool = False


@dataclass
class CurateConfig(RunBase):
    """`python -m judge_rl.curate` (conf/curate.yaml).

    model: the judge (conf/model): samples the difficulty filter's judgments and is the default embedder;
        its `max_prompt_length` bounds the judge prompts kept.
    data: the preference pairs to curate: a registered loader and its arguments (judge_rl.data.loaders).
    prompt: the registered pairwise prompt the judge and the teacher are asked with and whose parser reads
        their outputs; it must write a `<think>` block (the SFT init trains on its thinking).
    shuffle: shuffle the input once with `seed` before the filters (their order and `limit` follow it).
    difficulty, diversity, accuracy: the three filters, in that order (see their classes).
    limit: the most pairs written (Think-J: 707); null: every pair that passes.
    seed: the shuffle, the positions the judge sees, its sampling, the tiny-random model.
    device: where the judge runs (auto, cpu, cuda).
    cache_dir: converted models and tokenizers (shared with the other apps).
    output: the curated `pairs` JSONL (`counts.json` is written beside it); must end in .jsonl.
    run_dir: difficulty.jsonl, teacher.jsonl, dropped.jsonl, the resolved config and status.json;
        re-running with the same run_dir reuses its saved judgments.
    resume: as the other apps: false moves a saved run in run_dir aside (superseded/) and starts afresh.
    """

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DatasetSpec = field(default_factory=DatasetSpec)
    prompt: str = "strength"
    shuffle: bool = True
    difficulty: DifficultyConfig = field(default_factory=DifficultyConfig)
    diversity: DiversityConfig = field(default_factory=DiversityConfig)
    accuracy: AccuracyConfig = field(default_factory=AccuracyConfig)
    limit: Optional[int] = None
    device: str = "auto"
    output: str = "outputs/curate/curated.jsonl"
    run_dir: str = "outputs/curate"


# Keys a re-run in the same run_dir may change and still resume: they change which saved judgments are used
# or how they are read (limit, thresholds, clip), never what a saved judgment is. Saved records are also keyed
# by their exact request, so a record is only ever reused for the same request.
CURATE_NEUTRAL_KEYS = (
    "run_dir", "cache_dir", "resume", "output", "device", "limit",
    "difficulty.enabled", "difficulty.batch_size", "difficulty.chunk_size",
    "diversity", "accuracy.enabled", "accuracy.clip", "accuracy.max_thinking_chars", "accuracy.match_strength",
    "accuracy.server.batch_size", "accuracy.server.chunk_size", "accuracy.server.device",
    "accuracy.server.concurrency", "accuracy.server.timeout_s", "accuracy.server.max_retries",
    "accuracy.server.backoff_s", "accuracy.server.api_key_env",
)

CURATE_RANGES = {
    "model.max_prompt_length": ">= 1",
    "seed": "[0, 4294967295]",
    "difficulty.samples": ">= 1",
    "difficulty.temperature": "> 0",
    "difficulty.max_new_tokens": ">= 1",
    "difficulty.batch_size": ">= 1",
    "difficulty.chunk_size": ">= 1",
    "diversity.threshold": "(0, 1]",
    "diversity.batch_size": ">= 1",
    "diversity.max_length": ">= 1",
    "accuracy.max_thinking_chars": ">= 1",
    "accuracy.server.max_new_tokens": ">= 1",
    "accuracy.server.batch_size": ">= 1",
    "accuracy.server.chunk_size": ">= 1",
    "accuracy.server.concurrency": ">= 1",
    "accuracy.server.timeout_s": "> 0",
    "accuracy.server.max_retries": ">= 0",
    "accuracy.server.backoff_s": ">= 0",
    "limit": ">= 1",
}


def curation_prompt(name: str):
    """The registered prompt `name`, checked usable for curation: pairwise, writing a `<think>` block."""
    from judge_rl.prompts import get_prompt
    from judge_rl.updates.sft import THINKING

    try:
        prompt = get_prompt(name)
    except KeyError as e:
        raise ValueError(f"prompt={name!r}: {e.args[0]}") from None
    if prompt.kind != "pairwise":
        raise ValueError(f"prompt={name!r}: curation judges pairs, and {name} is a {prompt.kind} prompt")
    output = getattr(prompt, "output", None)
    if output is None or THINKING.search(output("check", "a", 2)) is None:
        raise ValueError(f"prompt={name!r}: its judgments have no <think> block, and the SFT init trains on the "
                         "thinking of the curated traces; use a thinking prompt (e.g. strength, binary)")
    return prompt


def to_curate_config(cfg: DictConfig) -> CurateConfig:
    """Resolve and type-check a composed conf/curate.yaml, then refuse what cannot work, before anything loads."""
    job: CurateConfig = typed_config(cfg, CurateConfig)
    validate_curate(job)
    return job


def validate_curate(job: CurateConfig) -> None:
    """One-line errors naming the key: ranges, the loader and its arguments, the prompt, the judge's weights,
    the embedder, the teacher and the output path."""
    from judge_rl.data.loaders import check_loader_kwargs

    check_ranges(job, CURATE_RANGES)
    check_loader_kwargs(job.data.loader, dict(job.data.kwargs), "data")
    curation_prompt(job.prompt)
    validate_model(job.model, job.difficulty.checkpoint, "difficulty.checkpoint")
    check_device(job.device, "device")
    embedder = job.diversity.embedder
    if not embedder.strip():
        raise ValueError("diversity.embedder: empty; expected judge, or a model directory or hub name")
    if embedder != "judge" and looks_local(embedder):
        require_model_dir(embedder, "diversity.embedder")
    acc = job.accuracy
    if acc.teacher not in TEACHERS:
        raise ValueError(f"accuracy.teacher={acc.teacher!r}: expected one of {', '.join(TEACHERS)}")
    if acc.enabled and acc.teacher == "server":
        if acc.server.name != "openai":
            raise ValueError(f"accuracy.server.name={acc.server.name!r}: teacher=server asks an OpenAI-compatible "
                             "endpoint; expected openai")
        if not acc.server.base_url:
            raise ValueError("accuracy.server.base_url: teacher=server needs the endpoint's URL "
                             "(e.g. accuracy.server.base_url=http://127.0.0.1:8000/v1)")
        if not acc.server.served_model:
            raise ValueError("accuracy.server.served_model: teacher=server needs the model id the endpoint serves "
                             "(e.g. accuracy.server.served_model=deepseek-reasoner)")
    if acc.enabled and acc.teacher == "checkpoint":
        if not acc.checkpoint:
            raise ValueError("accuracy.checkpoint: teacher=checkpoint needs the teacher's model directory")
        require_model_dir(acc.checkpoint, "accuracy.checkpoint")
        check_device(acc.server.device, "accuracy.server.device")
    if not job.output.endswith(".jsonl"):
        raise ValueError(f"output={job.output!r}: the curated pairs are JSON lines; the path must end in .jsonl")
