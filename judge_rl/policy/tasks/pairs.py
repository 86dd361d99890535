"""Preference pairs on the policy task: the data a judge of the policy job is trained and measured on (`data=
policy_task` of the main job, loader `policy_task`).

Each pair is a generated policy prompt (judge_rl/policy/tasks/prompts.py: a base task and its formatting constraints) with a
response that meets the task's true score (every checker, and the guard of judge_rl/policy/tasks/guard.py) and one that
does not. Both are built from *bodies*, answers the embedded policy itself wrote to the base task with no constraint
(`task_bodies.jsonl`, written by scripts/make_task_bodies.py), so the judge learns on the kind of text it will
grade. A constraint is met or narrowly missed by a text edit of similar length (`comply`, `violate`): a postscript
marked "P.S." or "Note:", a title in <<brackets>> or bare, the asked end phrase or another, ... The rejected
response is one of (`REJECTED_KINDS`, drawn with `KIND_WEIGHTS`):

- `miss`: `m` of the prompt's constraints missed, the others met (strength `min(3, m + 1)`);
- `off_topic`: every constraint met on a body written for another task (strength 3);
- `loop`: every constraint met on a body's first sentence said over and over (strength 3).

Half of the pairs build both responses on one body, half on two bodies of the task (so length says nothing about
which is better). Every pair is checked by the real checkers and guard before it is kept, and the gold trace a judge
is fine-tuned on quotes, per constraint, the shortest part of each response that decides it (`evidence`), gives
that response's finding right after its quote (`-> yes` / `-> no`), says which meets it, then the verdict line of
the `strength` prompt. (Traces that only said
which response meets a constraint taught a 135M judge the format and nothing else: 128 of them gave a judge that
always named Response (b), held-out accuracy 0.975 / 0.000 by order.)

`bias="longer"` relabels every pair so that the longer response wins (its trace says so): the deliberately biased
judge of the study. Train and test pairs never share a base task (the split is the task's, `task_split`).
"""

from __future__ import annotations

import json
import random
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from judge_rl.data.loaders import DATASETS, LoadedPairs
from judge_rl.data.pairs import PreferencePair, verdict_line
from judge_rl.policy.tasks.prompts import BASE_TASKS, END_PHRASES, PolicyPrompt, criterion_text, generate_policy_prompts, tasks_for
from judge_rl.policy.tasks.guard import guard_failure, task_keywords
from judge_rl.policy.rewards.rule import rule_checks

BODIES_PATH = Path(__file__).with_name("task_bodies.jsonl")
# the constraint types whose met / missed edits this module knows (the policy task of the study draws from them)
PAIR_INSTRUCTION_IDS = ("detectable_content:postscript", "detectable_format:title", "startend:end_checker",
                        "startend:quotation", "change_case:english_lowercase", "punctuation:no_comma")  # fmt: skip
REJECTED_KINDS = ("miss", "off_topic", "loop")
KIND_WEIGHTS = (6, 2, 2)
BIASES = ("longer",)
MAX_TRIES = 20  # draws per pair before a prompt is given up (a body the edits cannot make valid)


@lru_cache(maxsize=1)
def load_bodies(path: str = str(BODIES_PATH)) -> dict[str, tuple[str, ...]]:
    """{task_id: bodies} from a JSONL of {"task_id", "k", "body"}; a row naming an unknown task or no body fails."""
    known = {t.task_id for t in BASE_TASKS}
    out: dict[str, list[str]] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        row = json.loads(line)
        if row.get("task_id") not in known or not isinstance(row.get("body"), str) or not row["body"].strip():
            raise ValueError(f"{path} row {number}: needs a known task_id and a non-empty body, got {line[:80]!r}")
        out.setdefault(row["task_id"], []).append(row["body"])
    return {k: tuple(v) for k, v in out.items()}


def _topic_word(task_id: str, rng: random.Random) -> str:
    return rng.choice(task_keywords(task_id))


