"""Loaders that turn published preference-data formats into `PreferencePair`s.

Why: each public data set spells "question, better answer, worse answer" its own way (HH-RLHF full
transcripts, LLMBar's output_1/output_2/label, HelpSteer2's signed preference strength, Skywork's
chat-message lists). Every loader here parses one format, reports a malformed row by file and row
instead of guessing or silently dropping it, and returns the same `LoadedPairs` so that training and
evaluation never care where a pair came from.

Every loader takes:
    path: a local .json (a JSON list, or JSON lines), .jsonl, .jsonl.gz/.json.gz or .parquet file;
        or, when no such file exists and it looks like "owner/name", a Hugging Face hub dataset
        read with `datasets.load_dataset(path, split=split, **hub_kwargs)`.
    on_error: "raise" (default) raises ValueError("<file> row <n> (<numbering>): <reason>") at the
        first malformed row; "skip" skips it and records that same line in `LoadedPairs.skipped`.
        Rows are numbered by 1-based line in JSON-lines files and by 0-based index in JSON lists,
        parquet files and hub datasets; the message says which. A JSON-lines line or parquet row that is
        not valid UTF-8 is a malformed row ("not valid UTF-8 (byte 0x.. at position <n>)"); a JSON list
        file that is not valid UTF-8 is decoded as a whole and raises ValueError even with "skip".
    limit: keep only the first `limit` valid pairs (rows after them are not read).
    source: overrides the pair source, by default "<dataset>/<file stem>" (e.g. "llmbar/natural")
        or "<dataset>/<split>" for a hub dataset. Pair ids are "<source>-<row number>".
A row with `trace_a`/`trace_b` fields (or a `traces` dict keyed "a"/"b") keeps them as the pair's
gold traces.
"""

from __future__ import annotations

import gzip
import inspect
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from judge_rl.data.pairs import PreferencePair
from judge_rl.data.synthetic import generate_pairs
from judge_rl.registry import Registry

OnError = Literal["raise", "skip"]
T = TypeVar("T")


@dataclass(frozen=True)
class LoadedPairs(Sequence[PreferencePair]):
    """The pairs a loader read, and one "<file> row <n> (...): <reason>" line per row it skipped.

    A read-only sequence of pairs (len, index, iterate, slice); `pairs` is the plain list.
    """

    pairs: list[PreferencePair]
    skipped: list[str] = field(default_factory=list)
    per_source: dict[str, int] = field(default_factory=dict)  # a mixing loader's pairs per set (real_pairs)

    @overload
    def __getitem__(self, index: int) -> PreferencePair: ...

    @overload
    def __getitem__(self, index: slice) -> list[PreferencePair]: ...

    def __getitem__(self, index: int | slice) -> PreferencePair | list[PreferencePair]:
        return self.pairs[index]

    def __len__(self) -> int:
        return len(self.pairs)

    def __iter__(self) -> Iterator[PreferencePair]:
        return iter(self.pairs)

    @property
    def n_skipped(self) -> int:
        return len(self.skipped)


Loader = Callable[..., LoadedPairs]
# Loaders are registered by decorator, here and in the modules listed, imported on the first lookup: `policy_task`
# (judge_rl/policy/tasks/pairs.py) builds its pairs from the policy job's task, which sits above the data;
# `real_pairs` (judge_rl/data/real.py) reads the real sets through the loaders here.
DATASETS: Registry[Loader] = Registry("dataset", modules=("judge_rl.policy.tasks.pairs", "judge_rl.data.real"))


def load_dataset_pairs(name: str, **kwargs: Any) -> LoadedPairs:
    """Load pairs with the loader registered as `name` (see DATASETS.names())."""
    return DATASETS.get(name)(**kwargs)


# loader -> the local files a call with these kwargs reads, for the loaders whose files are not their `path` argument
FILES_READ: dict[str, Callable[[Mapping[str, Any]], list[Path]]] = {}


