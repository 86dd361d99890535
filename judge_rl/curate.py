"""`python -m judge_rl.curate [overrides]`: a small, hard, diverse, correct SFT init set (Think-J's LIMJ707).

Think-J (Huang et al., 2025, section 3.1) initialises its judge on 707 judgments chosen from a larger
preference pool by three filters, in this order; this module implements them for any preference source
(`data.loader` + `data.kwargs`, judge_rl.data.loaders) and writes judge_rl's own `pairs` JSONL, which the SFT
init reads back as its own set of traces (`sft.data={loader: pairs, kwargs: {path: <output>}}`, RL still training
on data.train), or as the whole training split (`data.train.loader=pairs '~data.train.kwargs'
'+data.train.kwargs={path: <output>}'`).

    python -m judge_rl.curate model=smollm2-135m data.kwargs.n=2048 limit=707
    python -m judge_rl.curate data.loader=skywork_preference '~data.kwargs' '+data.kwargs={path: skywork.parquet}' \
        accuracy.teacher=server accuracy.server.base_url=https://api.deepseek.com/v1 \
        accuracy.server.served_model=deepseek-reasoner accuracy.server.api_key_env=DEEPSEEK_API_KEY limit=707
    python -m judge_rl.curate accuracy.teacher=checkpoint accuracy.checkpoint=/models/Qwen2.5-32B-Instruct

What each filter does, exactly:

0. Input. The pairs are read, their pair_ids must be unique, and (`shuffle`, default true) they are
   shuffled once with `seed`; every later step, and `limit`, follows that order.
1. Difficulty (`difficulty.*`). Each pair is shown to the judge (`model`, with `difficulty.checkpoint`
   weights when given) once, in one order: the better response at (a) for exactly half the pairs
   (`balanced_positions`, seeded). The judge samples `samples` judgments (temperature `temperature`, at most
   `max_new_tokens` tokens each), parsed strictly by `prompt`. A judgment is right when it parses and names
   the better response. A pair whose `samples` judgments are all right is easy and dropped; a pair with at
   least one wrong or unparsed judgment is hard and kept. A pair whose judge prompt is longer than
   `model.max_prompt_length` tokens is dropped too (the judge could not be trained on it). Every pair's
   samples are appended to `<run_dir>/difficulty.jsonl` as soon as its chunk is sampled, keyed by the
   prompt's tokens and the sampling settings, so a crashed or re-run curation samples only the pairs it has
   no record for.
2. Diversity (`diversity.*`). Each remaining pair's question is embedded: with the judge itself
   (`embedder: judge`: the mean of its last hidden states over the question's tokens, no chat template), or
   with a sentence-transformers-style model (`embedder: <local dir or hub name>`, transformers AutoModel +
   AutoTokenizer, the same mean pooling). With `center: true` the mean embedding of these questions is
   subtracted first: a decoder's pooled states share one large common direction, so without centering
   16 distinct synthetic questions sit at cosine 0.91 on average (up to 0.995) under SmolLM2-135M;
   centered, they average about 0 and near-duplicates stay above 0.95. (Identical questions are at cosine 1
   either way.) Then a greedy pass in order: a question whose cosine with an earlier kept question is at
   least `threshold` (less 1e-6 for float rounding) is a near-duplicate of the first such kept question and
   is dropped; otherwise it is kept and starts a cluster. So each cluster keeps its first pair.
3. Accuracy (`accuracy.*`). A teacher writes a judgment of the pair in both orders, with `prompt`'s
   messages: `teacher: gold` reads the data's own traces (a pair without a trace for either order is
   dropped), `teacher: server` asks any OpenAI-compatible endpoint (`accuracy.server`: base_url,
   served_model, api_key_env, ...; greedy), `teacher: checkpoint` runs a local model directory
   (`accuracy.checkpoint`) with the hf server. Each output is read by `clip_trace` (with `clip: true`; else it
   must parse as it is), and the pair is kept only when both orders parse and name the better response (and,
   with `match_strength: true`, also give the pair's labelled strength). The two outputs become the pair's
   traces for positions a and b, which is what the SFT init reads (`judge_rl.updates.sft.trace_for_prompt`
   takes the thinking of each and re-renders the verdict from the pair's labels; both orders are trained).
   Teacher outputs are saved in `<run_dir>/teacher.jsonl` by request, so a re-run never asks again; failed
   requests are not saved and are asked again. With `limit`, pairs are sent chunk by chunk and the filter
   stops once `limit` pairs are kept: the rest are counted as not checked, never paid for.
4. Output. The first `limit` kept pairs (all with `limit: null`) are written to `output` (the `pairs`
   format, judge_rl.data.loaders.write_pairs) with their curated traces and `meta["curation"]`, then
   `counts.json` beside it: the count after each step and each filter's drop reasons (as Think-J's Table 1),
   also printed as a table; `<run_dir>/dropped.jsonl` names every dropped pair, its filter and its reason.

Clip (Think-J keeps only R1's final explanation, not its long reasoning), exactly, for one teacher output:
  a. an output that already parses under `prompt` keeps its verdict and its thinking, the thinking cut by rule
     e when it is longer than `max_thinking_chars` (a reasoning model that wrote its own reasoning as the
     prompt's `<think>` block, then the verdict line alone); rules b-d do not apply;
  b. else the output is split at its last `</think>`: the reasoning is the text before it (without `<think>`
     tags), the rest is the answer; an output without `</think>` (an API that returns the reasoning apart,
     e.g. DeepSeek's `reasoning_content`) is all answer, with no reasoning;
  c. the verdict is the shortest run of final lines of the answer that `prompt` parses as a verdict (for
     `strength`: the last non-blank line, `Therefore, Response (a) is better, and the strength is [[2]].`);
     no such run: the output is unparsed ("no verdict the prompt reads after the reasoning");
  d. the new thinking is the answer's text before the verdict (the final explanation); when that is blank,
     the reasoning instead; both blank: unparsed ("nothing to keep as thinking");
  e. a thinking longer than `max_thinking_chars` keeps only its end: the last `max_thinking_chars`
     characters, starting at the first sentence start inside them (after `.`, `!` or `?` and whitespace, or
     after a line break); with no sentence start there, at the first word start; else exactly there;
  f. the trace is `<think>\\n{thinking}\\n</think>\\n{verdict}` and must parse under `prompt` (it does, by c).

`run_curate(cfg)` is a plain function of a composed config (conf/curate.yaml); the Hydra entry point below and
the tests both call it. A bad config fails in `to_curate_config`, before any data or model loads, with one
line naming the key.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import hydra
from omegaconf import DictConfig

from judge_rl.cli import hydra_task
from judge_rl.config import DatasetSpec, ModelConfig, ServerConfig, check_ranges, typed_config, validate_model
from judge_rl.data.pairs import JudgeItem, PreferencePair, balanced_positions

REPO_ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = str(REPO_ROOT / "conf")
os.environ.setdefault("JUDGE_RL_ROOT", str(REPO_ROOT))

TEACHERS = ("gold", "server", "checkpoint")
FILTERS = ("difficulty", "diversity", "accuracy")
DEVICES = ("auto", "cpu", "cuda")
COUNTS_FILE = "counts.json"
DIFFICULTY_FILE = "difficulty.jsonl"
TEACHER_FILE = "teacher.jsonl"
DROPPED_FILE = "dropped.jsonl"

# --------------------------------------------------------------------------- config


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
    center: subtract the questions' mean embedding before the cosine (see the module docstring: without it a
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
class CurateConfig:
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
    seed: int = 42
    device: str = "auto"
    cache_dir: str = "~/.cache/judge_rl"
    output: str = "outputs/curate/curated.jsonl"
    run_dir: str = "outputs/curate"
    resume: bool = True


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


def _looks_local(path: str) -> bool:
    return path.startswith(("/", "./", "../", "~")) or Path(path).expanduser().exists()


def _model_dir(path: str, key: str) -> None:
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ValueError(f"{key}={path}: no such directory")
    if not (p / "config.json").exists():
        raise ValueError(f"{key}={path}: not a model directory (no config.json)")


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
    if job.device not in DEVICES:
        raise ValueError(f"device={job.device!r}: expected auto, cpu or cuda")
    embedder = job.diversity.embedder
    if not embedder.strip():
        raise ValueError("diversity.embedder: empty; expected judge, or a model directory or hub name")
    if embedder != "judge" and _looks_local(embedder):
        _model_dir(embedder, "diversity.embedder")
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
        _model_dir(acc.checkpoint, "accuracy.checkpoint")
        if acc.server.device not in DEVICES:
            raise ValueError(f"accuracy.server.device={acc.server.device!r}: expected auto, cpu or cuda")
    if not job.output.endswith(".jsonl"):
        raise ValueError(f"output={job.output!r}: the curated pairs are JSON lines; the path must end in .jsonl")


# --------------------------------------------------------------------------- clip


_SENTENCE_START = re.compile(r"(?:[.!?][\"')\]]*\s+|\n\s*)(?=\S)")
_WORD_START = re.compile(r"\s+(?=\S)")


def tail_at_sentence(text: str, max_chars: int) -> str:
    """The end of `text`, at most `max_chars` characters, starting at a sentence start (after `.`, `!` or `?`
    and whitespace, or after a line break); with none inside that window, at a word start; else exactly at
    the window's start. Text no longer than `max_chars` (whitespace stripped) is returned whole."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    start = len(text) - max_chars
    for pattern in (_SENTENCE_START, _WORD_START):
        for m in pattern.finditer(text):
            if m.end() >= start:
                return text[m.end():].strip()
    return text[start:].strip()


