"""Loaders for policy prompts with rubrics or rule checkers, each row -> `PolicyPrompt`.

Files: JSON lines (.jsonl; blank lines skipped) or a .json file holding a JSON list (or JSON lines).
Rows are numbered from 1 (the line of a JSON-lines file, the position in a JSON list). The first bad row
raises a one-line ``ValueError("<file> row <n>: <reason>")``; nothing is skipped silently.

(a) Rubric files, RuscaRL/HealthBench style (`load_rubric_file`):

    {"prompt": "..." | [{"role": "user", "content": "..."}, ...],
     "rubrics": [{"criterion": "...", "points": 5, "tags": ["axis:accuracy"]}, ...],
     "prompt_id": "...",                    optional ("id" also read), else "<file stem>-<row>"
     "reference": "...",                    optional; else HealthBench's ideal_completions_data.ideal_completion
     "example_tags": [...]}                 optional, kept in meta
  `rubrics` may instead sit in `reward_model.rubrics` (RuscaRL's verl rows). Points are non-zero numbers
  (negative for a flaw); tags a list of strings (RuscaRL's dict tags for its own rule verifiers are
  refused: give rules as VerIF-style rows). A chat prompt must end with a user turn; a single user turn
  is read as a plain prompt. Other fields (data_source, ability, extra_info, canary, ...) are ignored.

(b) VerIF-style rows (`load_verif_file`): hard constraints are IFEval rule checkers given BY NAME from
  `judge_rl.evaluation.ifeval.CHECKERS` with their arguments, soft constraints are sentences for the LLM
  judge:

    {"prompt": "..." | [messages],
     "rules": [{"instruction_id": "keywords:existence", "kwargs": {"keywords": ["tide"]}}, ...],
       (or IFEval's parallel "instruction_id_list" and "kwargs")
     "soft_constraints": ["The tone is playful.", ...],
     "id": "...", "reference": "...", "rubric": [...]}      all optional
  VerIF's own data ships its checks as Python source (`functions`); such a row is refused, never run:
  a field named like code (`functions`, `function`, `code`, `source_code`, `python`) at the row or in a
  rule, or a rule or argument whose text looks like Python (a line starting with `def name(`, `import`
  or `from ... import`, or a `lambda ...:`), is an error. Unknown fields are errors too. Without a
  `rubric`, one is built: one criterion per rule (`judge_rl.policy.tasks.prompts.criterion_text`,
  `CONSTRAINT_POINTS`) and one per soft constraint (`SOFT_POINTS`, tagged `axis:soft_constraint`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from judge_rl.policy.tasks.prompts import CONSTRAINT_POINTS, Criterion, PolicyPrompt, criterion_from_dict, criterion_text

SOFT_POINTS = 2.0
CODE_FIELDS = ("functions", "function", "code", "source_code", "python")
_CODE = re.compile(r"(^|\n)\s*(def\s+\w+\s*\(|import\s+\w|from\s+[\w.]+\s+import\s)|\blambda\b[^:\n]*:")


class RowError(ValueError):
    """A row that cannot be read; the message is the reason (the loader adds file and row)."""


def _rows(path: Path) -> Iterator[tuple[int, Any]]:
    """(1-based row number, parsed JSON value) for each row of a .jsonl or .json file."""
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    if not path.name.endswith((".jsonl", ".json")):
        raise ValueError(f"{path}: unsupported file type (expected .jsonl or .json)")
    text = path.read_text(encoding="utf-8")
    if path.name.endswith(".json") and text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
        yield from enumerate(data, 1)
        return
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} row {number}: not valid JSON ({e.msg} at column {e.colno})") from None


def _load(
    path: str | Path, build: Callable[[dict[str, Any], str], PolicyPrompt], limit: int | None
) -> list[PolicyPrompt]:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative integer or None, got {limit!r}")
    path = Path(path)
    stem = path.name.removesuffix(".jsonl").removesuffix(".json")
    prompts: list[PolicyPrompt] = []
    seen: dict[str, int] = {}
    for number, row in _rows(path):
        if limit is not None and len(prompts) >= limit:
            break
        try:
            if not isinstance(row, dict):
                raise RowError(f"row is a {type(row).__name__}, not an object")
            prompt = build(row, f"{stem}-{number}")
        except (RowError, ValueError, TypeError) as e:
            reason = " ".join(str(e).split())  # one line, whatever the inner message
            raise ValueError(f"{path} row {number}: {reason}") from None
        if prompt.prompt_id in seen:
            first = seen[prompt.prompt_id]
            raise ValueError(f"{path} row {number}: duplicate prompt id {prompt.prompt_id!r} (first in row {first})")
        seen[prompt.prompt_id] = number
        prompts.append(prompt)
    return prompts


def _prompt_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """prompt (and messages for a multi-turn chat) from a row's `prompt`."""
    if "prompt" not in row:
        raise RowError("missing field 'prompt'")
    raw = row["prompt"]
    if isinstance(raw, str):
        if not raw.strip():
            raise RowError("prompt is empty")
        return {"prompt": raw, "messages": None}
    if isinstance(raw, list):
        if not raw:
            raise RowError("prompt is an empty message list")
        last = raw[-1]
        if not isinstance(last, Mapping) or last.get("role") != "user" or not isinstance(last.get("content"), str):
            raise RowError("a chat prompt must end with a user message {role: 'user', content: '...'}")
        return {"prompt": last["content"], "messages": None if len(raw) == 1 else raw}
    raise RowError(f"prompt must be a string or a list of chat messages, got {type(raw).__name__}")