def files_read(loader: str, kwargs: Mapping[str, Any]) -> list[Path]:
    """The local files `load_dataset_pairs(loader, **kwargs)` reads: `path` for the file loaders, what the loader
    declares in FILES_READ otherwise (the real-pair loader's sets), none for generated data. What a job's benchmarks
    must not share with its training data."""
    DATASETS.get(loader)  # imports the module that registers it, and its FILES_READ entry
    if loader in FILES_READ:
        return FILES_READ[loader](kwargs)
    path = kwargs.get("path")
    return [Path(str(path))] if path is not None and not is_missing_local_file(str(path)) else []


def check_loader_kwargs(loader: str, kwargs: dict[str, Any], key: str) -> None:
    """Check, before anything loads, that `load_dataset_pairs(loader, **kwargs)` can be called.

    `key` is the config prefix naming them (e.g. "data.eval" for `data.eval.loader`/`data.eval.kwargs`).
    Raises a one-line ValueError when `loader` is not registered, when a kwarg is not an argument of
    the registered function, or when a required argument (one without a default) is not given:
        data.eval.loader: unknown loader 'x'; known loaders: hh_rlhf, llmbar, ...
        data.eval.kwargs.limt: loader 'synthetic' has no argument 'limt'; its arguments: n, seed, ...
        data.eval.kwargs: loader 'synthetic' is missing required argument 'n'; its arguments: n, seed, ...
    """
    if loader not in DATASETS:
        raise ValueError(f"{key}.loader: unknown loader {loader!r}; known loaders: {', '.join(DATASETS.names())}")
    if not isinstance(kwargs, Mapping):
        raise ValueError(f"{key}.kwargs must be a mapping of argument names to values, got {type(kwargs).__name__}")
    params = inspect.signature(DATASETS.get(loader)).parameters.values()
    by_keyword = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    names = [p.name for p in by_keyword]
    listed = f"its arguments: {', '.join(names) if names else '(none)'}"
    given = [str(name) for name in kwargs]
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        unknown = [name for name in given if name not in names]
        if len(unknown) == 1:
            raise ValueError(f"{key}.kwargs.{unknown[0]}: loader {loader!r} has no argument {unknown[0]!r}; {listed}")
        if unknown:
            quoted = ", ".join(repr(name) for name in unknown)
            raise ValueError(f"{key}.kwargs: loader {loader!r} has no arguments {quoted}; {listed}")
    missing = [p.name for p in by_keyword if p.default is p.empty and p.name not in given]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        quoted = ", ".join(repr(name) for name in missing)
        raise ValueError(f"{key}.kwargs: loader {loader!r} is missing required argument{plural} {quoted}; {listed}")


class MalformedRow(ValueError):
    """A row that cannot be read as a preference pair; the message is the reason."""


@dataclass(frozen=True)
class _Parsed:
    question: str
    chosen: str
    rejected: str
    strength: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Unreadable:
    reason: str


@dataclass(frozen=True)
class _Rows:
    location: str  # the file path, or "hub dataset <name> split <split>"
    stem: str  # default source suffix
    numbering: str  # "1-based line" or "0-based index"
    rows: Iterator[tuple[int, Any]]


# --------------------------------------------------------------------------- reading rows

_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_SUFFIXES = (".gz", ".jsonl", ".json", ".parquet")


def _stem(path: Path) -> str:
    name = path.name
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                name, changed = name[: -len(suffix)], True
    return name


def _bad_utf8(exc: UnicodeDecodeError) -> str:
    """ "byte 0x.. at position <n>": the first undecodable byte and its 0-based offset in what was decoded."""
    return f"byte 0x{exc.object[exc.start]:02x} at position {exc.start}"