@dataclass(frozen=True)
class ClippedTrace:
    """A teacher output read for curation: `trace` in the prompt's format, or None and `error` saying why;
    `clipped` is True when the trace was rebuilt from a reasoning model's output (rules b-f)."""

    trace: str | None
    error: str | None
    clipped: bool = False


NO_VERDICT_AFTER_REASONING = "no verdict the prompt reads after the reasoning"
NOTHING_TO_KEEP = "nothing to keep as thinking"


def _verdict_suffix(answer: str, prompt) -> tuple[str, str] | None:
    """(explanation, verdict): the shortest run of final lines of `answer` that `prompt` reads as a verdict."""
    from judge_rl.prompts.think import think_block

    lines = answer.splitlines()
    for k in range(len(lines) - 1, -1, -1):
        if not lines[k].strip():
            continue
        verdict = "\n".join(lines[k:]).strip()
        if prompt.parse(think_block("x") + verdict).ok:
            return "\n".join(lines[:k]).strip(), verdict
    return None


def clip_trace(text: str, prompt, max_thinking_chars: int) -> ClippedTrace:
    """A teacher's output as a trace in `prompt`'s format (rules a-f of the module docstring)."""
    from judge_rl.prompts.think import THINK_CLOSE, THINK_OPEN, split_think

    if prompt.parse(text).ok:  # rule a
        after, _ = split_think(text)
        thinking = text.lstrip()[len(THINK_OPEN):].split(THINK_CLOSE, 1)[0]
        if len(thinking.strip()) <= max_thinking_chars:
            return ClippedTrace(text, None, False)
        return _rebuild(thinking, after.strip(), prompt, max_thinking_chars)
    if THINK_CLOSE in text:  # rule b
        reasoning, answer = text.rsplit(THINK_CLOSE, 1)
    else:
        reasoning, answer = "", text
    found = _verdict_suffix(answer, prompt)  # rule c
    if found is None:
        return ClippedTrace(None, NO_VERDICT_AFTER_REASONING)
    explanation, verdict = found
    thinking = _untagged(explanation) or _untagged(reasoning)  # rule d
    if not thinking:
        return ClippedTrace(None, NOTHING_TO_KEEP)
    return _rebuild(thinking, verdict, prompt, max_thinking_chars)