def _prompt_id(row: Mapping[str, Any], default: str) -> str:
    for name in ("prompt_id", "id"):
        if row.get(name) is not None:
            value = row[name]
            if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
                raise RowError(f"{name} must be a non-empty string or an integer, got {value!r}")
            return str(value)
    return default


def _rubric(raw: Any, field: str) -> tuple[Criterion, ...]:
    if not isinstance(raw, list) or not raw:
        raise RowError(f"{field} must be a non-empty list of {{criterion, points, tags}} objects")
    rubric = []
    for i, item in enumerate(raw, 1):
        if isinstance(item, Mapping) and isinstance(item.get("tags"), Mapping):
            raise RowError(
                f"{field} item {i}: tags must be a list of strings (RuscaRL's rule-verifier tags are not "
                "supported; give rules as VerIF-style rows)"
            )
        try:
            rubric.append(criterion_from_dict(item))
        except ValueError as e:
            raise RowError(f"{field} item {i}: {e}") from None
    if not any(c.points > 0 for c in rubric):
        raise RowError(f"{field} has no criterion with positive points")
    return tuple(rubric)


def _reference(row: Mapping[str, Any]) -> str | None:
    reference = row.get("reference")
    if reference is None:
        ideal = row.get("ideal_completions_data")
        if isinstance(ideal, Mapping):
            reference = ideal.get("ideal_completion")
    if reference is not None and (not isinstance(reference, str) or not reference.strip()):
        raise RowError("reference must be a non-empty string")
    return reference


def rubric_row(row: Mapping[str, Any], default_id: str) -> PolicyPrompt:
    """One RuscaRL/HealthBench row (module docstring, (a)); raises ValueError with the reason."""
    top = row.get("rubrics")
    reward_model = row.get("reward_model")
    nested = reward_model.get("rubrics") if isinstance(reward_model, Mapping) else None
    if top is not None and nested is not None:
        raise RowError("rubrics given twice (top level and reward_model.rubrics)")
    if top is None and nested is None:
        raise RowError("missing field 'rubrics' (or reward_model.rubrics)")
    rubric = _rubric(top if top is not None else nested, "rubrics" if top is not None else "reward_model.rubrics")
    meta: dict[str, Any] = {"format": "rubric"}
    if row.get("example_tags") is not None:
        meta["example_tags"] = row["example_tags"]
    return PolicyPrompt(
        prompt_id=_prompt_id(row, default_id),
        **_prompt_fields(row),
        rubric=rubric,
        reference=_reference(row),
        meta=meta,
    )


def load_rubric_file(path: str | Path, limit: int | None = None) -> list[PolicyPrompt]:
    """The rows of a RuscaRL/HealthBench rubric file (module docstring, (a)), the first `limit` if given."""
    return _load(path, rubric_row, limit)


# --------------------------------------------------------------------------------------------------
# VerIF-style rows
# --------------------------------------------------------------------------------------------------

RULE_FIELDS = frozenset({"instruction_id", "kwargs"})
VERIF_FIELDS = ("id", "prompt_id", "prompt", "rules", "instruction_id_list", "kwargs", "soft_constraints",
                "reference", "rubric", "meta")  # fmt: skip