def _json_lines(path: Path, opener: Callable[..., Any]) -> Iterator[tuple[int, Any]]:
    """(1-based line, value) per non-blank line; a line that is not valid UTF-8 or not JSON is `_Unreadable`.

    Lines are read as bytes and decoded one by one, so that one undecodable line is one malformed row
    (its position is the byte offset within the line) rather than an error for the whole file."""
    with opener(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, _Unreadable(f"not valid UTF-8 ({_bad_utf8(exc)})")
                continue
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, _Unreadable(f"invalid JSON ({exc.msg} at column {exc.colno})")


def _json_list_or_lines(path: Path, opener: Callable[..., Any]) -> list[Any] | None:
    """The rows of a .json file holding a JSON list, or None when it holds JSON lines instead.

    A JSON list is decoded as a whole, so invalid UTF-8 anywhere in it is an error for the whole file,
    named by byte offset (in the decompressed text of a .gz) and line."""
    with opener(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not raw[: exc.start].decode("utf-8").lstrip().startswith("["):
            return None  # JSON lines: the bad line is one malformed row
        where = "the decompressed text" if path.name.endswith(".gz") else "the file"
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"{path}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte offset {exc.start} of {where}, "
            f"line {line}); a JSON list is decoded as a whole, so no row can be skipped "
            "(on_error='skip' does not apply): fix or re-encode the file"
        ) from None
    if not text.lstrip().startswith("["):
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from None


def _parquet_rows(path: Path) -> list[Any]:
    """The rows of a parquet file as dicts; a row with a string that is not valid UTF-8 is `_Unreadable`
    (parquet does not check the UTF-8 of string columns, pyarrow only fails on converting them)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    try:
        return table.to_pylist()
    except UnicodeDecodeError:
        pass  # find the bad rows column by column, value by value
    columns: dict[str, list[Any]] = {}
    bad: dict[int, str] = {}
    for name in table.column_names:
        column = table.column(name)
        try:
            columns[name] = column.to_pylist()
            continue
        except UnicodeDecodeError:
            pass
        values: list[Any] = []
        for i in range(len(column)):
            try:
                values.append(column[i].as_py())
            except UnicodeDecodeError as exc:
                values.append(None)
                bad.setdefault(i, f"not valid UTF-8 ({_bad_utf8(exc)} of field {name!r})")
        columns[name] = values
    return [
        _Unreadable(bad[i]) if i in bad else {name: values[i] for name, values in columns.items()}
        for i in range(table.num_rows)
    ]


def is_missing_local_file(path: str | Path) -> bool:
    """True when `path` names a local data file (not a hub dataset name) that does not exist."""
    p = Path(path)
    if p.exists():
        return False
    return isinstance(path, Path) or p.suffix in _SUFFIXES or not _HUB_NAME.match(str(path))


def _open_rows(path: str | Path, split: str, hub_kwargs: dict[str, Any] | None) -> _Rows:
    p = Path(path)
    if p.is_file():
        opener: Callable[..., Any] = gzip.open if p.name.endswith(".gz") else open
        base = p.name.removesuffix(".gz")
        if base.endswith(".parquet"):
            return _Rows(str(p), _stem(p), "0-based index", iter(enumerate(_parquet_rows(p))))
        if base.endswith(".json"):
            data = _json_list_or_lines(p, opener)  # None: JSON lines, as `datasets` writes .json
            if data is not None:
                return _Rows(str(p), _stem(p), "0-based index", iter(enumerate(data)))
        if base.endswith((".json", ".jsonl")):
            return _Rows(str(p), _stem(p), "1-based line", _json_lines(p, opener))
        raise ValueError(f"{p}: unsupported file type (expected .json, .jsonl, .json(l).gz or .parquet)")
    if p.exists():
        raise ValueError(f"{p} is not a file")
    if is_missing_local_file(path):
        raise FileNotFoundError(f"no such data file: {path}")
    import datasets  # heavy, and only needed for the hub

    data = datasets.load_dataset(str(path), split=split, **(hub_kwargs or {}))
    return _Rows(f"hub dataset {path} split {split}", split, "0-based index", iter(enumerate(data)))


def _traces(record: dict[str, Any]) -> dict[str, str] | None:
    raw = record.get("traces")
    if raw is not None:
        if not isinstance(raw, dict) or not raw or set(raw) - {"a", "b"}:
            raise MalformedRow("traces must be a dict with keys 'a' and/or 'b'")
        traces = {k: v for k, v in raw.items() if v is not None}
    else:
        traces = {pos: record[f"trace_{pos}"] for pos in ("a", "b") if record.get(f"trace_{pos}") is not None}
    for pos, trace in traces.items():
        if not isinstance(trace, str):
            raise MalformedRow(f"trace for position {pos!r} is not a string")
    return traces or None


def read_rows(
    path: str | Path,
    build: Callable[[str, int, dict[str, Any]], T],
    *,
    dataset: str,
    split: str,
    limit: int | None,
    on_error: OnError,
    source: str | None,
    hub_kwargs: dict[str, Any] | None,
    keep: Callable[[dict[str, Any]], bool] | None = None,
) -> tuple[list[T], list[str]]:
    """Read a local file or hub dataset row by row: `build(source, row_number, record)` turns a row into
    an object or raises `MalformedRow`; returns the objects and one "<file> row <n> (...): <reason>" line
    per skipped row. Shared by the preference loaders here and the benchmark loaders."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    rows = _open_rows(path, split, hub_kwargs)
    src = source or f"{dataset}/{rows.stem}"
    built: list[T] = []
    skipped: list[str] = []
    try:
        for number, record in rows.rows:
            if limit is not None and len(built) >= limit:
                break
            try:
                if isinstance(record, _Unreadable):
                    raise MalformedRow(record.reason)
                if not isinstance(record, dict):
                    raise MalformedRow(f"row is a {type(record).__name__}, not an object")
                if keep is not None and not keep(record):
                    continue
                built.append(build(src, number, record))
            except MalformedRow as exc:
                message = f"{rows.location} row {number} ({rows.numbering}): {exc}"
                if on_error == "raise":
                    raise ValueError(message) from None
                skipped.append(message)
    finally:
        close = getattr(rows.rows, "close", None)
        if close is not None:
            close()  # a JSON-lines file left open by `limit`
    return built, skipped


def pair_builder(parse: Callable[[dict[str, Any]], _Parsed]) -> Callable[[str, int, dict[str, Any]], PreferencePair]:
    """A `read_rows` builder making a `PreferencePair` from `parse`'s reading of a row."""

    def build(src: str, number: int, record: dict[str, Any]) -> PreferencePair:
        parsed = parse(record)
        if parsed.chosen.strip() == parsed.rejected.strip():
            raise MalformedRow("chosen and rejected responses are identical")
        return PreferencePair(
            pair_id=f"{src}-{number}",
            source=src,
            question=parsed.question,
            chosen=parsed.chosen,
            rejected=parsed.rejected,
            strength=parsed.strength,
            traces=_traces(record),
            meta={"row": number, **parsed.meta},
        )

    return build


def _load(path: str | Path, parse: Callable[[dict[str, Any]], _Parsed], **kwargs: Any) -> LoadedPairs:
    pairs, skipped = read_rows(path, pair_builder(parse), **kwargs)
    return LoadedPairs(pairs, skipped)


def require_text(record: dict[str, Any], name: str) -> str:
    if name not in record or record[name] is None:
        raise MalformedRow(f"missing field {name!r}")
    value = record[name]
    if not isinstance(value, str):
        raise MalformedRow(f"field {name!r} is a {type(value).__name__}, not a string")
    return value


def _int(record: dict[str, Any], name: str) -> int:
    if name not in record or record[name] is None:
        raise MalformedRow(f"missing field {name!r}")
    value = record[name]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedRow(f"field {name!r} must be an integer, got {value!r}")
    return value


# --------------------------------------------------------------------------- formats

ASSISTANT = "\n\nAssistant:"


def parse_hh_rlhf(record: dict[str, Any]) -> _Parsed:
    """Split two HH-RLHF transcripts into their shared prefix and final assistant replies.

    Each transcript is cut at its own last "\\n\\nAssistant:"; the two prefixes must be identical,
    otherwise the transcripts differ before their final reply (or share nothing) and the row is
    malformed. The question is the prefix without its trailing "Assistant:" marker, turns kept.
    """
    chosen, rejected = require_text(record, "chosen"), require_text(record, "rejected")
    cut_c, cut_r = chosen.rfind(ASSISTANT), rejected.rfind(ASSISTANT)
    for name, cut in (("chosen", cut_c), ("rejected", cut_r)):
        if cut < 0:
            raise MalformedRow(f"{name} has no '\\n\\nAssistant:' turn")
    prefix_c, prefix_r = chosen[: cut_c + len(ASSISTANT)], rejected[: cut_r + len(ASSISTANT)]
    if prefix_c != prefix_r:
        common = _common_prefix(chosen, rejected)
        if ASSISTANT not in common:
            raise MalformedRow("chosen and rejected share no conversation prefix")
        shared_turns = common.count(ASSISTANT)
        raise MalformedRow(
            "chosen and rejected differ before their final assistant reply "
            f"(they share {shared_turns} assistant turn(s); chosen has {chosen.count(ASSISTANT)}, "
            f"rejected {rejected.count(ASSISTANT)})"
        )
    question = prefix_c[: -len(ASSISTANT)].strip()
    if not question:
        raise MalformedRow("chosen and rejected share no conversation prefix")
    return _Parsed(question, chosen[len(prefix_c):].strip(), rejected[len(prefix_r):].strip())


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]