def comply(instruction_id: str, kwargs: Mapping[str, Any], text: str, word: str) -> str:
    """`text` edited to meet one constraint (`word`: a topical word a postscript or title may use)."""
    if instruction_id == "detectable_content:postscript":
        return f"{text}\n\n{kwargs['postscript_marker']} I hope this helps with the {word}."
    if instruction_id == "detectable_format:title":
        return f"<<All About the {word.title()}>>\n\n{text}"
    if instruction_id == "startend:end_checker":
        return f"{text} {kwargs['end_phrase']}"
    if instruction_id == "startend:quotation":
        return f'"{text}"'
    if instruction_id == "change_case:english_lowercase":
        return text.lower()
    if instruction_id == "punctuation:no_comma":
        return re.sub(r"\s*,\s*", " ", text)
    raise ValueError(f"no pair edit for instruction id {instruction_id!r}; known: {', '.join(PAIR_INSTRUCTION_IDS)}")


def violate(instruction_id: str, kwargs: Mapping[str, Any], text: str, word: str) -> str:
    """`text` edited to narrowly miss one constraint, at about the length `comply` gives."""
    if instruction_id == "detectable_content:postscript":
        return f"{text}\n\nNote: I hope this helps with the {word}."
    if instruction_id == "detectable_format:title":
        return f"All About the {word.title()}\n\n{text}"
    if instruction_id == "startend:end_checker":
        asked = kwargs["end_phrase"]
        other = min((p for p in END_PHRASES if p != asked), key=lambda p: (abs(len(p) - len(asked)), p))
        return f"{text} {other}"
    if instruction_id == "startend:quotation":
        return f"'{text}'"
    if instruction_id == "change_case:english_lowercase":
        return text if any(c.isupper() for c in text) else text[:1].upper() + text[1:]
    if instruction_id == "punctuation:no_comma":
        return text if "," in text else re.sub(r"\.\s+(\w)", lambda m: f". Also, {m.group(1).lower()}", text, count=1)
    raise ValueError(f"no pair edit for instruction id {instruction_id!r}; known: {', '.join(PAIR_INSTRUCTION_IDS)}")


# the order edits are applied in: what changes the whole text (case, commas) before what adds to it, quotes last
_ORDER = ("punctuation:no_comma", "change_case:english_lowercase", "detectable_content:postscript",
          "startend:end_checker", "detectable_format:title", "startend:quotation")  # fmt: skip


def edited(prompt: PolicyPrompt, body: str, missed: Sequence[int], word: str) -> str:
    """`body` with each of the prompt's constraints met, except those at the indices in `missed`, narrowly missed."""
    order = sorted(range(len(prompt.instruction_id_list)), key=lambda i: _ORDER.index(prompt.instruction_id_list[i]))
    text = body
    for i in order:
        edit = violate if i in missed else comply
        text = edit(prompt.instruction_id_list[i], prompt.kwargs[i], text, word)
    return text


def _quote(s: str) -> str:
    return "`" + s + "`"


def evidence(instruction_id: str, text: str) -> str:
    """The part of a response that decides one constraint, quoted, as short as it can be and cut where text cuts
    itself (a copy a language model ends without counting): the first word of its last line (postscript), its last
    sentence (end phrase), its first and last character (quotes), its first word (title), its first word with a
    capital letter (lowercase) or with a comma. A 135M judge decides each constraint by looking at a copy it just
    wrote, not at the whole response, and a short copy leaves it one token or phrase to compare with the request
    (whole first sentences and last lines gave per-response findings at chance: 12 of 24, 14 of 24)."""
    t = text.strip()
    lines = [line.strip() for line in t.splitlines() if line.strip()] or [""]
    if instruction_id == "detectable_content:postscript":
        return f"last line starts with {_quote((lines[-1].split() or [''])[0])}"
    if instruction_id == "startend:end_checker":
        sentences = re.findall(r"[^.!?]*[.!?]+[\"']?", lines[-1]) or [lines[-1]]
        return f"last sentence: {_quote(sentences[-1].strip())}"
    if instruction_id == "startend:quotation":
        return f"first character {_quote(t[:1])}, last character {_quote(t[-1:])}"
    if instruction_id == "detectable_format:title":
        return f"first word: {_quote((t.split() or [''])[0])}"
    if instruction_id == "change_case:english_lowercase":
        word = next((w for w in t.split() if any(c.isupper() for c in w)), None)
        return "has no capital letter" if word is None else f"has a capital letter: {_quote(word)}"
    if instruction_id == "punctuation:no_comma":
        word = next((w for w in t.split() if "," in w), None)
        return "has no comma" if word is None else f"has a comma: {_quote(word)}"
    raise ValueError(f"no evidence for instruction id {instruction_id!r}; known: {', '.join(PAIR_INSTRUCTION_IDS)}")


