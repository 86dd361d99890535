"""IFEval prompts, strict and loose evaluation of one response, and the four published accuracies.

Strict: each instruction's checker on the response itself. Loose (the published upper bound): an
instruction counts as followed if its checker passes on any of eight variants of the response: the
response, without its first line, without its last line, without both (each of those three stripped of
surrounding whitespace), and those four with every ``*`` removed. A response that is empty or blank
(or a blank variant) never follows an instruction. Prompt level: the fraction of prompts whose
instructions are all followed; instruction level: the fraction of all instructions followed.

:func:`evaluate_prompt` gives one JSON-serializable record per prompt (what every checker said, strictly
and loosely, and which loose variant passed first); :func:`aggregate` turns any list of records into the
scores, so a caller can save records as it goes and resume; :func:`score` does both and can take the
records of an earlier run back (`previous`), re-checking only prompts whose response or instructions
changed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from judge_rl.evaluation.ifeval.checkers import get_checker

# Bump when a checker's result can change, so records saved by older code are not reused.
RECORD_VERSION = 1

LOOSE_VARIANTS = (
    "response",
    "remove_first_line",
    "remove_last_line",
    "remove_first_and_last_lines",
    "no_asterisks",
    "remove_first_line_no_asterisks",
    "remove_last_line_no_asterisks",
    "remove_first_and_last_lines_no_asterisks",
)


@dataclass(frozen=True)
class IFEvalPrompt:
    key: Any
    prompt: str
    instruction_id_list: tuple[str, ...]
    kwargs: tuple[dict[str, Any], ...]  # validated, None-valued arguments dropped


def _where(key: Any) -> str:
    return f"prompt {key}: "


def make_prompt(row: Mapping[str, Any], where: str = "") -> IFEvalPrompt:
    """An IFEvalPrompt from one row of the published file; a one-line ValueError naming the prompt and
    the instruction otherwise."""
    if not isinstance(row, Mapping):
        raise ValueError(f"{where}expected a JSON object, got {type(row).__name__}")
    missing = [f for f in ("key", "prompt", "instruction_id_list", "kwargs") if f not in row]
    if missing:
        raise ValueError(f"{where}missing field(s) {', '.join(missing)}")
    key = row["key"]
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise ValueError(f"{where}key must be an integer or a string, got {key!r}")
    where = f"{where}{_where(key)}"
    if not isinstance(row["prompt"], str) or not row["prompt"].strip():
        raise ValueError(f"{where}prompt must be a non-empty string")
    ids, kwargs = row["instruction_id_list"], row["kwargs"]
    if not isinstance(ids, list) or not ids:
        raise ValueError(f"{where}instruction_id_list must be a non-empty list")
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        raise ValueError(f"{where}kwargs must be a list with one object per instruction ({len(ids)})")
    clean = tuple(get_checker(i, where).arguments(k, where) for i, k in zip(ids, kwargs))
    return IFEvalPrompt(key, row["prompt"], tuple(ids), clean)


def load_ifeval(path: str | Path, limit: int | None = None) -> list[IFEvalPrompt]:
    """The prompts of an IFEval JSONL file (`key`, `prompt`, `instruction_id_list`, `kwargs` per line),
    the first `limit` of them if given. Blank lines are skipped; a malformed line raises a one-line
    ValueError naming the file and line."""
    path = Path(path)
    prompts: list[IFEvalPrompt] = []
    seen: dict[Any, int] = {}
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if limit is not None and len(prompts) >= limit:
                break
            if not line.strip():
                continue
            where = f"{path}:{lineno}: "
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}not valid JSON ({e.msg}, column {e.colno})") from None
            prompt = make_prompt(row, where)
            if prompt.key in seen:
                raise ValueError(f"{where}{_where(prompt.key)}duplicate key (first on line {seen[prompt.key]})")
            seen[prompt.key] = lineno
            prompts.append(prompt)
    return prompts


def loose_variants(response: str) -> list[str]:
    """The eight responses the loose evaluation tries, in the order of `LOOSE_VARIANTS`."""
    lines = response.split("\n")
    first = "\n".join(lines[1:]).strip()
    last = "\n".join(lines[:-1]).strip()
    both = "\n".join(lines[1:-1]).strip()
    variants = [response, first, last, both]
    return variants + [v.replace("*", "") for v in variants]


def _follows(checker, args: dict[str, Any], response: str) -> bool:
    return bool(response.strip()) and bool(checker.fn(response, **args))


def evaluate_prompt(prompt: IFEvalPrompt, response: str) -> dict[str, Any]:
    """One record: the prompt, the response, and per instruction whether it is followed strictly and
    loosely (`loose_variant`: the first of `LOOSE_VARIANTS` that passed, None if none did)."""
    if not isinstance(response, str):
        raise ValueError(f"{_where(prompt.key)}the response must be a string, got {type(response).__name__}")
    variants = loose_variants(response)
    strict, loose, passed_variant = [], [], []
    for instruction_id, args in zip(prompt.instruction_id_list, prompt.kwargs):
        checker = get_checker(instruction_id, _where(prompt.key))
        args = checker.arguments(args, _where(prompt.key))
        strict.append(_follows(checker, args, response))
        first = next((name for name, v in zip(LOOSE_VARIANTS, variants) if _follows(checker, args, v)), None)
        loose.append(first is not None)
        passed_variant.append(first)
    return {
        "version": RECORD_VERSION,
        "key": prompt.key,
        "prompt": prompt.prompt,
        "response": response,
        "instruction_id_list": list(prompt.instruction_id_list),
        "kwargs": [dict(k) for k in prompt.kwargs],
        "follow_instruction_list_strict": strict,
        "follow_instruction_list_loose": loose,
        "follow_all_instructions_strict": all(strict),
        "follow_all_instructions_loose": all(loose),
        "loose_variant": passed_variant,
    }


def _accuracy(hits: int, total: int) -> float:
    return hits / total if total else float("nan")


def aggregate(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The four published accuracies, counts, and accuracies per instruction id and per category (the
    part of the id before ':'), from records of :func:`evaluate_prompt`."""
    n_prompts = len(records)
    n_instructions = sum(len(r["instruction_id_list"]) for r in records)
    counts = {
        "prompts": n_prompts,
        "instructions": n_instructions,
        "prompts_followed_strict": sum(bool(r["follow_all_instructions_strict"]) for r in records),
        "prompts_followed_loose": sum(bool(r["follow_all_instructions_loose"]) for r in records),
        "instructions_followed_strict": sum(sum(map(bool, r["follow_instruction_list_strict"])) for r in records),
        "instructions_followed_loose": sum(sum(map(bool, r["follow_instruction_list_loose"])) for r in records),
    }
    per_id: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    per_category: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in records:
        follows = zip(r["instruction_id_list"], r["follow_instruction_list_strict"], r["follow_instruction_list_loose"])
        for i, s, lo in follows:
            for table, name in ((per_id, i), (per_category, i.split(":")[0])):
                table[name][0] += 1
                table[name][1] += bool(s)
                table[name][2] += bool(lo)

    def breakdown(table):
        return {
            name: {"count": n, "strict_accuracy": s / n, "loose_accuracy": lo / n}
            for name, (n, s, lo) in sorted(table.items())
        }

    return {
        "prompt_level_strict_accuracy": _accuracy(counts["prompts_followed_strict"], n_prompts),
        "instruction_level_strict_accuracy": _accuracy(counts["instructions_followed_strict"], n_instructions),
        "prompt_level_loose_accuracy": _accuracy(counts["prompts_followed_loose"], n_prompts),
        "instruction_level_loose_accuracy": _accuracy(counts["instructions_followed_loose"], n_instructions),
        "counts": counts,
        "by_instruction": breakdown(per_id),
        "by_category": breakdown(per_category),
    }