def parse_llmbar(record: dict[str, Any]) -> _Parsed:
    """LLMBar format: input, output_1, output_2, label (1 or 2: the better output)."""
    question = require_text(record, "input")
    out1, out2 = require_text(record, "output_1"), require_text(record, "output_2")
    label = _int(record, "label")
    if label not in (1, 2):
        raise MalformedRow(f"label must be 1 or 2, got {label}")
    chosen, rejected = (out1, out2) if label == 1 else (out2, out1)
    return _Parsed(question, chosen, rejected, None, {"label": label})


def parse_helpsteer2_preference(record: dict[str, Any]) -> _Parsed:
    """HelpSteer2 preference format: prompt, response_1, response_2, preference_strength in -3..3.

    Negative strength means response_1 is better; 0 is a tie (no preference: malformed). The pair's
    strength is |preference_strength| clipped to 1..3.
    """
    prompt = require_text(record, "prompt")
    r1, r2 = require_text(record, "response_1"), require_text(record, "response_2")
    raw = _int(record, "preference_strength")
    if raw == 0:
        raise MalformedRow("preference_strength is 0 (a tie): no preference")
    chosen, rejected = (r1, r2) if raw < 0 else (r2, r1)
    meta: dict[str, Any] = {"preference_strength": raw}
    if isinstance(record.get("split"), str):
        meta["split"] = record["split"]
    return _Parsed(prompt, chosen, rejected, min(3, max(1, abs(raw))), meta)