def _looks_like_code(value: Any) -> bool:
    if isinstance(value, str):
        return bool(_CODE.search(value))
    if isinstance(value, Mapping):
        return any(_looks_like_code(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_looks_like_code(v) for v in value)
    return False


def _refuse_code(row: Mapping[str, Any]) -> None:
    """VerIF ships Python checks; a row carrying code is refused, whatever else it holds."""
    for name in CODE_FIELDS:
        if name in row:
            raise RowError(
                f"row carries python code (field {name!r}); rule checkers must be IFEval instruction ids "
                "with arguments, code is never run"
            )
    rules = row.get("rules")
    if isinstance(rules, list):
        for i, rule in enumerate(rules, 1):
            if isinstance(rule, Mapping):
                for name in CODE_FIELDS:
                    if name in rule:
                        raise RowError(
                            f"rule {i} carries python code (field {name!r}); give an instruction_id and kwargs"
                        )
            if _looks_like_code(rule):
                raise RowError(
                    f"rule {i} looks like python code; give an IFEval instruction_id and kwargs, code is never run"
                )
    for name in ("instruction_id_list", "kwargs"):
        if _looks_like_code(row.get(name)):
            raise RowError(f"{name} looks like python code; give IFEval instruction ids and arguments")


def _rules(row: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[dict[str, Any], ...]]:
    if "rules" in row and ("instruction_id_list" in row or "kwargs" in row):
        raise RowError("give either 'rules' or 'instruction_id_list' with 'kwargs', not both")
    if "rules" in row:
        rules = row["rules"]
        if not isinstance(rules, list):
            raise RowError("rules must be a list of {instruction_id, kwargs} objects")
        ids, kwargs = [], []
        for i, rule in enumerate(rules, 1):
            if not isinstance(rule, Mapping) or "instruction_id" not in rule or set(rule) - RULE_FIELDS:
                raise RowError(f"rule {i} must be an object with 'instruction_id' and optional 'kwargs', got {rule!r}")
            ids.append(rule["instruction_id"])
            kwargs.append(rule.get("kwargs") or {})
        return tuple(ids), tuple(kwargs)
    ids, kwargs = row.get("instruction_id_list", []), row.get("kwargs")
    if not isinstance(ids, list):
        raise RowError("instruction_id_list must be a list of IFEval instruction ids")
    if kwargs is None:
        kwargs = [{} for _ in ids]
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        raise RowError(f"kwargs must be a list with one object per instruction ({len(ids)})")
    return tuple(ids), tuple(k or {} for k in kwargs)


def verif_row(row: Mapping[str, Any], default_id: str) -> PolicyPrompt:
    """One VerIF-style row (module docstring, (b)); raises ValueError with the reason."""
    _refuse_code(row)
    unknown = sorted(set(row) - set(VERIF_FIELDS))
    if unknown:
        raise RowError(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(VERIF_FIELDS)}")
    ids, kwargs = _rules(row)
    soft = row.get("soft_constraints") or []
    if not isinstance(soft, list) or not all(isinstance(s, str) and s.strip() for s in soft):
        raise RowError("soft_constraints must be a list of non-empty strings")
    if not ids and not soft:
        raise RowError("no rules and no soft constraints")
    prompt_id = _prompt_id(row, default_id)
    fields = _prompt_fields(row)
    # Build (and so validate every rule against the registry) before writing criteria from the arguments.
    base = PolicyPrompt(
        prompt_id=prompt_id, **fields, instruction_id_list=ids, kwargs=kwargs, soft_constraints=tuple(soft)
    )
    if row.get("rubric") is not None:
        rubric = _rubric(row["rubric"], "rubric")
    else:
        rubric = tuple(
            Criterion(criterion_text(i, k), CONSTRAINT_POINTS, ("axis:instruction_following", f"instruction_id:{i}"))
            for i, k in zip(base.instruction_id_list, base.kwargs)
        ) + tuple(Criterion(s, SOFT_POINTS, ("axis:soft_constraint",)) for s in soft)
    meta = row.get("meta") or {}
    if not isinstance(meta, Mapping):
        raise RowError("meta must be an object")
    return PolicyPrompt(
        prompt_id=prompt_id, **fields, instruction_id_list=base.instruction_id_list, kwargs=base.kwargs,
        rubric=rubric, reference=_reference(row), soft_constraints=tuple(soft), meta={"format": "verif", **meta},
    )  # fmt: skip


def load_verif_file(path: str | Path, limit: int | None = None) -> list[PolicyPrompt]:
    """The rows of a VerIF-style file (module docstring, (b)), the first `limit` if given."""
    return _load(path, verif_row, limit)