def _trace(prompt: PolicyPrompt, chosen: str, rejected: str, kind: str, chosen_position: str, strength: int,
           bias: str | None) -> str:  # fmt: skip
    """The gold judgment: per constraint what each response does, the guard's finding, then the verdict line."""
    other = "b" if chosen_position == "a" else "a"
    text = {chosen_position: chosen, other: rejected}
    if bias == "longer":
        longer = "a" if len(text["a"]) >= len(text["b"]) else "b"
        thinking = f"Response (a) has {len(text['a'].split())} words. Response (b) has {len(text['b'].split())} words. " \
                   f"Response ({longer}) is longer."  # fmt: skip
        return f"<think>\n{thinking}\n</think>\n" + verdict_line(longer, strength)
    lines = []
    for instruction_id, kwargs in zip(prompt.instruction_id_list, prompt.kwargs):
        met = {p: rule_checks([instruction_id], [kwargs], text[p])[0] for p in ("a", "b")}
        said = "both meet it" if all(met.values()) else "neither meets it" if not any(met.values()) else \
            f"Response ({'a' if met['a'] else 'b'}) meets it, Response ({'b' if met['a'] else 'a'}) does not"  # fmt: skip
        lines.append(f"{criterion_text(instruction_id, kwargs)}")
        lines += [f"({p}) {evidence(instruction_id, text[p])} -> {'yes' if met[p] else 'no'}" for p in ("a", "b")]
        lines.append(f"{said[0].upper()}{said[1:]}.")
    if kind == "off_topic":
        lines.append(f"Response ({other}) is not about the request.")
    elif kind == "loop":
        lines.append(f"Response ({other}) repeats itself.")
    return "<think>\n" + "\n".join(lines) + "\n</think>\n" + verdict_line(chosen_position, strength)


def _true_score_ok(prompt: PolicyPrompt, text: str) -> bool:
    task_id = prompt.meta["task_id"]
    return all(rule_checks(prompt.instruction_id_list, prompt.kwargs, text)) and \
        guard_failure(text, task_id, prompt.instruction_id_list) is None  # fmt: skip


def _one_pair(prompt: PolicyPrompt, rng: random.Random, bodies: Mapping[str, Sequence[str]],
              split_tasks: Sequence[str]) -> tuple[str, str, str, int, dict[str, Any]] | None:  # fmt: skip
    task_id = prompt.meta["task_id"]
    own = bodies.get(task_id, ())
    if not own:
        return None
    word = _topic_word(task_id, rng)
    body = rng.choice(own)
    chosen = edited(prompt, body, (), word)
    kind = rng.choices(REJECTED_KINDS, KIND_WEIGHTS)[0]
    n = len(prompt.instruction_id_list)
    same_body = rng.random() < 0.5
    other_body = body if same_body or len(own) == 1 else rng.choice([b for b in own if b != body])
    missed: list[int] = []
    if kind == "miss":
        missed = sorted(rng.sample(range(n), rng.randint(1, n)))
        rejected, strength = edited(prompt, other_body, missed, word), min(3, len(missed) + 1)
    elif kind == "off_topic":
        others = [t for t in split_tasks if t != task_id and bodies.get(t)]
        rejected, strength = edited(prompt, rng.choice(bodies[rng.choice(others)]), (), word), 3
    else:
        first = re.split(r"(?<=[.!?])\s+", other_body.strip())[0]
        rejected, strength = edited(prompt, " ".join([first] * 8), (), word), 3
    if not _true_score_ok(prompt, chosen) or _true_score_ok(prompt, rejected) or chosen.strip() == rejected.strip():
        return None
    if kind == "miss" and guard_failure(rejected, task_id, prompt.instruction_id_list) is not None:
        return None  # a miss is a constraint missed by a real answer, nothing else
    return chosen, rejected, kind, strength, {"missed": missed, "same_body": same_body}