def _messages(record: dict[str, Any], name: str) -> list[tuple[str, str]]:
    if name not in record or record[name] is None:
        raise MalformedRow(f"missing field {name!r}")
    value = record[name]
    if not isinstance(value, list) or not value:
        raise MalformedRow(f"field {name!r} must be a non-empty list of messages")
    messages = []
    for i, message in enumerate(value):
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("role"), str)
            or not isinstance(message.get("content"), str)
        ):
            raise MalformedRow(f"{name}[{i}] is not a message with string 'role' and 'content'")
        messages.append((message["role"], message["content"]))
    return messages


def render_messages(messages: Sequence[tuple[str, str]]) -> str:
    """A conversation as text: a lone user message as itself, else "Role: content" turns."""
    if len(messages) == 1 and messages[0][0] == "user":
        return messages[0][1]
    return "\n\n".join(f"{role.capitalize()}: {content}" for role, content in messages)


def parse_skywork_preference(record: dict[str, Any]) -> _Parsed:
    """Skywork-Reward-Preference format: chosen and rejected are chat-message lists sharing all but
    the final assistant message; the prompt is that shared prefix."""
    chosen, rejected = _messages(record, "chosen"), _messages(record, "rejected")
    for name, messages in (("chosen", chosen), ("rejected", rejected)):
        if messages[-1][0] != "assistant":
            raise MalformedRow(f"the last message of {name} is from {messages[-1][0]!r}, not 'assistant'")
    prefix = chosen[:-1]
    if not prefix or not rejected[:-1]:
        raise MalformedRow("chosen and rejected share no conversation prefix")
    if prefix != rejected[:-1]:
        raise MalformedRow("chosen and rejected differ before their final assistant message")
    return _Parsed(render_messages(prefix), chosen[-1][1], rejected[-1][1])


# --------------------------------------------------------------------------- registered loaders