def _untagged(text: str) -> str:
    from judge_rl.prompts.think import THINK_CLOSE, THINK_OPEN

    return text.replace(THINK_OPEN, " ").replace(THINK_CLOSE, " ").strip()


def _rebuild(thinking: str, verdict: str, prompt, max_thinking_chars: int) -> ClippedTrace:
    """Rules e-f: the thinking's end in a `<think>` block, then the verdict; parsed once more."""
    from judge_rl.prompts.think import think_block

    trace = think_block(tail_at_sentence(_untagged(thinking), max_thinking_chars)) + verdict
    judgment = prompt.parse(trace)
    if not judgment.ok:  # the verdict parsed after a <think> block (rule c): only a parser change gets here
        return ClippedTrace(None, judgment.error)
    return ClippedTrace(trace, None, True)


# --------------------------------------------------------------------------- results and records


@dataclass
class Dropped:
    """A pair a filter dropped: the filter, a short reason (counted in counts.json) and details."""

    pair_id: str
    filter: str
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class FilterResult:
    """What one filter kept and dropped, plus its own counts (kept_because, reused, sampled, ...)."""

    kept: list[PreferencePair]
    dropped: list[Dropped]
    stats: dict[str, Any] = field(default_factory=dict)

    def summary(self, n_in: int) -> dict[str, Any]:
        return {"enabled": True, "in": n_in, "out": len(self.kept),
                "dropped": dict(Counter(d.reason for d in self.dropped)), **self.stats}