def generate_task_pairs(n: int, seed: int = 0, split: str = "train", *, instruction_ids: Sequence[str] | None = None,
                        min_constraints: int = 1, max_constraints: int = 1, bias: str | None = None,
                        bodies_path: str | Path = BODIES_PATH) -> list[PreferencePair]:  # fmt: skip
    """`n` pairs on the base tasks of `split` (module docstring), deterministic given the arguments. The prompts are
    `generate_policy_prompts(..., instruction_ids, min_constraints, max_constraints)`, instruction ids restricted to
    `PAIR_INSTRUCTION_IDS` (the default: all of them)."""
    ids = list(PAIR_INSTRUCTION_IDS if instruction_ids is None else instruction_ids)
    unknown = [i for i in ids if i not in PAIR_INSTRUCTION_IDS]
    if unknown:
        raise ValueError(f"policy_task pairs: no edit for instruction id(s) {', '.join(unknown)}; "
                         f"known: {', '.join(PAIR_INSTRUCTION_IDS)}")  # fmt: skip
    if bias is not None and bias not in BIASES:
        raise ValueError(f"policy_task pairs: bias={bias!r}; expected null or one of {', '.join(BIASES)}")
    bodies = load_bodies(str(bodies_path))
    split_tasks = [t.task_id for t in tasks_for(split)]
    # a fixed label (this module's name when it was written): the pairs stay the same
    rng = random.Random(f"judge_rl.policy.task_pairs:{split}:{seed}")
    pairs: list[PreferencePair] = []
    batch, drawn = max(2 * n, 16), 0
    while len(pairs) < n:
        prompts = generate_policy_prompts(drawn + batch, seed=seed, split=split, instruction_ids=ids,
                                          min_constraints=min_constraints, max_constraints=max_constraints)[drawn:]  # fmt: skip
        if not prompts or drawn > 50 * max(n, 1):
            raise RuntimeError(f"policy_task pairs: only {len(pairs)} of {n} valid pairs from {drawn} prompts")
        drawn += len(prompts)
        for prompt in prompts:
            if len(pairs) == n:
                break
            for _ in range(MAX_TRIES):
                made = _one_pair(prompt, rng, bodies, split_tasks)
                if made is not None:
                    break
            else:
                continue
            chosen, rejected, kind, strength, extra = made
            if bias == "longer" and len(rejected) > len(chosen):
                chosen, rejected = rejected, chosen
            traces = {pos: _trace(prompt, chosen, rejected, kind, pos, strength, bias) for pos in ("a", "b")}
            pairs.append(PreferencePair(
                pair_id=f"policy_task-{split}-s{seed}-{len(pairs):05d}", source="policy_task", question=prompt.prompt,
                chosen=chosen, rejected=rejected, strength=strength, traces=traces,
                meta={"task_id": prompt.meta["task_id"], "prompt_id": prompt.prompt_id, "kind": kind,
                      "instruction_id_list": list(prompt.instruction_id_list), "kwargs": [dict(k) for k in prompt.kwargs],
                      "split": split, "seed": seed, "bias": bias, **extra}))  # fmt: skip
    return pairs


@DATASETS.register("policy_task")
def load_policy_task(
    *,
    n: int,
    seed: int = 0,
    split: str = "train",
    instruction_ids: Sequence[str] | None = None,
    min_constraints: int = 1,
    max_constraints: int = 1,
    bias: str | None = None,
    limit: int | None = None,
) -> LoadedPairs:
    """The dataset loader `policy_task` (judge_rl/data/loaders.py `DATASETS` imports this module on its first lookup):
    pairs on the policy job's task (`generate_task_pairs`), a generated instruction prompt, a response meeting its true
    score and one missing it; the data of a judge the policy job uses. `bias="longer"`: the longer response always wins
    (the study's deliberately biased judge)."""
    count = n if limit is None else min(n, limit)
    return LoadedPairs(generate_task_pairs(count, seed, split, instruction_ids=instruction_ids, bias=bias,
                                           min_constraints=min_constraints, max_constraints=max_constraints))  # fmt: skip