def register_format(name: str, parse: Callable[[dict[str, Any]], _Parsed], dataset: str, split: str, doc: str,
                    keep_rows: Callable[[str | None], Callable[[dict[str, Any]], bool] | None] | None = None) -> Loader:
    """Register the loader of one published file format as `name`: `parse` reads a row, `dataset` names the default
    source ("<dataset>/<stem>"), `split` is the hub split by default. `keep_rows(row_split)`, where given, adds the
    argument `row_split` and returns the filter of the rows kept (others are passed over, not malformed). The
    loader's signature is the module docstring's, which `check_loader_kwargs` reads."""
    if keep_rows is None:

        def load(path: str | Path, *, split: str = split, limit: int | None = None, on_error: OnError = "raise",
                 source: str | None = None, hub_kwargs: dict[str, Any] | None = None) -> LoadedPairs:  # fmt: skip
            return _load(path, parse, dataset=dataset, split=split, limit=limit, on_error=on_error, source=source,
                         hub_kwargs=hub_kwargs)  # fmt: skip
    else:
        filter_rows = keep_rows

        def load(path: str | Path, *, split: str = split, row_split: str | None = None, limit: int | None = None,
                 on_error: OnError = "raise", source: str | None = None,
                 hub_kwargs: dict[str, Any] | None = None) -> LoadedPairs:  # fmt: skip
            return _load(path, parse, dataset=dataset, split=split, limit=limit, on_error=on_error, source=source,
                         hub_kwargs=hub_kwargs, keep=filter_rows(row_split))  # fmt: skip

    load.__name__ = load.__qualname__ = f"load_{name}"
    load.__doc__ = doc
    return DATASETS.register(name)(load)


def _split_field(row_split: str | None) -> Callable[[dict[str, Any]], bool] | None:
    """Rows whose own "split" field equals `row_split` (None: every row)."""
    return None if row_split is None else (lambda record: record.get("split") == row_split)


load_hh_rlhf = register_format(
    "hh_rlhf", parse_hh_rlhf, "hh-rlhf", "test",
    """Anthropic HH-RLHF (`chosen`/`rejected` transcripts); source "hh-rlhf/<stem>"; no strength.""")
load_llmbar = register_format(
    "llmbar", parse_llmbar, "llmbar", "test",
    """LLMBar-format files (also MT-Bench-human, FairEval, LLMEval^2); source "llmbar/<stem>".""")
load_helpsteer2_preference = register_format(
    "helpsteer2_preference", parse_helpsteer2_preference, "helpsteer2", "train",
    """HelpSteer2 preference annotations; source "helpsteer2/<stem>"; strength 1..3.

    row_split: keep only rows whose own "split" field equals it (the published file mixes "train"
    and "val" rows in one file); other rows are passed over, not counted as malformed.""",
    keep_rows=_split_field)
load_skywork_preference = register_format(
    "skywork_preference", parse_skywork_preference, "skywork", "train",
    """Skywork-Reward-Preference-80K (chat-message lists); source "skywork/<stem>"; no strength.""")