def read_jsonl_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of an append-only JSONL file; a line a crash left half written is passed over."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                yield record


def _append(path: Path, records: Sequence[dict[str, Any]]) -> None:
    with path.open("a", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --------------------------------------------------------------------------- the judge


@dataclass
class Judge:
    """The judge model loaded once and shared by the difficulty filter and the judge embedder."""

    model: Any
    tokenizer: Any
    identity: str


def load_judge(job: CurateConfig) -> Judge:
    """The judge (`model`, with `difficulty.checkpoint` weights when given) and its identity (name + weights hash)."""
    from judge_rl.models.identity import weights_fingerprint
    from judge_rl.models.loading import load_model, load_tokenizer, resolve_device

    tokenizer = load_tokenizer(job.model, job.cache_dir)
    model = load_model(job.model, job.cache_dir, resolve_device(job.device), checkpoint=job.difficulty.checkpoint,
                       seed=job.seed)
    return Judge(model, tokenizer, f"{job.model.name}:{weights_fingerprint(model)}")


# --------------------------------------------------------------------------- 1. difficulty


def difficulty_filter(
    pairs: Sequence[PreferencePair],
    judge: Judge,
    prompt,
    cfg: DifficultyConfig,
    *,
    seed: int,
    max_prompt_length: int,
    records_path: Path,
) -> FilterResult:
    """Keep the pairs on which at least one of `cfg.samples` sampled judgments is wrong or unparsed.

    Positions: `balanced_positions(pairs, seed)`. Samples are appended to `records_path` chunk by chunk, one
    record per pair keyed by the judge, the prompt's tokens and the sampling settings; pairs with a record
    are not sampled again."""
    import torch

    from judge_rl.reports.console import progress_bar
    from judge_rl.rollouts import encode_chat, sample_generate
    from judge_rl.servers import stable_hash

    items = balanced_positions(pairs, seed)
    saved = {r["key"]: r for r in read_jsonl_records(records_path) if "key" in r}
    kept, dropped = [], []
    because: Counter[str] = Counter()
    reused = 0
    todo: list[tuple[int, JudgeItem, list[int], str]] = []
    records: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(items):
        ids = encode_chat(judge.tokenizer, prompt.messages(item))
        if len(ids) > max_prompt_length:
            continue
        key = stable_hash({"judge": judge.identity, "prompt": ids, "samples": cfg.samples,
                           "temperature": cfg.temperature, "max_new_tokens": cfg.max_new_tokens})
        if key in saved:
            records[item.pair.pair_id] = saved[key]
            reused += 1
        else:
            todo.append((index, item, ids, key))
    if todo:
        with progress_bar("difficulty", len(todo)) as advance:
            for chunk in _chunks(todo, cfg.chunk_size):
                # each chunk seeded from `seed` and its first pair's place: a run is reproducible (a resumed run
                # samples only the missing pairs, in chunks of their own, so its draws differ from an unbroken run's)
                torch.manual_seed(seed * 1_000_003 + chunk[0][0])
                gens = sample_generate(judge.model, judge.tokenizer, [ids for _, _, ids, _ in chunk],
                                       num_samples=cfg.samples, max_new_tokens=cfg.max_new_tokens,
                                       batch_size=cfg.batch_size, temperature=cfg.temperature)
                new = []
                for (_, item, _, key), samples in zip(chunk, gens):
                    judgments = [prompt.parse(g.text) for g in samples]
                    record = {
                        "key": key,
                        "pair_id": item.pair.pair_id,
                        "position": item.chosen_position,
                        "outputs": [g.text for g in samples],
                        "winners": [j.winner for j in judgments],
                        "errors": [j.error for j in judgments],
                        "right": sum(j.ok and j.winner == item.chosen_position for j in judgments),
                    }
                    records[item.pair.pair_id] = record
                    new.append(record)
                _append(records_path, new)
                advance(len(chunk))
    for item in items:
        pair = item.pair
        record = records.get(pair.pair_id)
        if record is None:
            dropped.append(Dropped(pair.pair_id, "difficulty", "prompt longer than model.max_prompt_length",
                                   {"max_prompt_length": max_prompt_length}))
            continue
        n, right = len(record["outputs"]), record["right"]
        if right == n:
            dropped.append(Dropped(pair.pair_id, "difficulty", f"easy: all {n} judgments right",
                                   {"position": record["position"]}))
            continue
        wrong = sum(err is None and w != record["position"] for w, err in zip(record["winners"], record["errors"]))
        because["a wrong verdict" if wrong else "unparsed judgments only"] += 1
        kept.append(dataclasses.replace(pair, meta={**pair.meta, "curation": {
            **pair.meta.get("curation", {}), "judge_right": right, "judge_samples": n}}))
    return FilterResult(kept, dropped, {"kept_because": dict(because), "sampled": len(todo), "reused": reused})


# --------------------------------------------------------------------------- 2. diversity


def embed_texts(model, tokenizer, texts: Sequence[str], *, batch_size: int, max_length: int):
    """Mean-pooled last hidden states of `model`'s base transformer, one float32 row per text.

    Right padding, so that a text's tokens sit at the same positions whatever it is batched with (a causal
    model's real tokens then never see the padding): identical texts get identical embeddings."""
    import torch

    base = getattr(model, "base_model", model)
    device = next(model.parameters()).device
    side = tokenizer.padding_side
    tokenizer.padding_side = "right"
    rows = []
    try:
        with torch.no_grad():
            for chunk in _chunks(list(texts), batch_size):
                enc = tokenizer(list(chunk), padding=True, truncation=True, max_length=max_length,
                                return_tensors="pt", add_special_tokens=True)
                mask = enc["attention_mask"].to(device)
                out = base(input_ids=enc["input_ids"].to(device), attention_mask=mask)
                hidden = out.last_hidden_state.float()
                weights = mask.unsqueeze(-1).float()
                rows.append(((hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)).cpu())
    finally:
        tokenizer.padding_side = side
    return torch.cat(rows) if rows else torch.zeros((0, 1))


def cosine_matrix_rows(embeddings, center: bool):
    """Unit rows for cosines: optionally centered on their mean. Rows left at zero by centering (equal to the
    mean) are given one extra shared dimension, so that they are at cosine 1 with each other (they are
    identical) and 0 with every other row."""
    import torch

    x = embeddings.float()
    if center and len(x) > 1:
        scale = x.norm(dim=1, keepdim=True).clamp(min=1e-12)
        x = x - x.mean(0, keepdim=True)
        zero = (x.norm(dim=1, keepdim=True) <= 1e-6 * scale).float()
        x = torch.cat([x * (1 - zero), zero], dim=1)
    return torch.nn.functional.normalize(x, dim=1)


def near_duplicates(embeddings, threshold: float, *, center: bool = True, block: int = 256) -> list[tuple[int | None, float]]:
    """Greedy leader clustering in row order: for each row, (index of the first kept row at cosine >= threshold
    (less 1e-6), that cosine) when it is a near-duplicate, else (None, its highest cosine to a kept row, or 0).
    Kept rows are the ones with None; each cluster keeps its first row."""
    import torch

    x = cosine_matrix_rows(embeddings, center)
    bar = threshold - 1e-6
    leaders: list[int] = []
    result: list[tuple[int | None, float]] = []
    for start in range(0, len(x), block):
        rows = x[start : start + block]
        to_leaders = rows @ x[leaders].T if leaders else torch.zeros((len(rows), 0))
        within = rows @ rows.T
        block_leaders: list[int] = []  # offsets within this block
        for r in range(len(rows)):
            sims = torch.cat([to_leaders[r], within[r, block_leaders]]) if block_leaders else to_leaders[r]
            owners = leaders + [start + b for b in block_leaders]
            hit = (sims >= bar).nonzero()
            if len(hit):
                first = int(hit[0])
                result.append((owners[first], float(sims[first])))
            else:
                result.append((None, float(sims.max()) if len(sims) else 0.0))
                block_leaders.append(r)
        leaders += [start + b for b in block_leaders]
    return result


def load_embedder(name: str, judge: Judge | None, device: str):
    """(model, tokenizer) that embed questions: the judge's, or a sentence-transformers-style model."""
    from transformers import AutoModel, AutoTokenizer

    from judge_rl.models.loading import resolve_device

    if name == "judge":
        if judge is None:
            raise ValueError("diversity.embedder=judge: the judge model was not loaded")
        return judge.model, judge.tokenizer
    path = str(Path(name).expanduser()) if _looks_local(name) else name
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    model = AutoModel.from_pretrained(path).to(resolve_device(device)).eval()
    return model, tokenizer


def diversity_filter(pairs: Sequence[PreferencePair], model, tokenizer, cfg: DiversityConfig) -> FilterResult:
    """Drop each pair whose question is a near-duplicate (cosine >= cfg.threshold) of an earlier kept one."""
    embeddings = embed_texts(model, tokenizer, [p.question for p in pairs], batch_size=cfg.batch_size,
                             max_length=cfg.max_length)
    kept, dropped = [], []
    for pair, (owner, cosine) in zip(pairs, near_duplicates(embeddings, cfg.threshold, center=cfg.center)):
        if owner is None:
            kept.append(pair)
        else:
            dropped.append(Dropped(pair.pair_id, "diversity", "near-duplicate question",
                                   {"duplicate_of": pairs[owner].pair_id, "cosine": round(cosine, 6)}))
    return FilterResult(kept, dropped, {"clusters": len(kept)})


# --------------------------------------------------------------------------- 3. accuracy


class Teacher:
    """Writes a judgment for each item: the gold trace, or a server's answer (saved in teacher.jsonl by request
    key, so it is asked once). `outputs(items)` returns, per item, (text, None) or (None, failure reason)."""

    def __init__(self, job: CurateConfig, prompt, records_path: Path):
        self.job = job
        self.acc = job.accuracy
        self.prompt = prompt
        self.records_path = records_path
        self.server = None
        self.saved = {r["key"]: r for r in read_jsonl_records(records_path) if "key" in r and r.get("text") is not None}
        self.requests = 0
        self.reused = 0

    @property
    def name(self) -> str:
        if self.acc.teacher == "server":
            return f"server:{self.acc.server.base_url}:{self.acc.server.served_model}"
        if self.acc.teacher == "checkpoint":
            return f"checkpoint:{self.acc.checkpoint}"
        return "gold"

    def _server(self):
        if self.server is None:
            if self.acc.teacher == "server":
                from judge_rl.servers import OpenAIServer

                s = self.acc.server
                self.server = OpenAIServer(base_url=s.base_url, model=s.served_model, api_key_env=s.api_key_env,
                                           concurrency=s.concurrency, timeout_s=s.timeout_s,
                                           max_retries=s.max_retries, backoff_s=s.backoff_s)
            else:
                from judge_rl.servers import build_server

                path = str(Path(self.acc.checkpoint).expanduser())
                teacher_model = ModelConfig(name=f"teacher-{Path(path).name}", source="local", path=path,
                                            dtype=self.job.model.dtype)
                self.server = build_server(dataclasses.replace(self.acc.server, name="hf"), teacher_model,
                                           self.job.cache_dir, None, self.job.seed)
        return self.server

    def outputs(self, items: Sequence[JudgeItem]) -> list[tuple[str | None, str | None]]:
        if self.acc.teacher == "gold":
            return [(it.trace, None) if it.trace else (None, "no gold trace") for it in items]
        server = self._server()
        budget = self.acc.server.max_new_tokens
        messages = [self.prompt.messages(it) for it in items]
        keys = [server.request_key(m, budget) for m in messages]
        results: list[tuple[str | None, str | None]] = [(None, None)] * len(items)
        ask = []
        for i, key in enumerate(keys):
            if key in self.saved:
                results[i] = (self.saved[key]["text"], None)
                self.reused += 1
                continue
            too_long = getattr(server, "too_long", None)
            reason = too_long(messages[i], budget) if too_long is not None else None
            if reason is not None:
                results[i] = (None, f"teacher request failed: {reason}")
            else:
                ask.append(i)
        if ask:
            completions = server.complete([messages[i] for i in ask], max_new_tokens=budget)
            self.requests += len(ask)
            new = []
            for i, c in zip(ask, completions):
                if c.ok:
                    results[i] = (c.text, None)
                    record = {"key": keys[i], "pair_id": items[i].pair.pair_id, "position": items[i].chosen_position,
                              "text": c.text, "finished": c.finished}
                    self.saved[keys[i]] = record
                    new.append(record)
                else:
                    results[i] = (None, f"teacher request failed: {c.error}")
            _append(self.records_path, new)
        return results

    def close(self) -> None:
        close = getattr(self.server, "close", None)
        if close is not None:
            close()


def judge_output(text: str, item: JudgeItem, prompt, acc: AccuracyConfig) -> ClippedTrace:
    """One teacher output checked against the gold label: the trace, or why it does not count. Reasons:
    "unparsed: <parser reason>", "wrong verdict", "strength differs from the label"."""
    read = clip_trace(text, prompt, acc.max_thinking_chars) if acc.clip else ClippedTrace(text, None)
    if read.trace is None:
        return ClippedTrace(None, f"unparsed: {read.error}")
    judgment = prompt.parse(read.trace)
    if not judgment.ok:
        return ClippedTrace(None, f"unparsed: {judgment.error}")
    if judgment.winner != item.chosen_position:
        return ClippedTrace(None, "wrong verdict")
    if acc.match_strength and item.pair.strength is not None and judgment.strength is not None \
            and judgment.strength != item.pair.strength:
        return ClippedTrace(None, "strength differs from the label")
    return read


def accuracy_filter(pairs: Sequence[PreferencePair], teacher: Teacher, prompt, acc: AccuracyConfig,
                    *, limit: int | None) -> FilterResult:
    """Keep a pair when the teacher's judgments of both orders reach the gold verdict; they become its traces
    (`traces = {"a": ..., "b": ...}`). With `limit`, stops once `limit` pairs are kept (the rest: not_checked)."""
    from judge_rl.reports.console import progress_bar

    kept, dropped = [], []
    clipped = checked = 0
    per_chunk = max(1, acc.server.chunk_size // 2)  # requests per chunk: both orders of each pair
    with progress_bar("accuracy", len(pairs)) as advance:
        for chunk in _chunks(list(pairs), per_chunk):
            if limit is not None and len(kept) >= limit:
                break
            items = [JudgeItem(p, pos) for p in chunk for pos in ("a", "b")]
            outputs = teacher.outputs(items)
            for n, pair in enumerate(chunk):
                checked += 1
                reads = []
                for item, (text, failure) in zip(items[2 * n : 2 * n + 2], outputs[2 * n : 2 * n + 2]):
                    reads.append(ClippedTrace(None, failure) if text is None else judge_output(text, item, prompt, acc))
                failing = [(pos, r) for pos, r in zip("ab", reads) if r.trace is None]
                if failing:
                    dropped.append(Dropped(pair.pair_id, "accuracy", failing[0][1].error,
                                           {"positions": {pos: r.error for pos, r in failing}}))
                    continue
                clipped += sum(r.clipped for r in reads)
                curation = {**pair.meta.get("curation", {}), "teacher": teacher.name,
                            "clipped": [pos for pos, r in zip("ab", reads) if r.clipped]}
                kept.append(dataclasses.replace(pair, traces={"a": reads[0].trace, "b": reads[1].trace},
                                                meta={**pair.meta, "curation": curation}))
            advance(len(chunk))
    stats = {"teacher": teacher.name, "checked": checked, "not_checked": len(pairs) - checked,
             "clipped_traces": clipped, "requests": teacher.requests, "reused": teacher.reused}
    return FilterResult(kept, dropped, stats)


# --------------------------------------------------------------------------- the app


def load_input(job: CurateConfig) -> tuple[list[PreferencePair], int]:
    """The input pairs (shuffled when `shuffle`), and how many rows the loader skipped."""
    from judge_rl.data.loaders import load_dataset_pairs

    loaded = load_dataset_pairs(job.data.loader, **dict(job.data.kwargs))
    pairs = list(loaded)
    seen: set[str] = set()
    for pair in pairs:
        if pair.pair_id in seen:
            raise ValueError(f"data: pair_id {pair.pair_id!r} occurs twice; curation keys its records on pair ids")
        seen.add(pair.pair_id)
    if job.shuffle:
        random.Random(job.seed).shuffle(pairs)
    return pairs, len(loaded.skipped)


def counts_table(counts: dict[str, Any]) -> str:
    """counts.json as a small plain-text table: the pairs after each step and the drop reasons."""
    rows = [("input", counts["input"], "")]
    for name in FILTERS:
        f = counts["filters"][name]
        if not f["enabled"]:
            rows.append((name, counts[f"after_{name}"], "(off)"))
            continue
        reasons = "; ".join(f"{reason}: {n}" for reason, n in sorted(f["dropped"].items(), key=lambda kv: -kv[1]))
        if f.get("not_checked"):
            reasons = "; ".join(x for x in (reasons, f"not checked (limit reached): {f['not_checked']}") if x)
        rows.append((name, counts[f"after_{name}"], reasons))
    rows.append(("written", counts["written"], f"limit {counts['limit']}" if counts["limit"] is not None else ""))
    width = max(len(r[0]) for r in rows)
    lines = [f"{'step':<{width}}  {'pairs':>6}  dropped"]
    lines += [f"{name:<{width}}  {n:>6}  {why}".rstrip() for name, n, why in rows]
    return "\n".join(lines)


def _needs_strength(prompt) -> bool:
    try:
        prompt.verdict("a", None)
    except ValueError:
        return True
    return False


def run_curate(cfg: DictConfig) -> dict[str, Any]:
    """Curate `data` into `output` (see the module docstring); returns the counts written to counts.json."""
    import gc

    from judge_rl.data.loaders import write_pairs
    from judge_rl.reports.console import console
    from judge_rl.rundir import claim_run_dir

    job = to_curate_config(cfg)
    prompt = curation_prompt(job.prompt)
    output = Path(job.output).expanduser()
    with claim_run_dir(Path(job.run_dir), asdict(job), resume=job.resume, neutral=CURATE_NEUTRAL_KEYS,
                       console=console) as run_dir:
        pairs, skipped_rows = load_input(job)
        counts: dict[str, Any] = {"input": len(pairs), "input_rows_skipped": skipped_rows, "filters": {}}
        dropped: list[Dropped] = []
        judge = None
        needs_judge = job.difficulty.enabled or (job.diversity.enabled and job.diversity.embedder == "judge")
        if needs_judge and pairs:
            judge = load_judge(job)
        current = pairs
        for name in FILTERS:
            spec = getattr(job, name)
            if not spec.enabled or not current:
                counts["filters"][name] = {"enabled": bool(spec.enabled), "in": len(current), "out": len(current),
                                           "dropped": {}}
                counts[f"after_{name}"] = len(current)
                continue
            if name == "difficulty":
                result = difficulty_filter(current, judge, prompt, job.difficulty, seed=job.seed,
                                           max_prompt_length=job.model.max_prompt_length,
                                           records_path=run_dir / DIFFICULTY_FILE)
            elif name == "diversity":
                model, tokenizer = load_embedder(job.diversity.embedder, judge, job.device)
                result = diversity_filter(current, model, tokenizer, job.diversity)
                del model, tokenizer
            else:
                judge = None  # free the judge before a local teacher loads
                gc.collect()
                teacher = Teacher(job, prompt, run_dir / TEACHER_FILE)
                try:
                    result = accuracy_filter(current, teacher, prompt, job.accuracy, limit=job.limit)
                finally:
                    teacher.close()
            counts["filters"][name] = result.summary(len(current))
            counts[f"after_{name}"] = len(result.kept)
            dropped += result.dropped
            current = result.kept
        written = current if job.limit is None else current[: job.limit]
        counts["written"] = len(written)
        counts["limit"] = job.limit
        counts["not_written_over_limit"] = len(current) - len(written)
        counts["output"] = str(output)
        write_pairs(written, output)
        counts_path = output.parent / COUNTS_FILE
        tmp = counts_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(counts, indent=2) + "\n")
        tmp.replace(counts_path)
        with (run_dir / DROPPED_FILE).open("w", encoding="utf-8") as f:
            for d in dropped:
                f.write(json.dumps({"pair_id": d.pair_id, "filter": d.filter, "reason": d.reason, **d.detail},
                                   ensure_ascii=False) + "\n")
        console.print(counts_table(counts), markup=False, highlight=False)
        console.print(f"curated pairs: {output} ({len(written)}); counts: {counts_path}", markup=False)
        unlabelled = sum(p.strength is None for p in written)
        if unlabelled and _needs_strength(prompt):
            console.print(f"[yellow]{unlabelled} curated pairs have no strength label: prompt={job.prompt} needs one "
                          "to render their SFT verdicts[/yellow]")
    return counts


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="curate")
def main(cfg: DictConfig) -> None:
    """`python -m judge_rl.curate`: Hydra composes conf/curate.yaml with the command line's overrides."""
    hydra_task(run_curate)(cfg)


if __name__ == "__main__":
    main()