def response_for(prompt: IFEvalPrompt, responses: Mapping[Any, str]) -> str | None:
    """The response to `prompt` in `responses`, looked up by key, by the key as a string, then by the
    prompt text (the official files map prompt text to response)."""
    for lookup in (prompt.key, str(prompt.key), prompt.prompt):
        if lookup in responses:
            return responses[lookup]
    return None


def _reusable(record: Mapping[str, Any], prompt: IFEvalPrompt, response: str) -> bool:
    return (
        record.get("version") == RECORD_VERSION
        and record.get("response") == response
        and record.get("prompt") == prompt.prompt
        and record.get("instruction_id_list") == list(prompt.instruction_id_list)
        and record.get("kwargs") == [dict(k) for k in prompt.kwargs]
    )


def score(
    prompts: Sequence[IFEvalPrompt],
    responses: Mapping[Any, str],
    previous: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Scores of `responses` (keyed by prompt key or prompt text) on `prompts`: :func:`aggregate`'s
    accuracies, counts and breakdowns, plus `records` (one per prompt, in order). Every prompt needs a
    response. A record in `previous` with the same key, response and instructions is reused as is."""
    missing = [p.key for p in prompts if response_for(p, responses) is None]
    if missing:
        shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise ValueError(f"no response for {len(missing)} of {len(prompts)} IFEval prompts (keys {shown})")
    done = {r.get("key"): r for r in previous}
    records = []
    for p in prompts:
        response = response_for(p, responses)
        old = done.get(p.key)
        records.append(dict(old) if old is not None and _reusable(old, p, response) else evaluate_prompt(p, response))
    return {**aggregate(records), "records": records}