@DATASETS.register("synthetic")
def load_synthetic(
    *,
    n: int,
    seed: int = 0,
    split: str = "train",
    families: Sequence[str] | None = None,
    limit: int | None = None,
    on_error: OnError = "raise",
    reference: bool = False,
) -> LoadedPairs:
    """Verifiable synthetic pairs (judge_rl.data.synthetic.generate_pairs); nothing is ever skipped.
    `reference=True`: each pair carries its computed answer as a reference for reference-guided judging."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    count = n if limit is None else min(n, limit)
    return LoadedPairs(generate_pairs(count, seed, split, families, reference=reference))


# --------------------------------------------------------------------------- judge_rl's own format

PAIRS_FIELDS = ("pair_id", "source", "question", "chosen", "rejected", "strength", "trace_a", "trace_b", "meta")


def _pairs_row_builder() -> Callable[[str, int, dict[str, Any]], PreferencePair]:
    """A `read_rows` builder for the `pairs` format; it remembers the ids it built, so that a file naming one
    pair_id twice fails at the second row (SFT, evaluation records and curation all key on pair_id)."""
    seen: set[str] = set()

    def build(src: str, number: int, record: dict[str, Any]) -> PreferencePair:
        unknown = sorted(set(record) - set(PAIRS_FIELDS) - {"traces"})
        if unknown:
            raise MalformedRow(f"unknown field(s) {', '.join(repr(k) for k in unknown)}; expected {', '.join(PAIRS_FIELDS)}")
        question, chosen, rejected = (require_text(record, name) for name in ("question", "chosen", "rejected"))
        if chosen.strip() == rejected.strip():
            raise MalformedRow("chosen and rejected responses are identical")
        strength = record.get("strength")
        if strength is not None:
            strength = _int(record, "strength")
            if strength not in (1, 2, 3):
                raise MalformedRow(f"strength must be null or 1, 2 or 3, got {strength}")
        meta = record.get("meta")
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise MalformedRow(f"field 'meta' is a {type(meta).__name__}, not an object")
        for name in ("pair_id", "source"):
            if record.get(name) is not None and not isinstance(record[name], str):
                raise MalformedRow(f"field {name!r} is a {type(record[name]).__name__}, not a string")
        pair_source = record.get("source") or src
        pair_id = record.get("pair_id") or f"{pair_source}-{number}"
        if pair_id in seen:
            raise MalformedRow(f"duplicate pair_id {pair_id!r}")
        seen.add(pair_id)
        return PreferencePair(
            pair_id=pair_id,
            source=pair_source,
            question=question,
            chosen=chosen,
            rejected=rejected,
            strength=strength,
            traces=_traces(record),
            meta=meta,
        )

    return build


@DATASETS.register("pairs")
def load_pairs(
    path: str | Path,
    *,
    split: str = "train",
    limit: int | None = None,
    on_error: OnError = "raise",
    source: str | None = None,
    hub_kwargs: dict[str, Any] | None = None,
) -> LoadedPairs:
    """judge_rl's own format (what `write_pairs` and `python -m judge_rl.curate` write): one `PreferencePair`
    per JSON line with the keys pair_id, source, question, chosen, rejected, strength (null or 1..3),
    trace_a/trace_b (optional gold traces, by the position of `chosen`) and meta (an optional object).

    pair_id and source are kept as written, so a curated file keeps the ids of the pairs it came from; a row
    without them gets "<source>-<row number>" and `source` or "pairs/<stem>". `source` given here overrides
    only rows without their own. Two rows with one pair_id are a malformed row ("duplicate pair_id")."""
    pairs, skipped = read_rows(path, _pairs_row_builder(), dataset="pairs", split=split, limit=limit,
                               on_error=on_error, source=source, hub_kwargs=hub_kwargs)
    return LoadedPairs(pairs, skipped)


def pair_record(pair: PreferencePair) -> dict[str, Any]:
    """`pair` as one row of the `pairs` format (every key present; absent traces and strength are null)."""
    traces = pair.traces or {}
    return {
        "pair_id": pair.pair_id,
        "source": pair.source,
        "question": pair.question,
        "chosen": pair.chosen,
        "rejected": pair.rejected,
        "strength": pair.strength,
        "trace_a": traces.get("a"),
        "trace_b": traces.get("b"),
        "meta": dict(pair.meta),
    }


def write_pairs(pairs: Sequence[PreferencePair], path: str | Path) -> Path:
    """Write `pairs` in the `pairs` format (JSON lines, UTF-8) that `load_pairs` reads back equal.

    Atomic: the lines go to a temporary file beside `path`, which then replaces it, so a reader (or a crash)
    never sees half a file. Refuses a pair_id that occurs twice (the loader would refuse the file) and a meta
    that is not JSON (named by pair_id), before anything is written."""
    import os
    import tempfile

    target = Path(path)
    seen: set[str] = set()
    lines = []
    for pair in pairs:
        if pair.pair_id in seen:
            raise ValueError(f"{target}: pair_id {pair.pair_id!r} occurs twice")
        seen.add(pair.pair_id)
        try:
            lines.append(json.dumps(pair_record(pair), ensure_ascii=False, allow_nan=False) + "\n")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{target}: pair {pair.pair_id!r} cannot be written as JSON ({exc})") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.writelines(lines)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
